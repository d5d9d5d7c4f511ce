"""Dependency-derived constituency trees (SPEC.md §4): shape, lifting of non-projective arcs, and their gaps
computed without the tree (``dependency_gaps``) against nltk's binarization of the tree itself."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from strategies import head_vectors

from synprep.features.deptree import dependency_gaps, dependency_tree, nonprojective_arcs, projectivize
from synprep.features.distance import both_gaps, cnf_gaps, nary_gaps
from synprep.features.relations import ancestor_mask

MONKEY = "The monkey eats a banana".split()


def test_monkey_tree():
    t = dependency_tree(MONKEY, [2, 3, 0, 5, 3], ["DET", "NOUN", "VERB", "DET", "NOUN"],
                        ["det", "nsubj", "root", "det", "obj"])
    assert t.pformat(margin=1000) == (
        "(ROOT (root (nsubj (DET The) (NOUN monkey)) (VERB eats) (obj (DET a) (NOUN banana))))")
    assert nary_gaps(t).tolist() == [1, 2, 2, 1]
    assert cnf_gaps(t).tolist() == [1, 3, 2, 1]
    cnf, nary = dependency_gaps([2, 3, 0, 5, 3])  # SPEC.md §4's vector, straight from the heads
    assert cnf.tolist() == [1, 3, 2, 1] and nary.tolist() == [1, 2, 2, 1]
    assert cnf.dtype == nary.dtype == np.int16


def test_default_labels_and_single_word():
    t = dependency_tree(["hello"], [0])
    assert t.pformat() == "(ROOT (X hello))"
    assert nary_gaps(t).tolist() == []
    t = dependency_tree(["a", "b"], [2, 0])
    assert t.pformat() == "(ROOT (dep (X a) (X b)))"


def test_chain_nests_deeper():
    # a <- b <- c <- d (each word the head of the one before): left-branching constituents
    t = dependency_tree(list("abcd"), [2, 3, 4, 0])
    assert t.pformat(margin=1000) == "(ROOT (dep (dep (dep (X a) (X b)) (X c)) (X d)))"
    assert nary_gaps(t).tolist() == [1, 2, 3]


def test_nonprojective_arc_is_lifted():
    # A hearing is scheduled on the issue today: "issue" (7) attached to "hearing" (2) crosses
    # "is scheduled", which hearing does not dominate
    words = "A hearing is scheduled on the issue today".split()
    heads = [2, 4, 4, 0, 7, 7, 2, 4]
    assert nonprojective_arcs(heads).tolist() == [6]
    lifted, n = projectivize(np.array(heads))
    assert n == 1 and lifted.tolist() == [2, 4, 4, 0, 7, 7, 4, 4]  # issue -> scheduled (hearing's head)
    t = dependency_tree(words, heads)
    assert t.leaves() == words
    assert t.pformat(margin=1000) == (
        "(ROOT (dep (dep (X A) (X hearing)) (X is) (X scheduled) (dep (X on) (X the) (X issue)) (X today)))")


def test_several_roots_hang_from_root():
    t = dependency_tree(["hello", ".", "bye"], [0, 1, 0], deprels=["root", "punct", "root"])
    assert t.pformat(margin=1000) == "(ROOT (root (X hello) (X .)) (X bye))"
    assert nary_gaps(t).tolist() == [1, 2]


def test_errors():
    with pytest.raises(ValueError, match="at least one word"):
        dependency_tree([], [])
    with pytest.raises(ValueError, match="heads has 1 entries for 2 words"):
        dependency_tree(["a", "b"], [0])
    with pytest.raises(ValueError, match="cycle"):
        dependency_tree(["a", "b", "c"], [0, 3, 2])
    with pytest.raises(ValueError, match=r"ancestors has shape \(2, 2\) for 3 words"):
        dependency_tree(["a", "b", "c"], [0, 1, 1], ancestors=np.eye(2, dtype=bool))


def _is_projective(heads: np.ndarray) -> bool:
    anc = ancestor_mask(heads)
    for d, h in enumerate(heads):
        if h == 0:
            continue
        lo, hi = sorted((d, h - 1))
        if not anc[lo + 1 : hi, h - 1].all():
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(head_vectors(max_words=25, roots=None))
def test_random_heads_give_trees_over_the_words(heads):
    h = np.array(heads)
    words = [f"w{i}" for i in range(h.size)]
    lifted, n_lifts = projectivize(h)
    # the result is projective, and nothing changed when the input already was
    assert _is_projective(lifted)
    assert nonprojective_arcs(lifted).size == 0
    if _is_projective(h):
        assert n_lifts == 0 and np.array_equal(lifted, h)
    # lifting only moves a word up: its new head is an ancestor of its old head (or the root)
    anc = ancestor_mask(h)
    moved = np.nonzero(lifted != h)[0]
    for d in moved:
        assert lifted[d] == 0 or anc[h[d] - 1, lifted[d] - 1]
    t = dependency_tree(words, heads)
    assert t.leaves() == words
    assert dependency_tree(words, h, ancestors=anc) == t  # a caller's ancestor mask gives the same tree
    c, a = both_gaps(t)
    assert c.shape == a.shape == (h.size - 1,)
    assert (c >= 1).all() and (a >= 1).all()
    # every projective head's subtree is a contiguous span = one constituent
    sub = ancestor_mask(lifted).T
    for x in range(h.size):
        span = np.nonzero(sub[x])[0]
        assert span.max() - span.min() + 1 == span.size


def _read_conllu(path):
    import conllu

    with open(path, encoding="utf-8") as f:
        for sent in conllu.parse_incr(f):
            toks = [t for t in sent if isinstance(t["id"], int)]
            yield [t["form"] for t in toks], [t["head"] for t in toks], [t["upos"] for t in toks], \
                [t["deprel"] for t in toks]


def test_real_german_pud_gold_trees(shared_data):
    n = lifted_sentences = 0
    for words, heads, upos, deprels in _read_conllu(shared_data / "ud" / "de_pud-ud-test.conllu"):
        t = dependency_tree(words, heads, upos, deprels)
        assert t.leaves() == words
        c, a = both_gaps(t)
        assert c.shape == (len(words) - 1,) and (c >= 1).all() and (a >= 1).all()
        lifted_sentences += projectivize(np.array(heads))[1] > 0
        n += 1
    assert n == 1000
    # German PUD has non-projective sentences: the lifting path is exercised on real data
    assert lifted_sentences > 10


def _same_gaps(words, heads):
    """``dependency_gaps`` equals nltk's binarization of ``dependency_tree`` (both conventions)."""
    c, a = both_gaps(dependency_tree(words, heads), inplace=True)
    c2, a2 = dependency_gaps(heads)
    assert c2.dtype == a2.dtype == np.int16
    return np.array_equal(c, c2) and np.array_equal(a, a2)


