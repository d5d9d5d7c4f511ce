"""PASCAL: parent-scaled self-attention (SPEC.md §4).

Bugliarello & Okazaki 2020 (pascal-parent-scaled-attention) §3: ``A_syn = softmax(s ⊙ N)`` with
``N[i, j] = N(j; p_i, σ²)``, ``p_i`` the mean position of the pieces of the query's head word
(``</s>`` and padding point at ``</s>``), σ = ``pascal_sigma``. Parent ignoring (``parent_ignore``):
in training, each query row of each PASCAL head gets weights 1 with that probability.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from synprep.features.parents import parent_positions
from synprep.train.masks import ignore_rows, pascal_weights
from synprep.train.sources.base import AttendContext, SyntaxSource, scaled_attention
from synprep.train.sources.specs import PascalSpec
from synprep.types import PairRecord


class Pascal(PascalSpec, SyntaxSource):
    def collate(self, recs: Sequence[PairRecord], T: int) -> torch.Tensor:
        """(B, T) float32 parent positions; ``</s>`` and padding point at the sentence's ``</s>``."""
        par = np.stack([parent_positions(r.heads, r.word_index, eos=True, length=T) for r in recs])
        return torch.from_numpy(par.astype(np.float32))

    def prepare(self, data: Any, pad: torch.Tensor) -> torch.Tensor:
        """(B, 1, T, T) Gaussian weights."""
        return pascal_weights(data, self.opts.sigma)

    def attend(self, q, k, v, heads, prepared, ctx: AttendContext) -> torch.Tensor:
        w = prepared
        p = self.opts.parent_ignore
        if ctx.training and p > 0:
            B, _, T, _ = w.shape
            w = ignore_rows(w.expand(B, len(heads), T, T), p)  # independent rows per head
        return scaled_attention(q, k, v, w, ctx.pad_bias, ctx.dropout_p)
