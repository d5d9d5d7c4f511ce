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
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from synprep.lock import flock, live_temp, temp_prefix
from synprep.shards.schema import AXES, FIELDS


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
    and map its arrays).

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
    return _load(final, offsets, lines) or Mapped(arrays, offsets, lines)
