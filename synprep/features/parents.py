"""Dependency-parent positions of subword pieces: PASCAL mean-parent and LISA first-piece.

Source: SPEC.md §4; Bugliarello & Okazaki 2020 (pascal-parent-scaled-attention) §3 "Parent-Scaled
Self-Attention" and "Gaussian weighing function"; Strubell et al. 2018 (LISA/SISA) for the
first-piece parent, as extended to BPE in the PASCAL paper.

Heads are word-level, 1-based and *line-level* (0 = root; sentence-relative heads already offset
by their sentence's start, SPEC.md §1), so a line with several sentences needs nothing special.
Piece positions are 0-based.
"""

from __future__ import annotations

import math

import numpy as np

from synprep.features.distance import check_word_index

MODES = ("mean", "first")


def check_heads(heads: np.ndarray) -> np.ndarray:
    """Validate ``(W,)`` 1-based heads (0 = root): integers in ``[0, W]``, no word its own head.

    Returns:
        the heads as ``int64``.

    Raises:
        ValueError: not 1-D, out of range, or a self-loop.
    """
    h = np.asarray(heads)
    if h.ndim != 1:
        raise ValueError(f"heads must be 1-D (W,), got shape {h.shape}")
    h = h.astype(np.int64)
    w = h.size
    if w and (h.min() < 0 or h.max() > w):
        raise ValueError(f"heads must lie in [0, {w}] (1-based, 0 = root)")
    if np.any(h == np.arange(1, w + 1)):
        i = int(np.nonzero(h == np.arange(1, w + 1))[0][0])
        raise ValueError(f"word {i + 1} is its own head")
    return h


def parent_positions(heads: np.ndarray, word_index: np.ndarray, *, mode: str = "mean", eos: bool = False,
                     length: int | None = None) -> np.ndarray:
    """Parent position of every piece (SPEC.md §4).

    ``mean`` (PASCAL): the mean 0-based position of the head word's pieces; the root word points
    at its own middle. ``first`` (LISA): the first piece of the head word; the root word points at
    its own first piece.

    Args:
        heads: ``(W,)`` 1-based line-level head of each word, 0 = root.
        word_index: ``(T,)`` 0-based word of each piece.
        mode: ``"mean"`` or ``"first"``.
        eos: append ``</s>`` (position T), pointing at itself.
        length: pad the result to this length (needs ``eos``); padding points at the ``</s>``
            position T, as ``</s>`` does.

    Returns:
        ``(T,)`` float32 (``(T+1,)`` with ``eos``, ``(length,)`` with ``length``), every value in
        ``[0, len - 1]``.

    Raises:
        ValueError: bad heads or word_index, unknown mode, ``length`` without ``eos`` or shorter
            than T + 1.

    Example: "The mon@@ key eats a ban@@ ana", heads ``[2, 3, 0, 5, 3]``, word_index
    ``[0, 1, 1, 2, 3, 4, 4]`` → mean ``1.5 3 3 3 5.5 3 3``, first ``1 3 3 3 5 3 3``.
    """
    if mode not in MODES:
        raise ValueError(f"unknown parent mode {mode!r}; choose one of {', '.join(MODES)}")
    h = check_heads(heads)
    wi = check_word_index(word_index, h.size)
    t = wi.size
    first = np.searchsorted(wi, np.arange(h.size), side="left")
    last = np.searchsorted(wi, np.arange(h.size), side="right") - 1
    word_pos = (first + last) / 2.0 if mode == "mean" else first.astype(np.float64)
    parent_word = np.where(h == 0, np.arange(h.size), h - 1)
    out = word_pos[parent_word[wi]]
    if length is not None and not eos:
        raise ValueError("length (padding) needs eos: padding points at the </s> position")
    if eos:
        n = t + 1 if length is None else length
        if n < t + 1:
            raise ValueError(f"length {n} is shorter than the {t} pieces plus </s>")
        out = np.concatenate([out, np.full(n - t, float(t))])
    return out.astype(np.float32)


def gaussian_weights(parents: np.ndarray, sigma: float = 1.0, length: int | None = None) -> np.ndarray:
    """PASCAL weights ``W[i, j] = N(j; p_i, σ²)`` (Bugliarello & Okazaki 2020, Eq. for ``D^i``; SPEC.md §4).

    The attention multiplies the scaled scores of query ``i`` element-wise by row ``i`` before the
    softmax. ``N(0) = .398942``, ``N(±1) = .241971``, ``N(±2) = .053991`` for σ = 1.

    Args:
        parents: ``(T,)`` parent position of each query (from :func:`parent_positions`).
        sigma: standard deviation σ > 0 (the paper's σ² = 1).
        length: number of key positions (default T).

    Returns:
        ``(T, length) float32``.

    Raises:
        ValueError: σ <= 0 or parents not 1-D.
    """
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    p = np.asarray(parents, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"parents must be 1-D, got shape {p.shape}")
    n = p.size if length is None else length
    j = np.arange(n, dtype=np.float64)
    z = (j[None, :] - p[:, None]) / sigma
    return (np.exp(-0.5 * z * z) / (sigma * math.sqrt(2 * math.pi))).astype(np.float32)
