"""A shard's decoded arrays as read-only memory maps, so that a process reading a split holds none of them.

A :class:`~synprep.shards.shard_reader.ShardReader` with ``cache`` decodes every dataset of a shard into
its own memory on first use (the shards are gzip-compressed HDF5, docs/FORMAT.md) and keeps it: a
training process, and each of its DataLoader workers, ends an epoch holding the whole split, about
550 bytes a pair of ~25 words (``benchmarks/bench_loader_memory.py``), growing with the corpus. With a
``map_dir`` the first process to touch a shard writes its decoded arrays there once, one ``.npy`` file a
dataset (the stored dtypes, uncompressed), and every process maps them read-only (``numpy.load(...,
mmap_mode="r")``, as fairseq's ``MMapIndexedDataset``): their pages are the kernel's page cache, shared by
every process that reads the split and dropped under memory pressure, so a process's own memory stays flat
with the corpus size.

The shard's header (its CSR offsets and lines, 56 bytes a pair) is mapped too: a reader opened where the
maps exist (a DataLoader worker, a DDP rank) holds the map of its header, not a copy.

Layout: ``MAP_DIR/NAME.SIZE-MTIME_NS/FIELD.npy`` (and ``offsets.AXIS.npy``, ``line.npy``) for shard file
``NAME`` (e.g. ``train.00000.h5``) of ``SIZE`` bytes last modified at ``MTIME_NS``: a shard rewritten (a resumed or extended split) has another
key and is decoded again; the arrays of its older keys are deleted then. One process at a time decodes a
shard (an exclusive lock on ``.NAME.lock``); the others wait, then map what it wrote. A folder is written as
``.NAME.pidPID.arrays.tmp`` and renamed into place, so a reader never sees half of one (a killed writer's temporary
is deleted by the next writer of that shard). A folder whose header maps differ from the shard's header, or
whose arrays do not have the lengths its offsets say (damaged on disk, or written before the header was
mapped), is decoded again. The folder holds nothing else (and the lock files) and may be
deleted whenever no process reads from it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from synprep.lock import flock, live_temp, temp_prefix
from synprep.shards.schema import AXES, FIELDS

#: the file of a map folder that holds the sha256 of each of its other files (:func:`verify_maps`)
SUMS = "sha256.json"
#: map folders whose files this process hashed, or wrote, and found as their ``sha256.json`` says
#: (:func:`folder_key`: the folder, its inode, each file's size and mtime_ns)
_MAPS_OK: set[tuple[str, int, tuple[tuple[int, int], ...]]] = set()


def map_key(path: Path) -> str:
    """``NAME.SIZE-MTIME_NS``: the folder name of shard file ``path``'s arrays in a map folder."""
    st = path.stat()
    return f"{path.name}.{st.st_size}-{st.st_mtime_ns}"


@dataclass
class Mapped:
    """A shard's maps: ``data`` field name → (L,) array, ``offsets`` axis → (N+1,) int64, ``lines`` (N,) int64,
    each a read-only view of a ``numpy.memmap`` of its ``.npy`` file."""

    data: dict[str, np.ndarray]
    offsets: dict[str, np.ndarray]
    lines: np.ndarray


def _map(file: Path) -> np.ndarray | None:
    try:
        a = np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return None
    return np.asarray(a) if a.ndim == 1 else None  # a plain view of the map: np.memmap's slicing runs Python per slice


def _names() -> list[str]:
    """The files of a map folder besides :data:`SUMS`."""
    return [f"{fl.name}.npy" for fl in FIELDS] + ["line.npy"] + [f"offsets.{axis}.npy" for axis in AXES]


def folder_key(folder: Path) -> tuple[str, int, tuple[tuple[int, int], ...]] | None:
    """The version of map folder ``folder`` in :data:`_MAPS_OK`: its path and inode, each file's size and
    mtime_ns (None: no such folder, or a file missing)."""
    try:
        files = tuple((st.st_size, st.st_mtime_ns) for st in (os.stat(folder / n) for n in [*_names(), SUMS]))
        return (str(folder.resolve()), folder.stat().st_ino, files)
    except OSError:
        return None


def _sums_hold(folder: Path) -> bool:
    """Whether every file of ``folder`` has the sha256 its ``sha256.json`` gives."""
    from synprep.signature import file_sha256

    try:
        sums = json.loads((folder / SUMS).read_text(encoding="utf-8"))
        return isinstance(sums, dict) and set(sums) == set(_names()) \
            and all(file_sha256(folder / name) == sums[name] for name in _names())
    except (OSError, ValueError):
        return False


def verify_maps(path: Path, map_dir: Path) -> None:
    """Delete the maps of shard ``path`` in ``map_dir`` unless their files are what was written: each file's
    sha256 against the folder's ``sha256.json`` (hashed once per process and folder version, like the shards';
    a folder this process wrote is not hashed again). A deleted folder, or one without sums (written before
    them), is then decoded again from the shard, which the caller has verified, when the shard is read.

    Raises:
        OSError: ``map_dir`` cannot be written (the lock, the deletion) where the maps have to be replaced.
    """
    final = map_dir / map_key(path)
    if not final.is_dir() or folder_key(final) in _MAPS_OK:
        return
    if _hashed(final):
        return
    with _locked(map_dir / f".{path.name}.lock"):
        if not _hashed(final):  # else replaced meanwhile by the process that held the lock
            shutil.rmtree(final, ignore_errors=True)


