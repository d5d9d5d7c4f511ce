"""Per-line source features (docs/FORMAT.md fields, SPEC.md §1–4), on hand cases and real stanza parses."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from synprep.errors import InputError
from synprep.features.line import LineFeatures, line_features, tree_source
from synprep.types import (
    DEPRELS,
    UPOS_TAGS,
    PairRecord,
    ParsedLine,
    ParsedSentence,
    SparseLDD,
    smallest_unsigned,
)

SWIM_TREE = "(ROOT (S (NP (PRP i)) (VP (VBP swim) (PP (IN across) (NP (DT the) (NN river)))) (. .)))"
HELLO_TREE = "(ROOT (FRAG (INTJ (UH hello)) (. .)))"


def hello() -> ParsedSentence:
    return ParsedSentence(["hello", "."], ["INTJ", "PUNCT"], [0, 1], ["root", "punct"], tree=HELLO_TREE,
                          tree_source="constituency")


def swim(tree: str | None = SWIM_TREE, ldd: SparseLDD | None = None) -> ParsedSentence:
    return ParsedSentence("i swim across the river .".split(), "PRON VERB ADP DET NOUN PUNCT".split(),
                          [2, 0, 5, 5, 2, 2], "nsubj root case det obl punct".split(), tree=tree,
                          tree_source="constituency" if tree else None, ldd=ldd)


PIECES = "hello . i sw@@ im across the ri@@ ver .".split()


def test_two_sentence_line_spec_gaps_and_offsets():
    f = line_features(ParsedLine(1, [hello(), swim()]), PIECES, 1)
    assert f.word_index.tolist() == [0, 1, 2, 3, 3, 4, 5, 6, 6, 7]
    # SPEC §2: hello . i swim across the river . -> 2 999 6 4 3 2 5 (no </s> gap in shards)
    assert f.gaps_cnf.tolist() == [2, 999, 6, 1, 4, 3, 2, 1, 5]
    assert f.gaps_nary.tolist() == [2, 999, 5, 1, 4, 3, 2, 1, 5]
    assert f.heads.tolist() == [0, 1, 4, 0, 7, 7, 4, 4]  # sentence 2 offset by 2, root stays 0
    assert f.sent_start.tolist() == [0, 2]
    assert [DEPRELS[i] for i in f.deprel] == ["root", "punct", "nsubj", "root", "case", "det", "obl", "punct"]
    assert [UPOS_TAGS[i] for i in f.upos] == ["INTJ", "PUNCT", "PRON", "VERB", "ADP", "DET", "NOUN", "PUNCT"]
    assert f.ldd_dep.tolist() == list(range(1, 9))
    assert f.ldd_head.tolist() == f.heads.tolist()
    assert f.ldd_rel.tolist() == f.deprel.tolist()
    assert f.ldd_prob.tolist() == [1.0] * 8


def test_dtypes_follow_the_format_and_fit_pair_record():
    f = line_features(ParsedLine(1, [hello(), swim()]), PIECES, 1)
    for name in ("word_index", "heads", "sent_start", "ldd_dep", "ldd_head"):
        assert getattr(f, name).dtype == np.uint8, name
    for name in ("deprel", "upos", "ldd_rel"):
        assert getattr(f, name).dtype == np.uint8, name
    assert f.gaps_cnf.dtype == f.gaps_nary.dtype == np.int16
    assert f.ldd_prob.dtype == np.float32
    # exactly the source-side fields of PairRecord
    record_fields = {fl.name for fl in dataclasses.fields(PairRecord)} - {"line", "src_ids", "tgt_ids"}
    assert set(f.as_dict()) == record_fields == {fl.name for fl in dataclasses.fields(LineFeatures)}
    rec = PairRecord(line=1, src_ids=np.zeros(10, np.uint16), tgt_ids=np.zeros(3, np.uint16), **f.as_dict())
    assert rec.gaps_cnf is f.gaps_cnf


def test_long_line_gets_wider_index_type():
    n = 300
    words = [f"w{i}" for i in range(n)]
    sent = ParsedSentence(words, ["X"] * n, [0] + [1] * (n - 1), ["root"] + ["dep"] * (n - 1))
    f = line_features(ParsedLine(1, [sent]), words, 1)
    assert f.word_index.dtype == f.heads.dtype == np.uint16
    assert smallest_unsigned(255) == np.uint8 and smallest_unsigned(256) == np.uint16
    assert smallest_unsigned(70000) == np.uint32


def test_dependency_derived_trees_when_no_constituency():
    line = ParsedLine(1, [hello(), swim(tree=None)])
    f = line_features(line, PIECES, 1)
    # swim -> (ROOT (root (PRON i) (VERB swim) (obl (ADP across) (DET the) (NOUN river)) (PUNCT .)))
    # word gaps nary [2,2,1,1,2], cnf [5,4,2,1,3]; +1 and spread over "i sw@@ im ... ri@@ ver ."
    assert f.gaps_nary.tolist() == [2, 999, 3, 1, 3, 2, 2, 1, 3]
    assert f.gaps_cnf.tolist() == [2, 999, 6, 1, 5, 3, 2, 1, 4]
    assert tree_source(line) == "mixed"
    assert tree_source(ParsedLine(1, [swim(tree=None)])) == "dependency"
    assert tree_source(ParsedLine(1, [swim()])) == "constituency"


def test_sparse_ldd_is_offset_to_the_line():
    ldd = SparseLDD(dep=np.array([1, 1, 2]), head=np.array([2, 0, 0]), rel=["nsubj", "nsubj", "root"],
                    prob=np.array([.7, .3, 1.0]), threshold=0.01)
    f = line_features(ParsedLine(1, [hello(), swim(ldd=ldd)]), PIECES, 1, ldd_threshold=0.5)
    assert f.ldd_dep.tolist() == [1, 2, 3, 4]
    assert f.ldd_head.tolist() == [0, 1, 4, 0]
    np.testing.assert_allclose(f.ldd_prob, [1, 1, .7, 1])


def test_escapes_and_bracket_leaves():
    # pieces are Moses-escaped; the parser saw "(" and wrote -LRB- in its tree
    sent = ParsedSentence(["(", "it", "'s", ")"], ["PUNCT", "PRON", "AUX", "PUNCT"], [2, 0, 2, 2],
                          ["punct", "root", "cop", "punct"],
                          tree="(ROOT (S (-LRB- -LRB-) (NP (PRP it)) (VP (VBZ 's)) (-RRB- -RRB-)))")
    f = line_features(ParsedLine(1, [sent]), "( it &apos;s )".split(), 1)
    assert f.gaps_cnf.tolist() == [4, 3, 2]


@pytest.mark.parametrize("line,pieces,match", [
    (ParsedLine(5, error="sentence longer than 400 words"), ["a"], "parser failed on this line: sentence longer"),
    (ParsedLine(5, []), ["a"], "no sentences"),
    (ParsedLine(5, [swim()]), "i swim across the rivers .".split(), "word 5: BPE 'rivers' vs parser 'river'"),
    (ParsedLine(5, [swim(tree="(ROOT (S (NP (PRP i)) (VP (VBP swim))))")]), "i swim across the river .".split(),
     "sentence 1: tree leaves differ from the words at word 3: leaf '<end>' vs word 'across'"),
    (ParsedLine(5, [swim(tree="(ROOT (S (NP (PRP i))")]), "i swim across the river .".split(),
     r"sentence 1: bad bracketed tree: 2 unclosed '\(' at the end: label 'S' opened at column 7$"),
    (ParsedLine(5, [hello(), ParsedSentence(["a", "b"], ["X"], [0, 1], ["root", "dep"])]), "hello . a b".split(),
     "sentence 2: 2 words but 1 UPOS"),
    (ParsedLine(5, [ParsedSentence(["a", "b"], ["X", "X"], [2, 1], ["dep", "dep"])]), ["a", "b"],
     "sentence 1: heads contain a cycle"),
    (ParsedLine(5, [ParsedSentence(["a", "b"], ["X", "X"], [0, 3], ["root", "dep"])]), ["a", "b"],
     r"sentence 1: heads must lie in \[0, 2\]"),
    # with a constituency tree the heads are not read by the gaps, but they go into the shard
    (ParsedLine(5, [hello(), dataclasses.replace(swim(), heads=[2, 3, 2, 5, 2, 2])]), PIECES,
     r"sentence 2: heads contain a cycle \(word 1 never reaches the root\)"),
    (ParsedLine(5, [hello(), dataclasses.replace(swim(), heads=[2, 0, 5, 5, 0, 2])]), PIECES,
     r"sentence 2: 2 roots \(words 2, 5 have head 0\); exactly 1 expected"),
    (ParsedLine(5, [dataclasses.replace(swim(tree=None), heads=[2, 0, 5, 5, 0, 2])]), "i swim across the river .".split(),
     r"sentence 1: 2 roots \(words 2, 5 have head 0\); exactly 1 expected"),
])
def test_bad_input_names_the_line(line, pieces, match):
    with pytest.raises(InputError, match=match) as e:
        line_features(line, pieces, 12, path="train.en")
    assert str(e.value).startswith("train.en:12: ")


@pytest.mark.slow
def test_real_stanza_parses_of_iwslt14(shared_data, stanza_dir):
    """Real trees from the offline stanza models on real TED lines: every feature consistent."""
    import stanza
    import torch

    from synprep.align import bpe_words
    from synprep.text.escape import unescape

    torch.set_num_threads(1)
    bpe = (shared_data / "iwslt14_de-en" / "fairseq_prepared" / "test.en").read_text("utf-8").splitlines()[:12]
    pieces = [b.split() for b in bpe]
    words = [[unescape(w) for w in bpe_words(p)[0]] for p in pieces]
    nlp = stanza.Pipeline("en", dir=str(stanza_dir), package="synprep",
                          processors="tokenize,pos,lemma,depparse,constituency", tokenize_pretokenized=True,
                          lemma_use_identity=True, download_method=None, use_gpu=False, logging_level="WARN")
    doc = nlp(words)
    assert len(doc.sentences) == len(words)
    for k, (p, s) in enumerate(zip(pieces, doc.sentences, strict=True), 1):
        sent = ParsedSentence([w.text for w in s.words], [w.upos for w in s.words], [w.head for w in s.words],
                              [w.deprel for w in s.words], tree=str(s.constituency), tree_source="constituency")
        line = ParsedLine(k, [sent])
        f = line_features(line, p, k)
        t = len(p)
        assert f.word_index.shape == (t,) and f.gaps_cnf.shape == f.gaps_nary.shape == (t - 1,)
        same_word = f.word_index[1:] == f.word_index[:-1]
        assert (f.gaps_cnf[same_word] == 1).all() and (f.gaps_cnf[~same_word] >= 2).all()
        assert (f.gaps_nary[~same_word] >= 2).all()
        assert f.heads.tolist() == [w.head for w in s.words]
        # the same line without its tree goes through the dependency-derived path
        g = line_features(ParsedLine(k, [dataclasses.replace(sent, tree=None, tree_source=None)]), p, k)
        assert (g.gaps_cnf[~same_word] >= 2).all() and np.array_equal(g.heads, f.heads)
