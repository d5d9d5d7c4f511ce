"""Several commands on one output folder (synprep/lock.py).

Real processes: ``synprep shard`` (the annotate stage with imported CoNLL-U parses, no parser model
to load) writes the valid and test splits of one corpus into one folder at the same time. The
corpus is synthetic (flat trees, BPE'd words), small, with shards of 4 pairs so that both runs
save their manifest many times while the other one is writing.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import write_corpora
from helpers import ROOT, run_cli

from synprep.errors import ConfigError
from synprep.lock import check_split_name, sweep_stale_temps, temp_prefix
from synprep.shards import Manifest, check_dir


def shard_args(corpus: Path, split: str, out: Path) -> list[str]:
    return ["shard", "--src", str(corpus / f"{split}.src"), "--tgt", str(corpus / f"{split}.tgt"),
            "--conllu", str(corpus / f"{split}.conllu"), "-s", "de", "-t", "en", "--out", str(out),
            "--split", split, "--shard-size", "4"]


def start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "synprep", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def files(folder: Path) -> dict[str, bytes]:
    """Every file under the folder but the lock files, by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpora(tmp_path_factory.mktemp("corpus"), {"train": 12, "valid": 80, "test": 80})


def test_two_splits_written_concurrently_equal_sequential_runs(corpus, tmp_path):
    seq, con = tmp_path / "seq", tmp_path / "con"
    for out in (seq, con):
        run_cli(*shard_args(corpus, "train", out))  # the vocabulary (dict.txt) comes from train
    for split in ("valid", "test"):
        run_cli(*shard_args(corpus, split, seq))
    procs = [start(shard_args(corpus, split, con)) for split in ("valid", "test")]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    report = check_dir(con)
    assert report.ok, report.summary()
    assert report.pairs == {"train": 12, "valid": 80, "test": 80}
    assert files(con) == files(seq)  # shards, manifest.json, inputs.json: byte-identical


