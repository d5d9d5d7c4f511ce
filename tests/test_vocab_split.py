"""The folder's one vocabulary comes from the train split, whatever order the splits run in.

Real processes race: ``synprep pipeline --codes`` (imported CoNLL-U parses, raw target text) and
``synprep annotate`` write train, valid and test into one folder at the same time. Valid and test
reach their vocabulary step first; they must wait for the train split's ``dict.txt`` (or refuse
when no train split runs), so the folder is byte-identical to one written split after split.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import write_corpora
from helpers import ROOT, run_cli
from test_lock import files, hold

from synprep.shards import check_dir

#: train lines with a 400-token target (dropped by the train split's cleaning, after they were tokenized)
LONG_LINES = 3000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = write_corpora(tmp_path_factory.mktemp("corpus"), {"train": 2000, "valid": 30, "test": 30})
    for split in ("train", "valid", "test"):  # raw target text: the pipeline tokenizes it
        (d / f"{split}.raw").write_text((d / f"{split}.tgt").read_text())
        (d / f"{split}.pconllu").write_text((d / f"{split}.conllu").read_text())
    # the train split's text stage takes far longer than valid's: long targets, which its cleaning drops
    long = " ".join(f"x{i % 50}" for i in range(400))
    with open(d / "train.raw", "a") as raw, open(d / "train.pconllu", "a") as conllu:
        for _ in range(LONG_LINES):
            raw.write(long + "\n")
            conllu.write("1\tw1\t_\tX\t_\t_\t0\troot\t_\t_\n\n")
    from synprep.text.bpe import learn_bpe

    learn_bpe([d / "valid.tgt"], 20, d / "codes")  # given codes: valid and test need nothing of train's but dict.txt
    return d


def pipeline_args(corpus: Path, split: str, out: Path) -> list[str]:
    return ["pipeline", "--tgt", str(corpus / f"{split}.raw"), "--parser", "conllu", "--conllu",
            str(corpus / f"{split}.pconllu"), "-s", "de", "-t", "en", "--out", str(out), "--split", split,
            "--codes", str(corpus / "codes"), "--shard-size", "500",
            "--no-language-check"]  # the long synthetic lines ("x0 x1 ...") are in no language


def annotate_args(corpus: Path, split: str, out: Path) -> list[str]:
    return ["annotate", "--src", str(corpus / f"{split}.src"), "--tgt", str(corpus / f"{split}.tgt"), "--parser",
            "conllu", "--conllu", str(corpus / f"{split}.conllu"), "-s", "de", "-t", "en", "--out", str(out),
            "--split", split, "--shard-size", "500"]


def start(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "synprep", *args], stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})


def finish(proc: subprocess.Popen, log: Path) -> None:
    assert proc.wait(timeout=600) == 0, log.read_text()


def waiting_or_done(proc: subprocess.Popen, log: Path) -> None:
    """Until the run says it waits for the train split (or ends: what synprep 0.x did, building its own)."""
    while proc.poll() is None and "waiting for the train split" not in log.read_text():
        time.sleep(0.05)


def sequential(args, corpus: Path, out: Path) -> dict[str, bytes]:
    for split in ("train", "valid", "test"):
        run_cli(*args(corpus, split, out))
    return files(out)


def test_pipeline_splits_started_side_by_side_give_the_sequential_bytes(corpus, tmp_path):
    want = sequential(pipeline_args, corpus, tmp_path / "seq")
    out = tmp_path / "race"
    logs = {s: tmp_path / f"{s}.log" for s in ("train", "valid", "test")}
    train = start(pipeline_args(corpus, "train", out), logs["train"])
    lock = out / ".train.lock"
    while train.poll() is None and not (lock.is_file() and lock.read_text()):
        time.sleep(0.02)  # the train split runs (its lock names it) before the others start
    others = [start(pipeline_args(corpus, s, out), logs[s]) for s in ("valid", "test")]
    for p, s in zip([train, *others], ("train", "valid", "test"), strict=True):
        finish(p, logs[s])
    report = check_dir(out)
    assert report.ok, report.summary()
    got = files(out)
    assert got["dict.txt"] == want["dict.txt"]  # the train split's vocabulary, not valid's or test's
    assert got == want  # every shard, manifest.json, inputs.json and text file


def test_annotate_splits_that_reach_the_vocabulary_first_wait_for_train(corpus, tmp_path):
    want = sequential(annotate_args, corpus, tmp_path / "seq")
    out = tmp_path / "race"
    out.mkdir()
    logs = {s: tmp_path / f"{s}.log" for s in ("train", "valid", "test")}
    # a train run that has started but not reached its vocabulary yet (this process holds its lock)
    fd = hold(out / ".train.lock", {"pid": os.getpid(), "host": os.uname().nodename, "command": "synprep annotate "
                                    "--split train", "started": "2026-01-01T00:00:00Z"})
    try:
        others = {s: start(annotate_args(corpus, s, out), logs[s]) for s in ("valid", "test")}
        for s, p in others.items():
            waiting_or_done(p, logs[s])
        assert all(p.poll() is None for p in others.values()), "valid/test did not wait for the train split"
        assert not (out / "dict.txt").exists()
    finally:
        os.close(fd)
    train = start(annotate_args(corpus, "train", out), logs["train"])
    for s, p in {"train": train, **others}.items():
        finish(p, logs[s])
    assert check_dir(out).ok
    assert files(out) == want


def test_a_split_without_a_train_run_is_refused(corpus, tmp_path):
    out = tmp_path / "out"
    proc = run_cli(*annotate_args(corpus, "valid", out), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"no dict.txt in {out} yet: run the train split first" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [".lock", ".valid.lock"]  # nothing written but the locks
    # a killed train run (its record names a pid that is gone) is no writer to wait for
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (out / ".train.lock").write_text(json.dumps({"pid": int(dead.stdout), "host": os.uname().nodename,
                                                 "command": "synprep annotate", "started": "x"}))
    proc = run_cli(*annotate_args(corpus, "valid", out), check=False)
    assert proc.returncode == 2 and "run the train split first" in proc.stderr


def test_the_vocabulary_split_can_be_named(corpus, tmp_path):
    """A test-only folder: ``--vocab-split test`` (recorded in pipeline.json, inherited by later splits)."""
    out = tmp_path / "out"
    run_cli(*annotate_args(corpus, "test", out), "--vocab-split", "test")
    assert json.loads((out / "pipeline.json").read_text())["vocab_split"] == "test"
    from synprep.vocab import Vocab

    assert (out / "dict.txt").read_bytes() == Vocab.build([corpus / "test.src", corpus / "test.tgt"]).to_bytes()
    run_cli(*annotate_args(corpus, "valid", out))  # inherits the folder's vocabulary split
    assert check_dir(out).ok
    proc = run_cli(*annotate_args(corpus, "train", out), "--vocab-split", "train", check=False)
    assert proc.returncode == 2 and 'vocab_split: the folder has "test", this run "train"' in proc.stderr
    # the same through --config; the default is not written (pipeline.json keeps the bytes of earlier versions)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"vocab_split": "valid"}))
    run_cli(*annotate_args(corpus, "valid", tmp_path / "v"), "--config", str(cfg))
    assert json.loads((tmp_path / "v" / "pipeline.json").read_text())["vocab_split"] == "valid"
    run_cli(*annotate_args(corpus, "train", tmp_path / "t"))
    assert "vocab_split" not in json.loads((tmp_path / "t" / "pipeline.json").read_text())


def test_shard_takes_the_vocabulary_split_too(corpus, tmp_path):
    from test_lock import shard_args

    out = tmp_path / "out"
    proc = run_cli(*shard_args(corpus, "test", out), check=False)
    assert proc.returncode == 2 and "run the train split first" in proc.stderr
    run_cli(*shard_args(corpus, "test", out), "--vocab-split", "test")
    assert json.loads((out / "pipeline.json").read_text())["vocab_split"] == "test" and check_dir(out).ok


def test_the_wait_is_bounded(corpus, tmp_path):
    """A train run that never writes its vocabulary: the other split stops after SYNPREP_VOCAB_WAIT seconds."""
    out = tmp_path / "out"
    out.mkdir()
    fd = hold(out / ".train.lock", {"pid": os.getpid(), "host": os.uname().nodename, "command": "synprep annotate "
                                    "--split train", "started": "2026-01-01T00:00:00Z"})
    try:
        proc = run_cli(*annotate_args(corpus, "valid", out), check=False, env={"SYNPREP_VOCAB_WAIT": "1"})
    finally:
        os.close(fd)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"no dict.txt in {out} after waiting 1 s for the train split, which pid {os.getpid()}" in proc.stderr