def test_gaps_without_the_tree_small_cases():
    assert [g.tolist() for g in dependency_gaps([0])] == [[], []]
    assert [g.tolist() for g in dependency_gaps([2, 3, 4, 0])] == [[1, 2, 3], [1, 2, 3]]  # the chain
    # one head over four words: right-factored 3 2 1, n-ary 1 1 1
    assert [g.tolist() for g in dependency_gaps([0, 1, 1, 1])] == [[3, 2, 1], [1, 1, 1]]
    # two roots after a lift are ROOT's children: ROOT binarizes like any other node
    heads = [0, 1, 0]
    assert _same_gaps(["hello", ".", "bye"], heads)
    assert [g.tolist() for g in dependency_gaps(heads)] == [[1, 2], [1, 2]]
    with pytest.raises(ValueError, match="at least one word"):
        dependency_gaps([])
    with pytest.raises(ValueError):
        dependency_gaps([0, 3, 2])  # a cycle
    with pytest.raises(ValueError, match="shape"):
        dependency_gaps([0, 1, 1], ancestors=np.eye(2, dtype=bool))


@settings(max_examples=400, deadline=None)
@given(head_vectors(max_words=30, roots=None))
def test_gaps_without_the_tree_equal_the_binarized_tree_random_heads(heads):
    # several roots and non-projective arcs included: the lifting is the same function on both sides
    words = [f"w{i}" for i in range(len(heads))]
    assert _same_gaps(words, heads)
    h = np.array(heads)  # a caller's ancestor mask (the pipeline's path) gives the same gaps
    c, a = dependency_gaps(h, ancestors=ancestor_mask(h))
    ref_c, ref_a = dependency_gaps(heads)  # equal to the tree's, asserted just above
    assert np.array_equal(c, ref_c) and np.array_equal(a, ref_a)


def test_gaps_without_the_tree_equal_the_binarized_tree_on_every_ud_sentence(shared_data):
    """Every gold tree of the UD treebanks in ../shared/data/ud (8853 sentences in 8 treebanks, German,
    English, French, Japanese; non-projective ones among them): the pipeline's gaps of a dependency parse
    are the tree's."""
    n = differ = 0
    files = sorted((shared_data / "ud").glob("*.conllu"))
    assert len(files) == 8
    for path in files:
        for words, heads, _, _ in _read_conllu(path):
            n += 1
            differ += not _same_gaps(words, heads)
    assert n == 8853 and differ == 0
