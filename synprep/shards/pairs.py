"""Plain dicts of numpy arrays, the way to feed any training loop (:func:`iter_pairs`, :func:`pad_batch`,
:func:`shard_arrays`). Part of :mod:`synprep.shards.reader`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from synprep.shards.schema import FIELDS, LINE
from synprep.shards.shard_reader import ShardReader
from synprep.shards.verified import open_split
from synprep.types import PairRecord

#: the keys of a pair dict: ``line`` then every ragged field of docs/FORMAT.md, in writing order
PAIR_KEYS = (LINE, *(fl.name for fl in FIELDS))


def pair_dict(record: PairRecord, fields: tuple[str, ...] = PAIR_KEYS) -> dict[str, Any]:
    """A :class:`~synprep.types.PairRecord` as a plain dict ``{name: value}`` of the given fields.

    ``line`` is an ``int`` (1-based original line); every other value is the record's numpy array
    (int64, ``ldd_prob`` float32), with the shapes of docs/FORMAT.md: ``src_ids``/``word_index``
    ``(T,)``, ``tgt_ids`` ``(U,)``, ``heads``/``deprel``/``upos`` ``(W,)``, ``gaps_*`` ``(T-1,)``,
    ``sent_start`` ``(S,)``, ``ldd_*`` ``(K,)``. The arrays are fresh copies the caller may keep.
    """
    return {name: getattr(record, name) for name in fields}


def _check_fields(fields: tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    if fields is None:
        return PAIR_KEYS
    unknown = [f for f in fields if f not in PAIR_KEYS]
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}; a pair has {', '.join(PAIR_KEYS)}")
    return tuple(fields)


def iter_pairs(folder: str | os.PathLike, split: str, *, fields: tuple[str, ...] | list[str] | None = None,
               shuffle: bool = False, seed: int = 0, epoch: int = 0, worker: tuple[int, int] = (0, 1)
               ) -> Iterator[dict[str, Any]]:
    """Every pair of ``split`` in ``folder`` as a plain dict of numpy arrays (see :func:`pair_dict`).

    The shards come from :func:`open_split` (the split's opener, so whatever it checks applies here
    too) and are read one at a time: each shard is loaded with one read per dataset and released
    before the next, so memory holds one shard's data (plus the split's per-pair offsets and lines
    that :func:`open_split` reads, 56 bytes per pair). Without ``shuffle`` the pairs come in stored
    order (shard by shard, ascending ``line``).

    Args:
        folder: an output folder (``SPLIT.NNNNN.h5`` shards).
        split: the split's name.
        fields: the keys to yield (default :data:`PAIR_KEYS`, everything stored).
        shuffle: shuffle the shard order and the pairs within each shard (shard-local shuffling:
            every pair exactly once per pass, one shard in memory); the order is a function of
            ``(seed, epoch)`` only.
        seed: the shuffle's seed.
        epoch: seeds the shuffle with ``seed``; pass the epoch number for a new order every epoch.
        worker: ``(i, n)``: this is worker ``i`` of ``n`` (0-based) and yields only the shards at
            positions ``i, i+n, …`` of the (shuffled) shard order; the ``n`` workers together yield
            every pair once. In a torch ``DataLoader`` pass
            ``(info.id, info.num_workers)`` from ``torch.utils.data.get_worker_info()``.

    Yields:
        ``dict[str, int | np.ndarray]`` per pair.

    Raises:
        InputError: no such folder, a missing shard (see :func:`split_files`).
        ShardFormatError: a shard of an unknown format.
        ValueError: an unknown field name or a bad ``worker``.
    """
    keys = _check_fields(fields)
    index, n_workers = worker
    if not 0 <= index < n_workers:
        raise ValueError(f"worker must be (i, n) with 0 <= i < n, got {worker}")
    readers = open_split(folder, split)
    rng = np.random.default_rng([seed, epoch]) if shuffle else None
    order = rng.permutation(len(readers)) if rng is not None else np.arange(len(readers))
    for s in order[index::n_workers]:
        reader = readers[int(s)]
        try:
            pairs = rng.permutation(len(reader)) if rng is not None else range(len(reader))
            for i in pairs:
                yield pair_dict(reader[int(i)], keys)
        finally:
            reader.close()


def pad_batch(arrays: list[np.ndarray], pad: int | float, *, left: bool = False,
              dtype: np.dtype | type | None = None) -> np.ndarray:
    """Stack 1-D arrays of different lengths into one ``(B, max_len)`` array, padded with ``pad``.

    ``left=True`` right-aligns each row (pads on the left, as fairseq pads its source side).
    Raises ValueError for an empty list.
    """
    if not arrays:
        raise ValueError("pad_batch needs at least one array")
    width = max(len(a) for a in arrays)
    out = np.full((len(arrays), width), pad, dtype=dtype or np.result_type(*arrays))
    for row, a in zip(out, arrays, strict=True):
        if len(a):
            if left:
                row[width - len(a):] = a
            else:
                row[:len(a)] = a
    return out


def shard_arrays(reader: ShardReader) -> dict[str, np.ndarray]:
    """Every ragged dataset of a shard as stored (flat, smallest dtypes), one read each.

    For whole-shard vectorised work (the exporters); pair ``i`` of field ``F`` on axis ``A`` is
    ``arrays[F][reader.offsets[A][i]:reader.offsets[A][i + 1]]``. The arrays are the reader's cache:
    do not modify them; :meth:`ShardReader.close` drops the reader's reference.
    """
    data = reader.load()._data
    assert data is not None
    return data
