"""Tree relations between words, from dependency heads, for SET-style and SLA-style attention.

Source: SPEC.md §4; the Syntax-Enhanced Transformer paper (set-syntax-enhanced-transformer):
level (depth) embeddings, relative tree positions of the shortest path between two words, and
the subtree mask ("query words attend only to their descendants").

Conventions:

* ``heads``: ``(W,)`` 1-based head of each word, 0 = root; line-level heads are fine.
* Depth: arcs from the word up to its sentence's root word (a root word has depth 0).
* All words hang from one *virtual root* (CoNLL-U's node 0, depth -1). Two words of different
  sentences of one line (or of a forest) meet there: their path goes up to the virtual root and
  down again (``up = depth(i) + 1``, ``down = depth(j) + 1``). Within one sentence the virtual
  root is never on a shortest path.
* ``up[i, j]``: arcs from ``i`` up to ``LCA(i, j)``; ``down[i, j]``: arcs from the LCA down to
  ``j``; ``path = up + down`` (symmetric; ``up[i, j] == down[j, i]``).
* ``subtree[i, j]``: ``j`` is in the subtree of ``i`` (``i`` itself included).

Word-level matrices expand to pieces with :func:`expand_to_pieces` (a piece takes its word's row
and column). Everything is vectorised numpy: O(W · depth) for the ancestors and one ``(W, W)``
matrix product for the common ancestors (W up to a few hundred).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from synprep.features.parents import check_heads


def ancestor_mask(heads: np.ndarray) -> np.ndarray:
    """``A[i, j]``: word ``j`` is an ancestor of word ``i`` or ``i`` itself. ``(W, W) bool``, 0-based.

    Raises:
        ValueError: heads out of range, a self-loop, or a cycle (names one word on it).
    """
    h = check_heads(heads)
    w = h.size
    parent = h - 1  # -1 = root
    anc = np.eye(w, dtype=bool)
    rows = np.arange(w)
    cur = parent.copy()
    for _ in range(w):
        live = cur >= 0
        if not live.any():
            return anc
        anc[rows[live], cur[live]] = True
        cur[live] = parent[cur[live]]
    if (cur >= 0).any():
        i = int(np.nonzero(cur >= 0)[0][0])
        raise ValueError(f"heads contain a cycle (word {i + 1} never reaches the root)")
    return anc


@dataclass
class TreeRelations:
    """All word-pair relations of one dependency tree (or forest); see the module docstring.

    Attributes:
        depth: ``(W,) int32``, root word 0.
        up: ``(W, W) int32``, arcs from i up to LCA(i, j).
        down: ``(W, W) int32``, arcs from LCA(i, j) down to j.
        subtree: ``(W, W) bool``, j in the subtree of i (i included).
    """

    depth: np.ndarray
    up: np.ndarray
    down: np.ndarray
    subtree: np.ndarray

    @property
    def path(self) -> np.ndarray:
        """``(W, W) int32`` shortest-path length (arcs) between i and j."""
        return self.up + self.down


def tree_relations(heads: np.ndarray) -> TreeRelations:
    """Depth, path up/down steps and subtree mask of ``heads`` (SPEC.md §4).

    Args:
        heads: ``(W,)`` 1-based, 0 = root.

    Raises:
        ValueError: see :func:`ancestor_mask`.

    Example: heads ``[2, 3, 0, 5, 3]`` (The monkey eats a banana): depth ``[2, 1, 0, 2, 1]``;
    from "The" to "banana": up 2, down 2, path 4.
    """
    anc = ancestor_mask(heads)
    a = anc.astype(np.float32)
    depth = anc.sum(axis=1).astype(np.int32) - 1
    common = (a @ a.T).astype(np.int32)  # number of common ancestors = depth(LCA) + 1
    up = depth[:, None] - common + 1
    down = depth[None, :] - common + 1
    return TreeRelations(depth=depth, up=up.astype(np.int32), down=down.astype(np.int32), subtree=anc.T.copy())


def tree_depth(heads: np.ndarray) -> np.ndarray:
    """``(W,) int32`` depth of each word (root word 0). Raises ValueError on bad heads."""
    return (ancestor_mask(heads).sum(axis=1) - 1).astype(np.int32)


def subtree_mask(heads: np.ndarray) -> np.ndarray:
    """``(W, W) bool``: ``j`` is a descendant of ``i`` or ``i`` itself. Raises ValueError on bad heads."""
    return ancestor_mask(heads).T.copy()


def path_lengths(heads: np.ndarray) -> np.ndarray:
    """``(W, W) int32`` shortest-path length in arcs between two words. Raises ValueError on bad heads."""
    return tree_relations(heads).path


def expand_to_pieces(word_matrix: np.ndarray, word_index: np.ndarray) -> np.ndarray:
    """Expand a word-level ``(W,)`` or ``(W, W)`` array to pieces: ``(T,)`` or ``(T, T)``.

    Piece ``p`` takes word ``word_index[p]``'s entry (row and column).
    """
    m = np.asarray(word_matrix)
    wi = np.asarray(word_index, dtype=np.int64)
    if m.ndim == 1:
        return m[wi]
    return m[wi[:, None], wi[None, :]]
