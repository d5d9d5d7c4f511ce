"""Bracketed trees: PTB normalization, multi-line .mrg, leaves against words."""

from __future__ import annotations

from pathlib import Path

import pytest
from nltk import Tree

from synprep.errors import InputError
from synprep.parse.trees import (
    match_leaves,
    parse_tree,
    parse_trees,
    read_mrg,
    read_tree_lines,
    tree_to_str,
    tree_words,
)

# PTB-style (written for this test): wrapper "( ...)", function tags, a trace with -NONE-,
# an "=2" gap index, a constituent that only holds an empty element.
MRG = """\
( (S
    (NP-SBJ-1 (DT The) (NN board) )
    (VP (VBD wanted)
      (S
        (NP-SBJ (-NONE- *-1) )
        (VP (TO to)
          (VP (VB meet)
            (NP=2 (PRP them) )
            (PP-TMP (IN on) (NNP Monday) )))))
    (. .) ))
( (SINV
    (S-TPC-1 (NP-SBJ (PRP It) ) (VP (VBZ works) ))
    (, ,)
    (VP (VBD said) (SBAR (-NONE- 0) (S (-NONE- *T*-1) )))
    (NP-SBJ (PRP she) )
    (. .) ))
"""

FIRST = (
    "(ROOT (S (NP (DT The) (NN board)) (VP (VBD wanted) (S (VP (TO to) (VP (VB meet) (NP (PRP them))"
    " (PP (IN on) (NNP Monday)))))) (. .)))"
)
SECOND = "(ROOT (SINV (S (NP (PRP It)) (VP (VBZ works))) (, ,) (VP (VBD said)) (NP (PRP she)) (. .)))"


def test_mrg_function_tags_and_empty_elements(tmp_path: Path) -> None:
    f = tmp_path / "wsj_test.mrg"
    f.write_text(MRG)
    trees = list(read_mrg(f))
    assert [line for line, _ in trees] == [1, 11]
    assert tree_to_str(trees[0][1]) == FIRST
    # the SBAR that held only -NONE- elements is gone with them
    assert tree_to_str(trees[1][1]) == SECOND
    assert tree_words(tree_to_str(trees[1][1])) == ["It", "works", ",", "said", "she", "."]


def test_mrg_unbalanced_names_the_tree(tmp_path: Path) -> None:
    f = tmp_path / "bad.mrg"
    f.write_text(MRG + "( (S (NP (DT a)\n")
    with pytest.raises(InputError) as e:
        list(read_mrg(f))
    assert e.value.line == 17 and "not closed" in e.value.reason


def test_root_added_or_renamed() -> None:
    assert tree_to_str(parse_tree("(S (NP (PRP I)) (VP (VBP swim)))")) == "(ROOT (S (NP (PRP I)) (VP (VBP swim))))"
    assert tree_to_str(parse_tree("(TOP (S (NP (PRP I))))")) == "(ROOT (S (NP (PRP I))))"
    assert tree_to_str(parse_tree("( (FRAG (INTJ (UH hello)) (. .)))")) == "(ROOT (FRAG (INTJ (UH hello)) (. .)))"
    # labels that start with "-" are not function tags
    assert tree_to_str(parse_tree("(ROOT (NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-)))")) == (
        "(ROOT (NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-)))"
    )


def test_trees_without_preterminals() -> None:
    # a bare word beside other children gets an X preterminal; (NP I) is already one
    assert tree_to_str(parse_tree("(S (NP I) swim (PP across (NP the river)))")) == (
        "(ROOT (S (NP I) (X swim) (PP (X across) (NP (X the) (X river)))))"
    )


def test_several_trees_on_a_line() -> None:
    trees = parse_trees("(ROOT (INTJ (UH hello)) (. .)) (S (NP (PRP I)) (VP (VBP swim)) (. .))")
    assert [t.leaves() for t in trees] == [["hello", "."], ["I", "swim", "."]]
    assert parse_trees("   ") == []


def test_leaves_against_words() -> None:
    t = parse_tree("(ROOT (S (NP (PRP it) (POS &apos;s)) (-LRB- -LRB-) (NN ok) (-RRB- -RRB-)))")
    match_leaves(t, ["it", "'s", "(", "ok", ")"])
    # stored leaves: the words, with only round brackets escaped
    assert tree_to_str(t) == "(ROOT (S (NP (PRP it) (POS 's)) (-LRB- -LRB-) (NN ok) (-RRB- -RRB-)))"
    assert tree_words(tree_to_str(t)) == ["it", "'s", "(", "ok", ")"]


