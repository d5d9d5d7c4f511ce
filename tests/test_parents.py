"""Parent positions (SPEC.md §4): PASCAL mean-parent, LISA first-piece, Gaussian weights."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import head_vectors

from synprep.cli.features import parents_lines
from synprep.errors import InputError
from synprep.features.parents import gaussian_weights, parent_positions
from synprep.types import ParsedLine, ParsedSentence

# "The mon@@ key eats a ban@@ ana": The->monkey, monkey->eats, eats=root, a->banana, banana->eats
HEADS = np.array([2, 3, 0, 5, 3])
WORD_INDEX = np.array([0, 1, 1, 2, 3, 4, 4])


def test_pascal_mean_parent_spec_example():
    pos = parent_positions(HEADS, WORD_INDEX)
    assert pos.dtype == np.float32
    assert pos.tolist() == [1.5, 3.0, 3.0, 3.0, 5.5, 3.0, 3.0]


def test_lisa_first_piece_spec_example():
    assert parent_positions(HEADS, WORD_INDEX, mode="first").tolist() == [1.0, 3.0, 3.0, 3.0, 5.0, 3.0, 3.0]


def test_root_points_at_its_own_middle():
    # "ea@@ t@@ s" split in three: pieces 3,4,5 -> middle 4
    wi = np.array([0, 1, 1, 2, 2, 2, 3, 4, 4])
    pos = parent_positions(HEADS, wi)
    assert pos[3:6].tolist() == [4.0, 4.0, 4.0]
    assert parent_positions(HEADS, wi, mode="first")[3:6].tolist() == [3.0, 3.0, 3.0]


def test_eos_and_padding_point_at_eos():
    pos = parent_positions(HEADS, WORD_INDEX, eos=True)
    assert pos.tolist() == [1.5, 3.0, 3.0, 3.0, 5.5, 3.0, 3.0, 7.0]
    pos = parent_positions(HEADS, WORD_INDEX, eos=True, length=10)
    assert pos.tolist()[7:] == [7.0, 7.0, 7.0]
    with pytest.raises(ValueError, match="needs eos"):
        parent_positions(HEADS, WORD_INDEX, length=10)
    with pytest.raises(ValueError, match="shorter"):
        parent_positions(HEADS, WORD_INDEX, eos=True, length=7)


def test_two_sentence_line_uses_line_level_heads():
    # "hello . The mon@@ key eats a ban@@ ana": sentence 2's heads offset by 2 words
    s1 = ParsedSentence(["hello", "."], ["INTJ", "PUNCT"], [0, 1], ["root", "punct"])
    s2 = ParsedSentence("The monkey eats a banana".split(), ["DET", "NOUN", "VERB", "DET", "NOUN"],
                        HEADS.tolist(), ["det", "nsubj", "root", "det", "obj"])
    line = ParsedLine(1, [s1, s2])
    out = list(parents_lines([line], ["hello . The mon@@ key eats a ban@@ ana"]))
    assert out == ["0.0 0.0 3.5 5.0 5.0 5.0 7.5 5.0 5.0"]
    heads = np.array([0, 1, 4, 5, 0, 7, 5])
    pos = parent_positions(heads, np.array([0, 1, 2, 3, 3, 4, 5, 6, 6]))
    assert pos.tolist() == [0.0, 0.0, 3.5, 5.0, 5.0, 5.0, 7.5, 5.0, 5.0]
    # the PASCAL reference forgot the offset: sentence 2 would point into sentence 1
    assert out != ["0.0 0.0 1.5 3.0 3.0 3.0 5.5 3.0 3.0"]


def test_parents_lines_checks_pieces_against_words():
    s = ParsedSentence(["a", "b"], ["X", "X"], [0, 1], ["root", "dep"])
    with pytest.raises(InputError, match="word 2"):
        list(parents_lines([ParsedLine(1, [s])], ["a c"], path="x.bpe"))
    with pytest.raises(InputError, match="ends before"):
        list(parents_lines([ParsedLine(1, [s])], []))


def test_bad_heads():
    with pytest.raises(ValueError, match="own head"):
        parent_positions(np.array([1, 0]), np.array([0, 1]))
    with pytest.raises(ValueError, match="lie in"):
        parent_positions(np.array([3, 0]), np.array([0, 1]))
    with pytest.raises(ValueError, match="covers"):
        parent_positions(np.array([2, 0, 2]), np.array([0, 1]))
    with pytest.raises(ValueError, match="unknown parent mode"):
        parent_positions(HEADS, WORD_INDEX, mode="last")


@settings(max_examples=300, deadline=None)
@given(head_vectors(roots=None), st.data())
def test_positions_stay_in_range(heads, data):
    n = len(heads)
    per_word = data.draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    wi = np.repeat(np.arange(n), per_word)
    t = wi.size
    extra = data.draw(st.integers(0, 5))
    for mode in ("mean", "first"):
        pos = parent_positions(np.array(heads), wi, mode=mode)
        assert pos.shape == (t,)
        assert (pos >= 0).all() and (pos <= t - 1).all()
        # a piece points inside its head word's pieces (its own word for the root)
        h = np.array(heads)[wi]
        target = np.where(h == 0, wi, h - 1)
        first = np.searchsorted(wi, target)
        last = np.searchsorted(wi, target, side="right") - 1
        assert (pos >= first).all() and (pos <= last).all()
        padded = parent_positions(np.array(heads), wi, mode=mode, eos=True, length=t + 1 + extra)
        assert (padded >= 0).all() and (padded <= t).all()
        assert (padded[t:] == t).all()


def test_gaussian_weights_known_values():
    w = gaussian_weights(np.array([2.0]), length=5)
    np.testing.assert_allclose(w[0], [.053991, .241971, .398942, .241971, .053991], atol=1e-6)
    assert w.dtype == np.float32 and w.shape == (1, 5)
    w = gaussian_weights(parent_positions(HEADS, WORD_INDEX))
    assert w.shape == (7, 7)
    np.testing.assert_allclose(w[0, 1], w[0, 2], rtol=1e-6)  # p = 1.5 halfway between 1 and 2
    np.testing.assert_allclose(w[1, 3], 0.398942, atol=1e-6)
    with pytest.raises(ValueError):
        gaussian_weights(np.array([1.0]), sigma=0)