def hold(path: Path, owner: dict) -> int:
    """Hold a lock file as a running writer would (the test process is the owner)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, json.dumps(owner).encode())
    return fd


def test_a_second_writer_of_one_split_is_refused_naming_the_first(corpus, tmp_path):
    out = tmp_path / "out"
    run_cli(*shard_args(corpus, "train", out))
    before = files(out)
    fd = hold(out / ".valid.lock", {"pid": os.getpid(), "host": "h1", "command": "synprep shard --split valid",
                                    "started": "2026-01-01T00:00:00Z"})
    try:
        proc = run_cli(*shard_args(corpus, "valid", out), check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert (f"the valid split of {out} is being written by pid {os.getpid()} on h1 (synprep shard --split "
                "valid, since 2026-01-01T00:00:00Z)") in proc.stderr
        assert files(out) == before
        run_cli(*shard_args(corpus, "test", out))  # another split goes ahead meanwhile
    finally:
        os.close(fd)
    run_cli(*shard_args(corpus, "valid", out))  # once the first is gone
    assert check_dir(out).ok


def test_temps_are_swept_only_when_their_owner_is_gone_and_after_the_config_check(corpus, tmp_path):
    out = tmp_path / "out"
    run_cli(*shard_args(corpus, "train", out))
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = out / f".{'valid.00000.h5'}.pid{sleeper.pid}.abcd1234.tmp"
        live.write_bytes(b"a live run's shard")
        dead_pid = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                                  text=True).stdout.strip()
        dead = out / f".manifest.json.pid{dead_pid}.zz99_aaa.tmp"
        dead.write_bytes(b"a killed run's manifest")
        # a command refused by the configuration check leaves every file alone
        refused = run_cli(*shard_args(corpus, "valid", out), "--ldd-threshold", "0.5", check=False)
        assert refused.returncode == 2 and "another configuration" in refused.stderr
        assert live.exists() and dead.exists()
        # an accepted run removes the dead owner's temp, never the live one's
        proc = start(shard_args(corpus, "test", out))
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert live.exists() and not dead.exists()
        assert check_dir(out).ok  # a live writer's temp is work in progress, not a stray file
    finally:
        sleeper.kill()
        sleeper.wait()
    report = check_dir(out)
    assert not report.ok and "stray temporary file" in report.summary()


def test_sweep_keeps_live_and_recent_legacy_temps(tmp_path):
    mine = tmp_path / f"{temp_prefix('x')}abc.tmp"
    legacy = tmp_path / ".x.k2j3abcd.tmp"
    old = tmp_path / ".y.k2j3abcd.tmp"
    for p in (mine, legacy, old):
        p.write_text("")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert sweep_stale_temps(tmp_path) == [old]
    assert mine.exists() and legacy.exists()


def test_concurrent_manifest_saves_keep_both_splits(tmp_path):
    """Two writers each loaded the manifest before the other saved: nothing is lost, nothing stale comes back."""
    Manifest("sig", {}).save(tmp_path)
    a, b = Manifest.load(tmp_path), Manifest.load(tmp_path)
    a.set_input_lines("valid", 3)
    a.save(tmp_path)
    b.set_input_lines("test", 4)
    b.save(tmp_path)
    a.record_drop("valid", 1, "parse:failed")
    a.save(tmp_path)  # a never saw test: it keeps b's entry
    b.set_input_lines("test", 5)
    b.save(tmp_path)  # b's copy of valid is stale: the file's wins
    m = Manifest.load(tmp_path)
    assert m.splits["valid"].input_lines == 3 and m.splits["valid"].dropped == {"parse:failed": 1}
    assert m.splits["test"].input_lines == 5


def test_an_unchanged_manifest_is_not_rewritten(tmp_path):
    m = Manifest("sig", {})
    m.set_input_lines("train", 2)
    path = m.save(tmp_path)
    ino = path.stat().st_ino
    Manifest.load(tmp_path).save(tmp_path)
    assert path.stat().st_ino == ino


def test_resuming_a_finished_split_writes_nothing(corpus, tmp_path):
    """Resuming a finished split rewrites no file (inodes kept), so a read-only archive resumes too."""
    out = tmp_path / "out"
    run_cli(*shard_args(corpus, "train", out))
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    read_only = os.geteuid() != 0  # root writes into read-only folders anyway: the inodes tell
    if read_only:
        out.chmod(0o555)
    try:
        proc = run_cli(*shard_args(corpus, "train", out), check=False)
        assert proc.returncode == 0, proc.stderr
        assert "OK" in proc.stderr
    finally:
        out.chmod(0o755)
    after = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()
             and not p.name.endswith(".lock")}
    assert after == {p: v for p, v in before.items() if not p.name.endswith(".lock")}


@pytest.mark.parametrize("bad", ["../../x", "a/b", "", ".", "x y", "tr\x00in", "..", "é"])
def test_invalid_split_names_are_refused_before_any_io(corpus, tmp_path, bad):
    with pytest.raises(ConfigError, match="invalid split name"):
        check_split_name(bad)
    if "\x00" in bad:
        return  # not passable as a command-line argument
    out = tmp_path / "deep" / "out"
    proc = run_cli(*shard_args(corpus, "train", out)[:-4], "--split", bad, check=False)
    assert proc.returncode == 2 and "invalid split name" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "deep").exists() and not (tmp_path / "x").exists()


def test_library_refuses_an_invalid_split_before_any_io(corpus, tmp_path):
    from synprep.config import DataConfig
    from synprep.pipeline import SplitInputs, run_annotate

    out = tmp_path / "out"
    with pytest.raises(ConfigError, match="invalid split name"):
        run_annotate(SplitInputs(split="../escape", src=str(corpus / "train.src"), tgt=str(corpus / "train.tgt"),
                                 conllu=str(corpus / "train.conllu")),
                     out, DataConfig.of(src_lang="de", tgt_lang="en", parser="conllu"))
    assert not out.exists() and not (tmp_path / "escape.00000.h5").exists()


@pytest.mark.parametrize("key", ["../../etc", "a\nb"])
def test_check_rejects_an_invalid_split_key(corpus, tmp_path, key):
    """A violation like any damage inside the folder (exit 1, docs/shards.md), in one line, and a
    violation object with --json; 2 stays for check's own usage errors (no such DIR)."""
    out = tmp_path / "out"
    run_cli(*shard_args(corpus, "train", out))
    d = json.loads((out / "manifest.json").read_text())
    d["splits"][key] = d["splits"].pop("train")
    (out / "manifest.json").write_text(json.dumps(d))
    proc = run_cli("check", str(out), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    failed = [x for x in proc.stderr.splitlines() if "FAILED" in x or "split name" in x]
    assert failed == [f"synprep check: FAILED {out}: manifest.json: malformed manifest: split name {key!r} is not "
                      "valid (letters, digits, '_' and '-' only)"], proc.stderr
    proc = run_cli("check", str(out), "--json", check=False)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["violation"]["file"] == "manifest.json"


def test_manifest_vocab_path_must_stay_inside(corpus, tmp_path):
    out = tmp_path / "out"
    run_cli(*shard_args(corpus, "train", out))
    d = json.loads((out / "manifest.json").read_text())
    d["vocab"]["path"] = "../dict.txt"
    (out / "manifest.json").write_text(json.dumps(d))
    proc = run_cli("check", str(out), check=False)
    assert proc.returncode == 1 and "vocab path '../dict.txt' is not a file name inside the folder" in proc.stderr
