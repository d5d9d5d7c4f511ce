"""Labeled dependency distributions (SPEC.md §4): line-level sparse entries, dense piece matrices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import head_vectors

from synprep.features.ldd import label_ids, ldd_piece_matrix, line_ldd, sentence_ldd
from synprep.types import DEPRELS, ParsedSentence, SparseLDD, deprel_id

HELLO = ParsedSentence(["hello", "."], ["INTJ", "PUNCT"], [0, 1], ["root", "punct"])


def swim(ldd: SparseLDD | None = None) -> ParsedSentence:
    return ParsedSentence(["i", "swim"], ["PRON", "VERB"], [2, 0], ["nsubj", "root"], ldd=ldd)


SCORES = SparseLDD(dep=np.array([1, 1, 2, 2]), head=np.array([2, 0, 0, 1]),
                   rel=["nsubj", "nsubj:pass", "root", "root"], prob=np.array([.9, .1, .8, .2]), threshold=0.05)


def test_one_hot_without_scores():
    dep, head, rel, prob = sentence_ldd(swim())
    assert dep.tolist() == [1, 2] and head.tolist() == [2, 0]
    assert rel.tolist() == [deprel_id("nsubj"), deprel_id("root")]
    assert prob.dtype == np.float32 and prob.tolist() == [1.0, 1.0]


def test_line_level_offsets_keep_root_at_zero():
    dep, head, rel, prob = line_ldd([HELLO, swim(SCORES)])
    assert dep.tolist() == [1, 2, 3, 3, 4, 4]
    assert head.tolist() == [0, 1, 0, 4, 0, 3]  # root stays 0; sentence 2 heads offset by 2
    assert [DEPRELS[r] for r in rel] == ["root", "punct", "nsubj", "nsubj", "root", "root"]  # subtype reduced
    np.testing.assert_allclose(prob, [1, 1, .1, .9, .8, .2])


def test_threshold_drops_low_entries_keeps_one_hot():
    dep, head, rel, prob = line_ldd([HELLO, swim(SCORES)], threshold=0.5)
    assert dep.tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(prob, [1, 1, .9, .8])


def test_bad_ldd():
    bad = SparseLDD(dep=np.array([3]), head=np.array([0]), rel=["root"], prob=np.array([1.0]))
    with pytest.raises(ValueError, match="out of range"):
        sentence_ldd(swim(bad))
    bad = SparseLDD(dep=np.array([1, 2]), head=np.array([0]), rel=["root"], prob=np.array([1.0]))
    with pytest.raises(ValueError, match="differ in length"):
        sentence_ldd(swim(bad))
    bad = SparseLDD(dep=np.array([1]), head=np.array([0]), rel=["root"], prob=np.array([1.5]))
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        sentence_ldd(swim(bad))


def test_piece_matrix_by_hand():
    # "i sw@@ im": piece 0 = i, pieces 1, 2 = swim
    dep, head, rel, prob = line_ldd([swim(SCORES)])
    wi = np.array([0, 1, 1])
    m = ldd_piece_matrix(dep, head, rel, prob, wi, ["nsubj", "root"])
    assert m.shape == (2, 3, 3) and m.dtype == np.float32
    # nsubj: i -> swim .9 on both pieces of swim; i -> root .1 on i itself ("self")
    np.testing.assert_allclose(m[0], [[.1, .9, .9], [0, 0, 0], [0, 0, 0]])
    # root: swim -> root .8 on swim's own pieces; swim -> i .2; each piece of swim inherits the row
    np.testing.assert_allclose(m[1], [[0, 0, 0], [.2, .8, .8], [.2, .8, .8]])
    dropped = ldd_piece_matrix(dep, head, rel, prob, wi, ["nsubj", "root"], root="drop")
    np.testing.assert_allclose(dropped[0], [[0, .9, .9], [0, 0, 0], [0, 0, 0]])
    with_eos = ldd_piece_matrix(dep, head, rel, prob, wi, [deprel_id("nsubj")], eos=True)
    assert with_eos.shape == (1, 4, 4) and (with_eos[0, 3] == 0).all() and (with_eos[0, :, 3] == 0).all()


def test_piece_matrix_errors():
    dep, head, rel, prob = line_ldd([swim()])
    with pytest.raises(ValueError, match="out of range"):
        ldd_piece_matrix(dep, head, rel, prob, np.array([0]), ["root"])
    with pytest.raises(ValueError, match="root mode"):
        ldd_piece_matrix(dep, head, rel, prob, np.array([0, 1]), ["root"], root="keep")
    with pytest.raises(ValueError, match="outside"):
        label_ids([len(DEPRELS)])


@settings(max_examples=200, deadline=None)
@given(head_vectors(max_words=15), st.data())
def test_one_hot_piece_matrices_sum_to_one_per_row(heads, data):
    n = len(heads)
    labels = data.draw(st.lists(st.sampled_from(["nsubj", "obj", "det", "root", "punct"]), min_size=n, max_size=n))
    sent = ParsedSentence([f"w{i}" for i in range(n)], ["X"] * n, heads, labels)
    wi = np.repeat(np.arange(n), data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    dep, head, rel, prob = line_ldd([sent])
    all_labels = sorted(set(labels))
    m = ldd_piece_matrix(dep, head, rel, prob, wi, all_labels)
    # every piece's word has exactly one (head, label): summed over labels, each row holds 1 per
    # piece of its head word (its own pieces for the root)
    total = m.sum(axis=0)
    target = np.where(np.array(heads) == 0, np.arange(n), np.array(heads) - 1)
    expected = (wi[None, :] == target[wi][:, None]).astype(np.float32)
    np.testing.assert_array_equal(total, expected)
    # a label's matrix is non-zero only on rows of words with that label
    for li, lab in enumerate(all_labels):
        rows = np.array(labels)[wi] == lab
        assert (m[li][~rows] == 0).all()


def test_line_ldd_merges_subtypes_and_keeps_each_words_best_entry():
    from synprep.features.ldd import line_ldd
    from synprep.types import ParsedSentence, SparseLDD, deprel_id

    # word 1: nmod and nmod:poss to head 2 both reduce to nmod -> one entry with the sum;
    # word 2: every entry below the threshold -> its best entry stays anyway.
    ldd = SparseLDD(dep=np.array([1, 1, 1, 2, 2]), head=np.array([2, 2, 0, 0, 1]),
                    rel=["nmod", "nmod:poss", "root", "root", "obj"],
                    prob=np.array([0.3, 0.4, 0.3, 0.04, 0.03], dtype=np.float32), threshold=0.0)
    s = ParsedSentence(words=["a", "b"], upos=["NOUN", "NOUN"], heads=[2, 0], deprels=["nmod", "root"], ldd=ldd)
    dep, head, rel, prob = line_ldd([s], threshold=0.05)
    assert dep.tolist() == [1, 1, 2]
    assert head.tolist() == [0, 2, 0]
    assert rel.tolist() == [deprel_id("root"), deprel_id("nmod"), deprel_id("root")]
    np.testing.assert_allclose(prob, [0.3, 0.7, 0.04], rtol=1e-6)
