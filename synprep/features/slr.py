"""Syntactic local range (SLR) masks from gaps, in numpy (the trainer's torch version: slr_torch).

Source: SPEC.md §3; Hou et al. 2022 (distance-transformer-slr) Definition 3.1, Algorithm 2 and
Eq. 6–7 (soft SLR).

Tokens ``0..T-1`` (``</s>`` included, as the last token), gaps ``d_0..d_{T-2}`` (the last one the
``</s>`` gap, 2000), ``σ_τ(x) = (1 + tanh(x/τ)) / 2 = sigmoid(2x/τ)``:

* ``M[r, c] = 1`` when ``|r - c| <= 1``;
* ``M[r, c] = Π_{k=c}^{r-2} σ_τ(d_{r-1} - d_k)`` for ``c <= r - 2`` (the query's left gap
  against every gap in between);
* ``M[r, c] = Π_{k=r+1}^{c-1} σ_τ(d_r - d_k)`` for ``c >= r + 2``.

The hard masks are the limit τ → 0, where a tie gives a factor 1/2: **strict** (a tie blocks,
the limit of the reference code) keeps ``c`` only when the query's gap is strictly larger than
every gap in between; **non-strict** (a tie does not block) when it is larger or equal. Hard
non-strict on ``nary`` gaps equals :func:`local_range_mask` (Definition 3.1) on the tree.

Attention uses ``softmax(s + log M)`` (the mask multiplies probabilities), hence the ``log``
variants: ``-inf`` where the hard mask is 0; the soft log-mask is finite.

Products are sums of log-sigmoids. Every row accumulates only its own terms (the others are
zeroed before the cumulative sum), so there is no cancellation between large partial sums:
O(T²) time and memory, no loop over T.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from synprep.features.distance import as_tree

if TYPE_CHECKING:  # nltk is imported only by local_range_mask (it costs ~0.6 s)
    from nltk.tree import Tree

DEFAULT_TAU = 10.0
HARD_MODES = ("strict", "nonstrict")


def _check_gaps(gaps: np.ndarray) -> np.ndarray:
    d = np.asarray(gaps, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError(f"gaps must be 1-D (T-1,), got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError("gaps must be finite")
    return d


def _log_sigmoid(z: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -z)


def _range_sums(right_terms: np.ndarray, left_terms: np.ndarray) -> np.ndarray:
    """Sum per row the right terms over ``k = r+1 .. c-1`` and the left terms over ``k = c .. r-2``.

    Both inputs are ``(T, T-1)`` (row r, gap k). Returns ``(T, T)``.
    """
    t = right_terms.shape[0]
    k = np.arange(t - 1)
    r = np.arange(t)[:, None]
    right = np.where(k[None, :] > r, right_terms, 0)  # k >= r + 1
    left = np.where(k[None, :] <= r - 2, left_terms, 0)
    out = np.zeros((t, t), dtype=right.dtype)
    out[:, 1:] += np.cumsum(right, axis=1)  # column c gets sum over k < c
    out[:, :-1] += np.cumsum(left[:, ::-1], axis=1)[:, ::-1]  # column c gets sum over k >= c
    return out


def _query_gaps(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row r: its right gap ``d_r`` and its left gap ``d_{r-1}`` (0 where there is none; unused)."""
    zero = np.zeros(1, dtype=d.dtype)
    return np.concatenate([d, zero]), np.concatenate([zero, d])


def soft_slr_log_mask(gaps: np.ndarray, tau: float = DEFAULT_TAU) -> np.ndarray:
    """Log of the soft SLR mask (SPEC.md §3; Hou et al. 2022 Eq. 6–7).

    Args:
        gaps: ``(T-1,)`` gaps of the tokens, ``</s>`` gap included (any real dtype).
        tau: temperature τ > 0 (default 10, the paper's value).

    Returns:
        ``(T, T) float32``, ``log M`` (finite, <= 0; 0 on the three central diagonals).

    Raises:
        ValueError: gaps not 1-D or not finite, or τ <= 0.
    """
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    d = _check_gaps(gaps)
    d_right, d_left = _query_gaps(d)
    scale = 2.0 / tau
    right = _log_sigmoid((d_right[:, None] - d[None, :]) * scale)
    left = _log_sigmoid((d_left[:, None] - d[None, :]) * scale)
    return _range_sums(right, left).astype(np.float32)


