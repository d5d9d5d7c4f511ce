"""Every route through the data side makes, file for file, the bytes recorded in ``tests/golden_folders.json``.

The routes (tests/golden_folders.py :data:`~golden_folders.ROUTES`): raw ``pipeline``; a later split into
the same folder; ``--tokenized`` (with ``--lowercase``); ``--trees``; ``--parser conllu``; ``--subword spm``;
``--subword hf``; ``annotate --parse-src``; three ``--part`` s prepared, run and merged; ``export`` in each
format (parquet, hf, fairseq, factors). Each folder's every file is compared: shards, ``manifest.json``,
``dict.txt``, ``pipeline.json``, ``inputs.json`` (its absolute paths read relative to the build folder),
the codes or subword model, ``text/``, the exports' data files (not the fairseq export's copy of synprep's
source: :data:`~golden_folders.SOURCE_COPIES`). A change to the code that is meant to keep
the output keeps these bytes; one that changes the output on purpose records them again with
``python tests/golden_folders.py`` (and says why in its commit).
"""

from __future__ import annotations

import json

import pytest
from golden_folders import GOLDEN, ROUTES, build_digests


@pytest.fixture(scope="module")
def built(tmp_path_factory, stanza_dir, shared_data):
    return build_digests(tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize("route", ROUTES)
def test_every_file_of_the_route_has_its_recorded_bytes(built, route):
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))[route]
    got = built[route]
    assert sorted(got) == sorted(want), f"files made / not made: {sorted(set(got) ^ set(want))}"
    differ = sorted(k for k in want if got[k] != want[k])
    assert not differ, f"{route}: these files differ from the recorded ones: {differ}"
