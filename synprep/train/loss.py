"""Label-smoothed cross-entropy, exactly as fairseq's ``label_smoothed_cross_entropy`` criterion."""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd.function import once_differentiable

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


class _SmoothedLossFromLogits(torch.autograd.Function):
    """:func:`smoothed_loss_from_logits`'s forward and its gradient in one pass over the logits."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, target: torch.Tensor, epsilon: float,  # type: ignore[override]
                overwrite: bool) -> tuple[torch.Tensor, ...]:
        ctx.set_materialize_grads(False)  # no (N, V) zeros for the unused log-probabilities' gradient
        if overwrite:
            lprobs = torch.log_softmax(logits, dim=-1, out=logits)
            ctx.mark_dirty(logits)
        else:
            lprobs = torch.log_softmax(logits, dim=-1)
        loss, nll = label_smoothed_nll_loss(lprobs, target, epsilon)
        ctx.save_for_backward(lprobs, target)
        ctx.epsilon, ctx.spent = epsilon, False
        return (loss, nll, logits) if overwrite else (loss, nll)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, g_loss: torch.Tensor | None, g_nll: torch.Tensor | None,
                 *_: Any) -> tuple[torch.Tensor | None, None, None, None]:
        if ctx.spent:
            raise RuntimeError("smoothed_loss_from_logits: a second backward through the same loss (its backward "
                               "overwrites the saved log-probabilities)")
        ctx.spent = True
        if g_loss is None and g_nll is None:
            return None, None, None, None
        lprobs, target = ctx.saved_tensors
        g_loss = torch.zeros((), dtype=lprobs.dtype, device=lprobs.device) if g_loss is None else g_loss
        g_nll = torch.zeros((), dtype=lprobs.dtype, device=lprobs.device) if g_nll is None else g_nll
        eps = ctx.epsilon
        eps_i = eps / (lprobs.size(-1) - 1)
        real = target.ne(PAD_ID).unsqueeze(-1).to(lprobs.dtype)  # (N, 1): padding rows get no gradient
        keep = g_loss * (1.0 - eps - eps_i) + g_nll  # the weight of -log p_target
        # p = exp(log p), in the saved tensor's memory (nothing else holds it): a fresh (N, V) tensor costs more
        # than the pass itself; then with d(Σ_v log p_v)/dz = 1 - V p: d/dz = keep (p - onehot) + g_loss eps_i (V p - 1)
        grad = lprobs.exp_()
        grad.mul_(real * (keep + g_loss * eps_i * lprobs.size(-1))).sub_(real * (g_loss * eps_i))
        grad.scatter_add_(1, target.unsqueeze(-1), (real * keep).neg())
        return grad, None, None, None


def smoothed_loss_from_logits(logits: torch.Tensor, target: torch.Tensor, epsilon: float,
                              overwrite: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`label_smoothed_nll_loss` of ``log_softmax(logits)``, whose backward writes the logits'
    gradient in one pass (``softmax · a − b``, then ``− c`` at each target) instead of autograd's chain
    through the gather, the sum and the log-softmax (each an (N, V) tensor): the same forward values,
    the same gradient up to float rounding (tests/test_train_loss.py). Its backward runs once (the saved
    log-probabilities become the gradient): a second backward through the same loss raises RuntimeError.

    Args:
        logits: (N, V) logits, any float dtype (the log-softmax and the gradient are float32, as
            :func:`synprep.train.compiling.smoothed_loss`'s).
        target: (N,) long.
        epsilon: label smoothing ε.
        overwrite: float32 logits on the CPU, not a leaf, that nothing else reads: the log-probabilities are
            written into their memory (the trainer's projection output: a fresh (N, V) tensor costs more than
            the log-softmax itself). Elsewhere it has no effect.

    Returns:
        (loss, nll): () float32 sums (nats) over the targets that are not ``<pad>``.

    Raises:
        RuntimeError: at a second backward through the same loss.
    """
    logits = logits.float()
    in_place = overwrite and logits.device.type == "cpu" and not logits.is_leaf
    return _SmoothedLossFromLogits.apply(logits, target, epsilon, in_place)[:2]
