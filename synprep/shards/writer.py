"""Write one HDF5 shard (docs/FORMAT.md, SPEC.md §5): CSR layout, smallest dtypes, atomic, deterministic.

A shard's records are buffered (a shard is bounded), never the corpus: the caller cuts its stream
of :class:`~synprep.types.PairRecord` into shards and calls :func:`write_shard` once per shard.

Determinism: the same records and attributes give byte-identical files, in any process: every
dataset is created with ``track_times=False`` in a fixed order, attributes are written in sorted
order, JSON attributes are canonical (sorted keys), and the HDF5 format bounds are pinned
(``libver=("v110", "v110")``), so the bytes do not depend on the HDF5 library's defaults.

Full disk: the file is built in memory (HDF5's core driver) and written with plain file I/O, so
running out of space is one ``OSError`` naming the shard, with nothing left on disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from synprep.constants import MAX_SHARD_BYTES, SHARD_FORMAT, SHARD_FORMAT_VERSION
from synprep.errors import ConfigError
from synprep.lock import temp_prefix
from synprep.shards.schema import (
    AXES,
    CHUNK_ELEMS,
    DEFAULTED_ATTRS,
    FIELDS,
    GZIP_LEVEL,
    JSON_ATTRS,
    LIBVER,
    LINE,
    LINE_DTYPE,
    OFFSETS_DTYPE,
    OFFSETS_GROUP,
    OPTIONAL_ATTRS,
    REQUIRED_ATTRS,
    STR_ATTRS,
    TREE_SOURCES,
    WORD_END,
    WORDS,
    ids_dtype,
    smallest_unsigned,
)
from synprep.subword import SCHEMES
from synprep.textio import file_mode
from synprep.types import DEPRELS, UPOS_TAGS, PairRecord

#: float16's smallest positive value (2**-24): smaller LDD probabilities are stored as this,
#: so that a stored probability is never 0
MIN_PROB = float(np.float16(2.0**-24))


@dataclass(frozen=True)
class ShardInfo:
    """What the manifest records of a written shard.

    Attributes:
        file: the shard's file name (no directory), e.g. ``train.00000.h5``.
        pairs: number of pairs N.
        first_line: 1-based original line number of its first pair.
        last_line: 1-based original line number of its last pair.
        sha256: hex sha256 of the file's bytes.
        bytes: file size in bytes.
    """

    file: str
    pairs: int
    first_line: int
    last_line: int
    sha256: str
    bytes: int


def canonical_json(value: Any) -> str:
    """JSON text with sorted keys and no insignificant whitespace variation (stable bytes)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def _root_attrs(attrs: Mapping[str, Any], n_pairs: int) -> dict[str, Any]:
    missing = [k for k in REQUIRED_ATTRS if k not in attrs]
    unknown = sorted(set(attrs) - set(REQUIRED_ATTRS) - set(OPTIONAL_ATTRS) - set(DEFAULTED_ATTRS))
    attrs = {**DEFAULTED_ATTRS, **attrs}
    if missing or unknown:
        raise ValueError(f"shard attributes: missing {missing}, unknown {unknown} (docs/FORMAT.md)")
    out: dict[str, Any] = {}
    for key in STR_ATTRS:
        if not isinstance(attrs[key], str):
            raise ValueError(f"shard attribute {key} must be a str, got {type(attrs[key]).__name__}")
        out[key] = attrs[key]
    if out["tree_source"] not in TREE_SOURCES:
        raise ValueError(f"tree_source must be one of {TREE_SOURCES}, got {out['tree_source']!r}")
    if out["subword"] not in SCHEMES:
        raise ValueError(f"subword must be one of {', '.join(SCHEMES)}, got {out['subword']!r}")
    config = attrs["config"]
    if isinstance(config, str):
        config = json.loads(config)
    if not isinstance(config, dict):
        raise ValueError("shard attribute config must be a dict (or its JSON text)")
    if "tau" in config:
        raise ValueError("config must not hold tau: masks are built at training time (SPEC.md §5)")
    out["config"] = canonical_json(config)
    out["deprel_labels"] = canonical_json(list(attrs.get("deprel_labels", DEPRELS)))
    out["upos_labels"] = canonical_json(list(attrs.get("upos_labels", UPOS_TAGS)))
    out["shard_index"] = np.int64(int(attrs["shard_index"]))
    out["ldd_threshold"] = np.float64(float(attrs["ldd_threshold"]))
    out["format"] = SHARD_FORMAT
    out["format_version"] = np.int64(SHARD_FORMAT_VERSION)
    out["n_pairs"] = np.int64(n_pairs)
    assert set(JSON_ATTRS) <= set(out)
    return out


def _as_array(value: Any, name: str, line: int, floating: bool = False) -> np.ndarray:
    a = np.asarray(value)
    if a.ndim != 1:
        raise ValueError(f"line {line}: {name} must be 1-D, got shape {a.shape}")
    if a.size == 0:
        return a.astype(np.float32 if floating else np.int64)
    if floating:
        if a.dtype.kind not in "fiu":
            raise ValueError(f"line {line}: {name} must be numeric, got dtype {a.dtype}")
    elif a.dtype.kind not in "iub":
        raise ValueError(f"line {line}: {name} must be integers, got dtype {a.dtype}")
    return a


