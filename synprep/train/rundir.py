"""The run folder of ``synprep train`` as one run's property (docs/train.md).

* **The run lock** ``RUN/.train.lock``: an ``fcntl.flock`` held by the training process (rank 0
  under ``torchrun``) from the start of ``synprep train --out RUN`` (a new run or ``--resume``)
  until it ends; the kernel releases it when the process dies, so a killed run never leaves it
  behind. A second run into the same folder is refused with :class:`~synprep.lock.FolderBusy`
  (exit 2) naming the folder and the holder (pid, host, command, start time: recorded in the
  file while the run lives, emptied when it ends).
* **The sweep of partial files**: a run killed while writing a checkpoint (or ``metrics.jsonl``,
  ``config.json``, ``gates.png``) leaves its temporary file ``.NAME.pidPID.XXXX.tmp``. Under the
  run lock only this process writes the run's files, so every such temporary of a run file is
  stale and removed when a run starts; other temporaries go only when their owner is gone
  (:func:`synprep.lock.sweep_stale_temps`).
* **The metrics interval a checkpoint carries**: a ``metrics.jsonl`` training row covers the
  ``log_interval`` updates since the previous row. The sums of the updates since the last row
  (loss, NLL, target tokens, gradient norms, their count) are part of the checkpoint's ``state``,
  so the first row after ``--resume`` covers the same updates, with the same values, as in an
  uninterrupted run (only ``tokens_per_s``, a wall-clock rate, differs).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import math
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from synprep.errors import SynprepError
from synprep.links import refuse_links_out
from synprep.lock import FolderBusy, describe_owner, flock, sweep_stale_temps
from synprep.parallel import usable_cpus

log = logging.getLogger("synprep.train")

RUN_LOCK = ".train.lock"
#: the files a run writes into its folder (their temporaries are swept at the start of a run)
RUN_FILES = ("checkpoint", "metrics.jsonl", "config.json", "gates.png")
#: the sums of a metrics interval that a checkpoint carries (see the module docstring)
INTERVAL_KEYS = ("loss", "nll", "ntokens", "gnorm", "n")
#: the keys of a metrics.jsonl interval row that are wall-clock timings or this process's counters
#: (they differ between equal runs, and between a resumed run and one that never stopped)
WALL_CLOCK_KEYS = ("tokens_per_s", "seconds", "data_wait_s", "valid_s", "checkpoint_s", "checkpoint_write_s",
                   "cuda_graphs")

_held: dict[str, int] = {}  # resolved run folder → fd of its lock (this process)
_guard = threading.Lock()


def _record() -> bytes:
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(sys.argv),
                       "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode("utf-8")


def _busy(folder: Path, out: str | os.PathLike) -> FolderBusy:
    return FolderBusy(f"the run folder {out} is in use by another training run, {describe_owner(folder / RUN_LOCK)}: "
                      "wait for it to end (then --resume continues it), or use another --out")


def check_not_busy(out: str | os.PathLike) -> None:
    """Refuse early when another live process holds the run lock of ``out`` (creates nothing).

    :func:`run_lock` is the real guard; this lets the CLI name the running holder before it
    looks at the folder's checkpoints (``--resume`` with none yet, a new run over one).

    Raises:
        FolderBusy: the folder's run lock is held (the message names the folder and the holder).
    """
    folder = Path(out)
    if _held.get(str(folder.resolve())) is not None:
        return
    try:
        fd = os.open(folder / RUN_LOCK, os.O_RDONLY)
    except OSError:  # no lock file (never trained into), or unreadable: run_lock decides
        return
    try:
        flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, folder / RUN_LOCK)
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            raise _busy(folder, out) from None
        raise
    finally:
        os.close(fd)  # closing releases the probe's lock


@contextlib.contextmanager
def run_lock(out: str | os.PathLike) -> Iterator[None]:
    """Hold ``OUT/.train.lock`` for the block (reentrant within a process; the folder is created).

    A refused or failed start (an exception before anything else was written) that created the
    folder removes it again when it holds nothing but the lock file.

    Raises:
        FolderBusy: another live process trains into ``out`` (the message names the folder and it).
        ConfigError: a symbolic link in ``out`` leads out of it (``arrays`` may: docs/train.md).
        OSError: the folder cannot be created or written (a read-only folder cannot hold a run).
    """
    folder = Path(out)
    created = not folder.exists()
    refuse_links_out(folder, "--out", allowed=("arrays",))  # arrays/ on another disk: docs/train.md
    folder.mkdir(parents=True, exist_ok=True)
    key = str(folder.resolve())
    with _guard:
        if key in _held:
            reentered = True
        else:
            reentered = False
    if reentered:
        yield
        return
    path = folder / RUN_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, path)
    except SynprepError:  # a filesystem without file locks: refused before anything else was written
        os.close(fd)
        _remove_if_new(folder, created)
        raise
    except OSError as e:
        os.close(fd)
        if e.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            raise
        raise _busy(folder, out) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, _record(), 0)
    with _guard:
        _held[key] = fd
    ok = False
    try:
        yield
        ok = True
    finally:
        with _guard:
            del _held[key]
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # an idle lock file is empty: finished run folders compare byte for byte
        if not ok:
            _remove_if_new(folder, created)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _remove_if_new(folder: Path, created: bool) -> None:
    """A refused or failed start leaves no folder behind: remove ``folder`` if this start ``created`` it
    and it holds nothing but the run lock's file."""
    if created and [p.name for p in folder.iterdir()] == [RUN_LOCK]:
        with contextlib.suppress(OSError):
            (folder / RUN_LOCK).unlink()
            folder.rmdir()


