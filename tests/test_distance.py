"""Syntactic distance (SPEC.md §2): known answers, independent references, spreading to pieces."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.tree import Tree
from nltk.tree.transforms import chomsky_normal_form, collapse_unary
from strategies import tree_pairs, trees

from synprep.constants import GAP_EOS, GAP_MODES, GAP_SENTENCE
from synprep.features.distance import (
    both_gaps,
    cnf_gaps,
    leaf_mismatch,
    line_word_gaps,
    nary_gaps,
    spread_gaps,
    tree_gaps,
)

SWIM = "(ROOT (S (NP (PRP I)) (VP (VBP swim) (PP (IN across) (NP (DT the) (NN river)))) (. .)))"
OLD_MAN = "(ROOT (S (NP (DT the) (JJ old) (NN man)) (VP (VBD saw) (NP (DT a) (NN dog))) (. .)))"
GOOD = "(ROOT (S (NP (PRP it)) (VP (VBZ is) (ADJP (JJ good))) (. .)))"
HELLO = "(ROOT (FRAG (INTJ (UH hello)) (. .)))"


# --- SPEC.md §2 known answers ------------------------------------------------------------------

@pytest.mark.parametrize("tree,expected", [
    (SWIM, [5, 3, 2, 1, 4]),
    (OLD_MAN, [2, 1, 4, 2, 1, 3]),
    (GOOD, [3, 1, 2]),
    (HELLO, [1]),
])
def test_cnf_known_answers(tree, expected):
    gaps = cnf_gaps(tree)
    assert gaps.dtype == np.int16
    assert gaps.tolist() == expected
    assert tree_gaps(tree).tolist() == expected  # cnf is the default
    assert both_gaps(tree)[0].tolist() == expected


def test_nary_known_answer():
    assert nary_gaps(SWIM).tolist() == [4, 3, 2, 1, 4]
    assert nary_gaps(SWIM).dtype == np.int16
    assert tree_gaps(SWIM, "nary").tolist() == [4, 3, 2, 1, 4]
    assert both_gaps(SWIM)[1].tolist() == [4, 3, 2, 1, 4]


def test_flat_node_nary_ties_cnf_grows():
    # nary: the gaps between a node's children take the node's value; cnf: right-factored chain
    assert nary_gaps("(S (A a) (B b) (C c) (D d))").tolist() == [1, 1, 1]
    assert cnf_gaps("(S (A a) (B b) (C c) (D d))").tolist() == [3, 2, 1]


@pytest.mark.parametrize("tree", ["(ROOT (NN hello))", "(NN hello)", "(ROOT (S (NP (NN hello))))"])
def test_one_word_sentence_has_no_gaps(tree):
    for mode in GAP_MODES:
        g = tree_gaps(tree, mode)
        assert g.shape == (0,) and g.dtype == np.int16


def test_bare_words_are_leaves_like_preterminals():
    assert cnf_gaps("(S (NP the man) (VP saw))").tolist() == cnf_gaps("(S (NP (DT the) (NN man)) (VP (V saw)))").tolist()
    assert nary_gaps("(S (NP the man) saw)").tolist() == [1, 2]


def test_errors():
    with pytest.raises(ValueError, match="bad bracketed tree: 1 unclosed"):
        cnf_gaps("(S (NP the man)")
    with pytest.raises(ValueError, match="empty constituent"):
        nary_gaps("(S (NP ) (VP (V saw)) (N x))")
    with pytest.raises(ValueError, match="unknown distance mode"):
        tree_gaps(SWIM, "binary")
    # a 600-wide flat node binarizes 600 levels deep: nltk refuses, we say so
    wide = "(S " + " ".join(f"(N w{i})" for i in range(600)) + ")"
    with pytest.raises(ValueError, match="MAX_TREE_DEPTH"):
        cnf_gaps(wide)
    assert nary_gaps(wide).tolist() == [1] * 599


def test_given_tree_is_not_modified():
    t = Tree.fromstring(OLD_MAN)
    before = str(t)
    cnf_gaps(t)
    both_gaps(t)
    assert str(t) == before


def test_leaf_mismatch_accepts_ptb_bracket_escapes():
    t = Tree.fromstring("(S (-LRB- -LRB-) (NN x) (-RRB- -RRB-))")
    assert leaf_mismatch(t, ["(", "x", ")"]) is None
    assert leaf_mismatch(t, ["(", "y", ")"]) == (1, "x", "y")
    assert leaf_mismatch(t, ["(", "x"]) == (2, "-RRB-", "<end>")


# --- independent references on random trees ----------------------------------------------------

def _lca_position(p: tuple, q: tuple) -> tuple:
    k = 0
    while k < min(len(p), len(q)) and p[k] == q[k]:
        k += 1
    return p[:k]


def reference_cnf(tree: Tree) -> list[int]:
    """SPEC §2 literally: nltk collapse_unary + CNF; leaf height 1; d = height(LCA) - 1."""
    t = tree.copy(deep=True)
    collapse_unary(t, collapsePOS=True, collapseRoot=True)
    chomsky_normal_form(t, factor="right")
    pos = t.treepositions("leaves")
    # nltk's height counts the word: a preterminal (our leaf, height 1) has nltk height 2
    return [t[_lca_position(pos[k], pos[k + 1])].height() - 2 for k in range(len(pos) - 1)]


def reference_nary(tree: Tree) -> list[int]:
    """Algorithm 1 literally: value(node) recursively, a gap takes the value of its LCA."""

    def value(node) -> int:
        if not isinstance(node, Tree):
            return 0
        vals = [value(c) for c in node]
        return max(vals) + 1 if len(node) > 1 else vals[0]

    pos = tree.treepositions("leaves")
    return [value(tree[_lca_position(pos[k], pos[k + 1])]) for k in range(len(pos) - 1)]


@settings(max_examples=300, deadline=None)
@given(trees)
def test_cnf_matches_lca_height_reference(tree):
    assert cnf_gaps(tree).tolist() == reference_cnf(tree)


@settings(max_examples=300, deadline=None)
@given(trees)
def test_nary_matches_algorithm1_reference(tree):
    assert nary_gaps(tree).tolist() == reference_nary(tree)


@settings(max_examples=200, deadline=None)
@given(trees)
def test_gaps_at_least_one_and_one_fewer_than_words(tree):
    n = len(tree.leaves())
    c, a = both_gaps(tree)
    assert c.shape == a.shape == (n - 1,)
    assert (c >= 1).all() and (a >= 1).all()
    if n > 1:  # binarizing only adds levels: the top gap cannot shrink
        assert c.max() >= a.max()


@settings(max_examples=100, deadline=None)
@given(tree_pairs)
def test_bare_words_equal_preterminals_random(pair):
    with_pre, bare = pair
    assert both_gaps(with_pre)[0].tolist() == both_gaps(bare)[0].tolist()
    assert both_gaps(with_pre)[1].tolist() == both_gaps(bare)[1].tolist()


# --- spreading to pieces -----------------------------------------------------------------------

def test_spread_spec_examples():
    # i sw@@ im across the ri@@ ver . </s>
    wg = line_word_gaps([cnf_gaps(SWIM)])
    assert wg.tolist() == [6, 4, 3, 2, 5]
    got = spread_gaps(wg, np.array([0, 1, 1, 2, 3, 4, 4, 5]), eos=True)
    assert got.dtype == np.int16
    assert got.tolist() == [6, 1, 4, 3, 2, 1, 5, 2000]
    # hello . i swim across the river . </s>
    wg = line_word_gaps([cnf_gaps(HELLO), cnf_gaps(SWIM)])
    assert spread_gaps(wg, np.arange(8), eos=True).tolist() == [2, 999, 6, 4, 3, 2, 5, 2000]
    # shards store no </s> gap
    assert spread_gaps(wg, np.arange(8)).tolist() == [2, 999, 6, 4, 3, 2, 5]


def test_spread_one_piece_line_and_one_word_sentences():
    assert spread_gaps(line_word_gaps([np.zeros(0)]), np.array([0])).tolist() == []
    assert spread_gaps(line_word_gaps([np.zeros(0)]), np.array([0]), eos=True).tolist() == [GAP_EOS]
    two = line_word_gaps([np.zeros(0), np.zeros(0)])
    assert spread_gaps(two, np.array([0, 0, 1])).tolist() == [1, GAP_SENTENCE]


@pytest.mark.parametrize("wi", [[1, 2], [0, 2, 3], [0, 1, 0], [0, 1], []])
def test_spread_rejects_bad_word_index(wi):
    with pytest.raises(ValueError):
        spread_gaps(np.array([3, 2]), np.array(wi, dtype=np.int64))


def test_line_word_gaps_rejects_gaps_colliding_with_specials():
    with pytest.raises(ValueError):
        line_word_gaps([np.array([0, 1])])
    with pytest.raises(ValueError):
        line_word_gaps([np.array([998])])


@st.composite
def _split_words(draw):
    tree = draw(trees)
    gaps = nary_gaps(tree)
    pieces_per_word = draw(st.lists(st.integers(1, 3), min_size=gaps.size + 1, max_size=gaps.size + 1))
    return gaps, np.repeat(np.arange(gaps.size + 1), pieces_per_word)


@settings(max_examples=300, deadline=None)
@given(_split_words())
def test_spread_keeps_word_level_order(case):
    word_gaps, wi = case
    pieces = spread_gaps(line_word_gaps([word_gaps]), wi)
    between = wi[1:] != wi[:-1]
    spread_between = pieces[between].astype(int)
    assert spread_between.tolist() == (word_gaps.astype(int) + 1).tolist()
    # every comparison between two word gaps keeps its sign
    assert np.array_equal(np.sign(spread_between[:, None] - spread_between[None, :]),
                          np.sign(word_gaps[:, None].astype(int) - word_gaps[None, :]))
    # inside a word: 1, below every gap between words
    assert (pieces[~between] == 1).all()
    assert (spread_between > 1).all()


# --- CLI ---------------------------------------------------------------------------------------

def test_cli_distance_modes(tmp_path):
    trees_file = tmp_path / "trees.txt"
    trees_file.write_text("\n".join([SWIM, OLD_MAN, GOOD, HELLO, "(ROOT (NN hello))"]) + "\n")
    out = run_cli("distance", "--mode", "cnf", "--trees", str(trees_file))
    assert out.stdout == "5 3 2 1 4\n2 1 4 2 1 3\n3 1 2\n1\n\n"
    assert "synprep:" in out.stderr.splitlines()[-1] and "feat:cnf" in out.stderr
    out = run_cli("distance", "--mode", "nary", input=SWIM + "\n")
    assert out.stdout == "4 3 2 1 4\n"
    out = run_cli("distance", input=SWIM + "\n")  # cnf by default, stdin by default
    assert out.stdout == "5 3 2 1 4\n"


def test_cli_distance_bad_tree_names_line(tmp_path):
    out = run_cli("distance", input=SWIM + "\n(S (NP x)\n", check=False)
    assert out.returncode == 2
    assert out.stderr.startswith("synprep: error: <stdin>:2: bad bracketed tree: 1 unclosed '(' at the end: "
                                 "label 'S' opened at column 1 (a tree spread over lines? use --format mrg)")
    assert "Traceback" not in out.stderr
    out = run_cli("distance", input=SWIM + "\n\n", check=False)
    assert out.returncode == 2 and "<stdin>:2: blank line" in out.stderr


def test_every_gap_mode_choice_is_the_one_gap_modes():
    from synprep.cli.features import distance_cmd
    from synprep.cli.shards import show_cmd
    from synprep.errors import ConfigError
    from synprep.show import GAP_MODES as SHOW_MODES
    from synprep.train.config import TrainConfig

    for cmd in (distance_cmd, show_cmd):
        [mode] = [p for p in cmd.params if p.name == "mode"]
        assert tuple(mode.type.choices) == GAP_MODES, cmd.name
    assert SHOW_MODES is GAP_MODES
    assert [tree_gaps("(S (A a) (B b) (C c))", m).tolist() for m in GAP_MODES] == [[2, 1], [1, 1]]
    with pytest.raises(ValueError, match="unknown distance mode 'binary'; choose one of cnf, nary"):
        tree_gaps("(S (A a) (B b))", "binary")
    for mode in GAP_MODES:
        TrainConfig(syntax="pure", syntax_source="slr", slr_gaps=mode).validate()
    with pytest.raises(ConfigError, match="slr_gaps must be one of cnf, nary, got 'binary'"):
        TrainConfig(syntax="pure", syntax_source="slr", slr_gaps="binary").validate()