def soft_slr_mask(gaps: np.ndarray, tau: float = DEFAULT_TAU) -> np.ndarray:
    """Soft SLR mask ``M`` in [0, 1] (SPEC.md §3): ``(T, T) float32`` from ``(T-1,)`` gaps.

    See :func:`soft_slr_log_mask` for the arguments and errors.
    Example: gaps ``[6,4,3,2,5,2000]``, τ = 10, row 0 → ``[1, 1, .5987, .3865, .2667, .1466, 0]``.
    """
    return np.exp(soft_slr_log_mask(gaps, tau).astype(np.float64)).astype(np.float32)


def _blocked_counts(d: np.ndarray, strict: bool) -> np.ndarray:
    d_right, d_left = _query_gaps(d)
    cmp = np.less_equal if strict else np.less  # query gap vs gap in between: does it block?
    right = cmp(d_right[:, None], d[None, :]).astype(np.int64)
    left = cmp(d_left[:, None], d[None, :]).astype(np.int64)
    return _range_sums(right, left)


def hard_slr_mask(gaps: np.ndarray, strict: bool = True) -> np.ndarray:
    """Hard SLR mask, Algorithm 2 of Hou et al. 2022 (SPEC.md §3): ``(T, T) bool``.

    Args:
        gaps: ``(T-1,)`` gaps, ``</s>`` gap included.
        strict: True: a tie blocks (the τ → 0 limit of the reference code); False: a tie does not
            block (equals Definition 3.1 on ``nary`` gaps).

    Raises:
        ValueError: gaps not 1-D or not finite.

    Example: gaps ``[6,4,3,2,5,2000]`` → rows ``1111110 / 1111100 / 0111100 / 0011100 / 0001110 /
    0111111 / 1111111``.
    """
    return _blocked_counts(_check_gaps(gaps), strict) == 0


def hard_slr_log_mask(gaps: np.ndarray, strict: bool = True) -> np.ndarray:
    """``log`` of :func:`hard_slr_mask`: ``(T, T) float32``, 0 inside the range and ``-inf`` outside."""
    return np.where(hard_slr_mask(gaps, strict), np.float32(0), np.float32(-np.inf)).astype(np.float32)


def slr_mask(gaps: np.ndarray, *, tau: float | None = DEFAULT_TAU, hard: str | None = None,
             log: bool = False) -> np.ndarray:
    """One entry point: soft with ``tau`` (when ``hard`` is None) or hard ``strict``/``nonstrict``.

    Returns:
        ``(T, T)``: float32 (soft, or any ``log``), bool (hard, not ``log``).

    Raises:
        ValueError: unknown ``hard`` mode, or see the functions above.
    """
    if hard is not None:
        if hard not in HARD_MODES:
            raise ValueError(f"unknown hard mode {hard!r}; choose one of {', '.join(HARD_MODES)}")
        fn = hard_slr_log_mask if log else hard_slr_mask
        return fn(gaps, strict=hard == "strict")
    tau = DEFAULT_TAU if tau is None else tau
    return soft_slr_log_mask(gaps, tau) if log else soft_slr_mask(gaps, tau)


def local_range_mask(tree: str | Tree) -> np.ndarray:
    """Definition 3.1 of Hou et al. 2022 computed directly on the tree: ``(n, n) bool`` for n leaves.

    For a token t (a leaf), walk up from t: the first node on the way that is *not* the leftmost
    child of its parent w gives the left end of t's range, w's leftmost leaf (when t itself is not
    the leftmost child of its parent f, w = f). With no such node (t is the sentence's first
    token) the range starts at t. The right end mirrors this with rightmost children. Unary chains
    and preterminals need no special case: a single child is both leftmost and rightmost, so the
    walk passes through them. ``M[t, start:end+1] = True``.

    This is the reference the property tests compare the gap-based masks with; it is written for
    clarity (O(n · depth)), not speed.

    To include ``</s>``, wrap the tree: ``Tree("TOP", [tree, "</s>"])``.
    """
    t = as_tree(tree)
    positions = t.treepositions("leaves")
    n = len(positions)
    span: dict[tuple[int, ...], list[int]] = {}
    for i, p in enumerate(positions):
        for j in range(len(p)):
            s = span.setdefault(p[:j], [i, i])
            s[1] = i
    mask = np.zeros((n, n), dtype=bool)
    for i, p in enumerate(positions):
        start, end = i, i
        for j in range(len(p) - 1, -1, -1):  # left: nearest non-leftmost child on the way up
            if p[j] > 0:
                start = span[p[:j]][0]
                break
        for j in range(len(p) - 1, -1, -1):  # right: nearest non-rightmost child on the way up
            if p[j] < len(t[p[:j]]) - 1:
                end = span[p[:j]][1]
                break
        mask[i, start : end + 1] = True
    return mask
