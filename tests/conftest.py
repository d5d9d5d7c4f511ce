"""Shared fixtures.

Real data lives in ``../shared/data`` (never copied into the repo). A test that needs it uses the
``shared_data`` fixture: locally it skips when the folder is missing, but under CI (``CI=true``)
it fails, so a broken checkout can never pass by skipping. What tests import (paths, :func:`run_cli`, ...) is in
``tests/helpers.py``: this file is loaded by pytest only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import SHARED, SHARED_DATA, STANZA_DIR, missing


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
