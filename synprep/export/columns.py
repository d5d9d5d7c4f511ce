"""Whole-shard columns for the exporters: one vectorised pass over a shard's CSR arrays.

An exporter reads a shard once (:class:`ShardBlock`, one h5py read per dataset) and derives what it
writes with numpy over the flat arrays, never a Python loop per pair: the global word of every
piece, the piece span of every word, the PASCAL mean parent position of every piece (SPEC.md §4;
equal to :func:`synprep.features.parents.parent_positions` pair by pair, tests/test_export.py),
and CSR offsets for Arrow's list layout. Index bases are docs/FORMAT.md's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from synprep.errors import InputError
from synprep.shards.reader import ShardReader, shard_arrays
from synprep.shards.schema import AXES, FIELDS


@dataclass
class ShardBlock:
    """Every stored array of one shard, as stored (smallest dtypes), plus its offsets and attributes.

    Attributes:
        name: the shard file's name (for errors).
        n: N pairs.
        lines: ``(N,) int64`` 1-based lines.
        offsets: axis → ``(N+1,) int64``.
        data: dataset name → flat stored array.
        attrs: root attributes (JSON ones parsed).
    """

    name: str
    n: int
    lines: np.ndarray
    offsets: dict[str, np.ndarray]
    data: dict[str, np.ndarray]
    attrs: dict[str, Any]
    #: ``(ΣW,)`` the words the parser read, where the shard stores them (the ``words`` dataset that
    #: shards of format version 1 with words carry, read through the reader's ``has_words``/``words(i)``);
    #: None for a shard without them
    words: list[str] | None = None

    @classmethod
    def read(cls, reader: ShardReader) -> ShardBlock:
        """Load one shard (one read per dataset); the reader's own cache is released afterwards."""
        data = shard_arrays(reader)
        words = None
        if reader.has_words:  # a shard that stores the words the parser read (docs/FORMAT.md)
            words = [w for i in range(len(reader)) for w in reader.words(i) or ()]
        block = cls(name=reader.path.name, n=len(reader), lines=reader.lines, offsets=dict(reader.offsets),
                    data=data, attrs=dict(reader.attrs), words=words)
        reader.close()
        check_axes(block)
        return block

    def lengths(self, axis: str) -> np.ndarray:
        """``(N,) int64`` per-pair lengths on ``axis``."""
        return np.diff(self.offsets[axis])

    def owner(self, axis: str) -> np.ndarray:
        """``(len,) int64``: the pair (0-based, in the shard) owning each element of ``axis``."""
        return np.repeat(np.arange(self.n, dtype=np.int64), self.lengths(axis))

    def global_word(self) -> np.ndarray:
        """``(ΣT,) int64``: the shard-global word (0-based over every pair's words) of each piece."""
        return self.data["word_index"].astype(np.int64) + self.offsets["word"][:-1][self.owner("src")]

    def word_piece_offsets(self) -> np.ndarray:
        """``(ΣW+1,) int64``: word k owns pieces ``[o[k], o[k+1])`` (shard-global piece positions).

        Raises:
            InputError: a word without pieces or word_index not stepping by 0/1 (a corrupt shard:
                ``synprep check`` names the pair).
        """
        gw = self.global_word()
        starts = np.flatnonzero(np.r_[True, gw[1:] != gw[:-1]]) if gw.size else np.zeros(0, np.int64)
        n_words = int(self.offsets["word"][-1])
        if starts.size != n_words or (gw.size and not np.array_equal(gw[starts], np.arange(n_words))):
            raise InputError("word_index does not give every word one run of pieces (run synprep check)", self.name)
        return np.r_[starts, gw.size].astype(np.int64)

    def mean_parents(self) -> np.ndarray:
        """``(ΣT,) float32``: PASCAL mean parent position of every piece (SPEC.md §4), 0-based within its pair.

        The parent of a piece is the mean position of its word's head word's pieces; a root word
        points at its own middle. Same values as ``parent_positions(heads, word_index, mode="mean")``.
        """
        wpo = self.word_piece_offsets()
        word_pair = self.owner("word")
        middle = (wpo[:-1] + wpo[1:] - 1) / 2.0 - self.offsets["src"][:-1][word_pair]  # (ΣW,) local
        heads = self.data["heads"].astype(np.int64)
        head_word = np.where(heads > 0, self.offsets["word"][:-1][word_pair] + heads - 1,
                             np.arange(heads.size, dtype=np.int64))
        return middle[head_word][self.global_word()].astype(np.float32)


def check_axes(block: ShardBlock) -> None:
    """Check that every dataset has the length its axis's offsets end at.

    Raises:
        InputError: a dataset of another length, or an axis without offsets (naming the shard).
    """
    for fl in FIELDS:
        if block.data[fl.name].shape[0] != int(block.offsets[fl.axis][-1]):
            raise InputError(f"dataset {fl.name} has {block.data[fl.name].shape[0]} values, offsets/{fl.axis} "
                             f"ends at {int(block.offsets[fl.axis][-1])} (run synprep check)", block.name)
    missing = set(AXES) - set(block.offsets)
    if missing:
        raise InputError(f"no offsets for axis {sorted(missing)[0]}", block.name)
