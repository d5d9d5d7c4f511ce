"""A shard's decoded arrays as read-only memory maps, so that a process reading a split holds none of them.

A :class:`~synprep.shards.shard_reader.ShardReader` with ``cache`` decodes every dataset of a shard into
its own memory on first use (the shards are gzip-compressed HDF5, docs/FORMAT.md) and keeps it: a
training process, and each of its DataLoader workers, ends an epoch holding the whole split, about
550 bytes a pair of ~25 words (``benchmarks/bench_loader_memory.py``), growing with the corpus. With a
``map_dir`` the first process to touch a shard writes its decoded arrays there once, uncompressed in the
stored dtypes, and every process maps them read-only (as fairseq's ``MMapIndexedDataset``): their pages are the
kernel's page cache, shared by every process that reads the split and dropped under memory pressure, so a
process's own memory stays flat with the corpus size.

The shard's header (its CSR offsets and lines, 56 bytes a pair) is mapped too: a reader opened where the
maps exist (a DataLoader worker, a DDP rank) holds the map of its header, not a copy.

Layout: ``MAP_DIR/NAME.SIZE-MTIME_NS/`` for shard file ``NAME`` (e.g. ``train.00000.h5``) of ``SIZE`` bytes last
modified at ``MTIME_NS`` holds ``arrays.bin``, every dataset's values and the header's ``offsets.AXIS`` and
``line`` (int64) one after another, each at a multiple of 64 bytes, and ``index.json``: ``{"version": 2,
"sha256": the sha256 of arrays.bin, "arrays": {name: [dtype, byte offset, length]}}``. One file, so one memory
map, a shard: a process maps one per shard of the splits it reads, far below Linux's limit of a process's maps
(``vm.max_map_count``, 65,530 by default), which the first layout's 20 files a shard reached at ~3,000 shards
(a 30-million-pair corpus at the default shard size; fewer pairs with smaller shards). A shard rewritten (a
resumed or extended split) has another key and is decoded again; the arrays of its older keys are deleted then.
One process at a time decodes a shard (an exclusive lock on ``.NAME.lock``); the others wait, then map what it
wrote. A folder is written as ``.NAME.pidPID.arrays.tmp`` and renamed into place, so a reader never sees half of
one (a killed writer's temporary is deleted by the next writer of that shard). A folder whose header maps differ
from the shard's header, whose arrays do not have the lengths its offsets say, or of another layout (the first
one, a ``.npy`` file a dataset) is decoded again. :func:`verify_maps` hashes ``arrays.bin`` against its sha256 once per
process and folder where a split is opened with verification (``open_split``), as the shards themselves are, so
that maps written by an earlier run (``train`` shares one map folder among every run on the same shards) are
never read after a change on disk. The folder holds nothing else (and the lock files) and may be deleted
whenever no process reads from it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from synprep.lock import flock, live_temp, temp_prefix
from synprep.shards.schema import AXES, FIELDS

#: a map folder's files: the arrays, and their index (dtypes, places, the sha256 of the arrays)
BIN, INDEX = "arrays.bin", "index.json"
#: the version of the map folder's layout in ``index.json`` (1: a ``.npy`` file a dataset, no index)
LAYOUT = 2
#: every array of ``arrays.bin`` starts at a multiple of this many bytes
_ALIGN = 64
#: map folders whose arrays this process hashed, or wrote, and found as their ``index.json`` says
#: (:func:`folder_key`: the folder, its inode, each file's size and mtime_ns)
_MAPS_OK: set[tuple[str, int, tuple[tuple[int, int], ...]]] = set()


def map_key(path: Path) -> str:
    """``NAME.SIZE-MTIME_NS``: the folder name of shard file ``path``'s arrays in a map folder."""
    st = path.stat()
    return f"{path.name}.{st.st_size}-{st.st_mtime_ns}"


@dataclass
class Mapped:
    """A shard's maps: ``data`` field name → (L,) array, ``offsets`` axis → (N+1,) int64, ``lines`` (N,) int64,
    each a read-only view of the one ``numpy.memmap`` of the shard's ``arrays.bin``."""

    data: dict[str, np.ndarray]
    offsets: dict[str, np.ndarray]
    lines: np.ndarray


def _names() -> list[str]:
    """The arrays of a map folder: the datasets, then the header's line numbers and offsets."""
    return [fl.name for fl in FIELDS] + ["line"] + [f"offsets.{axis}" for axis in AXES]


def folder_key(folder: Path) -> tuple[str, int, tuple[tuple[int, int], ...]] | None:
    """The version of map folder ``folder`` in :data:`_MAPS_OK`: its path and inode, each file's size and
    mtime_ns (None: no such folder, or a file missing)."""
    try:
        files = tuple((st.st_size, st.st_mtime_ns) for st in (os.stat(folder / n) for n in (BIN, INDEX)))
        return (str(folder.resolve()), folder.stat().st_ino, files)
    except OSError:
        return None


