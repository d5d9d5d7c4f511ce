"""LISA / SISA: one attention head supervised to attend to each token's dependency parent.

Strubell et al. 2018 (LISA), as the gated paper re-implements it for its Table 3
(gated-syntax-attention §5.2: "constructs a 0-1 attention mask label where in the i-th row only
the column of token i's dependency parent has value 1. It introduces an auxiliary L2 loss to
enforce one attention head to learn its syntactic pattern") and as PASCAL's SISA baseline
(pascal-parent-scaled-attention §4, "+SISA": the key-query dot product replaced by a bi-affine
operator, each row read as the distribution over the token's parents, trained by maximum
likelihood; for BPE the parent of a piece is the *first* piece of its head word).

``lisa_variant``:

* ``lisa`` (default, the gated paper's Table 3): the head's ordinary attention
  ``A = softmax(s + pad)``; auxiliary loss ``Σ_i ‖A_i − e_{p_i}‖²`` (squared L2 to the 0-1 row).
* ``sisa`` (PASCAL's Table 3): scores ``q U kᵀ`` with a per-layer bilinear ``U`` (dh × dh,
  initialised to ``I/√dh`` = the dot-product head); auxiliary loss ``−Σ_i log A_i[p_i]``.

``p_i`` is the first piece of the head word of piece i (the root word points at its own first
piece), :func:`synprep.features.parents.parent_positions` with ``mode="first"``; the sum runs over
real pieces (``</s>`` and padding excluded), is multiplied by ``lisa_weight`` and added to the
summed translation loss (both are then divided by the update's target tokens). At inference the
head needs no parse. The head is purely syntactic (``syntax`` = ``hard`` or ``pure``: G ≡ 1); a
learned or constant mix with the raw attention would mix the head with itself. Exactly one head
of the encoder is supervised ("one attention head"); choose it with ``syntax_layers`` and
``syntax_heads``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from synprep.features.parents import parent_positions
from synprep.train.sources.base import AttendContext, SyntaxSource
from synprep.train.sources.specs import VARIANTS, LISASpec  # noqa: F401 - re-exported
from synprep.types import PairRecord


def lisa_loss(scores: torch.Tensor, parents: torch.Tensor, real: torch.Tensor, variant: str) -> torch.Tensor:
    """Summed auxiliary loss of supervised heads.

    Args:
        scores: (B, Hs, T, T) pre-softmax scores, key padding already -inf.
        parents: (B, T) long, the target key of every query piece.
        real: (B, T) bool, query pieces that count (words' pieces; not ``</s>``/padding).
        variant: ``lisa`` (squared L2 between the attention row and the one-hot parent row) or
            ``sisa`` (negative log-likelihood of the parent).

    Returns:
        scalar: the sum over heads and real query pieces.
    """
    B, H, T, _ = scores.shape
    idx = parents[:, None, :, None].expand(B, H, T, 1)
    if variant == "sisa":
        per = -torch.log_softmax(scores.float(), dim=-1).gather(-1, idx)[..., 0]  # (B, H, T)
    else:
        a = torch.softmax(scores.float(), dim=-1)
        per = (a * a).sum(-1) - 2.0 * a.gather(-1, idx)[..., 0] + 1.0  # ‖a − e_p‖²
    return per.masked_fill(~real[:, None, :], 0.0).sum()


class Bilinear(nn.Module):
    """SISA's bi-affine score operator of one layer: (Hs, dh, dh), initialised to ``I/√dh``."""

    def __init__(self, heads: int, dh: int):
        super().__init__()
        self.u = nn.Parameter(torch.eye(dh).repeat(heads, 1, 1) / math.sqrt(dh))


class LISA(LISASpec, SyntaxSource):
    def collate(self, recs: Sequence[PairRecord], T: int) -> dict[str, torch.Tensor]:
        """``parents`` (B, T) long first-piece parent positions (``</s>``/padding → ``</s>``);
        ``real`` (B, T) bool, True at the pieces of words."""
        par = np.stack([parent_positions(r.heads, r.word_index, mode="first", eos=True, length=T) for r in recs])
        real = np.zeros((len(recs), T), dtype=bool)
        for b, r in enumerate(recs):
            real[b, : len(r.src_ids)] = True
        return {"parents": torch.from_numpy(par.astype(np.int64)), "real": torch.from_numpy(real)}

    def layer_module(self, layer: int, heads: list[int]) -> nn.Module | None:
        if self.opts.variant != "sisa":
            return None
        return Bilinear(len(heads), self.cfg.d_model // self.cfg.heads)

    def attend(self, q, k, v, heads, prepared, ctx: AttendContext) -> torch.Tensor:
        if isinstance(ctx.module, Bilinear):
            s = torch.matmul(torch.matmul(q, ctx.module.u.to(q.dtype)), k.transpose(-1, -2))
        else:
            s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
        if ctx.pad_bias is not None:
            s = s + ctx.pad_bias
        if ctx.training:  # a training objective: validation and decoding skip it
            ctx.aux.append(self.opts.weight * lisa_loss(s, prepared["parents"], prepared["real"],
                                                            self.opts.variant))
        a = torch.softmax(s, dim=-1)
        if ctx.dropout_p > 0:
            a = F.dropout(a, ctx.dropout_p)
        return torch.matmul(a, v)