def _hashed(final: Path) -> bool:
    """:func:`_sums_hold`, remembered in :data:`_MAPS_OK` when true."""
    key = folder_key(final)
    if key is None or not _sums_hold(final):
        return False
    _MAPS_OK.add(key)
    return True


def _load(folder: Path, offsets: dict[str, np.ndarray], lines: np.ndarray) -> Mapped | None:
    """The maps of ``folder``, or None when a file is missing, the header's maps (``line.npy``,
    ``offsets.AXIS.npy``) differ from the shard's ``offsets`` and ``lines``, or a dataset has another
    length than they say."""
    head = {axis: _map(folder / f"offsets.{axis}.npy") for axis in AXES}
    line = _map(folder / "line.npy")
    if line is None or not np.array_equal(line, lines):
        return None
    for axis, a in head.items():
        if a is None or a.dtype != np.int64 or not np.array_equal(a, offsets[axis]):
            return None
    data = {}
    for fl in FIELDS:
        a = _map(folder / f"{fl.name}.npy")
        if a is None or len(a) != int(offsets[fl.axis][-1]):
            return None
        data[fl.name] = a
    return Mapped(data, head, line)  # type: ignore[arg-type]


def _sweep(map_dir: Path, name: str, keep: str) -> None:
    """Delete the arrays of shard file ``name`` under keys other than ``keep``, and the temporary folders
    of processes that are gone."""
    for p in map_dir.glob(f"{name}.*"):
        if p.name != keep and p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
    for p in map_dir.glob(f".{name}.pid*.tmp"):
        if not live_temp(p):
            shutil.rmtree(p, ignore_errors=True)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (created) while the block runs: one process decodes a shard, the
    others wait for its arrays instead of decoding it too."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        flock(fd, fcntl.LOCK_EX, path)
        yield
    finally:
        os.close(fd)  # releases the lock


def write_arrays(final: Path, arrays: dict[str, np.ndarray], offsets: dict[str, np.ndarray], lines: np.ndarray) -> None:
    """Write ``arrays`` (:data:`~synprep.shards.schema.FIELDS`) as ``final/FIELD.npy``, and the shard's
    ``offsets`` and ``lines`` as ``final/offsets.AXIS.npy`` and ``final/line.npy`` (int64): into a temporary
    folder of this process, renamed into place (a reader never sees half of one)."""
    tmp = final.parent / f"{temp_prefix(final.name.rsplit('.', 1)[0])}arrays.tmp"  # .NAME.pidPID.arrays.tmp
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        files = {**{f"{fl.name}.npy": arrays[fl.name] for fl in FIELDS}, "line.npy": np.asarray(lines, np.int64),
                 **{f"offsets.{axis}.npy": np.asarray(offsets[axis], np.int64) for axis in AXES}}
        for name, a in files.items():
            np.save(tmp / name, np.ascontiguousarray(a), allow_pickle=False)
        from synprep.signature import file_sha256

        (tmp / SUMS).write_text(json.dumps({name: file_sha256(tmp / name) for name in files}, sort_keys=True),
                                encoding="utf-8")
        shutil.rmtree(final, ignore_errors=True)  # damaged, or written before the header was: it did not load
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def mapped_header(path: Path, map_dir: Path, offsets: dict[str, np.ndarray], lines: np.ndarray) -> Mapped | None:
    """The maps of shard ``path`` in ``map_dir`` if another process wrote them (and they match its
    ``offsets`` and ``lines``), without writing anything: a reader then holds the map of its header instead
    of a copy, N·56 bytes a process (six int64 offsets and the line a pair)."""
    try:
        return _load(map_dir / map_key(path), offsets, lines)
    except OSError:
        return None


def mapped_arrays(path: Path, map_dir: Path, offsets: dict[str, np.ndarray], lines: np.ndarray, decode) -> Mapped:
    """Every dataset of shard ``path`` (:data:`~synprep.shards.schema.FIELDS`), its offsets and lines as
    read-only memory maps in ``map_dir``, written there first (``decode()``: field name → decoded array) if
    absent or damaged, by one process at a time (an exclusive lock on ``map_dir/.NAME.lock``: the others wait
    and map its arrays), with their ``sha256.json``. Existing maps are not hashed here: :func:`verify_maps` does
    that where a split is opened with verification.

    Args:
        path: the shard file. map_dir: the map folder (created). offsets: the shard's axis → (N+1,) CSR
            offsets and lines: its (N,) lines, as its header holds them: the maps of the header must equal
            them, and the datasets' lengths are checked against them. decode: returns the decoded arrays
            (called only when they have to be written).

    Returns:
        The maps (:class:`Mapped`): each a view of a ``numpy.memmap``. Where the maps just written do not
        load (a filesystem that lost them), the decoded arrays and the given header, held.

    Raises:
        OSError: ``map_dir`` cannot be created or written (a full disk, no permission).
        InputError: whatever ``decode`` raises (a damaged shard).
    """
    map_dir.mkdir(parents=True, exist_ok=True)
    final = map_dir / map_key(path)
    got = _load(final, offsets, lines)
    if got is not None:
        return got
    with _locked(map_dir / f".{path.name}.lock"):
        got = _load(final, offsets, lines)  # written meanwhile by the process that held the lock
        if got is not None:
            return got
        _sweep(map_dir, path.name, keep=final.name)
        arrays = decode()
        write_arrays(final, arrays, offsets, lines)
        key = folder_key(final)
        if key is not None:  # written from the shard just now: its sums need no hashing in this process
            _MAPS_OK.add(key)
    return _load(final, offsets, lines) or Mapped(arrays, offsets, lines)
