"""Shard bytes do not depend on what the shared parse cache held.

sample_data's train split (300 lines, real stanza) as test_resume.py runs it: a fresh cache (the
test session's reference run), ``--no-cache``, and a cache another folder filled first with the same
sentences in other blocks (shards of 30 pairs: other batch-mates) must give the same folder bytes.
"""

from __future__ import annotations

import pytest
from pipeline_runs import TEXT_FLAGS, assert_same_folder, pipeline_args, reference_run, run_ok

pytestmark = pytest.mark.slow


def test_fresh_cache_no_cache_and_a_foreign_cache_give_the_same_bytes(tmp_path_factory, tmp_path, stanza_dir):
    ref, _ = reference_run(tmp_path_factory, stanza_dir)
    run_ok(pipeline_args(tmp_path / "plain", None, stanza_dir, "-j", "1"))
    assert_same_folder(tmp_path / "plain", ref)
    cache = tmp_path / "shared.sqlite"
    other = tuple("30" if f == "50" else f for f in TEXT_FLAGS)  # --shard-size 30: other blocks, other batches
    run_ok(pipeline_args(tmp_path / "other", cache, stanza_dir, "-j", "1", flags=other))
    run_ok(pipeline_args(tmp_path / "out", cache, stanza_dir, "-j", "1"))
    assert_same_folder(tmp_path / "out", ref)
