"""The header and layout checks of one shard file, before any pair data is read (docs/FORMAT.md).

A leaf of :mod:`synprep.shards`: :mod:`synprep.shards.reader` and :mod:`synprep.shards.check` both use
it (each imports this module, never the other for these checks). A small file declaring 2^28 entries is
a one-line :class:`~synprep.errors.InputError` here, never gigabytes of memory.
"""

from __future__ import annotations

import json
from typing import Any

import h5py
import numpy as np

from synprep.constants import MAX_SHARD_BYTES, MAX_SHARD_PAIRS, SHARD_FORMAT, SHARD_FORMAT_VERSION
from synprep.errors import InputError
from synprep.shards.heap import check_global_heaps
from synprep.shards.schema import (
    AXES,
    DEFAULTED_ATTRS,
    FIELDS,
    JSON_ATTRS,
    LINE,
    OFFSETS_GROUP,
    WORDS,
    inside_name,
)


class ShardFormatError(InputError):
    """A file that is not a shard this version of synprep can read (unknown format or version)."""


#: the declared data (every dataset's elements × item size) may be at most this many times the file's
#: size, plus :data:`EXPANSION_SLACK` bytes: deflate never compresses better than 1032:1
MAX_EXPANSION = 1100
EXPANSION_SLACK = 1 << 24


def declared_bytes(f: h5py.File) -> int:
    """Bytes of data an open shard's datasets declare (entries × item size, decompressed), read from
    their shapes alone."""
    total = 0
    for path in (LINE, *(f"{OFFSETS_GROUP}/{axis}" for axis in AXES), *(fl.name for fl in FIELDS), WORDS):
        obj = f.get(path)
        if isinstance(obj, h5py.Dataset):
            total += int(np.prod(obj.shape, dtype=np.float64)) * obj.dtype.itemsize if obj.shape else 0
    return total


def check_declared_size(f: h5py.File, name: str, file_size: int) -> None:
    """Refuse a shard whose datasets declare more data than its file can hold, or than any shard may
    hold (before reading any).

    Raises:
        InputError: the declared bytes exceed :data:`MAX_EXPANSION` × ``file_size`` + :data:`EXPANSION_SLACK`
            (a small file declaring much), or :data:`~synprep.constants.MAX_SHARD_BYTES` (a deflate
            bomb: real compressed data that expands beyond what one shard may hold).
    """
    total = declared_bytes(f)
    if total > MAX_EXPANSION * file_size + EXPANSION_SLACK:
        raise InputError(f"declares {total} bytes of data in a file of {file_size} bytes (a hostile or corrupt "
                         "shard)", name)
    if total > MAX_SHARD_BYTES:
        raise InputError(f"declares {total} bytes of data, more than a shard may hold (MAX_SHARD_BYTES = "
                         f"{MAX_SHARD_BYTES}; a hostile or corrupt shard)", name)


def check_layout(f: h5py.File, name: str, file_size: int) -> int:
    """Compare every declared shape with the header before reading data; returns N (pairs).

    Reads only ``n_pairs``, the shapes and dtypes, and the ``(N+1,)`` offsets once N is bounded.
    Verifies: ``n_pairs`` in [0, :data:`MAX_SHARD_PAIRS`]; ``/line`` is ``(N,)``; every
    ``/offsets/AXIS`` is ``(N+1,)`` integers starting at 0, never decreasing, ending at the length
    of every dataset on that axis; every dataset is 1-D numeric; the declared bytes fit the file
    (:data:`MAX_EXPANSION`) and :data:`~synprep.constants.MAX_SHARD_BYTES`.

    Raises:
        InputError: the first shape or offset that does not hold (naming the shard and dataset).
    """
    n = f.attrs.get("n_pairs")
    if isinstance(n, np.generic):
        n = n.item()
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_SHARD_PAIRS:
        raise InputError(f"n_pairs attribute {n!r} is not an integer in [0, {MAX_SHARD_PAIRS}]", name)

    def dataset(path: str, length: int | None) -> h5py.Dataset:
        obj = f.get(path)
        if not isinstance(obj, h5py.Dataset):
            raise InputError(f"dataset /{path} is missing", name)
        if obj.ndim != 1 or obj.dtype.kind not in "iuf":
            raise InputError(f"dataset /{path} has shape {obj.shape} and dtype {obj.dtype}, expected 1-D numbers",
                             name)
        if length is not None and obj.shape[0] != length:
            raise InputError(f"dataset /{path} declares {obj.shape[0]} entries, expected {length} "
                             f"(n_pairs = {n})", name)
        return obj

    declared = [dataset(LINE, n)] + [dataset(f"{OFFSETS_GROUP}/{axis}", n + 1) for axis in AXES]
    fields = {fl.name: dataset(fl.name, None) for fl in FIELDS}
    check_declared_size(f, name, file_size)
    for axis, d in zip(AXES, declared[1:], strict=True):
        o = d[()]
        where = f"/{OFFSETS_GROUP}/{axis}"
        if o.dtype.kind not in "iu":
            raise InputError(f"dataset {where} has dtype {o.dtype}, expected integers", name)
        if o[0] != 0:
            raise InputError(f"{where}[0] = {o[0]}, expected 0", name)
        if np.any(np.diff(o.astype(np.int64)) < 0):
            raise InputError(f"{where} decreases", name)
        for fl in FIELDS:
            if fl.axis == axis and int(o[-1]) != fields[fl.name].shape[0]:
                raise InputError(f"{where} ends at {o[-1]} but /{fl.name} declares {fields[fl.name].shape[0]} "
                                 "entries", name)
    return n


def _decode_attr(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


def read_attrs(f: h5py.File, name: str) -> dict[str, Any]:
    """The root attributes of an open shard as Python values, JSON attributes parsed.

    Raises:
        ShardFormatError: ``format`` is not ``synprep-shard`` or ``format_version`` is not one this
            reader knows (the message names both), or a JSON attribute does not parse.
        InputError: a global heap that HDF5 would read forever (:func:`synprep.shards.heap.check_global_heaps`).
        InputError: ``vocab_path`` is not a file name inside the shard's folder (``../x``, an
            absolute path): refused here, so no reader (``train``'s ``load_symbols``, ``show``) and
            not ``check`` follows it, whether or not the manifest names a vocabulary.
    """
    check_global_heaps(f.filename, name)  # a damaged heap would make the read below loop forever
    attrs = {k: _decode_attr(v) for k, v in f.attrs.items()}
    fmt, version = attrs.get("format"), attrs.get("format_version")
    if fmt != SHARD_FORMAT:
        raise ShardFormatError(f"not a synprep shard: format attribute is {fmt!r}, expected {SHARD_FORMAT!r}", name)
    if version != SHARD_FORMAT_VERSION:
        raise ShardFormatError(f"shard format_version {version!r} is not supported: this synprep reads "
                               f"version {SHARD_FORMAT_VERSION} (docs/FORMAT.md)", name)
    if "vocab_path" in attrs and not inside_name(attrs["vocab_path"]):  # whatever the manifest says
        raise InputError(f"vocab_path attribute {attrs['vocab_path']!r} is not a file name inside the shard's "
                         "folder", name)
    for key, default in DEFAULTED_ATTRS.items():
        attrs.setdefault(key, default)  # a shard written before the attribute existed
    for key in JSON_ATTRS:
        if key in attrs:
            try:
                attrs[key] = json.loads(attrs[key])
            except (TypeError, ValueError) as e:
                raise ShardFormatError(f"attribute {key} is not JSON text: {e}", name) from None
    return attrs
