"""Syntactic distance: word-level gaps from a constituency tree, and their spreading to subwords.

Source: SPEC.md §2; Hou et al. 2022 (distance-transformer-slr), Definition 2.1 and Algorithm 1;
Shen et al. 2018 for syntactic distance itself.

A sentence of ``n`` words has ``n - 1`` *gaps*; gap ``d_k`` (0-based ``k``) lies between words
``k`` and ``k + 1``. Two conventions, both as ``(n-1,) int16``:

``nary`` (Algorithm 1)
    On the tree as given, a node's value is ``1 + max(child values)``; leaves are 0 and a node
    with one child (a unary chain, a preterminal) takes its child's value, so it adds nothing.
    The gaps between a node's children take the node's value.

``cnf`` (default; reproduces the reference data)
    The tree is right-factored binarized with nltk's
    :func:`nltk.tree.transforms.chomsky_normal_form` (``factor='right'``), unary chains are
    collapsed so preterminals are leaves of height 1, and ``d_k = height(LCA(w_k, w_{k+1})) - 1``.
    This is exactly Algorithm 1 applied to the binarized tree (in a tree without unary nodes,
    ``height - 1`` is ``1 + max(child (height - 1))`` with leaves at 0, and a unary node adds
    nothing in both), which is how it is computed.

Leaves: a word directly under a phrase node (a "bare word", no preterminal) is a leaf exactly
like a preterminal-plus-word, so ``(NP the man)`` and ``(NP (DT the) (NN man))`` give the same
gaps. A constituent with no children (``(NP )``) is refused: empty elements must be removed
before (the parser stage does this for PTB ``-NONE-``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from synprep.constants import GAP_EOS, GAP_INTRA_WORD, GAP_MODES, GAP_SENTENCE
from synprep.tree import depth_message, leaf_mismatch, leaf_to_word, nltk_cnf, nltk_tree, parse_tree  # noqa: F401 - leaf_mismatch re-exported

if TYPE_CHECKING:  # nltk by the functions that read or binarize a tree: the spreading and the checks never load it
    from nltk.tree import Tree



def as_tree(tree: str | Tree) -> Tree:
    """Return ``tree`` as an :class:`nltk.Tree` (a bracketed string is parsed with ``Tree.fromstring``).

    Raises:
        TreeError: (a ValueError) the string is not one well-formed bracketed tree
            (:func:`synprep.tree.parse_tree`; read as written, not normalized).
    """
    if isinstance(tree, nltk_tree()):
        return tree
    if not isinstance(tree, str):
        raise TypeError(f"expected a bracketed string or nltk.Tree, got {type(tree).__name__}")
    return parse_tree(tree, normalize=False)


def _split_values(tree: Tree) -> np.ndarray:
    """Algorithm 1 on ``tree`` as it is: ``(n-1,) int64`` gaps, computed without recursion.

    Each node's value is 1 + max(child values) when it has two or more children, its child's value
    when it has one, and 0 for a leaf (a str); the gaps between a node's children take its value.
    """
    tree_cls = nltk_tree()
    gaps: list[int] = []
    # frame: [node, next child index, max child value, gap slots of this node]
    stack: list[list] = [[tree, 0, 0, []]]
    last_value = 0
    while stack:
        frame = stack[-1]
        node, i = frame[0], frame[1]
        if i > 0:  # a child just finished: its value is in last_value
            if last_value > frame[2]:
                frame[2] = last_value
            if i < len(node):  # a gap between child i-1 and child i
                frame[3].append(len(gaps))
                gaps.append(0)
        if i == len(node):
            if i == 0:
                raise ValueError(f"empty constituent ({node.label()} ) in tree")
            value = frame[2] + 1 if i > 1 else frame[2]
            for slot in frame[3]:
                gaps[slot] = value
            last_value = value
            stack.pop()
            continue
        frame[1] = i + 1
        child = node[i]
        if isinstance(child, tree_cls):
            stack.append([child, 0, 0, []])
        else:
            last_value = 0
    return np.asarray(gaps, dtype=np.int64)


def nary_gaps(tree: str | Tree) -> np.ndarray:
    """Word gaps of the n-ary tree by the papers' Algorithm 1 (SPEC.md §2 ``nary``).

    Args:
        tree: a bracketed string or an :class:`nltk.Tree` (not modified) with ``n`` leaves.

    Returns:
        ``(n-1,) int16``, every gap >= 1; empty for a one-word sentence.

    Raises:
        ValueError: malformed bracketed string, or an empty constituent.

    Example: ``(ROOT (S (NP (PRP I)) (VP (VBP swim) (PP (IN across) (NP (DT the) (NN river))))
    (. .)))`` → ``[4, 3, 2, 1, 4]``.
    """
    return _split_values(as_tree(tree)).astype(np.int16)


def cnf_gaps(tree: str | Tree) -> np.ndarray:
    """Word gaps of the right-factored binarized tree (SPEC.md §2 ``cnf``, the reference convention).

    ``d_k = height(LCA(w_k, w_{k+1})) - 1`` after nltk's ``chomsky_normal_form(factor='right')``
    with unary chains collapsed (preterminals are leaves of height 1).

    Args:
        tree: a bracketed string or an :class:`nltk.Tree` (a given Tree is copied, never modified).

    Returns:
        ``(n-1,) int16``, every gap >= 1; empty for a one-word sentence.

    Raises:
        ValueError: malformed string, an empty constituent, or a node so wide that binarizing it
            exceeds nltk's ``MAX_TREE_DEPTH`` (500).

    Example: the tree of :func:`nary_gaps` → ``[5, 3, 2, 1, 4]``.
    """
    t = as_tree(tree) if isinstance(tree, str) else as_tree(tree).copy(deep=True)
    try:
        nltk_cnf()(t, factor="right")
    except ValueError as e:
        raise ValueError(depth_message(str(e))) from None
    return _split_values(t).astype(np.int16)


def tree_gaps(tree: str | Tree, mode: str = "cnf") -> np.ndarray:
    """Word gaps of ``tree`` in ``mode`` ``cnf`` (default) or ``nary``: ``(n-1,) int16`` (SPEC.md §2).

    Raises:
        ValueError: unknown mode, or see :func:`cnf_gaps` / :func:`nary_gaps`.
    """
    if mode == "cnf":
        return cnf_gaps(tree)
    if mode == "nary":
        return nary_gaps(tree)
    raise ValueError(f"unknown distance mode {mode!r}; choose one of {', '.join(GAP_MODES)}")


def both_gaps(tree: str | Tree, *, inplace: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(cnf_gaps, nary_gaps)`` of one tree, parsing a string only once (the per-line fast path).

    Args:
        tree: a bracketed string or an :class:`nltk.Tree`.
        inplace: binarize a given Tree in place instead of a copy (faster; the tree is left in
            Chomsky normal form). Strings are always parsed into a fresh tree.

    Returns:
        two ``(n-1,) int16`` arrays. Raises ValueError as :func:`cnf_gaps`.
    """
    if isinstance(tree, str):
        t = parse_tree(tree, normalize=False)
    else:
        t = as_tree(tree) if inplace else as_tree(tree).copy(deep=True)
    nary = _split_values(t).astype(np.int16)
    nltk_cnf()(t, factor="right")
    return _split_values(t).astype(np.int16), nary