class _Buffer:
    """Per-field lists of arrays and per-axis lengths of the records of one shard."""

    def __init__(self) -> None:
        self.values: dict[str, list[np.ndarray]] = {f.name: [] for f in FIELDS}
        self.lengths: dict[str, list[int]] = {axis: [] for axis in AXES}
        self.lines: list[int] = []
        self.words: list[bytes] = []  # each record's words, UTF-8, each followed by WORD_END

    def add_words(self, words: Sequence[str]) -> None:
        """The words the parser read of the record added last (``(W,)``, one per head)."""
        line, n = self.lines[-1], self.lengths["word"][-1]
        if len(words) != n:
            raise ValueError(f"line {line}: {len(words)} words but {n} heads")
        end = WORD_END.decode()
        if any(not w or end in w for w in words):
            raise ValueError(f"line {line}: a stored word must be non-empty and hold no line break")
        self.words.append("".join(w + end for w in words).encode("utf-8"))

    def add(self, rec: PairRecord) -> None:
        line = int(rec.line)
        if line < 1 or line > np.iinfo(LINE_DTYPE).max:
            raise ValueError(f"line number {line} outside [1, 2**32-1]")
        if self.lines and line <= self.lines[-1]:
            raise ValueError(f"line {line}: line numbers must be strictly increasing within a shard "
                             f"(previous {self.lines[-1]})")
        arrays = {f.name: _as_array(getattr(rec, f.name), f.name, line, f.kind == "float16") for f in FIELDS}
        axis_len: dict[str, int] = {}
        for f in FIELDS:
            n = len(arrays[f.name])
            if axis_len.setdefault(f.axis, n) != n:
                first = next(g.name for g in FIELDS if g.axis == f.axis)
                raise ValueError(f"line {line}: {f.name} has {n} values but {first} has {axis_len[f.axis]} "
                                 f"(same axis {f.axis!r})")
        for name, a in arrays.items():
            self.values[name].append(a)
        for axis, n in axis_len.items():
            self.lengths[axis].append(n)
        self.lines.append(line)


def _pack(name: str, kind: str, parts: list[np.ndarray], lines: list[int],
          lengths: list[int]) -> np.ndarray:
    """Concatenate a field's per-pair arrays into its stored dtype, refusing values that do not fit."""
    flat = np.concatenate(parts) if parts else np.zeros(0)
    if kind == "float16":
        flat = flat.astype(np.float64)
        bad = ~np.isfinite(flat)
        if bad.any():
            raise ValueError(f"line {_line_of(bad, lines, lengths)}: {name} is not finite")
        tiny = (flat > 0) & (flat < MIN_PROB)
        flat = np.where(tiny, MIN_PROB, flat)
        return flat.astype(np.float16)
    flat = flat.astype(np.int64)
    if kind == "int16":
        info = np.iinfo(np.int16)
        bad = (flat < info.min) | (flat > info.max)
        if bad.any():
            raise ValueError(f"line {_line_of(bad, lines, lengths)}: {name} value outside int16")
        return flat.astype(np.int16)
    bad = flat < 0
    if bad.any():
        raise ValueError(f"line {_line_of(bad, lines, lengths)}: {name} has a negative value")
    top = int(flat.max()) if flat.size else 0
    if kind == "ids":
        dtype = ids_dtype(top)
    elif kind == "uint8":
        if top > 255:
            raise ValueError(f"line {_line_of(flat > 255, lines, lengths)}: {name} id {top} does not fit uint8")
        dtype = np.dtype(np.uint8)
    else:
        dtype = smallest_unsigned(top)
    return flat.astype(dtype)


def _line_of(bad: np.ndarray, lines: list[int], lengths: list[int]) -> int:
    pair = int(np.searchsorted(np.cumsum(lengths), int(np.argmax(bad)), side="right"))
    return lines[pair]


def _create(group: h5py.Group, name: str, data: np.ndarray, compressed: bool) -> None:
    if not compressed:
        group.create_dataset(name, data=data, track_times=False)
        return
    n = len(data)
    if n == 0:  # HDF5 refuses a chunk longer than a fixed empty extent
        group.create_dataset(name, shape=(0,), dtype=data.dtype, chunks=(1,), maxshape=(None,),
                             compression="gzip", compression_opts=GZIP_LEVEL, shuffle=True, track_times=False)
        return
    group.create_dataset(name, data=data, chunks=(min(n, CHUNK_ELEMS),), compression="gzip",
                         compression_opts=GZIP_LEVEL, shuffle=True, track_times=False)


