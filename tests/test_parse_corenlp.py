"""CoreNLP request building and response conversion (no server: Documents built with stanza.protobuf)."""

from __future__ import annotations

import io

import pytest
from stanza.protobuf import Document, parseFromDelimitedString, writeToDelimitedString

from synprep.errors import ConfigError
from synprep.parse import ParserSpec
from synprep.parse.corenlp import (
    CoreNLPParser,
    corenlp_request,
    document_to_sentences,
    parse_tree_to_str,
    ptb_to_upos,
)

# "I swim across the ( river ) ." with CoreNLP's answer: PTB tags, a PTB tree (brackets as
# -LRB-/-RRB- leaves, as CoreNLP writes them), basic UD dependencies (1-based, root listed apart)
WORDS = ["I", "can", "swim", "across", "the", "(", "river", ")", "."]
TAGS = ["PRP", "MD", "VB", "IN", "DT", "-LRB-", "NN", "-RRB-", "."]
EDGES = [(3, 1, "nsubj"), (3, 2, "aux"), (7, 4, "case"), (7, 5, "det"), (7, 6, "punct"), (3, 7, "obl"),
         (7, 8, "punct"), (3, 9, "punct")]  # fmt: skip
TREE = ("ROOT", [("S", [("NP", [("PRP", "I")]), ("VP", [("MD", "can"), ("VP", [("VB", "swim"), ("PP", [
    ("IN", "across"), ("NP", [("DT", "the"), ("-LRB-", "-LRB-"), ("NN", "river"), ("-RRB-", "-RRB-")])])])]),
    (".", ".")])])  # fmt: skip


def fill_tree(node, spec) -> None:
    label, kids = spec
    node.value = label
    if isinstance(kids, str):
        node.child.add().value = kids
        return
    for k in kids:
        fill_tree(node.child.add(), k)


def build_document(words=WORDS, tags=TAGS, edges=EDGES, root=3, coarse=None) -> Document:
    doc = Document()
    doc.text = " ".join(words)
    sent = doc.sentence.add()
    sent.tokenOffsetBegin, sent.tokenOffsetEnd = 0, len(words)
    for i, (w, t) in enumerate(zip(words, tags, strict=True)):
        tok = sent.token.add()
        tok.word = "-LRB-" if w == "(" else "-RRB-" if w == ")" else w
        tok.originalText = w
        tok.pos = t
        if coarse:
            tok.coarseTag = coarse[i]
    graph = sent.basicDependencies
    for i in range(1, len(words) + 1):
        node = graph.node.add()
        node.sentenceIndex = 0
        node.index = i
    for src, tgt, dep in edges:
        e = graph.edge.add()
        e.source, e.target, e.dep = src, tgt, dep
    graph.root.append(root)
    fill_tree(sent.parseTree, TREE)
    return doc


def test_request_is_whitespace_tokenized_one_sentence_per_line() -> None:
    text, props = corenlp_request([["I", "swim", "."], ["it", "'s", "ok", "&", "fine"]])
    assert text == "I swim .\nit 's ok & fine"
    assert props["tokenize.whitespace"] == "true" and props["ssplit.eolonly"] == "true"
    assert props["annotators"] == "tokenize,ssplit,pos,parse,depparse" and props["outputFormat"] == "serialized"
    assert "pipelineLanguage" not in props
    assert corenlp_request([["ja"]], "de")[1]["pipelineLanguage"] == "german"
    with pytest.raises(ConfigError, match="CoreNLP has no models for language 'xx'"):
        corenlp_request([["a"]], "xx")
    with pytest.raises(ValueError, match="cannot be sent"):
        corenlp_request([["a b"]])


def test_response_to_parsed_sentence() -> None:
    # through the wire format, read back the way CoreNLPClient.annotate reads the server's answer
    with io.BytesIO() as stream:
        writeToDelimitedString(build_document(), stream)
        wire = stream.getvalue()
    doc = Document()
    parseFromDelimitedString(doc, wire)
    (s,) = document_to_sentences(doc, [WORDS])
    assert s.words == WORDS
    assert s.heads == [3, 3, 0, 7, 7, 7, 3, 7, 3]
    assert s.deprels == ["nsubj", "aux", "root", "case", "det", "punct", "obl", "punct", "punct"]
    assert s.upos == ["PRON", "AUX", "VERB", "ADP", "DET", "PUNCT", "NOUN", "PUNCT", "PUNCT"]
    assert s.tree == (
        "(ROOT (S (NP (PRP I)) (VP (MD can) (VP (VB swim) (PP (IN across) (NP (DT the) (-LRB- -LRB-) (NN river)"
        " (-RRB- -RRB-))))) (. .)))"
    )
    assert s.tree_source == "constituency" and s.ldd is None
    # the server's own UPOS (coarseTag) wins over the mapping
    coarse = ["PRON", "AUX", "VERB", "ADP", "DET", "PUNCT", "PROPN", "PUNCT", "PUNCT"]
    (s,) = document_to_sentences(build_document(coarse=coarse), [WORDS])
    assert s.upos == coarse


def test_response_that_does_not_fit_is_an_error() -> None:
    doc = build_document()
    with pytest.raises(ValueError, match="1 sentences for 2"):
        document_to_sentences(doc, [WORDS, WORDS])
    with pytest.raises(ValueError, match="token 3 is 'swim', expected 'swam'"):
        document_to_sentences(doc, [WORDS[:2] + ["swam"] + WORDS[3:]])
    with pytest.raises(ValueError, match=r"no head for words \[9\]"):
        document_to_sentences(build_document(edges=EDGES[:-1]), [WORDS])


def test_ptb_to_upos() -> None:
    assert ptb_to_upos("IN", "case") == "ADP" and ptb_to_upos("IN", "mark") == "SCONJ"
    assert ptb_to_upos("VBZ", "cop") == "AUX" and ptb_to_upos("VBZ", "root") == "VERB"
    assert ptb_to_upos("VBN", "aux:pass") == "AUX"
    assert ptb_to_upos("NNP") == "PROPN" and ptb_to_upos("WEIRD") == "X"


def test_tree_string_escapes_bracket_leaves() -> None:
    doc = Document()
    fill_tree(doc.sentence.add().parseTree, ("ROOT", [("NP", [("-LRB-", "("), ("NN", "x")])]))
    assert parse_tree_to_str(doc.sentence[0].parseTree) == "(ROOT (NP (-LRB- -LRB-) (NN x)))"


def test_no_corenlp_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CORENLP_HOME", raising=False)
    with pytest.raises(ConfigError, match="set CORENLP_HOME"):
        CoreNLPParser(ParserSpec(name="corenlp", lang="en"))