def sweep_partial_files(out: str | os.PathLike) -> list[Path]:
    """Remove the temporary files of a run folder that no live run owns; returns them.

    Call it with the run lock held (:func:`run_lock`): the temporaries of the run's own files
    (checkpoints, ``metrics.jsonl``, ``config.json``, ``gates.png``) other than this process's are
    then stale whatever their pid (a pid may have been reused since); any other temporary is
    removed when its owner process is gone.
    """
    folder = Path(out)
    removed = []
    mine = f".pid{os.getpid()}."
    for p in folder.glob(".*.tmp") if folder.is_dir() else []:
        if p.name[1:].startswith(RUN_FILES) and mine not in p.name:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
            removed.append(p)
    removed += sweep_stale_temps(folder)
    for p in removed:
        log.info("removed %s, left by a run that was stopped while writing it", p)
    return removed


def carried_interval(interval: Mapping[str, Any]) -> dict[str, float]:
    """The sums of the current metrics interval to store in a checkpoint's ``state`` (plain floats)."""
    return {k: float(interval[k]) for k in INTERVAL_KEYS if k in interval}


def restored_interval(carried: Mapping[str, Any] | None) -> dict[str, Any]:
    """A metrics interval that continues ``carried`` (from a checkpoint; None or {} for a fresh one).

    ``t0`` (the wall clock the interval's ``tokens_per_s`` is measured from) restarts now, and so do its
    timings (``wait_s``, ``valid_s``, ``checkpoint_s``: seconds of that wall clock spent on them).

    Raises:
        TypeError, ValueError: ``carried`` is not a mapping of finite numbers (a damaged checkpoint).
    """
    if carried and not isinstance(carried, Mapping):
        raise TypeError(f"state.interval is a {type(carried).__name__}, not a mapping")
    iv: dict[str, Any] = {"loss": 0.0, "nll": 0.0, "ntokens": 0.0, "gnorm": 0.0, "n": 0}
    for k in INTERVAL_KEYS:
        if carried and k in carried:
            v = carried[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"state.interval[{k!r}] is {v!r}, not a finite number")
            iv[k] = int(v) if k == "n" else float(v)
    iv["t0"] = time.perf_counter()
    iv["ntokens_t0"] = iv["ntokens"]  # tokens_per_s counts the tokens since t0 only
    # wall seconds since t0 spent waiting for batches, validating, writing checkpoints (not carried: timing)
    iv.update(wait_s=0.0, valid_s=0.0, checkpoint_s=0.0)
    return iv


def bounded_workers(asked: int) -> int:
    """The DataLoader workers a run starts: ``asked`` (at most :data:`~synprep.train.config.MAX_WORKERS`
    by the config's check), but no more than this machine's CPUs, with a warning when that lowers it.

    The workers only read shards, so their number changes no result (batches come in the sampler's
    order whatever it is), only memory and speed.
    """
    cpus = usable_cpus()
    if asked > cpus:
        log.warning("num_workers %d: this machine has %d CPUs, using %d DataLoader workers", asked, cpus, cpus)
        return cpus
    return asked
