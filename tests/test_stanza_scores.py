"""The relation scores computed per sentence (synprep.parse.stanza_scores) against stanza's padded forward.

Real English and German ``synprep`` depparse models on gold English PUD and IWSLT14 test.de sentences in
one batch of the size ``synprep parse`` gives the parser (64 sentences): the head log-probabilities are stanza's
bytes, every arc's argmax relation is stanza's, the relation log-probabilities agree to float rounding,
so the decoded heads, relations and LDD are stanza's forward's.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from synprep.parallel import chunked
from synprep.parse import ParserSpec, read_conllu
from synprep.parse import stanza_forward as sf
from synprep.parse.stanza_decode import SentenceScores
from synprep.parse.stanza_parser import StanzaParser
from synprep.parse.stanza_scores import graph_scores, pos_reproduced, reproduced
from synprep.text.escape import unescape_tokens

pytestmark = pytest.mark.slow


def _sentences(shared: Path, lang: str) -> list[list[str]]:
    if lang == "en":
        return [pl.words for pl in read_conllu(shared / "ud" / "en_pud-ud-test.conllu", words="syntactic")][:64]
    with open(shared / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / "test.de", encoding="utf-8") as f:
        return [w for line in itertools.islice(f, 32) if (w := unescape_tokens(line.split()))]


@pytest.fixture(scope="module", params=["en", "de"])
def loaded(request, stanza_dir: Path, shared_data: Path) -> tuple[StanzaParser, list[list[str]]]:
    parser = StanzaParser(ParserSpec(lang=request.param, dir=str(stanza_dir), package="synprep", constituency=False))
    assert parser.inputs is not None and reproduced(parser.depparse.trainer.model.eval())
    return parser, _sentences(shared_data, request.param)


def _both(parser: StanzaParser, batch: list[list[str]]) -> tuple[list, list]:
    """stanza's forward cut per sentence, and the per-sentence relation scores, on the same model inputs."""
    b = parser.inputs
    t = b.table(batch)
    _, dep = sf.pos_words(parser.nlp.processors["pos"], b, t)
    order, batches = b.dp_batches(t, dep["upos"], dep["xpos"], dep["feats"])
    ref = sf._cut(sf._forward(parser.depparse, batches), order, with_labels=True)
    order, batches = b.dp_batches(t, dep["upos"], dep["xpos"], dep["feats"])
    return ref, sf._forward_cut(parser.depparse, batches, order, with_labels=True)


def test_scores_and_parses_are_stanzas_forwards(loaded):
    parser, sents = loaded
    ctx = parser.decode_context()
    for batch in chunked(sents, 64):
        ref, got = _both(parser, batch)
        for words, (h1, l1, r1), (h2, l2, r2) in zip(batch, ref, got, strict=True):
            assert (h1.dtype, h1.shape, h1.tobytes()) == (h2.dtype, h2.shape, h2.tobytes())
            assert l1.dtype == l2.dtype == np.int32 and np.array_equal(l1, l2)
            assert r1.dtype == r2.dtype == np.float32 and r1.shape == r2.shape == h1.shape + (len(parser.relations),)
            np.testing.assert_allclose(r2, r1, rtol=0, atol=1e-4)
            a = ctx.decode(SentenceScores(words, ["X"] * len(words), None, h1, l1, r1))
            b = ctx.decode(SentenceScores(words, ["X"] * len(words), None, h2, l2, r2))
            assert (a.heads, a.deprels) == (b.heads, b.deprels)
            assert a.ldd is not None and b.ldd is not None
            assert (a.ldd.dep.tolist(), a.ldd.head.tolist(), a.ldd.rel) == (b.ldd.dep.tolist(), b.ldd.head.tolist(), b.ldd.rel)
            np.testing.assert_allclose(b.ldd.prob, a.ldd.prob, rtol=1e-4)


def test_a_model_it_does_not_reproduce_runs_stanzas_forward(loaded, monkeypatch):
    parser, sents = loaded
    model = parser.depparse.trainer.model
    monkeypatch.setitem(model.args, "use_arc_embedding", True)  # stanza's other scorer layout
    assert not reproduced(model)
    assert graph_scores(model, [], None, [], None, None, with_labels=True) is None
    monkeypatch.undo()
    batch = sents[:5]
    ref, _ = _both(parser, batch)
    monkeypatch.setattr(sf, "graph_scores", lambda *a, **k: None)
    _, fallback = _both(parser, batch)
    for (h1, l1, r1), (h2, l2, r2) in zip(ref, fallback, strict=True):
        assert h1.tobytes() == h2.tobytes() and l1.tobytes() == l2.tobytes() and r1.tobytes() == r2.tobytes()


def test_tags_are_stanzas_pos_forwards(loaded, monkeypatch):
    """UPOS, XPOS and features with the parent-conditioned columns scored per parent tag equal stanza's."""
    parser, sents = loaded
    pos = parser.nlp.processors["pos"]
    assert pos_reproduced(pos.trainer.model.eval())
    t = parser.inputs.table(sents)
    got = sf.pos_words(pos, parser.inputs, t)
    monkeypatch.setattr(sf, "pos_scores", lambda model, *args: model(*args))  # stanza's Tagger.forward
    ref = sf.pos_words(pos, parser.inputs, t)
    for (labels, _dep), what in ((got, "synprep"), (ref, "stanza")):
        assert set(labels) == {"upos", "xpos", "feats"} and len(labels["feats"]) == sum(map(len, sents)), what
    for col in ("upos", "xpos", "feats"):
        assert got[0][col].tolist() == ref[0][col].tolist(), col
        assert np.array_equal(got[1][col], ref[1][col]), col


def test_a_tagger_layout_it_does_not_reproduce_is_left_to_stanza(loaded, monkeypatch):
    from stanza.models.pos.tag_columns import TAG_LINK_HIDDEN

    parser, sents = loaded
    model = parser.nlp.processors["pos"].trainer.model.eval()
    two_parents = {**model.column_parents, "feats": ("upos", "xpos")}
    for attr, value in (("share_hid", True), ("link_mode", TAG_LINK_HIDDEN), ("column_parents", two_parents)):
        monkeypatch.setattr(model, attr, value)
        assert not pos_reproduced(model), attr
        monkeypatch.undo()
    calls = []
    real = model.forward
    monkeypatch.setattr(model, "forward", lambda *a: calls.append(1) or real(*a))
    sf.pos_words(parser.nlp.processors["pos"], parser.inputs, parser.inputs.table(sents[:3]))
    assert calls == []  # reproduced: stanza's forward code ran on the stand-in, not the model's own call
    monkeypatch.setattr(model, "share_hid", True)
    assert not pos_reproduced(model)
    monkeypatch.setattr(model, "share_hid", False)
    model.train()
    try:
        assert not pos_reproduced(model)  # training: dropout, stanza's own forward
    finally:
        model.eval()
