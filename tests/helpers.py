"""Helpers the tests import: the checkout's paths, :func:`missing` (fail under CI, else skip), folders built once per
test run (:func:`shared_folder`), and the command runners :func:`run_cli` (in this process) and
:func:`run_cli_process` (a new one). ``tests/conftest.py`` holds the fixtures and is never imported by a test
module (pytest loads it; an import would load it a second time under another name).
"""

from __future__ import annotations

import io
import logging
import os
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest
from click.testing import CliRunner
from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SYNPREP_SHARED", ROOT.parent / "shared")).resolve()
SHARED_DATA = SHARED / "data"
STANZA_DIR = SHARED_DATA / "stanza_resources"
SAMPLE_DATA = ROOT / "sample_data"


def missing(msg: str) -> NoReturn:
    """A test's input is missing: it fails under CI (``CI=true``: CI never passes by skipping), else is skipped."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(msg)
    pytest.skip(msg)


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """A folder built once per test run by ``build(folder)`` and shared by every test (and every pytest-xdist
    worker: they build it under one file lock in their common temp folder). Read-only for its users: a test
    that changes it copies it first. A build that failed is redone by the next user."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # pytest-of-USER/pytest-N/, above each worker's own popen-gwK/
    folder, built = root / "shared" / name, root / "shared" / f"{name}.built"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / "shared" / f"{name}.lock")):
        if not built.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            built.touch()
    return folder


def run_cli(*args: str, input: str | bytes | None = None, cwd: Path | None = None, check: bool = True,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``synprep ARGS`` in this process, as :func:`synprep.cli.main` runs it for a user.

    The interface of :func:`run_cli_process` (a CompletedProcess: ``returncode``, ``stdout`` and ``stderr``
    apart, bytes when ``input`` is bytes), without paying for an interpreter, torch's and stanza's imports
    and a model load per call (parsers stay loaded between calls). What a command's process would own is
    set up and put back around the call: stdin/stdout/stderr (click's runner), ``sys.argv``, the working
    directory, ``os.environ`` (``env`` added), the logging handlers and levels, torch's thread count. An
    exception that escapes :func:`~synprep.cli.main` is written to stderr as Python would (exit status 1).
    Tests of the process itself (exit through ``python -m synprep``, signals, kills, locks between
    processes, imports) use :func:`run_cli_process`.
    """
    from synprep.cli import main

    if env and "SYNPREP_KILL_AFTER_WRITE" in env:  # the command would signal this process: the test run's own
        raise AssertionError("a command that kills itself (SYNPREP_KILL_AFTER_WRITE) runs with run_cli_process")
    runner = CliRunner()
    status = 0
    saved_env, saved_argv, saved_cwd = dict(os.environ), sys.argv, os.getcwd()
    root = logging.getLogger()
    loggers = [root, *(logging.getLogger(n) for n in ("synprep", "stanza", "distributed", "urllib3"))]
    saved_levels = [lg.level for lg in loggers]
    saved_handlers = root.handlers[:]
    threads = _torch_threads()
    # stdin as a process has it: a buffered reader (peek works, as on a pipe), empty when no input is given
    data = input.encode("utf-8") if isinstance(input, str) else (input or b"")
    stdin = io.BufferedReader(io.BytesIO(data))  # type: ignore[arg-type]
    with runner.isolation(input=stdin, env={k: str(v) for k, v in (env or {}).items()}) as (out, err, _):
        root.handlers = []  # synprep.cli's basicConfig then logs to this call's stderr
        sys.argv = ["synprep", *map(str, args)]
        try:
            if cwd is not None:
                os.chdir(cwd)
            main([str(a) for a in args])
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            status = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for h in root.handlers:
                h.close()
            root.handlers = saved_handlers
            for lg, level in zip(loggers, saved_levels, strict=True):
                lg.setLevel(level)
            sys.argv = saved_argv
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            if threads is not None:
                import torch

                torch.set_num_threads(threads)
        stdout, stderr = out.getvalue(), err.getvalue()
    text = not isinstance(input, bytes)
    proc = subprocess.CompletedProcess(["synprep", *args], status, stdout.decode("utf-8", "replace") if text else stdout,
                                       stderr.decode("utf-8", "replace") if text else stderr)
    if check and proc.returncode != 0:
        raise AssertionError(f"synprep {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def _torch_threads() -> int | None:
    """torch's intra-op thread count when torch is imported (a command may set it), else None."""
    torch = sys.modules.get("torch")
    return None if torch is None else int(torch.get_num_threads())


def run_cli_process(*args: str, input: str | bytes | None = None, cwd: Path | None = None, check: bool = True,
                    env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m synprep ARGS`` in a new process, as a user would; returns the CompletedProcess (bytes or
    text). For what only a process shows: its exit status, signals, imports, locks between processes."""
    text = not isinstance(input, bytes)
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "synprep", *args], input=input, capture_output=True,
                          text=text, cwd=cwd, env=full_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"synprep {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc
