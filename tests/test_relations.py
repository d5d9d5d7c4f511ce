"""Tree relations from heads (SPEC.md §4): depth, path up/down steps, path length, subtree mask."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from strategies import head_vectors

from synprep.features.relations import (
    ancestor_mask,
    expand_to_pieces,
    path_lengths,
    subtree_mask,
    tree_depth,
    tree_relations,
)

# The monkey eats a banana: The->monkey, monkey->eats, eats=root, a->banana, banana->eats
HEADS = [2, 3, 0, 5, 3]


def test_hand_tree():
    r = tree_relations(HEADS)
    assert r.depth.tolist() == [2, 1, 0, 2, 1]
    assert r.depth.dtype == np.int32
    # The -> banana: up to eats (The -> monkey -> eats, 2 arcs), down to banana (1 arc)
    assert r.up[0, 4] == 2 and r.down[0, 4] == 1 and r.path[0, 4] == 3
    assert r.up[0, 3] == 2 and r.down[0, 3] == 2 and r.path[0, 3] == 4  # The -> a
    assert r.up[1, 0] == 0 and r.down[1, 0] == 1  # monkey -> The: straight down
    assert r.path.tolist() == [
        [0, 1, 2, 4, 3],
        [1, 0, 1, 3, 2],
        [2, 1, 0, 2, 1],
        [4, 3, 2, 0, 1],
        [3, 2, 1, 1, 0],
    ]
    assert r.subtree.astype(int).tolist() == [
        [1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [1, 1, 1, 1, 1],
        [0, 0, 0, 1, 0],
        [0, 0, 0, 1, 1],
    ]
    assert tree_depth(HEADS).tolist() == r.depth.tolist()
    assert np.array_equal(subtree_mask(HEADS), r.subtree)
    assert np.array_equal(path_lengths(HEADS), r.path)


def test_two_sentences_meet_at_the_virtual_root():
    # "hello . it works": hello=root, . -> hello | it -> works, works=root
    r = tree_relations([0, 1, 4, 0])
    assert r.depth.tolist() == [0, 1, 1, 0]
    assert r.up[1, 2] == 2 and r.down[1, 2] == 2  # . up to hello, to ROOT; ROOT to works, to it
    assert r.path[0, 3] == 2
    assert r.subtree[3, 2] and not r.subtree[0, 3] and not r.subtree[0, 2]


def test_errors():
    with pytest.raises(ValueError, match="cycle"):
        ancestor_mask([2, 3, 1])
    with pytest.raises(ValueError, match="cycle"):
        tree_relations([0, 3, 2])
    with pytest.raises(ValueError, match="own head"):
        tree_relations([1])
    with pytest.raises(ValueError, match="lie in"):
        tree_relations([0, 5])


def test_expand_to_pieces():
    wi = np.array([0, 1, 1, 2, 3, 4, 4])
    r = tree_relations(HEADS)
    d = expand_to_pieces(r.depth, wi)
    assert d.tolist() == [2, 1, 1, 0, 2, 1, 1]
    p = expand_to_pieces(r.path, wi)
    assert p.shape == (7, 7)
    assert p[1, 2] == 0 and p[0, 5] == 3 and p[5, 0] == 3


@settings(max_examples=300, deadline=None)
@given(head_vectors(max_words=30, roots=None))
def test_relation_properties(heads):
    h = np.array(heads)
    w = h.size
    r = tree_relations(h)
    path = r.path
    assert np.array_equal(path, path.T)  # symmetric
    assert np.array_equal(r.up, r.down.T)
    assert (np.diag(path) == 0).all() and (path[~np.eye(w, dtype=bool)] > 0).all()
    # depth: a root word 0, every other word one below its head
    child = h > 0
    assert (r.depth[~child] == 0).all()
    assert np.array_equal(r.depth[child], r.depth[h[child] - 1] + 1)
    # an arc is a path of length 1, up for the dependent
    idx = np.nonzero(child)[0]
    assert (path[idx, h[idx] - 1] == 1).all() and (r.up[idx, h[idx] - 1] == 1).all()
    # triangle inequality: path[i, j] <= path[i, k] + path[k, j]
    assert (path[:, None, :] <= path[:, :, None] + path[None, :, :]).all()
    # subtree: reflexive, transitive, and j below i exactly when the path from j to i only goes up
    sub = r.subtree
    assert np.diag(sub).all()
    s = sub.astype(int)
    assert np.array_equal((s @ s) > 0, sub)
    assert np.array_equal(sub, r.down.T == 0)
    # a word lies in the subtrees of its depth + 1 ancestors-or-self
    assert np.array_equal(sub.sum(axis=0) - 1, r.depth)