def line_word_gaps(sentence_gaps: Sequence[np.ndarray]) -> np.ndarray:
    """Word-level gaps of a whole source line, ready to spread (SPEC.md §2).

    Args:
        sentence_gaps: per sentence, its ``(n_s - 1,)`` word gaps (``d >= 1``), in line order.

    Returns:
        ``(W-1,) int16`` with ``W = sum(n_s)``: ``d + 1`` inside a sentence and
        :data:`~synprep.constants.GAP_SENTENCE` (999) between two sentences.

    Raises:
        ValueError: a gap < 1 or >= 998 (it would collide with the special gaps).
    """
    parts: list[np.ndarray] = []
    for s, g in enumerate(sentence_gaps):
        g = np.asarray(g)
        if g.ndim != 1:
            raise ValueError(f"sentence {s}: gaps must be 1-D, got shape {g.shape}")
        if g.size and (g.min() < 1 or g.max() >= GAP_SENTENCE - 1):
            raise ValueError(f"sentence {s}: word gaps must lie in [1, {GAP_SENTENCE - 2}]")
        if s:
            parts.append(np.array([GAP_SENTENCE], dtype=np.int64))
        parts.append(g.astype(np.int64) + 1)
    if not parts:
        return np.zeros(0, dtype=np.int16)
    return np.concatenate(parts).astype(np.int16)


def check_word_index(word_index: np.ndarray, n_words: int | None = None) -> np.ndarray:
    """Validate a ``(T,)`` 0-based piece → word index: starts at 0, steps by 0 or 1.

    Returns:
        the index as ``int64``.

    Raises:
        ValueError: it does not start at 0, skips or goes back, or does not end at ``n_words - 1``.
    """
    wi = np.asarray(word_index)
    if wi.ndim != 1:
        raise ValueError(f"word_index must be 1-D, got shape {wi.shape}")
    wi = wi.astype(np.int64)
    if wi.size == 0:
        raise ValueError("word_index is empty: a line needs at least one piece")
    steps = np.diff(wi)
    if wi[0] != 0 or (steps.size and (steps.min() < 0 or steps.max() > 1)):
        raise ValueError("word_index must start at 0 and grow by 0 or 1 from piece to piece")
    if n_words is not None and wi[-1] != n_words - 1:
        raise ValueError(f"word_index covers {wi[-1] + 1} words, expected {n_words}")
    return wi


def spread_gaps(word_gaps: np.ndarray, word_index: np.ndarray, *, eos: bool = False) -> np.ndarray:
    """Spread line-level word gaps to subword pieces (SPEC.md §2, reference values).

    Args:
        word_gaps: ``(W-1,)`` line-level word gaps from :func:`line_word_gaps` (``d + 1`` inside a
            sentence, 999 between sentences).
        word_index: ``(T,)`` 0-based word of each piece (non-decreasing, steps of 0 or 1).
        eos: also append the gap before ``</s>`` (:data:`~synprep.constants.GAP_EOS`, 2000).
            Shards store no ``</s>`` gap; the trainer appends it.

    Returns:
        ``(T-1,) int16`` (``(T,)`` with ``eos``): 1 between two pieces of one word, the word gap
        between the last piece of a word and the first of the next.

    Raises:
        ValueError: ``word_index`` is malformed or does not match ``len(word_gaps) + 1`` words.

    Example: ``i sw@@ im across the ri@@ ver .`` with word gaps ``[6,4,3,2,5]`` and ``eos`` →
    ``[6,1,4,3,2,1,5,2000]``.
    """
    wg = np.asarray(word_gaps, dtype=np.int64)
    if wg.ndim != 1:
        raise ValueError(f"word_gaps must be 1-D, got shape {wg.shape}")
    wi = check_word_index(word_index, wg.size + 1)
    out = np.full(wi.size - 1, GAP_INTRA_WORD, dtype=np.int64)
    between = wi[1:] != wi[:-1]
    out[between] = wg[wi[:-1][between]]
    if eos:
        out = np.append(out, GAP_EOS)
    return out.astype(np.int16)
