"""Shared fixtures.

Real data lives in ``../shared/data`` (never copied into the repo). A test that needs it uses the
``shared_data`` fixture: locally it skips when the folder is missing, but under CI (``CI=true``)
it fails, so a broken checkout can never pass by skipping.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

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


def _require(path: Path) -> Path:
    if not path.exists():
        missing(f"shared data missing: {path}")
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (fails under CI when missing)."""
    return _require(SHARED_DATA)


@pytest.fixture(scope="session")
def spec_path() -> Path:
    return _require(SHARED / "SPEC.md")


@pytest.fixture(scope="session")
def stanza_dir() -> Path:
    """The offline stanza resource directory (package ``synprep``)."""
    return _require(STANZA_DIR)


def run_cli(*args: str, input: str | bytes | None = None, cwd: Path | None = None, check: bool = True,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m synprep ARGS`` as a user would; returns the CompletedProcess (bytes or text)."""
    text = not isinstance(input, bytes)
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "synprep", *args], input=input, capture_output=True,
                          text=text, cwd=cwd, env=full_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"synprep {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc
