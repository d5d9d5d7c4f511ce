"""Locks on an output folder, so that several commands can write into one ``OUT`` safely (docs/hardening.md).

Two kinds of ``fcntl.flock`` locks, both released by the kernel when their process ends (a killed
run never leaves a lock behind):

* **the split lock** ``OUT/.SPLIT.lock``, held by a writing command (``synprep pipeline``,
  ``annotate``, ``shard``) for its whole run: a second writer of the *same* split is refused with
  :class:`FolderBusy`, naming the running process (pid, host, command, start time recorded in the
  file while it runs, emptied when it ends). Writers of *different* splits run side by side.
* **the folder lock** ``OUT/.lock`` (empty while free; its holder recorded while held), held for short
  critical sections: every write of a file at the folder's top level (``manifest.json``, ``pipeline.json``,
  ``inputs.json``, ``code``, ``dict.txt``, a shard with its manifest entry) and the final ``check``. A
  writer waits for it, naming the holder after a few seconds, and stops after an hour.
  :meth:`synprep.shards.Manifest.save` re-reads the manifest under this lock and merges the other
  writers' splits before saving, so concurrent splits never drop each other's entries.

Temporary files carry their owner's pid (``.NAME.pidPID.XXXXXXXX.tmp``, :func:`temp_prefix`);
:func:`sweep_stale_temps` removes only those whose owner is gone, so a run never deletes a live
run's files. A folder that cannot be written (a read-only archive) is used without locks: reading
it needs none, and any write fails with an error naming the file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import inspect
import json
import logging
import os
import re
import shlex
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from synprep import timeline
from synprep.errors import ConfigError, InputError
from synprep.proc import pid_alive as _pid_alive
from synprep.proc import process_start, same_process
from synprep.temps import (  # noqa: F401 - temp_prefix, live_temp, sweep_stale_temps, LEGACY_TEMP_AGE: their old home
    LEGACY_TEMP_AGE,
    live_temp,
    sweep_stale_temps,
    temp_prefix,
)

log = logging.getLogger(__name__)

FOLDER_LOCK = ".lock"
#: the split name rule (README "Output folder"): letters, digits, ``_`` and ``-``
SPLIT_RE = re.compile(r"^[A-Za-z0-9_-]+$")


class FolderBusy(ConfigError):
    """Another live process writes the same split into the folder (the message names it)."""


def check_split_name(split: Any) -> str:
    """``split`` when it is a valid split name (``[A-Za-z0-9_-]+``), checked before any file is touched.

    A split name becomes part of file names (``OUT/SPLIT.NNNNN.h5``, ``OUT/text/SPLIT.tok.L``), so
    ``../x`` or ``a/b`` would write outside the folder.

    Raises:
        ConfigError: not a string, empty, or a character outside ``A-Z a-z 0-9 _ -``.
    """
    if not isinstance(split, str) or not SPLIT_RE.match(split):
        raise ConfigError(f"invalid split name {split!r}: use letters, digits, '_' and '-' only")
    return split


def _owner_record(**extra: Any) -> str:
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": shlex.join(sys.argv),
                       "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "pid_start": process_start(os.getpid()), **extra})


def describe_owner(path: Path) -> str:
    """``pid 123 on host h (synprep pipeline …, since T)`` from a lock file, or a neutral phrase."""
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        return f"pid {d['pid']} on {d['host']} ({d['command']}, since {d['started']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


#: errnos of ``flock`` on a filesystem without file locks: Lustre mounted without ``-o flock`` (ENOSYS),
#: NFS without its lock service (ENOLCK), some FUSE filesystems (EOPNOTSUPP)
NO_LOCKS = frozenset({errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP})


def flock(fd: Any, op: int, path: str | os.PathLike) -> None:
    """``fcntl.flock(fd, op)`` for one of synprep's locks on ``path``; a filesystem without file locks is
    a clear error instead of a bare ``OSError`` ("Function not implemented").

    Raises:
        BlockingIOError: ``LOCK_NB`` and the lock is held elsewhere (as ``fcntl.flock``).
        InputError: ``PATH: …`` the filesystem has no file locks (errno in :data:`NO_LOCKS`): synprep
            locks its output and run folders, so the folder must be on one that has them.
        OSError: any other failure.
    """
    try:
        fcntl.flock(fd, op)
    except OSError as e:
        if e.errno not in NO_LOCKS:
            raise
        raise InputError(f"cannot lock this file: its filesystem has no file locks ({e.strerror}). synprep locks "
                         "output and run folders so that two runs never write one at once: put the folder on a "
                         "filesystem with locks (a local disk; Lustre mounted with -o flock)", str(path)) from None


def _open_lock_file(path: Path) -> int | None:
    """An fd on the lock file (created when missing), or None when the folder cannot be written.

    Raises:
        ConfigError: the folder can be written but the lock file cannot (another user's): a run
            that went on without it could write beside a run of that user.
    """
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as e:
        if e.errno in (errno.EACCES, errno.EPERM) and path.exists() and os.access(path.parent, os.W_OK):
            raise ConfigError(f"cannot lock {path.parent}: its lock file {path.name} belongs to "
                              f"{_file_owner(path)} and this user cannot write it, so a run of that user could "
                              f"write the folder at the same time; make the file writable for both (chmod a+w "
                              f"{path}), or remove it while no synprep command runs in the folder") from None
        if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            log.debug("cannot lock %s (%s): a read-only folder is used without locks", path, e.strerror)
            return None
        raise


def _file_owner(path: Path) -> str:
    """``user NAME`` (or ``uid N``) owning ``path``."""
    import pwd

    try:
        uid = path.stat().st_uid
    except OSError:
        return "another user"
    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"uid {uid}"


_held: dict[str, list[int]] = {}  # folder lock path → [fd, depth] of this process (reentrant)
_held_guard = threading.Lock()


#: how long a command waits for ``OUT/.lock`` before it stops, naming the holder (seconds;
#: ``SYNPREP_FOLDER_LOCK_WAIT`` overrides). Its holders keep it for one file's write, or for the final
#: check of a split (hashing its shards: minutes for a WMT-sized split), never for a whole run.
FOLDER_LOCK_WAIT_S = 3600.0
#: seconds of waiting for ``OUT/.lock`` before the holder is named in a log line
FOLDER_LOCK_TELL_S = 2.0


@contextlib.contextmanager
def folder_lock(out: str | os.PathLike) -> Iterator[None]:
    """Hold ``OUT/.lock`` (exclusive, reentrant within a process) for a short critical section.

    Its holder is recorded in the file while held (pid, host, command, start: :func:`describe_owner`),
    emptied when released. Waits while another process holds it: after :data:`FOLDER_LOCK_TELL_S` a
    log line names the holder; after :data:`FOLDER_LOCK_WAIT_S` the command stops. Does nothing when
    ``out`` does not exist yet or cannot be written.

    A part (``--part``) on a filesystem without file locks goes on without it, as without its part lock
    (:func:`claim`): its prepared split's shared files exist already and it writes only files of its own.

    Raises:
        FolderBusy: the lock was held longer than :data:`FOLDER_LOCK_WAIT_S` (naming the holder).
        InputError: the filesystem has no file locks (:func:`flock`), but for a part.
    """
    path = Path(out) / FOLDER_LOCK
    key = str(path.resolve()) if Path(out).exists() else str(path)
    with _held_guard:
        entry = _held.get(key)
        if entry is not None:
            entry[1] += 1
    if entry is not None:
        try:
            yield
        finally:
            with _held_guard:
                entry[1] -= 1
        return
    if not Path(out).is_dir():
        yield
        return
    fd = _open_lock_file(path)
    if fd is None:
        yield
        return
    try:
        wait_s = float(os.environ.get("SYNPREP_FOLDER_LOCK_WAIT", FOLDER_LOCK_WAIT_S))
        t0, told, locked = time.monotonic(), False, True
        while True:
            try:
                flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, path)
                break
            except InputError:  # no file locks here
                claims = _split_locks.get()
                if claims is None or not claims.without_locks:
                    raise
                locked = False  # a part: it writes only files of its own (synprep.pipeline.parts)
                break
            except BlockingIOError:
                waited = time.monotonic() - t0
                if waited > wait_s:
                    raise FolderBusy(f"{path} has been held for more than {wait_s:g} s by {describe_owner(path)}: "
                                     "if that process hangs, stop it (its lock goes with it); else run this "
                                     "command again once it has finished") from None
                if not told and waited > FOLDER_LOCK_TELL_S:
                    log.info("waiting for %s: %s holds it (another synprep command writing into %s)", path,
                             describe_owner(path), out)
                    told = True
                time.sleep(0.05)
        if not locked:
            yield
            return
        with contextlib.suppress(OSError):  # who holds it, for the commands that wait
            os.ftruncate(fd, 0)
            os.pwrite(fd, _owner_record().encode("utf-8"), 0)
        with _held_guard:
            _held[key] = [fd, 1]
        try:
            yield
        finally:
            with _held_guard:
                del _held[key]
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # an idle lock file is empty
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def split_writer(out: str | os.PathLike, split: str) -> str | None:
    """Who writes ``split`` into ``out`` right now (``pid 123 on host h (synprep …, since T)``), or None.

    Read from the split lock's owner record (:func:`hold_split`), never by taking the lock, so a
    writer that starts meanwhile is not refused because of the question. A record left by a killed
    run (its pid gone, or reused by a process of another start) is no writer. A record from another host
    cannot be checked by pid: the lock is probed then (a shared, non-blocking ``flock``, released at once).
    """
    path = Path(out) / f".{check_split_name(split)}.lock"
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        pid, host = int(d["pid"]), str(d["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no lock file, or an empty one: no writer (or one that has not written its record yet)
    if host == socket.gethostname():  # a reused pid is another process: its start differs
        return describe_owner(path) if _pid_alive(pid) and same_process(pid, d.get("pid_start")) else None
    return lock_holder(path)


def lock_holder(path: Path) -> str | None:
    """The holder of lock file ``path`` (:func:`describe_owner`), probed with a shared, non-blocking ``flock``
    released at once; None when nobody holds it, when there is no such file, or where the filesystem has no
    locks (nobody can be writing with one there).

    Raises:
        OSError: another failure to open or probe the file.
    """
    fd = _open_lock_file(path) if path.is_file() else None
    if fd is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return describe_owner(path)
    except OSError as e:  # a folder copied onto a filesystem without locks: nobody can be writing it with one
        if e.errno in NO_LOCKS or e.errno == errno.EINVAL:
            return None
        raise
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class _Claims:
    """The split locks one :func:`writer` call holds (fds, lock paths) and the folders it created to hold them."""

    def __init__(self) -> None:
        self.fds: list[int] = []
        self.paths: set[str] = set()
        self.created: list[Path] = []  # deepest first
        self.without_locks = False  # a part on a filesystem without file locks: the folder lock is skipped too


_split_locks: ContextVar[_Claims | None] = ContextVar("synprep_split_locks", default=None)


def hold_split(out: str | os.PathLike, split: str, *, create: bool = False) -> None:
    """Take the split lock ``OUT/.SPLIT.lock`` for the rest of the current :func:`writer` call (taken
    again in the same call: nothing to do).

    Outside a :func:`writer` call it is held until the process ends.

    Args:
        create: create ``out`` (with its parents) when missing, so that the lock is taken at a
            command's start; if the :func:`writer` call then fails, the lock file and the folders
            created for it are removed again (when nothing else was written into them).

    Raises:
        FolderBusy: another live process writes this split into ``out`` (named in the message).
        ConfigError: an invalid split name.
    """
    check_split_name(split)
    path = Path(out) / f".{split}.lock"
    claims = _split_locks.get()
    if claims is not None and str(path) in claims.paths:
        return
    if create and not Path(out).is_dir():
        new = [d for d in (Path(out), *Path(out).parents) if not d.exists()]
        Path(out).mkdir(parents=True, exist_ok=True)
        if claims is not None:
            claims.created.extend(new)
    fd = claim(path, f"the {split} split of {out} is being written by {{owner}}: wait for it to finish (running "
                     "the same command afterwards resumes), or use another --out", split=split)
    if fd is not None and claims is not None:
        claims.fds.append(fd)  # released when the writer call returns; else when the process ends
        claims.paths.add(str(path))


def claim(path: Path, busy: str, *, without_locks: bool = False, **owner: Any) -> int | None:
    """Take the exclusive lock of the lock file ``path`` (created) without waiting and write its owner record
    (this process, and ``owner``'s fields); the fd, which holds the lock until it is closed (or the process
    ends). Every writer lock of an output folder is taken here: the split's, a part's.

    Args:
        busy: the message where another live process holds the lock; ``{owner}`` is replaced by its owner
            record in words (:func:`describe_owner`).
        without_locks: on a filesystem without file locks, run without the lock (logged) instead of refusing;
            :func:`folder_lock` is then skipped too for the rest of the current :func:`writer` call.

    Returns:
        The fd, or None: the folder is read-only (:func:`_open_lock_file`), or it has no file locks and
        ``without_locks``.

    Raises:
        FolderBusy: another live process holds the lock.
        InputError: the filesystem has no file locks (:func:`flock`), unless ``without_locks``.
        ConfigError: the lock file is another user's and this one cannot write it.
    """
    fd = _open_lock_file(path)
    if fd is None:
        return None
    try:
        flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, path)
    except BlockingIOError:
        os.close(fd)
        raise FolderBusy(busy.format(owner=describe_owner(path))) from None
    except InputError:  # no file locks here
        os.close(fd)
        if not without_locks:
            raise
        log.info("%s: the filesystem has no file locks: going on without this lock", path)
        claims = _split_locks.get()
        if claims is not None:
            claims.without_locks = True
        return None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, _owner_record(**owner).encode("utf-8"), 0)
    return fd


def _undo_created(claims: _Claims) -> None:
    """A failed :func:`writer` call: its lock files in the folders it created, and those folders, removed
    when nothing else was written into them."""
    for d in claims.created:
        ours = {Path(p).name for p in claims.paths if Path(p).parent == d}
        with contextlib.suppress(OSError):
            if ours and set(os.listdir(d)) == ours:  # nothing but the lock files: the run wrote nothing
                for name in ours:
                    os.unlink(d / name)
            d.rmdir()  # only an empty folder


def process_age() -> float:
    """Seconds since this process started (its start as :func:`synprep.timeline.process_start` reads it, once)."""
    return max(0.0, time.time() - timeline.process_start())


#: a split that needs another split's files (the train split's BPE codes, its ``dict.txt``) and finds no
#: writer of it waits this long after its own start for one to appear, so that splits launched together
#: wait for their train split instead of being refused (seconds; ``SYNPREP_START_WAIT`` overrides)
START_WAIT_S = 10.0


def wait_for_split(out: str | os.PathLike, split: str, ready: Callable[[], bool], *, what: str, why: str,
                   refusal: str | None, wait_s: float) -> None:
    """Return once ``ready()`` holds, waiting while a live process writes ``split`` into ``out``
    (:func:`split_writer`; logged once, naming it), at most ``wait_s`` seconds. Without a writer, a
    process started less than :data:`START_WAIT_S` seconds ago waits for one to appear: launched
    together, the writer takes its split lock a moment after its start. Nothing is held while waiting.

    Args:
        ready: whether what is awaited is there (a file exists; a writer runs).
        what: what is awaited, for the messages (``OUT/code``). why: the log line's reason.
        refusal: the error message when no writer runs (None: return then, the caller refuses).

    Raises:
        ConfigError: ``refusal`` (no live writer of ``split``), or the wait ran out (naming the writer).
    """
    deadline = time.monotonic() + wait_s
    start_wait = float(os.environ.get("SYNPREP_START_WAIT", START_WAIT_S))
    told = told_start = False
    while not ready():
        owner = split_writer(out, split)
        if owner is None:
            if ready():  # it finished between the two looks
                return
            left = start_wait - process_age()
            if left <= 0:
                if refusal is None:
                    return
                raise ConfigError(refusal)
            if not told_start:  # debug: a refusal stays one line
                log.debug("no %s split runs in %s yet: waiting up to %.0f s for one starting beside this run",
                          split, out, left)
                told_start = True
            time.sleep(min(0.2, left))
            continue
        if time.monotonic() >= deadline:
            raise ConfigError(f"no {what} after waiting {wait_s:g} s for the {split} split, which {owner} is "
                              "writing: run this split again once it has finished")
        if not told:
            log.info("waiting for the %s split (%s) to write %s: %s", split, owner, what, why)
            told = True
        time.sleep(0.2)


F = TypeVar("F", bound=Callable[..., Any])


def writer(func: F) -> F:
    """Decorate a command that writes a split into a folder (argument ``inputs``, whose ``split`` names it).

    The split name is validated before anything else runs; split locks taken inside with
    :func:`hold_split` are released when the call returns.
    """
    sig = inspect.signature(func)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        check_split_name(bound.arguments["inputs"].split)
        claims = _Claims()
        token = _split_locks.set(claims)
        failed = True
        try:
            result = func(*args, **kwargs)
            failed = False
            return result
        finally:
            _split_locks.reset(token)
            for fd in claims.fds:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)  # an idle lock file is empty: finished folders compare byte for byte
                    fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            if failed:
                _undo_created(claims)

    return wrapper  # type: ignore[return-value]
