"""Constituency trees derived from dependency trees (for languages without a constituency parser).

Source: SPEC.md §4 ("the projective dependency tree read as a constituency tree whose
constituents are each head with its dependents' spans"); non-projective arcs are lifted as in
pseudo-projective parsing (Nivre & Nilsson 2005, "lift").

The tree of a sentence of W words:

* every word is a preterminal ``(UPOS word)`` (``X`` when no UPOS is given);
* a word with dependents heads a constituent labelled with its own deprel (``nsubj``, ``root``,
  …; ``dep`` when none is given) whose children, in word order, are its dependents'
  constituents and its own preterminal;
* the whole is wrapped in ``(ROOT …)`` (a unary node: it changes no gap); a sentence with several
  roots (head 0) has them all as children of ``ROOT``.

Example: "The monkey eats a banana" (heads 2 3 0 5 3) → ``(ROOT (root (nsubj (DET The) (NOUN
monkey)) (VERB eats) (obj (DET a) (NOUN banana))))``, nary gaps ``[1, 2, 2, 1]``, cnf
``[1, 3, 2, 1]``.

The gaps of that tree do not need the tree: :func:`dependency_gaps` computes them from the
(projectivized) heads alone, on arrays, without nltk — what the pipeline runs for every sentence
without a constituency tree. :func:`dependency_tree` builds the :class:`nltk.Tree` itself (the Python
API, for whoever wants the tree) and, through :func:`~synprep.features.distance.both_gaps`, is the
reference that :func:`dependency_gaps` is tested against (tests/test_deptree.py, every sentence of the UD
treebanks in ``../shared/data/ud``).

Non-projective arcs. An arc ``h → d`` is projective when every word strictly between ``h`` and
``d`` descends from ``h`` (arcs from the virtual root 0 always are). While some arc is not, the
*shortest* non-projective arc (ties: the leftmost dependent) is lifted: ``d`` is re-attached to
its head's head (to the virtual root when its head was a root). Each lift moves a word one step
up, so this ends, at worst with every word a root. Word order is kept, so the leaves are the
words in order, and the derived tree covers exactly the sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from synprep.features.relations import ancestor_mask
from synprep.tree import nltk_tree

if TYPE_CHECKING:  # nltk (~0.3–2 s to import) only where a tree object is built: dependency_tree
    from nltk.tree import Tree


def nonprojective_arcs(heads: np.ndarray) -> np.ndarray:
    """0-based indices of the dependents whose arc to their head is not projective.

    Args:
        heads: ``(W,)`` 1-based, 0 = root.

    Returns:
        ``(K,) int64``, ascending.

    Raises:
        ValueError: bad heads or a cycle.
    """
    h = np.asarray(heads, dtype=np.int64)
    return _nonprojective_arcs(h, ancestor_mask(h))


def _nonprojective_arcs(h: np.ndarray, anc: np.ndarray) -> np.ndarray:
    """:func:`nonprojective_arcs` of checked ``int64`` heads ``h`` whose ``ancestor_mask`` is ``anc``."""
    w = h.size
    if w == 0:
        return np.zeros(0, dtype=np.int64)
    # outside[j, x]: number of words among 0..j that do not descend from word x
    outside = np.cumsum(~anc, axis=0)
    d = np.arange(w)
    hd = h - 1
    real = hd >= 0
    lo = np.minimum(d, hd)
    hi = np.maximum(d, hd)
    col = np.where(real, hd, 0)
    # non-descendants of the head strictly between lo and hi: outside[hi-1] - outside[lo]
    between = outside[np.maximum(hi - 1, 0), col] - outside[np.maximum(lo, 0), col]
    bad = real & (hi - lo > 1) & (between > 0)
    return np.nonzero(bad)[0]


def projectivize(heads: np.ndarray) -> tuple[np.ndarray, int]:
    """Lift non-projective arcs until the tree is projective (see the module docstring).

    Args:
        heads: ``(W,)`` 1-based, 0 = root.

    Returns:
        ``(new_heads, lifts)``: ``(W,) int64`` projective heads and the number of lifts made.

    Raises:
        ValueError: bad heads or a cycle.
    """
    h = np.array(heads, dtype=np.int64)
    h, lifts, _ = _projectivize(h, ancestor_mask(h))
    return h, lifts


def _projectivize(h: np.ndarray, anc: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """:func:`projectivize` in place on checked ``int64`` heads ``h`` whose ``ancestor_mask`` is
    ``anc``; also returns the ancestor mask of the projective heads."""
    lifts = 0
    while True:
        bad = _nonprojective_arcs(h, anc)
        if bad.size == 0:
            return h, lifts, anc
        lengths = np.abs(h[bad] - 1 - bad)
        d = int(bad[np.argmin(lengths)])  # argmin takes the first (leftmost) of equal lengths
        head = int(h[d])
        h[d] = h[head - 1]
        lifts += 1
        anc = ancestor_mask(h)


def _dependents(heads: Sequence[int] | np.ndarray, ancestors: np.ndarray | None) -> tuple[list[list[int]], list[int]]:
    """The projectivized tree of :func:`dependency_tree` and :func:`dependency_gaps`: per head its dependents
    (``[0]`` the roots, ``[x + 1]`` word x's; each list in word order) and the words, deepest first (every
    word after its dependents; ties in word order).

    Raises:
        ValueError: no words, bad heads or a cycle, ``ancestors`` of another shape.
    """
    h = np.array(heads, dtype=np.int64)
    w = h.size
    if w == 0:
        raise ValueError("a sentence needs at least one word")
    if ancestors is None:
        ancestors = ancestor_mask(h)
    elif ancestors.shape != (w, w):
        raise ValueError(f"ancestors has shape {ancestors.shape} for {w} words")
    h, _, anc = _projectivize(h, ancestors)
    deps: list[list[int]] = [[] for _ in range(w + 1)]
    for d, head in enumerate(h.tolist()):
        deps[head].append(d)
    return deps, np.argsort(-anc.sum(axis=1), kind="stable").tolist()


def dependency_tree(words: Sequence[str], heads: Sequence[int] | np.ndarray, upos: Sequence[str] | None = None,
                    deprels: Sequence[str] | None = None, *, ancestors: np.ndarray | None = None) -> Tree:
    """The constituency tree read off a dependency tree (SPEC.md §4; module docstring for the shape).

    Args:
        words: ``(W,)`` the sentence's words (the tree's leaves, in order).
        heads: ``(W,)`` 1-based sentence-relative heads, 0 = root (non-projective allowed).
        upos: ``(W,)`` preterminal labels (default ``X``).
        deprels: ``(W,)`` phrase labels of the words that head a constituent (default ``dep``).
        ancestors: ``ancestor_mask(heads)`` when the caller has already computed it (it is taken
            as given, not recomputed: the heads are then not checked again).

    Returns:
        an :class:`nltk.Tree` with ``leaves() == list(words)``; :func:`~synprep.features.distance.cnf_gaps`
        and :func:`~synprep.features.distance.nary_gaps` accept it.

    Raises:
        ValueError: lengths differ, no words, bad heads or a cycle.
    """
    tree_cls = nltk_tree()

    w = len(words)
    if w == 0:
        raise ValueError("a sentence needs at least one word")
    for name, seq in (("heads", heads), ("upos", upos), ("deprels", deprels)):
        if seq is not None and len(seq) != w:
            raise ValueError(f"{name} has {len(seq)} entries for {w} words")
    deps, order = _dependents(heads, ancestors)
    nodes: list[Tree | None] = [None] * w
    for x in order:
        pre = tree_cls(upos[x] if upos is not None else "X", [words[x]])
        if not deps[x + 1]:
            nodes[x] = pre
            continue
        items = [(d, nodes[d]) for d in deps[x + 1]] + [(x, pre)]
        items.sort(key=lambda item: item[0])
        nodes[x] = tree_cls(deprels[x] if deprels is not None else "dep", [n for _, n in items])
    tree = tree_cls("ROOT", [nodes[r] for r in deps[0]])
    return tree


def dependency_gaps(heads: Sequence[int] | np.ndarray, *, ancestors: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(cnf, nary)`` word gaps of the tree :func:`dependency_tree` derives, without building it.

    SPEC.md §2 and §4: the same numbers as ``both_gaps(dependency_tree(words, heads))``
    (:func:`synprep.features.distance.both_gaps`), computed from the projectivized heads in one
    pass over the words, children before parents. A word with dependents heads a constituent whose
    children, in word order, are its dependents' constituents and its own preterminal (value 0);
    the roots are the children of ``ROOT``. With child values ``v_1 … v_k`` (k ≥ 2):

    * ``nary`` (Algorithm 1): the node's value is ``1 + max(v)``, and so is every gap between
      two of its children;
    * ``cnf`` (right-factored binarization, nltk's ``chomsky_normal_form(factor='right')``):
      ``R_k = v_k``, ``R_j = 1 + max(v_j, R_{j+1})``; the gap between children j and j + 1 is
      ``R_j`` and the node's value ``R_1``.

    A node with one child (a preterminal, ``ROOT`` over one root) passes its child's value on.
    Unlike nltk's binarization, no depth limit applies (nltk refuses trees it would nest more
    than 500 levels deep, which a dependency tree of up to 250 words never is).

    Args:
        heads: ``(W,)`` 1-based sentence-relative heads, 0 = root (non-projective allowed: lifted
            as in the module docstring).
        ancestors: ``ancestor_mask(heads)`` when the caller has already computed it (taken as
            given: the heads are then not checked again).

    Returns:
        ``(cnf, nary)``, each ``(W-1,) int16``, every gap ≥ 1; empty for one word.

    Raises:
        ValueError: no words, bad heads or a cycle.
    """
    deps, order = _dependents(heads, ancestors)
    w = len(order)
    cnf = [0] * max(w - 1, 0)
    nary = [0] * max(w - 1, 0)
    # per word: its constituent's (cnf value, nary value, last word) — a preterminal's until it heads one
    value_c = [0] * w
    value_n = [0] * w
    last = list(range(w))

    def join(kids: list[tuple[int, int, int]]) -> tuple[int, int, int]:
        """(cnf value, nary value, last word) of a node over ``kids`` (each the same triple, in word
        order); writes the gaps between them."""
        if len(kids) == 1:
            return kids[0]
        top = 1 + max(k[1] for k in kids)
        r = kids[-1][0]
        for j in range(len(kids) - 2, -1, -1):
            r = 1 + max(kids[j][0], r)
            cnf[kids[j][2]] = r
            nary[kids[j][2]] = top
        return r, top, kids[-1][2]

    for x in order:
        ds = deps[x + 1]
        if not ds:
            continue
        kids = [(value_c[d], value_n[d], last[d]) for d in ds if d < x]
        kids.append((0, 0, x))  # the word's own preterminal
        kids += [(value_c[d], value_n[d], last[d]) for d in ds if d > x]
        value_c[x], value_n[x], last[x] = join(kids)
    join([(value_c[r], value_n[r], last[r]) for r in deps[0]])
    return np.asarray(cnf, dtype=np.int16), np.asarray(nary, dtype=np.int16)
