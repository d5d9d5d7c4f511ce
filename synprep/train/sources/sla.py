"""SLA: syntax-aware local attention, a dependency path-distance threshold mask with a gate.

Li et al. 2021, *Improving BERT with Syntax-aware Local Attention*, as the gated paper re-implements
it for its Table 3 (gated-syntax-attention §5.2): "prevents each token from attending excessively
distant token nodes out of a distance boundary. The distance between two nodes is defined as their
shortest path length in the dependency tree. Additionally, SLA designs a naive gating network
controlling the combination of syntax and global attention at each attention head of each layer.
Without any regularization, its gating weights are mostly 0.5".

In synprep: ``A_syn = softmax(s + log M)`` with ``M[i, j] = 1`` when the words of pieces i and j
are at most ``sla_threshold`` arcs apart in the dependency tree (pieces of one word: distance 0),
else 0; words of different sentences of one line are never within range; ``</s>`` sees only
itself. M enters SDPA as a (B, 1, T, T) 0/-inf bias with the key padding. The gate is the
trainer's gate network of ``syntax = "gated"``; SLA's defaults make it the paper's unregularised,
"naive" gate: no BatchNorm (``gate_batch_norm`` false), no pre-warmup (``gate_freeze_epochs`` 0),
no syntax dropout. Path lengths come from :func:`synprep.features.relations.tree_relations`,
computed in the collate from the shards' heads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from synprep.features.relations import tree_relations
from synprep.train.sources.base import (
    AttendContext,
    SyntaxSource,
    bias_attention,
    expand_word_pairs,
    pad_word_pairs,
    piece_word_index,
    sentence_paths,
    stack_word_pairs,
)
from synprep.train.sources.specs import SLASpec
from synprep.types import PairRecord


def sla_word_mask(heads, threshold: int):
    """(W, W) bool: words within ``threshold`` arcs of each other in one sentence (diagonal True).

    Example: heads ``[2, 3, 0, 5, 3]`` (The monkey eats a banana), threshold 1: "eats" (word 3)
    sees monkey, eats, banana; "The" sees The and monkey.
    """
    path = sentence_paths(tree_relations(heads))
    return (path >= 0) & (path <= threshold)


class SLA(SLASpec, SyntaxSource):
    def collate(self, recs: Sequence[PairRecord], T: int) -> dict[str, Any]:
        """``word_index`` (B, T); ``allowed`` (B, W+1, W+1) bool, the last word = ``</s>``/padding."""
        allowed = stack_word_pairs([sla_word_mask(r.heads, self.opts.threshold) for r in recs], False, bool)
        allowed[:, -1, -1] = True  # </s> sees itself (padding rows too; padding keys are masked)
        return {"word_index": piece_word_index(recs, T), "allowed": allowed}

    def pad_shapes(self, data: Any, multiple: int) -> dict[str, Any]:
        return {**data, "allowed": pad_word_pairs(data["allowed"], multiple)}

    def prepare(self, data: Any, pad: torch.Tensor) -> torch.Tensor:
        """(B, 1, T, T) float32 bias: 0 within range, -inf beyond, plus the key padding."""
        allowed = expand_word_pairs(data["allowed"], data["word_index"])  # (B, T, T)
        allowed &= ~pad[:, None, :]  # padding keys: one where, not zeros + masked_fill + the padding bias
        zero = torch.zeros((), dtype=torch.float32, device=allowed.device)
        return torch.where(allowed, zero, float("-inf")).unsqueeze(1)

    def attend(self, q, k, v, heads, prepared, ctx: AttendContext) -> torch.Tensor:
        return bias_attention(q, k, v, prepared, ctx.dropout_p)
