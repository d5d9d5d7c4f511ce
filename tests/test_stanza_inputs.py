"""The POS and depparse inputs built from the words equal stanza's loaders' batches.

Real German/English ``synprep`` models (``stanza_dir``), IWSLT14 test.de and the English PUD sample
plus odd words (unknown, digits, a 300-character word, punctuation that stanza simplifies, a
one-word sentence, ``_``, characters no vocabulary has). Every tensor of every batch (dtype, shape,
values), the sort orders and the text equal what stanza 1.15's POS ``Dataset`` and depparse
``DataLoader`` give for the Document stanza builds from the same words; the forward results (UPOS,
score arrays, so heads, relations and LDD) equal the Document path's; a configuration the builder
does not reproduce takes the Document path.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from synprep.parse import ParserSpec, read_conllu
from synprep.parse.ssplit import split_sentences
from synprep.parse.stanza_forward import pos_words
from synprep.parse.stanza_inputs import unsupported_reason
from synprep.parse.stanza_parser import StanzaParser
from synprep.text.escape import unescape_tokens

ODD = [
    ["Zzzqxyvw"],  # a one-word sentence of an unknown word
    ["12345", "3,14", "?!?!", "!!!", "¿", "...", "a" * 300, "Überraschungsei-Verpackungsmaschinenbediener"],
    ["_"],
    ["--", "--", "."],
    ["東京", "🙂", "<PAD>", "<UNK>", "ROOT", "Ab", "ab", "AB"],
]


def _sentences(shared: Path, lang: str) -> list[list[str]]:
    if lang == "de":
        with open(shared / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / "test.de", encoding="utf-8") as f:
            lines = [unescape_tokens(line.split()) for line in itertools.islice(f, 260)]
        sents = [w[a:b] for w in lines for a, b in split_sentences(w)]
    else:
        sents = [pl.words for pl in read_conllu(shared / "ud" / "en_pud-ud-test.conllu", words="syntactic")][:300]
    return sents[:150] + ODD + sents[150:]  # the odd words inside a batch, not only at the end


@pytest.fixture(scope="module")
def loaded(stanza_dir: Path, shared_data: Path) -> dict:
    from synprep.parallel import limit_threads

    limit_threads(1)
    out = {}
    for lang in ("de", "en"):
        parser = StanzaParser(ParserSpec(lang=lang, dir=str(stanza_dir), package="synprep", constituency=False))
        sents = _sentences(shared_data, lang)
        assert len(sents) >= 300 and parser.inputs_fallback is None and parser.inputs is not None
        out[lang] = (parser, sents)
    return out


def _same(a, b, what: str) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and (a.dtype, a.shape) == (b.dtype, b.shape), (what, a.dtype, b.dtype)
        assert torch.equal(a, b), what
    else:
        assert type(a) is type(b) and a == b, what


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["de", "en"])
def test_pos_batches_are_stanzas(loaded: dict, lang: str):
    from stanza.models.pos.data import Dataset

    parser, sents = loaded[lang]
    pos = parser.nlp.processors["pos"]
    doc = parser.nlp(sents, processors="tokenize")
    ref = list(Dataset(doc, pos.config, pos.pretrain, vocab=pos.vocab, evaluation=True, sort_during_eval=True)
               .to_length_limited_loader(batch_size=pos.config["batch_size"],
                                         maximum_tokens=pos.config.get("batch_maximum_tokens", 5000)))
    ours = list(parser.inputs.pos_batches(parser.inputs.table(sents)))
    assert len(ours) == len(ref) > 3
    for k, (want, (got, idx)) in enumerate(zip(ref, ours, strict=True)):
        assert list(idx) == list(want.idx) and got.tags == want.tags == [None, None, None]
        for field in ("words", "words_mask", "wordchars", "wordchars_mask", "pretrained", "orig_idx",
                      "word_orig_idx", "word_lens", "text", "idx"):
            _same(getattr(want, field), getattr(got, field), f"batch {k} {field}")
        assert [(x.dtype, x.shape, int(x)) for x in want.lens] == [(x.dtype, x.shape, int(x)) for x in got.lens]
        if k == 0:
            assert want.orig_idx != sorted(want.orig_idx)  # the batch really was re-sorted
    unk = parser.inputs.table([["Zzzqxyvw"]])
    assert unk.pos_word.tolist() == [1]  # UNK_ID: the odd words were looked up, not skipped


def test_the_word_cache_only_saves_time(loaded: dict, monkeypatch):
    from synprep.parse import stanza_inputs

    parser, sents = loaded["de"]
    fresh = stanza_inputs.InputBuilder(parser.nlp.processors["pos"], parser.depparse)
    monkeypatch.setattr(stanza_inputs, "CACHE_WORDS", 20)  # emptied again and again
    a, b = fresh.table(sents[:40]), fresh.table(sents[:40])
    assert len(fresh.words) > 20
    c = parser.inputs.table(sents[:40])  # the parser's builder, its cache full of other sentences' words
    for name in ("rows", "pos_word", "pos_pretrain", "pos_chars", "dp_word", "dp_lemma", "dp_pretrain", "dp_chars"):
        assert np.array_equal(getattr(a, name), getattr(b, name)) and np.array_equal(getattr(a, name), getattr(c, name))
    assert a.text == b.text == c.text == sents[:40]


def test_a_long_word_is_looked_up_not_cached(loaded: dict):
    """A word over CACHE_WORD_CHARS (base64, a URL) costs ~16 bytes a character in the cache: 200,000 such
    words of 999 characters would hold 3 GB there. Its ids are those of a fresh lookup all the same."""
    from synprep.parse import stanza_inputs

    parser, _ = loaded["de"]
    fresh = stanza_inputs.InputBuilder(parser.nlp.processors["pos"], parser.depparse)
    long = "aZ09" * 250
    t = fresh.table([["Das", long, "."]])
    assert set(fresh.words) == {"Das", "."}
    again = fresh.table([["Das", long, "."]])
    assert np.array_equal(t.pos_chars, again.pos_chars) and np.array_equal(t.dp_chars, again.dp_chars)
    assert t.pos_nchars.tolist()[1] == 1000


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["de", "en"])
def test_tags_and_depparse_batches_are_stanzas(loaded: dict, lang: str):
    from stanza.models.depparse.data import DataLoader
    from stanza.pipeline.depparse_processor import DEFAULT_SEPARATE_BATCH

    parser, sents = loaded[lang]
    doc = parser.nlp(sents, processors="tokenize,pos,lemma")  # stanza's own POS processor and identity lemmas
    t = parser.inputs.table(sents)
    labels, dep = pos_words(parser.nlp.processors["pos"], parser.inputs, t)
    words = [w for s in doc.sentences for w in s.words]
    for col, attr in (("upos", "upos"), ("xpos", "xpos"), ("feats", "feats")):
        assert labels[col].tolist() == [getattr(w, attr) or "_" for w in words], col
    dp = parser.depparse
    cfg = dp.config
    loader = DataLoader(doc, cfg["batch_size"], cfg, dp.pretrain, vocab=dp.vocab, evaluation=True,
                        sort_during_eval=cfg.get("sort_during_eval", True),
                        min_length_to_batch_separately=cfg.get("min_length_to_batch_separately", DEFAULT_SEPARATE_BATCH))
    data_orig_idx, batches = parser.inputs.dp_batches(t, dep["upos"], dep["xpos"], dep["feats"])
    assert data_orig_idx == loader.data_orig_idx and data_orig_idx != sorted(data_orig_idx)
    ref, ours = list(loader), list(batches)
    assert len(ours) == len(ref) >= 1
    names = ("words", "words_mask", "wordchars", "wordchars_mask", "upos", "xpos", "ufeats", "pretrained", "lemma",
             "head", "deprel", "orig_idx", "word_orig_idx", "sentlens", "word_lens", "text")
    for k, (want, got) in enumerate(zip(ref, ours, strict=True)):
        assert len(want) == len(got) == len(names)
        for name, a, b in zip(names, want, got, strict=True):
            _same(a, b, f"batch {k} {name}")
    assert ours[0][6].dim() == 3 and int(ours[0][0][0, 0]) == 3  # features per key; ROOT first


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["de", "en"])
def test_forward_and_parse_equal_the_document_paths(loaded: dict, lang: str):
    parser, sents = loaded[lang]
    sents = sents[140:210]  # the odd sentences and their neighbours
    ref, got = parser._forward_doc(sents), parser.forward(sents)
    for a, b in zip(ref, got, strict=True):
        assert (a.words, a.upos, a.tree) == (b.words, b.upos, b.tree)
        for x, y in ((a.head_logp, b.head_logp), (a.label_ids, b.label_ids), (a.rel_logp, b.rel_logp)):
            assert (x.dtype, x.shape, x.tobytes()) == (y.dtype, y.shape, y.tobytes())
    ctx = parser.decode_context()
    for a, b in zip(ref, got, strict=True):  # heads, relations, LDD: the decode of equal arrays
        pa, pb = ctx.decode(a), ctx.decode(b)
        assert (pa.upos, pa.heads, pa.deprels) == (pb.upos, pb.heads, pb.deprels)
        assert pa.ldd is not None and pb.ldd is not None
        assert (pa.ldd.dep.tobytes(), pa.ldd.head.tobytes(), pa.ldd.rel, pa.ldd.prob.tobytes()) == (
            pb.ldd.dep.tobytes(), pb.ldd.head.tobytes(), pb.ldd.rel, pb.ldd.prob.tobytes())


@pytest.mark.slow
def test_a_configuration_the_builder_does_not_reproduce_takes_the_document_path(loaded: dict, monkeypatch):
    parser, sents = loaded["de"]
    sents = sents[:12]
    pos, dp = parser.nlp.processors["pos"], parser.depparse
    normal = parser.forward(sents)
    # reversed depparse input: stanza's DataLoader reverses every sentence; the builder does not
    monkeypatch.setitem(dp.config, "reversed", True)
    assert "reversed" in (parser.inputs_fallback or "")
    got, ref = parser.forward(sents), parser._forward_doc(sents)
    assert [g.head_logp.tobytes() for g in got] == [r.head_logp.tobytes() for r in ref]
    assert [g.head_logp.tobytes() for g in got] != [n.head_logp.tobytes() for n in normal]  # the setting mattered
    monkeypatch.undo()
    assert parser.inputs_fallback is None
    # a transformer (its Dataset drops over-long sentences), in either model's configuration
    for proc in (pos, dp):
        monkeypatch.setitem(proc.config, "bert_model", "xlm-roberta-base")
        assert "transformer" in (unsupported_reason(pos, dp) or "")
        monkeypatch.undo()
    # other POS tag columns than upos/xpos/feats
    from stanza.models.pos.tag_columns import TagColumn, TagKind

    cols = tuple(pos.config["tag_columns"]) + (TagColumn("misc1", "misc", "Foo", TagKind.WORD, True, ()),)
    monkeypatch.setitem(pos.config, "tag_columns", cols)
    assert unsupported_reason(pos, dp) is not None
    monkeypatch.undo()
    # an empty word: the Document path, which rejects it as stanza does (a word with white space likewise)
    with pytest.raises(ValueError, match="Could not process document"):
        parser.forward([["ein", "Haus"], ["ein", ""]])
    assert parser.inputs.table([["a b"]]).blank and parser.inputs.table([[" "]]).blank
    assert not parser.inputs.table([["a", "?!"]]).blank
    # switched off: the Document path, the same floats
    parser.inputs, builder = None, parser.inputs
    try:
        assert parser.inputs_fallback is not None
        assert [g.head_logp.tobytes() for g in parser.forward(sents)] == [n.head_logp.tobytes() for n in normal]
    finally:
        parser.inputs = builder
    assert np.array_equal(normal[0].head_logp, parser.forward(sents)[0].head_logp)
