"""A run owns its folder, and ``--resume`` leaves the folder as an
uninterrupted run would.

* Two ``synprep train --out RUN`` at once (real processes): the second is refused (exit 2, one
  line naming the folder and the running process), new run or ``--resume``, and writes nothing.
* A run stopped after a checkpoint (SIGKILL, or SIGTERM handled like Ctrl-C) and resumed writes the
  same ``metrics.jsonl`` rows as the run that was never stopped — the first training row after
  the resume covers the same updates with the same values — and the same checkpoints; the
  partial temporaries a killed save leaves are swept.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from builders import metrics_rows, one_line, toy_shards
from helpers import ROOT, run_cli, run_cli_process

from synprep.train.checkpoint import BEST, KILL_ENV, KILL_SIGNAL_ENV, LAST, load_checkpoint
from synprep.train.rundir import RUN_LOCK


@pytest.fixture(scope="module")
def shards(shared_data, tmp_path_factory):
    """32 train and 8 valid pairs of Multi30k as toy shards (3 batches of ≤ 256 tokens per epoch)."""
    root = tmp_path_factory.mktemp("rundir") / "shards"
    toy_shards(shared_data, root, {"train": 32, "valid": 8})
    return root


def _train(shards, out, *extra, env=None, check=True):
    """``synprep train``; a run that stops itself with a signal (:data:`KILL_ENV`) runs as a process of its own."""
    run = run_cli_process if env and KILL_ENV in env else run_cli
    return run("train", "--shards", str(shards), "--out", str(out), "--no-progress", "--device", "cpu",
               *extra, env=env, check=check)


NEW = ("--preset", "tiny", "--set", "threads=1", "--set", "max_tokens=256")


# --- item 5 ---------------------------------------------------------------------------------
def test_a_second_run_into_a_running_runs_folder_is_refused(shards, tmp_path):
    out = tmp_path / "run"
    first = subprocess.Popen([sys.executable, "-m", "synprep", "train", "--shards", str(shards), "--out", str(out),
                              "--no-progress", "--device", "cpu", *NEW, "--max-steps", "1000000", "--epochs", "0"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 120
        while not ((out / RUN_LOCK).is_file() and (out / RUN_LOCK).read_text()) and time.monotonic() < deadline:
            assert first.poll() is None, "the first run ended"
            time.sleep(0.1)
        while not (out / "metrics.jsonl").is_file() and time.monotonic() < deadline:  # it is training
            time.sleep(0.1)
        for args in (NEW + ("--max-steps", "5"), ("--resume",)):
            msg = one_line(_train(shards, out, *args, check=False), 2)
            assert f"the run folder {out} is in use by another training run, pid {first.pid} on " in msg, msg
            assert "train --shards" in msg  # the holder's command
        assert first.poll() is None  # the first run goes on, alone
        assert json.loads((out / RUN_LOCK).read_text())["pid"] == first.pid  # the refused runs left it alone
    finally:
        first.kill()
        first.wait()
    # the kernel released the killed run's lock: resuming it is allowed now
    if (out / LAST).is_file():
        _train(shards, out, "--resume", "--max-steps", "1")


def test_a_refused_start_leaves_no_folder(tmp_path):
    out = tmp_path / "run"
    proc = _train(tmp_path / "no-shards", out, *NEW, "--max-steps", "2", check=False)
    one_line(proc, 2)
    assert not out.exists()


# --- item 6 ---------------------------------------------------------------------------------
# 10 updates over epochs of 3 batches; a training row every 5 updates, an interval checkpoint
# every 2: a run stopped after the checkpoint of update 2 resumes inside the interval of row 5
STEPS = ("--set", "log_interval=5", "--set", "save_interval_updates=2", "--max-steps", "10")


def _same_checkpoints(a, b):
    for name in (BEST, LAST):
        ca, cb = load_checkpoint(a / name), load_checkpoint(b / name)
        assert ca["state"] == cb["state"], name
        for k in ca["model"]:
            assert torch.equal(ca["model"][k], cb["model"][k]), (name, k)


@pytest.fixture(scope="module")
def straight(shards, tmp_path_factory):
    out = tmp_path_factory.mktemp("straight") / "run"
    _train(shards, out, *NEW, *STEPS)
    return out


@pytest.mark.parametrize("sig", ["KILL", "TERM"])
def test_a_resumed_run_writes_the_rows_of_the_uninterrupted_run(shards, straight, tmp_path, sig):
    out = tmp_path / "run"
    stopped = _train(shards, out, *NEW, *STEPS, env={KILL_ENV: "1", KILL_SIGNAL_ENV: sig}, check=False)
    if sig == "KILL":
        assert stopped.returncode == -signal.SIGKILL
    else:  # SIGTERM is handled like Ctrl-C: one line, exit 143
        assert stopped.returncode == 143 and "Traceback" not in stopped.stderr, stopped.stderr
        assert stopped.stderr.splitlines()[-1] == "synprep: terminated (SIGTERM)"
    assert load_checkpoint(out / LAST)["state"]["step"] == 2
    # what a save killed mid-write leaves: its temporary, named with a pid that is gone, or reused by a live
    # process that is not a writer of this run folder (pid 1)
    partial = [out / ".checkpoint_best.pt.pid999999999.abc123.tmp", out / ".checkpoint_last.pt.pid1.x.tmp"]
    for p in partial:
        p.write_bytes(b"PK\x03\x04 partial")
    _train(shards, out, "--resume")
    assert not any(p.exists() for p in partial)
    assert not list(out.glob(".*.tmp"))
    expected = metrics_rows(straight)
    assert [r["step"] for r in expected if "train_loss" in r and "valid_loss" not in r] == [5, 10]
    assert metrics_rows(out) == expected  # the row of update 5 covers updates 1-5, as without the stop
    _same_checkpoints(straight, out)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in straight.iterdir())
    assert (out / RUN_LOCK).read_text() == ""  # an ended run's lock file is empty


@pytest.mark.parametrize("interval", ["x", {"loss": "nan?"}, {"n": float("inf")}])
def test_a_damaged_carried_interval_is_a_one_line_error(shards, tmp_path, interval):
    from synprep.train.checkpoint import save_checkpoint

    out = tmp_path / "run"
    _train(shards, out, *NEW, "--max-steps", "1")
    ck = load_checkpoint(out / LAST)
    ck["state"]["interval"] = interval
    save_checkpoint(out / LAST, {k: v for k, v in ck.items() if k not in ("format", "version")})
    msg = one_line(_train(shards, out, "--resume", "--max-steps", "2", check=False), 2)
    assert msg.startswith(f"synprep: error: {out / LAST}: damaged resume state: state.interval"), msg