def _write_atomically(path: Path, image: bytes) -> None:
    """Write ``image`` to ``path`` through a temporary file in its folder (fsync, rename, fsync of the folder).

    Raises:
        OSError: naming ``path``, never the temporary file (nothing is left behind).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=temp_prefix(path.name), suffix=".tmp", dir=path.parent)
    except OSError as e:  # name the shard, never the temporary file
        raise OSError(e.errno, e.strerror, str(path)) from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(image)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, file_mode())  # mkstemp makes 0600; a shard is an ordinary file
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if isinstance(e, OSError) and (e.filename is None or e.filename == tmp_name):  # name the shard
            raise OSError(e.errno, e.strerror or str(e), str(path)) from None
        raise
    _fsync_dir(path.parent)


def write_shard(path: str | os.PathLike, records: Iterable[PairRecord], attrs: Mapping[str, Any],
                words: Iterable[Sequence[str]] | None = None) -> ShardInfo:
    """Write the records as one shard, atomically (temp file in the same folder, fsync, rename).

    Args:
        path: the shard's final path, normally ``OUT/SPLIT.NNNNN.h5`` (:func:`schema.shard_name`).
        records: the shard's pairs, line numbers strictly increasing; consumed once and buffered.
        attrs: the root attributes of docs/FORMAT.md except ``format``, ``format_version`` and
            ``n_pairs`` (set here): ``split``, ``shard_index``, ``src_lang``, ``tgt_lang``,
            ``signature``, ``config`` (dict, stored as canonical JSON), ``tree_source``,
            ``ldd_threshold``, ``vocab_path``, ``vocab_sha256``, and optionally
            ``deprel_labels`` / ``upos_labels`` (default :data:`synprep.types.DEPRELS` /
            :data:`~synprep.types.UPOS_TAGS`).

    ``words``: the words the parser read, ``(W,)`` per record, in the records' order: stored as the
    ``words`` dataset (docs/FORMAT.md); None writes none.

    Stored dtypes are chosen per shard from the data (docs/FORMAT.md): ids uint16 (int32 when an id
    exceeds 65535), indices the smallest of uint8/uint16/uint32, labels uint8, gaps int16, LDD
    probabilities float16 (values below 2**-24 are stored as 2**-24).

    Returns:
        ShardInfo of the written file.

    Raises:
        ValueError: no records, unknown/missing attributes, arrays of one axis with different lengths,
            non-increasing line numbers, or a value that does not fit its dtype (the message names the
            original line).
        ConfigError: the data would exceed :data:`~synprep.constants.MAX_SHARD_BYTES` (too many pairs for one
            shard). Nothing is left on disk when anything fails.
    """
    path = Path(path)
    buf = _Buffer()
    word_it = iter(words) if words is not None else None
    for rec in records:
        buf.add(rec)
        if word_it is not None:
            w = next(word_it, None)
            if w is None:
                raise ValueError(f"line {rec.line}: no words given for this record")
            buf.add_words(w)
    n = len(buf.lines)
    if n == 0:
        raise ValueError(f"{path.name}: a shard needs at least one pair")
    root = _root_attrs(attrs, n)

    packed = {f.name: _pack(f.name, f.kind, buf.values[f.name], buf.lines, buf.lengths[f.axis]) for f in FIELDS}
    del buf.values
    offsets = {}
    for axis in AXES:
        off = np.zeros(n + 1, dtype=OFFSETS_DTYPE)
        np.cumsum(buf.lengths[axis], out=off[1:])
        offsets[axis] = off
    size = n * LINE_DTYPE.itemsize + sum(o.nbytes for o in offsets.values()) + sum(a.nbytes for a in packed.values()) \
        + sum(len(w) for w in buf.words)
    if size > MAX_SHARD_BYTES:  # readers would refuse it (synprep.shards.reader.check_declared_size)
        raise ConfigError(f"{path}: {n} pairs make {size} bytes of data, more than a shard may hold "
                          f"(MAX_SHARD_BYTES = {MAX_SHARD_BYTES}): use a smaller --shard-size")

    # The file is built in memory (HDF5's core driver, the same bytes as on disk) and written with
    # plain file I/O: a full disk is then one OSError here, never an HDF5 write failure (which
    # floods stderr from h5py's destructors and can end in a segmentation fault).
    with h5py.File(f"{path}.in-memory", "w", driver="core", backing_store=False, libver=LIBVER) as f:
        for key in sorted(root):
            f.attrs[key] = root[key]
        f.create_dataset(LINE, data=np.asarray(buf.lines, dtype=LINE_DTYPE), track_times=False)
        group = f.create_group(OFFSETS_GROUP)
        for axis in AXES:
            _create(group, axis, offsets[axis], compressed=False)
        for field in FIELDS:
            _create(f, field.name, packed[field.name], compressed=True)
        if words is not None:
            _create(f, WORDS, np.frombuffer(b"".join(buf.words), dtype=np.uint8), compressed=True)
        f.flush()
        image = f.id.get_file_image()
    del packed

    _write_atomically(path, image)
    return ShardInfo(file=path.name, pairs=n, first_line=buf.lines[0], last_line=buf.lines[-1],
                     sha256=hashlib.sha256(image).hexdigest(), bytes=len(image))


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable (best effort: not every platform can fsync a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
