"""Splits launched at the same moment as their train split wait for it (synprep/lock.py ``wait_for_split``).

Real processes: ``valid`` and ``test`` are started two seconds before ``train`` into a folder that does
not exist yet, so they look for the train split's BPE codes (``pipeline``) or vocabulary (``annotate``)
before the train run has made them (or, before the train run took its lock at its start, any sign of it). The train run takes its split lock at its start; the others wait for it, naming
it, instead of being refused. Imported CoNLL-U parses: no parser model to load.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from builders import write_corpora
from pipeline_runs import kill_group, start

from synprep.shards import check_dir


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = write_corpora(tmp_path_factory.mktemp("corpus"), {"train": 200, "valid": 20, "test": 20})
    for split in ("train", "valid", "test"):
        (d / f"{split}.raw").write_text((d / f"{split}.tgt").read_text())
    return d


def args(command: str, corpus: Path, split: str, out: Path) -> list[str]:
    common = ["--parser", "conllu", "--conllu", str(corpus / f"{split}.conllu"), "-s", "de", "-t", "en", "--out",
              str(out), "--split", split, "--shard-size", "500"]
    if command == "pipeline":  # no --codes: valid and test apply the codes the train split learns
        return ["pipeline", "--tgt", str(corpus / f"{split}.raw"), "--merges", "50", "--no-language-check", *common]
    return ["annotate", "--src", str(corpus / f"{split}.src"), "--tgt", str(corpus / f"{split}.tgt"), *common]


@pytest.mark.parametrize("command", ["pipeline", "annotate"])
def test_splits_launched_before_their_train_split_wait_for_it(corpus, tmp_path, command):
    out = tmp_path / "out"
    logs = {s: tmp_path / f"{s}.log" for s in ("valid", "test", "train")}
    procs = {s: start(args(command, corpus, s, out), logs[s]) for s in ("valid", "test")}
    time.sleep(2.0)
    procs["train"] = start(args(command, corpus, "train", out), logs["train"])
    try:
        for s, p in procs.items():
            assert p.wait(timeout=300) == 0, f"{s}: {logs[s].read_text()}"
    finally:
        for p in procs.values():
            kill_group(p)
    train = procs["train"].pid
    what = "code" if command == "pipeline" else "dict.txt"
    for s in ("valid", "test"):
        log = logs[s].read_text()
        assert re.search(rf"waiting for the train split \(pid {train} on \S+ \(.*--split train.*\)\) to write "
                         rf"\S*{re.escape(what)}", log), log
    report = check_dir(out)
    assert report.ok, report.summary()
    assert sorted(json.loads((out / "manifest.json").read_text())["splits"]) == ["test", "train", "valid"]


def test_without_a_train_run_the_split_is_refused_after_a_short_wait(corpus, tmp_path):
    """No train run starts: the refusal (one line) comes once the split's start-up wait is over, and
    leaves no folder."""
    out = tmp_path / "out"
    log = tmp_path / "valid.log"
    t0 = time.monotonic()
    p = start(args("pipeline", corpus, "valid", out), log)
    try:
        assert p.wait(timeout=120) == 2
    finally:
        kill_group(p)
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"synprep: error: no BPE codes in {out}: the valid split applies "
                                                   "the train split's codes"), lines
    assert time.monotonic() - t0 < 60 and not out.exists()
