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

Layout: ``MAP_DIR/NAME.SIZE-MTIME_NS/FIELD.npy`` for shard file ``NAME`` (e.g. ``train.00000.h5``) of
``SIZE`` bytes last modified at ``MTIME_NS``: a shard rewritten (a resumed or extended split) has another
key and is decoded again; the arrays of its older keys are deleted then. One process at a time decodes a
shard (an exclusive lock on ``.NAME.lock``); the others wait, then map what it wrote. A folder is written as
``.NAME.pidPID.arrays.tmp`` and renamed into place, so a reader never sees half of one (a killed writer's temporary
is deleted by the next writer of that shard). A folder whose arrays do not have the lengths of the shard's
offsets (damaged on disk) is decoded again. The folder holds nothing else (and the lock files) and may be
deleted whenever no process reads from it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from synprep.lock import flock, live_temp, temp_prefix
from synprep.shards.schema import FIELDS


def map_key(path: Path) -> str:
    """``NAME.SIZE-MTIME_NS``: the folder name of shard file ``path``'s arrays in a map folder."""
    st = path.stat()
    return f"{path.name}.{st.st_size}-{st.st_mtime_ns}"


def _load(folder: Path, offsets: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """The maps of ``folder``'s arrays, or None when one is missing or has another length than the
    shard's offsets say."""
    data = {}
    for fl in FIELDS:
        try:
            a = np.load(folder / f"{fl.name}.npy", mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            return None
        if a.ndim != 1 or len(a) != int(offsets[fl.axis][-1]):
            return None
        data[fl.name] = np.asarray(a)  # a plain view of the map: np.memmap's slicing runs Python code per slice
    return data


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


def write_arrays(final: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` (:data:`~synprep.shards.schema.FIELDS`) as ``final/FIELD.npy``: into a temporary
    folder of this process, renamed into place (a reader never sees half of one)."""
    tmp = final.parent / f"{temp_prefix(final.name.rsplit('.', 1)[0])}arrays.tmp"  # .NAME.pidPID.arrays.tmp
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        for fl in FIELDS:
            np.save(tmp / f"{fl.name}.npy", np.ascontiguousarray(arrays[fl.name]), allow_pickle=False)
        shutil.rmtree(final, ignore_errors=True)  # damaged: it did not load
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def mapped_arrays(path: Path, map_dir: Path, offsets: dict[str, np.ndarray], decode) -> dict[str, np.ndarray]:
    """Every dataset of shard ``path`` (:data:`~synprep.shards.schema.FIELDS`) as a read-only memory map in
    ``map_dir``, written there first (``decode()``: field name → decoded array) if absent or damaged, by one
    process at a time (an exclusive lock on ``map_dir/.NAME.lock``: the others wait and map its arrays).

    Args:
        path: the shard file. map_dir: the map folder (created). offsets: the shard's axis → (N+1,) CSR
            offsets, which the arrays' lengths are checked against. decode: returns the decoded arrays
            (called only when they have to be written).

    Returns:
        field name → (L,) read-only array of the stored dtype, a view of a ``numpy.memmap`` of its file.

    Raises:
        OSError: ``map_dir`` cannot be created or written (a full disk, no permission).
        InputError: whatever ``decode`` raises (a damaged shard).
    """
    map_dir.mkdir(parents=True, exist_ok=True)
    final = map_dir / map_key(path)
    data = _load(final, offsets)
    if data is not None:
        return data
    with _locked(map_dir / f".{path.name}.lock"):
        data = _load(final, offsets)  # written meanwhile by the process that held the lock
        if data is not None:
            return data
        _sweep(map_dir, path.name, keep=final.name)
        arrays = decode()
        write_arrays(final, arrays)
    return _load(final, offsets) or arrays
