"""TEMPORARY STAND-IN — delete once ``synprep.features`` lands on main.

Minimal private copies of two functions the features helper owns, written against the agreed
interface so the trainer runs before the merge:

* :func:`slr_log_mask` — stands in for ``synprep.features.slr_torch`` (batched torch SLR log-mask,
  SPEC.md §3);
* :func:`parent_positions` — stands in for ``synprep.features.parents`` (numpy PASCAL parent
  positions, SPEC.md §4).

Only :mod:`synprep.train.masks` and :mod:`synprep.train.data` import this module; replacing it is
a two-line import change there. Do not import it anywhere else.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def slr_log_mask(gaps: torch.Tensor, *, tau: float | None = 10.0, hard: str | None = None) -> torch.Tensor:
    """log M of the SLR mask (SPEC.md §3), batched.

    Args:
        gaps: (B, T-1) gaps d_0..d_{T-2} (``</s>`` gap included), any real dtype.
        tau: soft temperature (ignored when ``hard`` is set).
        hard: None (soft), ``"strict"`` (a tie blocks) or ``"nonstrict"`` (a tie passes).

    Returns:
        (B, T, T) log M in the gaps' floating dtype (float32 for integer gaps); 0 where |r-c| <= 1, -inf where M = 0.
    """
    d = gaps if torch.is_floating_point(gaps) else gaps.float()
    B, n = d.shape
    T = n + 1
    out = torch.zeros(B, T, T, dtype=d.dtype, device=d.device)
    if T < 3:
        return out

    def logf(x: torch.Tensor) -> torch.Tensor:
        if hard is None:
            return F.logsigmoid(2.0 * x / (10.0 if tau is None else tau))  # log((1 + tanh(x/τ)) / 2)
        keep = x > 0 if hard == "strict" else x >= 0
        return torch.where(keep, 0.0, float("-inf")).to(d.dtype)

    r = torch.arange(T, device=d.device)
    k = torch.arange(n, device=d.device)
    # left, c <= r-2: sum_{k=c}^{r-2} log σ(d_{r-1} - d_k)
    q_left = d[:, (r - 1).clamp(min=0)]  # (B, T)
    lf = logf(q_left[:, :, None] - d[:, None, :])  # (B, T, n)  [r, k]
    lf = lf.masked_fill(~(k[None, :] <= r[:, None] - 2)[None], 0.0)
    left = lf.flip(-1).cumsum(-1).flip(-1)  # [r, c] = sum_{k>=c} (k <= r-2)
    # right, c >= r+2: sum_{k=r+1}^{c-1} log σ(d_r - d_k)
    q_right = d[:, r.clamp(max=n - 1)]  # (B, T)
    rf = logf(q_right[:, :, None] - d[:, None, :])  # (B, T, n)
    rf = rf.masked_fill(~(k[None, :] >= r[:, None] + 1)[None], 0.0)
    right = rf.cumsum(-1)  # [r, k] = sum_{k'<=k}; entry c uses k = c-1
    c = torch.arange(T, device=d.device)
    lmask = (c[None, :] <= r[:, None] - 2)[None]
    rmask = (c[None, :] >= r[:, None] + 2)[None]
    out = torch.where(lmask, left[:, :, c.clamp(max=n - 1)], out)
    out = torch.where(rmask, right[:, :, (c - 1).clamp(min=0)], out)
    return out


def parent_positions(heads: np.ndarray, word_index: np.ndarray, *, eos: bool = False,
                     length: int | None = None) -> np.ndarray:
    """PASCAL parent position of every piece (SPEC.md §4).

    Args:
        heads: (W,) 1-based head word, 0 = root.
        word_index: (T,) 0-based word of each piece (no ``</s>``).
        eos: append ``</s>`` (position T) pointing at itself; length: pad to this length with T.

    Returns:
        (T,) float32 (``(length,)`` / ``(T+1,)`` with eos): the mean 0-based position of the pieces of
        the piece's head word; a root word points at its own middle.
    """
    wi = np.asarray(word_index, dtype=np.int64)
    W = len(heads)
    counts = np.bincount(wi, minlength=W).astype(np.float64)
    sums = np.bincount(wi, weights=np.arange(len(wi), dtype=np.float64), minlength=W)
    middle = sums / np.maximum(counts, 1)
    h = np.asarray(heads, dtype=np.int64)
    parent_word = np.where(h == 0, np.arange(W), h - 1)
    out = middle[parent_word[wi]]
    if eos:
        n = len(wi) + 1 if length is None else length
        out = np.concatenate([out, np.full(n - len(wi), float(len(wi)))])
    return out.astype(np.float32)
