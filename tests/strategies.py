"""Hypothesis strategies shared by the feature tests: random constituency trees and head vectors."""

from __future__ import annotations

from hypothesis import strategies as st
from nltk.tree import Tree

# A tree shape: "P" is a preterminal; a list is a phrase with those children (size 1 = unary).
_shapes = st.recursive(st.just("P"), lambda kids: st.lists(kids, min_size=1, max_size=4), max_leaves=24)


def _build(shape, counter: list[int], bare: bool) -> Tree | str:
    if shape == "P":
        word = f"w{counter[0]}"
        counter[0] += 1
        return word if bare else Tree("P", [word])
    return Tree("X", [_build(s, counter, bare) for s in shape])


def _to_tree(shape, bare: bool = False) -> Tree:
    node = _build(shape, [0], bare)
    return node if isinstance(node, Tree) else Tree("X", [node])


#: random n-ary trees with preterminals, unary chains allowed, 1..24 words ``w0 w1 ...``
trees = _shapes.map(_to_tree)

#: the same shapes twice: with preterminals, and with bare words in their place
tree_pairs = _shapes.map(lambda s: (_to_tree(s), _to_tree(s, bare=True)))


@st.composite
def head_vectors(draw, min_words: int = 1, max_words: int = 25, roots: int | None = 1):
    """Random 1-based head vectors (0 = root) of random trees, non-projective arcs included.

    Words are attached in a random order, each to a word attached before it, so every tree shape
    can occur. ``roots=None`` allows a forest (several words with head 0).
    """
    n = draw(st.integers(min_words, max_words))
    order = draw(st.permutations(range(n)))
    heads = [0] * n
    for k, w in enumerate(order[1:], 1):
        if roots is None and draw(st.booleans()) and draw(st.booleans()):
            heads[w] = 0
        else:
            heads[w] = order[draw(st.integers(0, k - 1))] + 1
    return heads
