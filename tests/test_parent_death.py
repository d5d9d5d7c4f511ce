"""The loky workers of a ``-j 2`` run end when their parent dies (SIGKILL or
SIGTERM), and SIGTERM stops a command like Ctrl-C: a one-line message, exit 143, nothing
half-written, and running the same command again finishes the split (``check`` passes).

Real processes throughout: a real ``synprep pipeline -j 2`` parsing with the offline stanza models,
its workers found with psutil while it runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from helpers import ROOT, SHARED_DATA, run_cli

TED = SHARED_DATA / "ted_toy"
#: a worker must be gone this many seconds after its parent (it looks every 0.25 s)
GRACE = 20.0


def _args(stanza_dir, tmp_path):
    for lang in ("de", "en"):  # 300 pairs: a parse stage of several seconds, a short resume
        lines = (TED / f"train.{lang}").read_text(encoding="utf-8").splitlines(keepends=True)[:300]
        (tmp_path / f"in.{lang}").write_text("".join(lines), encoding="utf-8")
    return ["pipeline", "--src", str(tmp_path / "in.de"), "--tgt", str(tmp_path / "in.en"), "-s", "de", "-t", "en",
            "--out", str(tmp_path / "out"), "--merges", "500", "-j", "2", "--stanza-dir", str(stanza_dir),
            "--stanza-package", "synprep", "--cache", str(tmp_path / "cache.sqlite")]


def _start_until_workers(args):
    """Start ``synprep ARGS``; return it and its loky workers once two of them run (the parse stage)."""
    proc = subprocess.Popen([sys.executable, "-m", "synprep", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            workers = [c for c in parent.children(recursive=True) if "LokyProcess" in " ".join(c.cmdline())]
        except psutil.Error:
            workers = []
        if len(workers) >= 2:
            time.sleep(2.0)  # let them load the parser and take work
            return proc, workers
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"no loky workers appeared (exit {proc.poll()}):\n{proc.stderr.read() if proc.stderr else ''}")


def _assert_gone(workers):
    gone, alive = psutil.wait_procs(workers, timeout=GRACE)
    for p in alive:  # do not leave them behind when the test fails
        p.kill()
    assert not alive, f"workers outlived their parent: {[p.pid for p in alive]}"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_end_with_their_parent(tmp_path, stanza_dir, sig):
    args = _args(stanza_dir, tmp_path)
    proc, workers = _start_until_workers(args)
    proc.send_signal(sig)
    proc.wait(timeout=120)
    _assert_gone(workers)
    if sig == signal.SIGTERM:  # like Ctrl-C: one line, exit 143, and the same command resumes
        assert proc.returncode == 143
        err = proc.stderr.read() if proc.stderr else ""
        assert "Traceback" not in err, err
        assert [x for x in err.splitlines() if x.strip()][-1] == "synprep: terminated (SIGTERM)", err
        out = tmp_path / "out"
        assert not [p for p in out.rglob("*") if p.name.endswith(".tmp") and "pid" not in p.name]
        run_cli(*args)
        run_cli("check", str(out))
    else:
        assert proc.returncode == -signal.SIGKILL