def _index(folder: Path) -> dict | None:
    """``folder``'s ``index.json`` where it is one of this layout, naming every array; else None."""
    try:
        d = json.loads((folder / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or d.get("version") != LAYOUT or not isinstance(d.get("sha256"), str) \
            or not isinstance(d.get("arrays"), dict) or set(d["arrays"]) != set(_names()):
        return None
    return d


def _sums_hold(folder: Path) -> bool:
    """Whether ``folder``'s ``arrays.bin`` has the sha256 its ``index.json`` gives."""
    from synprep.signature import file_sha256

    d = _index(folder)
    try:
        return d is not None and file_sha256(folder / BIN) == d["sha256"]
    except OSError:
        return False


def _views(folder: Path) -> dict[str, np.ndarray] | None:
    """Every array of ``folder`` as a view of one read-only ``numpy.memmap`` of its ``arrays.bin`` (plain ndarray
    views: ``np.memmap``'s own slicing runs Python per slice), or None: no folder, another layout, an index
    that does not fit the file."""
    d = _index(folder)
    if d is None:
        return None
    try:
        buf = np.asarray(np.memmap(folder / BIN, dtype=np.uint8, mode="r"))
    except (OSError, ValueError):  # missing, unreadable, empty
        return None
    views = {}
    for name, spec in d["arrays"].items():
        try:
            dtype, start, n = spec
            dt = np.dtype(dtype)
        except (TypeError, ValueError):
            return None
        if dt.kind not in "iuf" or not isinstance(start, int) or not isinstance(n, int) or start < 0 or n < 0 \
                or start % dt.itemsize or start + n * dt.itemsize > len(buf):
            return None
        views[name] = buf[start:start + n * dt.itemsize].view(dt)
    return views


def verify_maps(path: Path, map_dir: Path) -> None:
    """Delete the maps of shard ``path`` in ``map_dir`` unless they are what was written: ``arrays.bin``'s
    sha256 against the folder's ``index.json`` (hashed once per process and folder version, like the shards';
    a folder this process wrote is not hashed again). A deleted folder, or one of another layout (the first,
    without sums), is then decoded again from the shard, which the caller has verified, when the shard is read.

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


def folder_maps(folder: Path) -> Mapped | None:
    """The maps of ``folder`` with its own header, or None when it cannot be mapped (:func:`_views`) or a dataset
    has another length than its offsets say. For a header another process compared with the shard's
    (``open_split``'s verification workers); :func:`_load` compares it here."""
    views = _views(folder)
    if views is None:
        return None
    line = views["line"]
    head = {axis: views[f"offsets.{axis}"] for axis in AXES}
    if line.dtype != np.int64 or any(a.dtype != np.int64 or len(a) != len(line) + 1 for a in head.values()):
        return None
    data = {}
    for fl in FIELDS:
        a = views[fl.name]
        if len(a) != int(head[fl.axis][-1]):
            return None
        data[fl.name] = a
    return Mapped(data, head, line)


def _load(folder: Path, offsets: dict[str, np.ndarray], lines: np.ndarray) -> Mapped | None:
    """The maps of ``folder``, or None when it cannot be mapped (:func:`folder_maps`) or the header's maps differ
    from the shard's ``offsets`` and ``lines``."""
    got = folder_maps(folder)
    if got is None or not np.array_equal(got.lines, lines) \
            or not all(np.array_equal(got.offsets[axis], offsets[axis]) for axis in AXES):
        return None
    return got


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
    """Write ``arrays`` (:data:`~synprep.shards.schema.FIELDS`), the shard's ``lines`` and ``offsets`` (int64) as
    ``final/arrays.bin`` with its ``final/index.json`` (the module docstring's layout): into a temporary folder of
    this process, renamed into place (a reader never sees half of one)."""
    tmp = final.parent / f"{temp_prefix(final.name.rsplit('.', 1)[0])}arrays.tmp"  # .NAME.pidPID.arrays.tmp
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        parts = {**{fl.name: arrays[fl.name] for fl in FIELDS}, "line": np.asarray(lines, np.int64),
                 **{f"offsets.{axis}": np.asarray(offsets[axis], np.int64) for axis in AXES}}
        digest, index, pos = hashlib.sha256(), {}, 0
        with open(tmp / BIN, "wb") as f:
            for name, a in parts.items():
                a = np.ascontiguousarray(a).reshape(-1)
                pad = b"\0" * (-pos % _ALIGN)
                index[name] = [a.dtype.str, pos + len(pad), int(a.size)]
                for chunk in (pad, a.view(np.uint8).data):
                    f.write(chunk)
                    digest.update(chunk)
                pos += len(pad) + a.nbytes
        (tmp / INDEX).write_text(json.dumps({"version": LAYOUT, "sha256": digest.hexdigest(), "arrays": index}),
                                 encoding="utf-8")
        shutil.rmtree(final, ignore_errors=True)  # damaged, or of another layout: it did not load
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
    and map its arrays). Existing maps are not hashed here: :func:`verify_maps` does that where a split is
    opened with verification.

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
