"""The gate network of one encoder layer (gated-syntax-attention eq. 4–6, SPEC.md §6).

``G = σ(BatchNorm(W2 · LayerNorm(ReLU(W1 · maxpool_seq(H) + b1)) + b2))`` ∈ (0, 1)^h: one gate per
head and per sentence. The max-pool runs over real tokens only (padding excluded), so a sentence's
gate does not depend on how much padding its batch carries; BatchNorm normalises each head over the
sentences of the batch (statistics over sentences, padding never enters). In eval mode BatchNorm uses
its running statistics, so the gate of a sentence is the same alone or in any batch.

Pre-warmup (paper §4.5): the trainer keeps this network's parameters fixed for the first K epochs
(their gradients are dropped before the optimizer step), so G stays near 0.5 — BatchNorm with its
initial affine (γ = 1, β = 0) maps every head to zero mean, unit variance before the sigmoid.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class GateNetwork(nn.Module):
    """Per-sentence, per-head gate G.

    Args:
        d_model: input width d.
        hidden: d' (the paper does not state it; presets use d/2).
        heads: h, the number of gates.
        batch_norm: False drops the BatchNorm (``G = σ(W2 · LayerNorm(…) + b2)``): SLA's "naive"
            unregularised gate (gated-syntax-attention §5.2), ``gate_batch_norm`` in the config.
    """

    def __init__(self, d_model: int, hidden: int, heads: int, batch_norm: bool = True):
        super().__init__()
        self.fc1 = nn.Linear(d_model, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, heads)
        self.bn = nn.BatchNorm1d(heads) if batch_norm else None

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        """Gates of every sentence of a batch.

        Args:
            x: (B, T, d) hidden states H^l entering the layer.
            pad: (B, T) bool, True at padding.

        Returns:
            (B, h) G in (0, 1).
        """
        pooled = x.masked_fill(pad[:, :, None], float("-inf")).amax(dim=1)  # (B, d)
        o = self.fc2(self.norm(F.relu(self.fc1(pooled))))  # (B, h)
        if self.bn is None:
            return torch.sigmoid(o)
        if self.training and o.shape[0] == 1:
            # BatchNorm has no batch statistics for one sentence: use the running ones (no update)
            o = F.batch_norm(o, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias,
                             training=False, eps=self.bn.eps)
        else:
            o = self.bn(o)
        return torch.sigmoid(o)
