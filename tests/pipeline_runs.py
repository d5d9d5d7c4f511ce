"""Helpers for tests that run ``synprep pipeline`` as a user would: in a subprocess, killed or not.

Used by test_resume.py, test_dask.py and test_hostile.py. Real stanza runs (the offline models
in ``../shared/data/stanza_resources``); inputs are kept small.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
from helpers import ROOT, SAMPLE_DATA, run_cli, shared_folder

#: text-stage and shard options of every pipeline run here (the configuration is part of the output)
TEXT_FLAGS = ("--lowercase", "--shard-size", "50", "--merges", "1000", "--batch-size", "16")


def pipeline_args(out: Path, cache: Path | None, stanza_dir: Path, *extra: str, src: Path | None = None,
                  tgt: Path | None = None, flags: tuple[str, ...] = TEXT_FLAGS) -> list[str]:
    """The arguments of ``synprep pipeline`` on sample_data's train split, de→en."""
    src = src or SAMPLE_DATA / "train.de"
    tgt = tgt or SAMPLE_DATA / "train.en"
    cache_args = ["--cache", str(cache)] if cache is not None else ["--no-cache"]
    return ["pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(out), *flags,
            *cache_args, "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", *extra]


def reference_run(tmp_path_factory, stanza_dir: Path) -> tuple[Path, Path]:
    """``(out, cache)`` of one uninterrupted -j 1 run with a fresh cache, made once per test run and read-only
    (test_resume.py, test_hostile.py and others compare against the same bytes)."""
    d = shared_folder(tmp_path_factory, "reference",
                      lambda d: run_cli(*pipeline_args(d / "out", d / "cache.sqlite", stanza_dir, "-j", "1")))
    return d / "out", d / "cache.sqlite"


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def start(args: list[str], log: Path) -> subprocess.Popen:
    """Start ``python -m synprep ARGS`` in its own process group (so a test can clean up its workers)."""
    with open(log, "wb") as err:  # the child has its own copy of the descriptor
        return subprocess.Popen([sys.executable, "-m", "synprep", *args], stdout=subprocess.DEVNULL, stderr=err,
                                env=env(), cwd=ROOT, start_new_session=True)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL whatever is left of the process's group (orphaned loky workers)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_when(proc: subprocess.Popen, ready: Callable[[], bool], timeout: float = 240.0,
              poll: float = 0.005) -> None:
    """Poll ``ready()``; when it holds, SIGKILL the main process (only it, like ``kill -9 PID``).

    Raises:
        AssertionError: the process ended, or ``timeout`` passed, before ``ready()`` held.
    """
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"the pipeline ended (exit {proc.returncode}) before the kill point")
        if time.monotonic() > deadline:
            kill_group(proc)
            raise AssertionError("the kill point was never reached")
        time.sleep(poll)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def run(args: list[str], timeout: float = 300.0) -> subprocess.CompletedProcess:
    """Run ``python -m synprep ARGS`` to the end (text output); its whole process group is removed after."""
    proc = subprocess.Popen([sys.executable, "-m", "synprep", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env(), cwd=ROOT, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        kill_group(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_ok(args: list[str], timeout: float = 300.0) -> subprocess.CompletedProcess:
    proc = run(args, timeout)
    assert proc.returncode == 0, f"synprep {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def manifest_shards(out: Path) -> list[str]:
    """The shard files the folder's manifest lists (``[]`` when there is no manifest yet)."""
    try:
        d = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    return [s["file"] for e in d["splits"].values() for s in e["shards"]]


def folder_bytes(out: Path) -> dict[str, bytes]:
    """Every file under ``out`` (relative path → bytes) but the lock files (``.lock``, ``.SPLIT.lock``:
    synprep.lock; empty when no command runs, not output)."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")}


def assert_same_folder(got: Path, want: Path) -> None:
    """Byte identity of two output folders: shards, manifest, dict, codes and every text file."""
    a, b = folder_bytes(got), folder_bytes(want)
    assert sorted(a) == sorted(b), f"different files: {sorted(set(a) ^ set(b))}"
    differ = [k for k in a if a[k] != b[k]]
    assert not differ, f"files differ from the reference: {differ}"


def temp_files(*folders: Path) -> list[Path]:
    """Temporary files left anywhere under the folders (atomic writes use ``.NAME.XXXX.tmp``)."""
    return [p for f in folders if f.exists() for p in f.rglob("*") if p.name.endswith(".tmp")]


def assert_lines_accounted(out: Path, split: str = "train") -> np.ndarray:
    """Every input line is in exactly one shard or dropped once, shards in order; returns the stored lines."""
    m = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["splits"][split]
    stored = []
    for s in m["shards"]:
        with h5py.File(out / s["file"], "r") as f:
            stored.append(f["line"][()].astype(np.int64))
    lines = np.concatenate(stored)
    assert np.all(np.diff(lines) > 0), "a line is stored twice or out of order"
    dropped = [x[0] for x in m["dropped_lines"]]
    everything = np.sort(np.concatenate([lines, np.asarray(dropped, dtype=np.int64)]))
    assert np.array_equal(everything, np.arange(1, m["input_lines"] + 1)), "a line is missing or duplicated"
    return lines


def sqlite_integrity(path: Path) -> str:
    db = sqlite3.connect(str(path))
    try:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        db.close()


def cache_rows(path: Path) -> dict[bytes, bytes]:
    """Every ``key → value`` of a parse cache (``{}`` while it has no table yet)."""
    db = sqlite3.connect(str(path), timeout=30)
    try:
        return dict(db.execute("SELECT key, value FROM parses").fetchall())
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return {}
        raise
    finally:
        db.close()


def cache_count(path: Path) -> int:
    """Entries in a parse cache that another process is writing (0 while missing or empty)."""
    if not path.exists():
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return int(db.execute("SELECT COUNT(*) FROM parses").fetchone()[0])
    except sqlite3.OperationalError:  # no table yet
        return 0
    finally:
        db.close()
