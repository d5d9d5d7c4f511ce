"""Batched SLR log-masks in torch for the trainer (same math as :mod:`synprep.features.slr`).

Source: SPEC.md §3; Hou et al. 2022 (distance-transformer-slr) Algorithm 2, Eq. 6–7.

Input ``gaps``: ``(B, T-1)`` float tensor, each row the gaps of one source sequence with its
``</s>`` gap (2000) appended; output ``(B, T, T)`` log-mask on the input's device, in the input's
floating dtype, to be *added* to the attention scores: ``softmax(s + log M)``.

Padding convention. ``M[r, c]`` depends only on the query's own gap (``d_{r-1}`` or ``d_r``) and
the gaps strictly between ``r`` and ``c``, so the block of real queries × real keys of a padded
row equals the mask of the unpadded sequence **whatever finite values** fill the padded gap
positions, with left or right padding. Pad gaps with any finite number (e.g. ``GAP_EOS``) and
mask padded keys yourself (fairseq's ``key_padding_mask``); padded query rows hold finite values
and are never all ``-inf`` (the diagonal is always 0), so the softmax never produces NaN.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from synprep.features.slr import DEFAULT_TAU, HARD_MODES


def _range_sums(right_terms: torch.Tensor, left_terms: torch.Tensor) -> torch.Tensor:
    """``(B, T, T-1)`` per-(row, gap) terms → ``(B, T, T)`` range sums (see slr._range_sums)."""
    b, t, _ = right_terms.shape
    dev = right_terms.device
    k = torch.arange(t - 1, device=dev)
    r = torch.arange(t, device=dev)[:, None]
    zero = torch.zeros((), dtype=right_terms.dtype, device=dev)
    right = torch.where(k[None, :] > r, right_terms, zero)  # (B, T, T-1), k >= r + 1
    left = torch.where(k[None, :] <= r - 2, left_terms, zero)
    pad = torch.zeros((b, t, 1), dtype=right_terms.dtype, device=dev)
    out = torch.cat([pad, torch.cumsum(right, dim=2)], dim=2)  # column c: sum over k < c
    out = out + torch.cat([torch.flip(torch.cumsum(torch.flip(left, [2]), dim=2), [2]), pad], dim=2)
    return out  # (B, T, T)


def _query_gaps(d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    zero = torch.zeros_like(d[:, :1])
    return torch.cat([d, zero], dim=1), torch.cat([zero, d], dim=1)  # (B, T) each


def _check(gaps: torch.Tensor) -> torch.Tensor:
    if gaps.dim() != 2:
        raise ValueError(f"gaps must be (B, T-1), got shape {tuple(gaps.shape)}")
    if not torch.is_floating_point(gaps):
        gaps = gaps.float()
    return gaps


def soft_slr_log_mask(gaps: torch.Tensor, tau: float = DEFAULT_TAU) -> torch.Tensor:
    """Soft SLR log-mask: ``(B, T-1)`` gaps → ``(B, T, T)``, finite, <= 0 (SPEC.md §3).

    ``log σ_τ(x) = logsigmoid(2x/τ)``; equal to :func:`synprep.features.slr.soft_slr_log_mask` per
    row (the masks within 1e-6).

    Raises:
        ValueError: gaps not 2-D, or τ <= 0.
    """
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    d = _check(gaps)
    d_right, d_left = _query_gaps(d)
    scale = 2.0 / tau
    right = F.logsigmoid((d_right[:, :, None] - d[:, None, :]) * scale)  # (B, T, T-1)
    left = F.logsigmoid((d_left[:, :, None] - d[:, None, :]) * scale)
    return _range_sums(right, left)


def hard_slr_log_mask(gaps: torch.Tensor, strict: bool = True) -> torch.Tensor:
    """Hard SLR log-mask: ``(B, T-1)`` gaps → ``(B, T, T)`` with 0 inside the range, ``-inf`` outside.

    Args:
        strict: True: a tie blocks (reference code); False: a tie does not (Definition 3.1 on
            ``nary`` gaps).

    Raises:
        ValueError: gaps not 2-D.
    """
    d = _check(gaps)
    d_right, d_left = _query_gaps(d)
    cmp = torch.le if strict else torch.lt
    right = cmp(d_right[:, :, None], d[:, None, :]).to(torch.int32)
    left = cmp(d_left[:, :, None], d[:, None, :]).to(torch.int32)
    blocked = _range_sums(right, left)
    zero = torch.zeros((), dtype=d.dtype, device=d.device)
    return torch.where(blocked == 0, zero, torch.full_like(zero, float("-inf")))


def slr_log_mask(gaps: torch.Tensor, *, tau: float | None = DEFAULT_TAU, hard: str | None = None) -> torch.Tensor:
    """Soft (``hard=None``, temperature ``tau``) or hard (``"strict"`` / ``"nonstrict"``) log-mask, ``(B, T, T)``.

    Raises:
        ValueError: unknown ``hard`` mode, or see the functions above.
    """
    if hard is None:
        return soft_slr_log_mask(gaps, DEFAULT_TAU if tau is None else tau)
    if hard not in HARD_MODES:
        raise ValueError(f"unknown hard mode {hard!r}; choose strict or nonstrict")
    return hard_slr_log_mask(gaps, strict=hard == "strict")
