"""The constituency tree behind the gaps: read back from the stored n-ary gaps (:func:`gap_tree`)
and drawn over the words. Part of :mod:`synprep.show`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from synprep.constants import GAP_SENTENCE
from synprep.show.pair import PairView


def word_distances(view: PairView) -> np.ndarray:
    """``(W-1,) int64`` word-level n-ary distances read back from the stored piece gaps.

    A gap between two words is ``d + 1`` (SPEC.md §2), so ``d = gap - 1``; a sentence boundary
    keeps :data:`~synprep.constants.GAP_SENTENCE` (999).
    """
    rec = view.record
    wi = rec.word_index.astype(np.int64)
    between = np.flatnonzero(wi[1:] != wi[:-1])  # piece k ends a word
    gaps = rec.gaps_nary.astype(np.int64)[between]
    return np.where(gaps >= GAP_SENTENCE, GAP_SENTENCE, gaps - 1)


#: a node of :func:`gap_tree`: ``(height, children)``; a leaf is its 0-based word index
GapNode = tuple[int, list[Any]]


def gap_tree(dist: Sequence[int], lo: int = 0, hi: int | None = None) -> GapNode | int:
    """The unlabeled n-ary tree whose n-ary distances (SPEC.md §2) are ``dist``.

    A node's children are cut at every gap of its span that equals the span's largest gap (the
    node's value ``1 + max(child values)`` is the gap between each pair of its children, and
    every gap inside a child is smaller), so the bracketing — unary chains collapsed, labels not
    stored — is recovered exactly.

    Args:
        dist: ``(n-1,)`` word-level n-ary distances of one sentence (``>= 1``).
        lo: the first word of the span ``[lo, hi]`` (0-based; default the sentence's first).
        hi: the last word of the span, inclusive (0-based; default the sentence's last).

    Returns:
        a word index (0-based) for one word, else ``(height, children)``.
    """
    hi = len(dist) if hi is None else hi
    if lo == hi:
        return lo
    inner = dist[lo:hi]
    top = max(inner)
    cuts = [lo + k for k, d in enumerate(inner) if d == top]
    bounds = [lo, *[c + 1 for c in cuts], hi + 1]
    return int(top), [gap_tree(dist, a, b - 1) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _tree_layout(node: GapNode | int, segs: list[tuple[float, float, float, float]]) -> tuple[float, float]:
    """``(x, y)`` of ``node`` (leaves at their word index, y = 0; a node at its height, centred over
    its children), appending the node-to-child segments to ``segs``."""
    if isinstance(node, int):
        return float(node), 0.0
    height, kids = node
    pts = [_tree_layout(k, segs) for k in kids]
    x = (pts[0][0] + pts[-1][0]) / 2
    for cx, cy in pts:
        segs.append((x, float(height), cx, cy))
    return x, float(height)


def _tree_panel(ax, view: PairView) -> None:
    """The constituency tree(s) of the line, recovered from the n-ary gaps, over the words."""
    dist = word_distances(view).tolist()
    w = len(view.words)
    segs: list[tuple[float, float, float, float]] = []
    nodes: list[tuple[float, float]] = []
    start = 0
    for end in [*[k for k, d in enumerate(dist) if d >= GAP_SENTENCE], w - 1]:
        tree = gap_tree([d for d in dist[start:end]], 0, end - start)
        before = len(segs)
        _tree_layout(tree, segs)
        for i in range(before, len(segs)):
            x0, y0, x1, y1 = segs[i]
            segs[i] = (x0 + start, y0, x1 + start, y1)
            nodes.append((x0 + start, y0))
        start = end + 1
    top = max([y for _, y in nodes], default=1.0)
    for x0, y0, x1, y1 in segs:  # dendrogram style: across at the node's height, then down to the child
        ax.plot([x0, x1, x1], [y0, y0, y1], color="tab:green", lw=1.0)
    if nodes:
        xs, ys = zip(*set(nodes), strict=True)
        ax.plot(xs, ys, "o", color="tab:green", ms=3)
    rotate = w > 22
    size = float(np.clip(ax.figure.get_figwidth() * 72 / max(w, 1) * (0.9 if rotate else 0.45), 5, 9))
    for i, word in enumerate(view.words):
        ax.text(i, -0.15, word, ha="right" if rotate else "center", va="top", fontsize=size,
                rotation=45 if rotate else 0, rotation_mode="anchor")
    for s in view.record.sent_start.tolist()[1:]:
        ax.axvline(s - 0.5, color="0.6", ls="--", lw=0.8)
    ax.set_xlim(-0.8, w - 0.2)
    ax.set_ylim(-1.2 if not rotate else -2.2, top + 0.4)
    ax.set_yticks(range(1, int(top) + 1))
    ax.set_ylabel("n-ary distance")
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"constituency tree the gaps came from (tree source: {view.attrs.get('tree_source')}), "
                 "recovered from the stored n-ary gaps: a node sits at its distance; labels are not stored",
                 fontsize=9, loc="left")

