"""Label-smoothed cross-entropy, exactly as fairseq's ``label_smoothed_cross_entropy`` criterion."""

from __future__ import annotations

import torch

from synprep.constants import PAD_ID


def label_smoothed_nll_loss(lprobs: torch.Tensor, target: torch.Tensor, epsilon: float,
                            ignore_index: int = PAD_ID) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed label-smoothed loss and summed NLL over non-padding targets (natural log).

    fairseq's formula: with ``eps_i = ε / (V − 1)``,
    ``loss = (1 − ε − eps_i) · nll + eps_i · Σ_v −log p_v``.

    Args:
        lprobs: (N, V) log-probabilities (float32).
        target: (N,) long.
        epsilon: label smoothing ε (paper §5.1: 0.1).

    Returns:
        (loss, nll): scalar sums over the N' targets that are not ``ignore_index``.
    """
    target = target.unsqueeze(-1)
    nll = -lprobs.gather(dim=-1, index=target)  # (N, 1)
    smooth = -lprobs.sum(dim=-1, keepdim=True)  # (N, 1)
    pad = target.eq(ignore_index)
    nll = nll.masked_fill(pad, 0.0).sum()
    smooth = smooth.masked_fill(pad, 0.0).sum()
    eps_i = epsilon / (lprobs.size(-1) - 1)
    loss = (1.0 - epsilon - eps_i) * nll + eps_i * smooth
    return loss, nll
