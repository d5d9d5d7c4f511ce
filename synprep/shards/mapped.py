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
``line`` (int64) one after another in that order, each at the first multiple of 64 bytes after the one before, and
``index.json``: ``{"version": 3, "shard_sha256": the sha256 of the shard file they were decoded from, "bytes":
the size of arrays.bin, "arrays": {name: [dtype, byte offset, length]}, "sha256": the sha256 of the other four
entries (compact JSON, sorted keys, then a newline) followed by arrays.bin}``. One file, so one memory map, a
shard: a process maps one per shard of the splits it reads, far below Linux's limit of a process's maps
(``vm.max_map_count``, 65,530 by default), which the first layout's 20 files a shard reached at ~3,000 shards
(a 30-million-pair corpus at the default shard size; fewer pairs with smaller shards). A shard rewritten (a
resumed or extended split) has another key and is decoded again; the arrays of its older keys are deleted then.
One process at a time decodes a shard (an exclusive lock on ``.NAME.lock``); the others wait, then map what it
wrote. A folder is written as ``.NAME.pidPID.arrays.tmp`` and renamed into place, so a reader never sees half of
one (a killed writer's temporary is deleted by the next writer of that shard).

A folder is mapped only once it passes, in this order (:func:`_open`, :func:`_load`): its index is of this
layout, every array's dtype one its dataset may have (:data:`_DTYPES`), the arrays exactly where this layout
puts them (no gap, no overlap, the last ending at ``bytes``); the shard's sha256 where the reader knows it
(``open_split`` gives the manifest's, which it verified the file against); ``arrays.bin`` of ``bytes`` bytes
(before it is read: a file of another size is never hashed); the header's maps of one length for N pairs and
equal to the shard's header, each dataset as long as its offsets say; then, once per process and folder
version, the sha256 over index and arrays, every value checked as the shard's own values are
(:func:`~synprep.shards.invariants.check_arrays`) and compared with the shard's (:func:`differs_from_shard`).
A folder that fails any of these is decoded again from the shard; one of another layout (the first, a ``.npy``
file a dataset; the second, without the shard's sha256) too.
The folder holds nothing else (and the lock files) and may be deleted whenever no process reads from it.

A map folder that cannot be written (a full disk, a read-only filesystem, no permission, a file in its place)
is not an error: the maps go to its fallback folder where one is set (:func:`set_fallback`; ``train``: the run
folder's ``arrays/``), else the shard's arrays are held in the reading process's memory, as without a map
folder, and a warning says so once per folder and process.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from synprep import signature
from synprep.lock import flock, live_temp, temp_prefix
from synprep.shards.invariants import _DTYPE_RULES, check_arrays
from synprep.shards.schema import AXES, FIELDS

log = logging.getLogger(__name__)

#: the map folder ``synprep train`` writes in the shard folder (``synprep check`` verifies it there)
ARRAYS = "arrays"
#: a map folder's files: the arrays, and their index (dtypes, places, the shard's sha256, the seal)
BIN, INDEX = "arrays.bin", "index.json"
#: the version of the map folder's layout in ``index.json`` (1: a ``.npy`` file a dataset, no index; 2: an index
#: without the shard's sha256, its sha256 of ``arrays.bin`` alone)
LAYOUT = 3
#: every array of ``arrays.bin`` starts at a multiple of this many bytes
_ALIGN = 64
#: the ``index.json`` entries the seal (its ``sha256``) covers, with ``arrays.bin``
_SEALED = ("version", "shard_sha256", "bytes", "arrays")
_HEX64 = re.compile(r"[0-9a-f]{64}")
#: an ``index.json`` larger than this is not read (one of this layout is under 2 KB)
_INDEX_MAX = 1 << 16
#: map folders this process verified, or wrote, for a reader's expectations (:func:`ok_key`)
_MAPS_OK: set[tuple[Any, ...]] = set()
#: map folders that failed :func:`_load` in this process (not verified again until replaced)
_MAPS_BAD: set[tuple[Any, ...]] = set()
#: map folders this process could not write (warned once each)
_UNWRITABLE: set[str] = set()
#: a map folder → where its maps go when it cannot take them (:func:`set_fallback`)
_FALLBACK: dict[str, Path] = {}


def set_fallback(map_dir: Path, fallback: Path) -> None:
    """Maps that cannot be written in ``map_dir`` (a full disk, a quota, a file in their place) go to ``fallback``,
    as where ``map_dir`` could not be written from the start (``train``: the shard folder's ``arrays/``, then
    the run folder's, :func:`synprep.train.run.arrays_folder`); held in memory only where neither takes them.
    Readers look for a shard's maps in both. For this process."""
    if Path(fallback) != Path(map_dir):
        _FALLBACK[str(map_dir)] = Path(fallback)


def _folders(map_dir: Path) -> list[Path]:
    """Where a shard's maps are looked for and written: ``map_dir``, then its fallback (:func:`set_fallback`)."""
    fallback = _FALLBACK.get(str(map_dir))
    return [map_dir] if fallback is None else [map_dir, fallback]


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


@dataclass(frozen=True)
class Expect:
    """What a reader knows of its shard, which its maps must agree with.

    Attributes:
        sha256: the shard file's sha256 (``open_split``: the manifest's, the file verified against it), or None
            (a reader opened without verification: not compared).
        vocab_size: ids must be below it (None: not checked).
        n_deprel: the number of the shard's dependency labels.
        n_upos: the number of its UPOS labels.
    """

    sha256: str | None
    vocab_size: int | None
    n_deprel: int
    n_upos: int


def _names() -> list[str]:
    """The arrays of a map folder, in their order in ``arrays.bin``: the datasets, then the header's line numbers
    and offsets."""
    return [fl.name for fl in FIELDS] + ["line"] + [f"offsets.{axis}" for axis in AXES]


def _allowed_dtypes() -> dict[str, frozenset[str]]:
    """Per array of a map folder, the dtypes (``numpy.dtype.str``, this machine's byte order) it may have: a
    dataset's those ``synprep check`` allows it (:data:`~synprep.shards.invariants._DTYPE_RULES`), the header's
    int64."""
    kinds = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64,
                                   np.float16, np.float32, np.float64)]
    allowed = {fl.name: frozenset(dt.str for dt in kinds if _DTYPE_RULES[fl.kind][0](dt)) for fl in FIELDS}
    return {**allowed, **{name: frozenset({np.dtype(np.int64).str}) for name in _names() if name not in allowed}}


#: array name → the dtypes it may have in ``index.json``
_DTYPES = _allowed_dtypes()


def folder_key(folder: Path) -> tuple[str, int, tuple[tuple[int, int], ...]] | None:
    """The version of map folder ``folder``: its path and inode, each file's size and mtime_ns (None: no such
    folder, or a file missing)."""
    try:
        files = tuple((st.st_size, st.st_mtime_ns) for st in (os.stat(folder / n) for n in (BIN, INDEX)))
        return (str(folder.resolve()), folder.stat().st_ino, files)
    except OSError:
        return None


def ok_key(folder: Path, sha256: str | None, vocab_size: int | None) -> tuple[Any, ...] | None:
    """The entry of map folder ``folder`` in :data:`_MAPS_OK` for a reader of the shard whose sha256 is
    ``sha256`` and a vocabulary of ``vocab_size`` (:class:`Expect`): :func:`folder_key` and both (None: no such
    folder)."""
    key = folder_key(folder)
    return None if key is None else (*key, sha256, vocab_size)


def _layout(arrays: dict[str, np.ndarray]) -> tuple[dict[str, list], int]:
    """``(index entry "arrays", bytes)`` of ``arrays`` (name → 1-D array, in :func:`_names` order) in ``arrays.bin``."""
    index, pos = {}, 0
    for name, a in arrays.items():
        pos += -pos % _ALIGN
        index[name] = [a.dtype.str, pos, int(a.size)]
        pos += a.nbytes
    return index, pos


def _seal(index: dict[str, Any]) -> Any:
    """A sha256 fed with the sealed entries of ``index`` (:data:`_SEALED`; compact JSON, sorted keys, a newline),
    to be fed ``arrays.bin`` next."""
    head = json.dumps({k: index[k] for k in _SEALED}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(head.encode("utf-8") + b"\n")


def _read_index(folder: Path) -> tuple[dict[str, Any] | None, str]:
    """``(index, "")`` where ``folder``'s ``index.json`` is one of this layout whose arrays are each of a dtype
    of :data:`_DTYPES` and exactly where :func:`_layout` puts them; else ``(None, why)``. Reads only the index."""
    try:
        size = os.stat(folder / INDEX).st_size
        if size > _INDEX_MAX:
            return None, f"{INDEX} has {size} bytes, more than an index of layout {LAYOUT} ({_INDEX_MAX})"
        d = json.loads((folder / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        return None, f"{INDEX} cannot be read: {getattr(e, 'strerror', None) or e}"
    if not isinstance(d, dict) or d.get("version") != LAYOUT:
        return None, f"{INDEX} is not of layout {LAYOUT}"
    arrays = d.get("arrays")
    if set(d) != {*_SEALED, "sha256"} \
            or not all(isinstance(d[k], str) and _HEX64.fullmatch(d[k]) for k in ("sha256", "shard_sha256")) \
            or type(d["bytes"]) is not int or not isinstance(arrays, dict) or list(arrays) != _names():
        return None, f"{INDEX} does not hold exactly the entries of layout {LAYOUT} (sha256, shard_sha256, bytes, " \
                     "arrays: every array in order)"
    pos = 0
    for name in _names():
        spec = arrays[name]
        if not isinstance(spec, list) or len(spec) != 3 or not isinstance(spec[0], str) or spec[0] not in _DTYPES[name] \
                or type(spec[1]) is not int or type(spec[2]) is not int or spec[2] < 0:
            return None, f"{INDEX}: array {name} is {spec!r}, not [dtype of {sorted(_DTYPES[name])}, start, length]"
        pos += -pos % _ALIGN
        if spec[1] != pos:
            return None, f"{INDEX}: array {name} starts at byte {spec[1]}, the layout puts it at {pos}"
        pos += spec[2] * np.dtype(spec[0]).itemsize
    if d["bytes"] != pos:
        return None, f"{INDEX} says {d['bytes']} bytes, its arrays end at byte {pos}"
    return d, ""


def _open(folder: Path, sha256: str | None, n_pairs: int | None = None,
          ) -> tuple[Mapped | None, dict[str, Any] | None, str]:
    """``(maps, index, "")`` of ``folder``, or ``(None, index or None, why)``: its index valid
    (:func:`_read_index`), of the shard whose sha256 is ``sha256`` (None: not compared), ``arrays.bin`` of the
    index's size (checked before it is mapped), the header's maps of one length (``n_pairs`` lines where given)
    and every dataset as long as its offsets say. Reads the index, and of ``arrays.bin`` the header's last offsets."""
    d, why = _read_index(folder)
    if d is None:
        return None, None, why
    if sha256 is not None and d["shard_sha256"] != sha256:
        return None, d, (f"{INDEX} is of another version of the shard (decoded from sha256 {d['shard_sha256'][:12]}…, "
                         f"the shard's is {sha256[:12]}…)")
    try:
        size = os.stat(folder / BIN).st_size
        if size != d["bytes"]:
            return None, d, f"{BIN} has {size} bytes, {INDEX} says {d['bytes']}"
        buf = np.asarray(np.memmap(folder / BIN, dtype=np.uint8, mode="r")) if size else np.zeros(0, np.uint8)
    except (OSError, ValueError) as e:
        return None, d, f"{BIN} cannot be mapped: {getattr(e, 'strerror', None) or e}"
    buf.flags.writeable = False
    views = {name: buf[start:start + n * np.dtype(dt).itemsize].view(dt) for name, (dt, start, n) in d["arrays"].items()}
    line = views["line"]
    head = {axis: views[f"offsets.{axis}"] for axis in AXES}
    if n_pairs is not None and len(line) != n_pairs:
        return None, d, f"{INDEX}: {len(line)} lines, the shard has {n_pairs} pairs"
    for axis, off in head.items():
        if len(off) != len(line) + 1:
            return None, d, f"{INDEX}: offsets.{axis} has {len(off)} entries, expected {len(line) + 1} (pairs + 1)"
    for fl in FIELDS:
        want = int(head[fl.axis][-1])
        if len(views[fl.name]) != want:
            return None, d, f"{INDEX}: {fl.name} has {len(views[fl.name])} values, its offsets say {want}"
    return Mapped({fl.name: views[fl.name] for fl in FIELDS}, head, line), d, ""


def _sealed(folder: Path, index: dict[str, Any], got: Mapped, expect: Expect, shard: Path) -> str:
    """Why the maps ``got`` of ``folder`` are not what was written from ``shard``, or "": the sha256 over the
    index's sealed entries and ``arrays.bin`` (whose size :func:`_open` checked) as the index says, every value
    passing the shard's own checks (:func:`~synprep.shards.invariants.check_arrays`), and every value equal to
    the shard's (:func:`differs_from_shard`: the seal is no secret)."""

    h = _seal(index)
    try:
        with open(folder / BIN, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError as e:
        return f"{BIN} cannot be read: {e.strerror or e}"
    if h.hexdigest() != index["sha256"]:
        return (f"{INDEX}: its sha256 {index['sha256'][:12]}… is not that of its entries and {BIN} "
                f"({h.hexdigest()[:12]}…)")
    v = check_arrays(got.data, got.offsets, got.lines, n_deprel=expect.n_deprel, n_upos=expect.n_upos,
                     vocab_size=expect.vocab_size, name=BIN)
    return differs_from_shard(shard, got.data) if v is None else f"{BIN}: a value the shard cannot hold: {v}"


def differs_from_shard(shard: Path, data: dict[str, np.ndarray]) -> str:
    """Why the maps ``data`` (field name → (L,) array) are not ``shard``'s values, or "": a field whose dtype
    or a value differs (named). The shard is decoded one field at a time (its file verified by the caller:
    its header read, its size and sha256 where the manifest gives them).

    Args:
        shard: the shard file.
        data: the maps, as :class:`~synprep.shards.mapped.Mapped` holds them.
    """
    try:
        with h5py.File(shard, "r") as f:
            for fl in FIELDS:
                want = f[fl.name][()]
                got = data[fl.name]
                if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
                    return f"{BIN}: {fl.name} differs from the shard's values"
    except (OSError, KeyError, RuntimeError, ValueError) as e:
        return f"{BIN}: the shard cannot be read to compare it ({type(e).__name__}: {e})"
    return ""


def folder_maps(folder: Path, sha256: str | None) -> Mapped | None:
    """The maps of ``folder`` with its own header (:func:`_open`), or None. For a folder another process
    verified for this shard version (``open_split``'s verification workers: :func:`ok_key`); :func:`_load`
    verifies it here."""
    return _open(folder, sha256)[0]


def _load(folder: Path, offsets: dict[str, np.ndarray], lines: np.ndarray, expect: Expect,
          shard: Path) -> Mapped | None:
    """The maps of ``folder`` (:func:`_open`), their header equal to ``shard``'s ``offsets`` and ``lines``, their
    seal and values verified (:func:`_sealed`) once per process and folder version; or None."""
    key = ok_key(folder, expect.sha256, expect.vocab_size)
    if key is None or key in _MAPS_BAD:
        return None
    got, index, why = _open(folder, expect.sha256, len(lines))
    if got is not None and (not np.array_equal(got.lines, lines)
                            or not all(np.array_equal(got.offsets[axis], offsets[axis]) for axis in AXES)):
        got, why = None, f"{BIN}: the header's maps differ from the shard's header"
    if got is not None and key not in _MAPS_OK:
        assert index is not None
        why = _sealed(folder, index, got, expect, shard)
        if not why and ok_key(folder, expect.sha256, expect.vocab_size) == key:  # not replaced while it was verified
            _MAPS_OK.add(key)
        elif not why:
            return None
    if why:
        log.debug("%s: %s: decoded again", folder, why)
        _MAPS_BAD.add(key)
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


def write_arrays(final: Path, arrays: dict[str, np.ndarray], offsets: dict[str, np.ndarray], lines: np.ndarray,
                 shard_sha256: str) -> None:
    """Write ``arrays`` (:data:`~synprep.shards.schema.FIELDS`), the shard's ``lines`` and ``offsets`` (int64) as
    ``final/arrays.bin`` with its ``final/index.json`` (the module docstring's layout; ``shard_sha256``: the sha256
    of the shard file they were decoded from): into a temporary folder of this process, renamed into place (a
    reader never sees half of one).

    Raises:
        OSError: the folder cannot be written (the temporary is deleted).
    """
    tmp = final.parent / f"{temp_prefix(final.name.rsplit('.', 1)[0])}arrays.tmp"  # .NAME.pidPID.arrays.tmp
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        parts = {**{fl.name: arrays[fl.name] for fl in FIELDS}, "line": np.asarray(lines, np.int64),
                 **{f"offsets.{axis}": np.asarray(offsets[axis], np.int64) for axis in AXES}}
        parts = {name: np.ascontiguousarray(a).reshape(-1) for name, a in parts.items()}
        places, size = _layout(parts)
        index: dict[str, Any] = {"version": LAYOUT, "shard_sha256": shard_sha256, "bytes": size, "arrays": places}
        digest, pos = _seal(index), 0
        with open(tmp / BIN, "wb") as f:
            for name, a in parts.items():
                for chunk in (b"\0" * (places[name][1] - pos), a.view(np.uint8).data):
                    f.write(chunk)
                    digest.update(chunk)
                pos = places[name][1] + a.nbytes
        index["sha256"] = digest.hexdigest()
        (tmp / INDEX).write_text(json.dumps(index), encoding="utf-8")
        shutil.rmtree(final, ignore_errors=True)  # damaged, or of another layout: it did not load
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def mapped_header(path: Path, map_dir: Path, offsets: dict[str, np.ndarray], lines: np.ndarray,
                  expect: Expect) -> Mapped | None:
    """The maps of shard ``path`` in ``map_dir`` if another process wrote them (and they pass :func:`_load`),
    without writing anything: a reader then holds the map of its header instead of a copy, N·56 bytes a process
    (six int64 offsets and the line a pair)."""
    for folder in _folders(map_dir):
        with contextlib.suppress(OSError):
            got = _load(folder / map_key(path), offsets, lines, expect, path)
            if got is not None:
                return got
    return None


def mapped_arrays(path: Path, map_dir: Path, offsets: dict[str, np.ndarray], lines: np.ndarray,
                  decode: Callable[[], dict[str, np.ndarray]], expect: Expect) -> Mapped:
    """Every dataset of shard ``path`` (:data:`~synprep.shards.schema.FIELDS`), its offsets and lines as
    read-only memory maps in ``map_dir``, written there first (``decode()``: field name → decoded array) if
    absent or failing :func:`_load`, by one process at a time (an exclusive lock on ``map_dir/.NAME.lock``: the
    others wait and map its arrays).

    Args:
        path: the shard file.
        map_dir: the map folder (created).
        offsets: the shard's axis → (N+1,) CSR offsets, as its header holds them.
        lines: its (N,) lines, as its header holds them (the header's maps must equal both).
        decode: returns the decoded arrays (called only when they have to be written, or held).
        expect: what the maps must agree with (:class:`Expect`).

    Returns:
        The maps (:class:`Mapped`): each a view of a ``numpy.memmap``. Where ``map_dir`` cannot be written (a full
        disk, a read-only filesystem, no permission: any OSError), or the maps just written do not load, the maps
        in its fallback folder (:func:`set_fallback`, logged once per folder and process); where that fails too
        or none is set, the decoded arrays and the given header, held (a warning once per folder and process).

    Raises:
        InputError: whatever ``decode`` raises (a damaged shard).
    """
    decode_once = functools.cache(decode)
    folders = _folders(map_dir)
    for k, folder in enumerate(folders):
        try:
            got = _map_into(path, folder, offsets, lines, decode_once, expect)
        except OSError as e:
            _cannot_write(folder, e, folders[k + 1] if k + 1 < len(folders) else None)
            continue
        if got is not None:
            return got
    return Mapped(decode_once(), offsets, lines)


def _map_into(path: Path, map_dir: Path, offsets: dict[str, np.ndarray], lines: np.ndarray,
              decode: Callable[[], dict[str, np.ndarray]], expect: Expect) -> Mapped | None:
    """:func:`mapped_arrays` in one folder: the maps, or None where the maps just written do not load.

    Raises:
        OSError: ``map_dir`` cannot be written.
    """
    map_dir.mkdir(parents=True, exist_ok=True)
    final = map_dir / map_key(path)
    got = _load(final, offsets, lines, expect, path)
    if got is not None:
        return got
    with _locked(map_dir / f".{path.name}.lock"):
        got = _load(final, offsets, lines, expect, path)  # written meanwhile by the process that held the lock
        if got is not None:
            return got
        _sweep(map_dir, path.name, keep=final.name)
        if expect.sha256 is None:  # a reader opened without verification: the file's own

            sha256 = signature.file_sha256(path)
        else:
            sha256 = expect.sha256
        write_arrays(final, decode(), offsets, lines, sha256)
        key = ok_key(final, expect.sha256, expect.vocab_size)
        if key is not None:  # written from the shard just now: needs no verifying in this process
            _MAPS_OK.add(key)
    return _load(final, offsets, lines, expect, path)


def _cannot_write(map_dir: Path, e: OSError, fallback: Path | None = None) -> None:
    """Say, once per folder and process, that ``map_dir`` cannot hold the decoded arrays: where they go instead
    (``fallback``, logged), else a warning that each process holds them in its own memory."""
    if str(map_dir) in _UNWRITABLE:
        return
    _UNWRITABLE.add(str(map_dir))
    if fallback is not None:
        log.info("%s: cannot write the shards' decoded arrays (%s): they go to %s", map_dir, e.strerror or e,
                 fallback)
        return
    log.warning("warning: %s: cannot write the shards' decoded arrays (%s): each process holds them in its own "
                "memory instead", map_dir, e.strerror or e)
