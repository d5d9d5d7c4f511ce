"""Which process a pid names: a pid alone is reused after its process ends, so a lock's owner record also holds
the process's start (the boot and the start time, from ``/proc``); a live process with the recorded pid but
another start is another process, and the owner is gone."""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (this one's included; another user's too)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def process_start(pid: int) -> str | None:
    """``BOOT_ID:START_TICKS`` of process ``pid`` (its start time in clock ticks since boot, ``/proc/PID/stat``
    field 22), or None where ``/proc`` cannot tell (no such process, another system)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="utf-8").strip()
        return f"{boot}:{stat[stat.rindex(')') + 2:].split()[19]}"
    except (OSError, ValueError, IndexError):
        return None


def same_process(pid: int, recorded: object) -> bool:
    """Whether the live process ``pid`` is the one an owner record describes by its start (``recorded``,
    :func:`process_start` when the record was written; a record without one, or a system where it cannot be
    read, is believed)."""
    if not isinstance(recorded, str):
        return True
    now = process_start(pid)
    return now is None or now == recorded
