"""The LDD paper's 1-best unlabeled parent baseline (ldd-parser-uncertainty, Results/Analysis).

The "single best-parse Transformer" the LDD paper compares against: the same infusion
``A_syn = softmax(s ⊙ D)`` as :mod:`~synprep.train.sources.ldd`, with D the 0-1 matrix of the
parser's 1-best *unlabeled* parents instead of the labeled distributions, the same matrix in
every head: ``D[p, q] = 1`` when the word of piece q is the head of the word of piece p (a root
word's row marks its own pieces, as in LDD); ``</s>`` and padding rows/columns are 0. It reads the
shards' ``heads`` (the parser's 1-best), not the LDD entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from synprep.train.masks import ldd_weights
from synprep.train.sources.base import (
    AttendContext,
    SyntaxSource,
    pad_entries,
    piece_word_index,
    round_up,
    scaled_attention,
)
from synprep.train.sources.specs import LDDParentSpec
from synprep.types import PairRecord


class LDDParent(LDDParentSpec, SyntaxSource):
    def collate(self, recs: Sequence[PairRecord], T: int) -> dict[str, Any]:
        """``word_index`` (B, T), ``n_words``, ``entries`` (batch, dep, head) 0-based, head -1 = root."""
        b = [np.full(len(r.heads), i, dtype=np.int64) for i, r in enumerate(recs)]
        dep = [np.arange(len(r.heads), dtype=np.int64) for r in recs]
        head = [np.asarray(r.heads, dtype=np.int64) - 1 for r in recs]
        return {"word_index": piece_word_index(recs, T), "n_words": max(len(r.heads) for r in recs),
                "entries": tuple(torch.from_numpy(np.concatenate(x)) for x in (b, dep, head))}

    def pad_shapes(self, data: Any, multiple: int) -> dict[str, Any]:
        """``n_words`` rounded up; entries padded at the ``</s>``/padding word (index ``n_words``),
        which :meth:`prepare` gives weight 0."""
        W = round_up(data["n_words"], multiple)
        return {**data, "n_words": W, "entries": pad_entries(data["entries"], (0, W, W))}

    def prepare(self, data: Any, pad: torch.Tensor) -> torch.Tensor:
        """(B, 1, T, T) 0-1 parent matrix (one channel, shared by every head)."""
        b, dep, head = data["entries"]
        zero = torch.zeros_like(dep)
        one = dep.lt(data["n_words"]).to(torch.float32)  # 1 per word; 0 for pad_shapes' entries
        return ldd_weights(data["word_index"], data["n_words"], b, dep, head, zero, one, [0])

    def attend(self, q, k, v, heads, prepared, ctx: AttendContext) -> torch.Tensor:
        return scaled_attention(q, k, v, prepared, ctx.pad_bias, ctx.dropout_p)
