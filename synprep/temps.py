"""Temporary files named after their owner process, so a run never deletes a live run's files.

A temporary file is ``.NAME.pidPID.XXXXXXXX.tmp`` (:func:`temp_prefix`); :func:`sweep_stale_temps` removes
only those whose owner is gone (and those of an older synprep without a pid, once old).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from pathlib import Path

from synprep.proc import pid_alive as _pid_alive

log = logging.getLogger("synprep.lock")  # the lock module's logger, where the sweep has always logged

#: the pid in a temporary file's name: ``.NAME.pid1234.abcd_123.tmp``
_TEMP_RE = re.compile(r"\.pid(\d+)\.[A-Za-z0-9_]+\.tmp$")
#: temporary files without a pid (written by synprep before 0.1.1) are swept when older than this (s)
LEGACY_TEMP_AGE = 3600.0


def temp_prefix(name: str) -> str:
    """The ``mkstemp`` prefix of a temporary file for target ``name``: ``.NAME.pidPID.``."""
    return f".{name}.pid{os.getpid()}."


def live_temp(path: Path) -> bool:
    """True when ``path`` (a ``.*.tmp`` file) names a pid (:func:`temp_prefix`) still running on this host."""
    m = _TEMP_RE.search(path.name)
    return m is not None and _pid_alive(int(m.group(1)))


def _stale(path: Path) -> bool:
    if _TEMP_RE.search(path.name) is not None:
        return not live_temp(path)
    try:  # no pid in the name (an older synprep): stale once old
        return time.time() - path.stat().st_mtime >= LEGACY_TEMP_AGE
    except FileNotFoundError:
        return False


def sweep_stale_temps(*folders: str | os.PathLike) -> list[Path]:
    """Remove the temporary files (``.*.tmp``) in ``folders`` whose owner process is gone; returns them.

    A temporary file without a pid in its name (an older synprep's) is removed once it is
    :data:`LEGACY_TEMP_AGE` seconds old.

    Call it only after the configuration check has accepted this run: a refused command must
    leave the folder as it found it.
    """
    removed = []
    for d in map(Path, folders):
        if not d.is_dir():
            continue
        for p in d.glob(".*.tmp"):
            if _stale(p):
                log.debug("removing stale %s", p)
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
                removed.append(p)
    return removed