def test_leaves_mismatch_is_an_error_naming_the_line() -> None:
    t = parse_tree("(ROOT (S (NP (PRP I)) (VP (VBP swim)) (. .)))")
    with pytest.raises(InputError) as e:
        match_leaves(t, ["I", "swam", "."], "trees.txt", 7)
    assert str(e.value) == "trees.txt:7: tree leaf 2 is 'swim' but word 2 of the line is 'swam'"
    with pytest.raises(InputError, match="the tree has 3 leaves but the line has 4 words"):
        match_leaves(t, ["I", "swim", "fast", "."], "trees.txt", 7)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("(S (NP (PRP I))", "unclosed"),
        ("(S (NP (PRP I))))", "unbalanced ')'"),
        ("I swim", "text outside brackets"),
        ("(S (-NONE- *))", "no words"),
    ],
)
def test_bad_trees(tmp_path: Path, text: str, reason: str) -> None:
    f = tmp_path / "trees.txt"
    f.write_text("(ROOT (NP (NN ok)))\n" + text + "\n")
    with pytest.raises(InputError) as e:
        list(read_tree_lines(f))
    assert e.value.line == 2 and reason in e.value.reason and e.value.path == str(f)


# TIGER/NEGRA-derived brackets (STTS tags $( $, $. and a VROOT top), written for this test
TIGER_LINE = '(VROOT (S ($( ") (NP (ART Das) (NN Haus)) (VVFIN steht) ($, ,) ($( ") (ADV hier) ($. .)))'


def test_tiger_labels_with_brackets_and_punctuation() -> None:
    (t,) = parse_trees(TIGER_LINE)
    stored = tree_to_str(t)
    # VROOT becomes ROOT; "$(" is spelled as treetools does, so the stored string reads with nltk
    assert stored == (
        '(ROOT (S ($LRB ") (NP (ART Das) (NN Haus)) (VVFIN steht) ($, ,) ($LRB ") (ADV hier) ($. .)))'
    )
    assert Tree.fromstring(stored).leaves() == ['"', "Das", "Haus", "steht", ",", '"', "hier", "."]


def test_tiger_bare_bracket_leaves() -> None:
    # an unescaped "(" / ")" word under "$(" (TIGER spells bracket words as they are)
    t = parse_tree("(VROOT (NP ($( () (NN Haus) ($( )) ($. .)))")
    match_leaves(t, ["(", "Haus", ")", "."])
    assert tree_to_str(t) == "(ROOT (NP ($LRB -LRB-) (NN Haus) ($LRB -RRB-) ($. .)))"
    assert tree_words(tree_to_str(t)) == ["(", "Haus", ")", "."]
    # compact PTB brackets still read
    assert tree_to_str(parse_tree("(S(NP(NN x))(VP(V y)))")) == "(ROOT (S (NP (NN x)) (VP (V y))))"


def test_tiger_mrg_over_lines(tmp_path: Path) -> None:
    f = tmp_path / "tiger.mrg"
    f.write_text('(VROOT\n  (S ($( ")\n     (NN Haus) ($. .)))\n(VROOT (NP (NN Ja) ($. .)))\n')
    got = [(n, tree_to_str(t)) for n, t in read_mrg(f)]
    assert got == [(1, '(ROOT (S ($LRB ") (NN Haus) ($. .)))'), (4, "(ROOT (NP (NN Ja) ($. .)))")]


@pytest.mark.parametrize(
    "text, reason",
    [
        ("(S (NP ($( -) (NN x)", "2 unclosed '(' at the end: label 'NP' opened at column 4"),
        ('(VROOT ($( ") (NN x)))', "unbalanced ')' at column 22"),
        ("(S (NN x)) y", "text outside brackets at column 12"),
    ],
)
def test_broken_bracket_names_label_and_column(tmp_path: Path, text: str, reason: str) -> None:
    f = tmp_path / "trees.txt"
    f.write_text(text + "\n")
    with pytest.raises(InputError) as e:
        list(read_tree_lines(f))
    assert e.value.line == 1 and reason in e.value.reason


def test_brackets_inside_a_word() -> None:
    # stanza writes "(Applause)" as the leaf -LRB-Applause-RRB- (raw, untokenized input)
    t = parse_tree("(ROOT (S (NP (NN -LRB-Applause-RRB-)) (SYM :-RRB-) (. .)))")
    match_leaves(t, ["(Applause)", ":)", "."])
    stored = tree_to_str(t)
    assert stored == "(ROOT (S (NP (NN -LRB-Applause-RRB-)) (SYM :-RRB-) (. .)))"
    assert tree_words(stored) == ["(Applause)", ":)", "."]
    # the features accept the stored tree against the words
    from synprep.features.distance import leaf_mismatch

    assert leaf_mismatch(Tree.fromstring(stored), ["(Applause)", ":)", "."]) is None
    assert leaf_mismatch(Tree.fromstring(stored), ["(Applause", ":)", "."]) == (0, "-LRB-Applause-RRB-", "(Applause")
