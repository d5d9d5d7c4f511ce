"""Kill -9 and resume, determinism, and the parse cache surviving a crash.

Every run is ``python -m synprep pipeline`` on sample_data's train split (300 real-sized de→en
lines, real stanza), ``--lowercase --shard-size 50 --merges 1000 --batch-size 16``, each with its
own ``--cache`` file. A killed run is started again with the same command and must end with the
same bytes as an uninterrupted run into another folder with a fresh cache: shards, manifest,
dict, codes and every text file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_cli
from pipeline_runs import (
    assert_lines_accounted,
    assert_same_folder,
    cache_count,
    cache_rows,
    kill_group,
    kill_when,
    manifest_shards,
    pipeline_args,
    reference_run,
    run_ok,
    sqlite_integrity,
    start,
    temp_files,
)

from synprep.parse.cache import decode

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reference(tmp_path_factory, stanza_dir) -> tuple[Path, Path]:
    """An uninterrupted -j 1 run (fresh cache): the bytes every other run must reproduce."""
    out, cache = reference_run(tmp_path_factory, stanza_dir)
    assert run_cli("check", str(out)).returncode == 0
    assert len(manifest_shards(out)) == 6  # 294 kept pairs in shards of 50: the kills below land mid-run
    return out, cache


def test_same_input_and_config_give_the_same_bytes_at_any_jobs(reference, tmp_path, stanza_dir):
    """Determinism: a second run with a fresh cache and -j 2 (workers, batches spread over them)."""
    ref, _ = reference
    out = tmp_path / "out"
    proc = run_ok(pipeline_args(out, tmp_path / "cache.sqlite", stanza_dir, "-j", "2"))
    assert_same_folder(out, ref)  # the manifest, with every shard's sha256, included
    # loky did not restart a worker for the memory its stanza model takes (it would load it again)
    assert "A worker stopped" not in proc.stderr


def _killed_then_resumed(tmp_path: Path, stanza_dir: Path, ready, jobs: str = "1") -> tuple[Path, Path, dict]:
    out, cache = tmp_path / "out", tmp_path / "cache.sqlite"
    args = pipeline_args(out, cache, stanza_dir, "-j", jobs)
    proc = start(args, tmp_path / "killed.log")
    try:
        kill_when(proc, lambda: ready(out, cache))
        state = {"shards": manifest_shards(out), "dict": (out / "dict.txt").exists(),
                 "rows": cache_rows(cache) if cache.exists() else {},
                 "integrity": sqlite_integrity(cache) if cache.exists() else "ok"}
    finally:
        kill_group(proc)  # the killed run's orphaned workers, if any
    proc = run_ok(args)
    assert "Traceback" not in proc.stderr
    return out, cache, state


def _assert_resumed_like_reference(out: Path, cache: Path, reference: tuple[Path, Path], state: dict) -> None:
    ref, ref_cache = reference
    assert_same_folder(out, ref)
    assert run_cli("check", str(out)).returncode == 0
    assert temp_files(out, cache.parent) == []
    assert_lines_accounted(out)
    # the cache the kill left was sound, and every entry it held is the reference run's parse
    assert state["integrity"] == "ok"
    want = cache_rows(ref_cache)
    for key, blob in state["rows"].items():
        assert decode(blob) is not None
        assert blob == want[key]
    assert sqlite_integrity(cache) == "ok"
    assert cache_rows(cache) == want


def test_kill_after_the_first_shard_then_resume(reference, tmp_path, stanza_dir):
    """Killed as soon as the manifest lists a shard: the next shard's parse block is under way."""
    out, cache, state = _killed_then_resumed(tmp_path, stanza_dir, lambda out, cache: manifest_shards(out) != [],
                                             jobs="2")
    assert 1 <= len(state["shards"]) < 6
    assert state["rows"], "the first block's parses were committed to the cache before its shard"
    _assert_resumed_like_reference(out, cache, reference, state)


def test_kill_during_text_preparation_then_resume(reference, tmp_path, stanza_dir):
    """Killed once the source side is tokenized: the target side is being tokenized (a temp file is open)."""
    out, cache, state = _killed_then_resumed(tmp_path, stanza_dir,
                                             lambda out, cache: (out / "text" / "train.tok.de").exists())
    assert not state["dict"] and state["shards"] == [], "the kill was meant to land in text preparation"
    _assert_resumed_like_reference(out, cache, reference, state)


def test_kill_when_the_first_block_is_cached_then_resume(reference, tmp_path, stanza_dir):
    """Killed as soon as block 0's parses are committed to the cache, i.e. while its features and
    shard are being made: the resumed run reads block 0 back from the cache."""
    out, cache, state = _killed_then_resumed(tmp_path, stanza_dir, lambda out, cache: cache_count(cache) > 0)
    assert state["rows"] and len(state["shards"]) <= 1
    _assert_resumed_like_reference(out, cache, reference, state)


def test_a_filled_cache_alone_gives_the_same_shards(reference, tmp_path, stanza_dir):
    """A second run with the first run's cache parses nothing and writes the same bytes.

    In-process (-j 1), so that synprep.parse.run.PARSER_CALLS shows the parser never ran: the
    cached parses (float32 LDD through JSON, trees, heads) are exactly the fresh ones.
    """
    import shutil

    from synprep.config import DataConfig
    from synprep.parse import run as parse_run
    from synprep.parse.options import Parallel
    from synprep.pipeline import Runtime, SplitInputs, run_pipeline

    ref, ref_cache = reference
    cache = tmp_path / "cache.sqlite"
    shutil.copyfile(ref_cache, cache)
    root = Path(__file__).resolve().parent.parent
    before = parse_run.PARSER_CALLS
    cfg = DataConfig.of(src_lang="de", tgt_lang="en", lowercase=True, merges=1000, stanza_package="synprep",
                     batch_size=16, shard_size=50)
    run_pipeline(SplitInputs(src=str(root / "sample_data/train.de"), tgt=str(root / "sample_data/train.en")),
                 tmp_path / "out", cfg, runtime=Runtime(par=Parallel(jobs=1), cache=str(cache), parser={"dir": str(stanza_dir)}))
    assert parse_run.PARSER_CALLS == before
    assert_same_folder(tmp_path / "out", ref)
