"""LDD: labeled dependency distributions (SPEC.md §4; Liu & Sima'an, ldd-parser-uncertainty).

Head h uses label ``ldd_labels[h]``: ``A_syn = softmax(s ⊙ LDD^l)``, the element-wise product with
the scores (the paper's ``N^h = softmax(S^h ⊙ LDD^l)``). A piece inherits its word's row; a head
word's probability goes to each of its pieces; a root entry goes to the dependent's own pieces;
``</s>`` and padding rows/columns are 0 (:func:`synprep.train.masks.ldd_weights`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from synprep.train.masks import device_index, ldd_weights
from synprep.train.sources.base import (
    AttendContext,
    SyntaxSource,
    pad_entries,
    piece_word_index,
    round_up,
    scaled_attention,
)
from synprep.train.sources.specs import LDDSpec
from synprep.types import DEPRELS, PairRecord


def ldd_entries(recs: Sequence[PairRecord], labels: np.ndarray | None) -> tuple[torch.Tensor, ...]:
    """Concatenated LDD entries of a batch: (batch, dep, head, rel, prob), each (K,).

    dep and head are 0-based words (head -1 = root); only relations in ``labels`` are kept (all
    when None).
    """
    parts: list[list[np.ndarray]] = [[], [], [], [], []]
    for b, r in enumerate(recs):
        rel = r.ldd_rel.astype(np.int64)
        keep = np.ones(rel.shape, dtype=bool) if labels is None else np.isin(rel, labels)
        parts[0].append(np.full(int(keep.sum()), b, dtype=np.int64))
        parts[1].append(r.ldd_dep[keep].astype(np.int64) - 1)
        parts[2].append(r.ldd_head[keep].astype(np.int64) - 1)
        parts[3].append(rel[keep])
        parts[4].append(r.ldd_prob[keep].astype(np.float32))
    return tuple(torch.from_numpy(np.concatenate(p)) for p in parts)


class LDD(LDDSpec, SyntaxSource):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.label_ids = [DEPRELS.index(lab) for lab in self.opts.labels]

    def collate(self, recs: Sequence[PairRecord], T: int) -> dict[str, Any]:
        """``word_index`` (B, T), ``n_words`` (int), ``entries`` (batch, dep, head, rel, prob)."""
        labels = np.asarray(sorted(set(self.label_ids)), dtype=np.int64)
        return {"word_index": piece_word_index(recs, T), "n_words": max(len(r.heads) for r in recs),
                "entries": ldd_entries(recs, labels)}

    def pad_shapes(self, data: Any, multiple: int) -> dict[str, Any]:
        """``n_words`` rounded up; entries padded with probability 0 at the ``</s>``/padding word
        (index ``n_words``) and relation -1 (no label's): each adds 0.0 to a cell no piece's word reads."""
        W = round_up(data["n_words"], multiple)
        return {**data, "n_words": W, "entries": pad_entries(data["entries"], (0, W, W, -1, 0.0))}

    def prepare(self, data: Any, pad: torch.Tensor) -> torch.Tensor:
        """(B, H, T, T) weights, channel h = ``LDD^{ldd_labels[h]}``."""
        b, dep, head, rel, prob = data["entries"]
        return ldd_weights(data["word_index"], data["n_words"], b, dep, head, rel, prob, self.label_ids)

    def attend(self, q, k, v, heads, prepared, ctx: AttendContext) -> torch.Tensor:
        w = prepared if len(heads) == prepared.shape[1] else prepared.index_select(1, device_index(heads, prepared.device))
        return scaled_attention(q, k, v, w, ctx.pad_bias, ctx.dropout_p)
