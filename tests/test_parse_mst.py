"""The fast tree decoder gives stanza 1.15's trees (argmax fast path + compiled Chu-Liu-Edmonds), and the
batched POS stage stanza's UPOS/XPOS/features.

The reference is stanza's own decoder (``chuliu_edmonds_one_root`` and
``GraphParser.decode_graph_predictions``), run on the same scores: on planted score matrices (ties
included) and on the real models' scores of 2000 German IWSLT14 test sentences and 600 English
PUD sentences, computed once per test session.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from stanza.models.common.chuliu_edmonds import chuliu_edmonds_one_root as stanza_one_root

from synprep.parse import ParserSpec, read_conllu
from synprep.parse.mst import argmax_trees, chuliu_edmonds_one_root, decode_trees
from synprep.parse.ssplit import split_sentences
from synprep.parse.stanza_decode import decode_batch, fast_decoder_available
from synprep.parse.stanza_parser import StanzaParser
from synprep.text.escape import unescape_tokens


def _log_softmax(x: np.ndarray) -> np.ndarray:
    return (x - np.log(np.exp(x).sum(axis=-1, keepdims=True))).astype(np.float32)


def test_compiled_decoder_is_stanzas_on_random_scores_with_ties():
    rng = np.random.default_rng(7)
    for k in range(600):
        n = int(rng.integers(2, 45))
        x = rng.standard_normal((n, n)) * 3
        if k % 2:
            x = np.round(x)  # many exact ties between heads, and between whole trees
        s = _log_softmax(x)
        want = stanza_one_root(s)
        got = chuliu_edmonds_one_root(s)
        assert got.tolist() == want.tolist(), (k, s)
        assert (got[1:] == 0).sum() == 1  # one ROOT dependent


def test_planted_ties_break_as_stanza_breaks_them():
    """Ties go to the lower index, as stanza's np.argmax does: the fast path refuses a tie, the compiled decoder
    then reproduces stanza's choice (rows: dependents 0..3, columns: heads, 0 = ROOT)."""
    # word 2 is equally happy under word 1 and word 3; word 1 is the root's only good child
    s = np.log(np.array([
        [1.0, 1.0, 1.0, 1.0],
        [0.8, 0.0, 0.1, 0.1],
        [0.1, 0.4, 0.1, 0.4],
        [0.1, 0.8, 0.1, 0.0],
    ]) + 1e-9).astype(np.float32)
    heads, ok = argmax_trees(s[None], np.array([4]))
    assert not ok[0]  # a tie: not decided by the fast path
    tree = chuliu_edmonds_one_root(s)
    assert tree.tolist() == stanza_one_root(s).tolist() == [0, 0, 1, 1]  # word 2 takes head 1, the lower index
    # two words tie for ROOT with mirrored scores: two optimal trees; stanza (and we) pick word 1 as the root
    t = np.log(np.array([[1.0, 1.0, 1.0], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]]) + 1e-9).astype(np.float32)
    assert chuliu_edmonds_one_root(t).tolist() == stanza_one_root(t).tolist() == [0, 0, 1]


def test_argmax_fast_path_accepts_only_single_root_trees():
    def batch(*rows_list):
        n = max(len(r) for r in rows_list) + 1
        s = np.full((len(rows_list), n, n), -20.0, dtype=np.float32)
        for b, heads in enumerate(rows_list):
            for i, h in enumerate(heads, 1):
                s[b, i, h] = -0.1
        return s, np.array([len(r) + 1 for r in rows_list])

    s, lengths = batch([0, 1, 1], [0, 0, 2], [2, 3, 1], [2, 0])  # tree, two roots, cycle without root, tree
    heads, ok = argmax_trees(s, lengths)
    assert ok.tolist() == [True, False, False, True]
    assert heads[0].tolist() == [0, 0, 1, 1] and heads[3, :3].tolist() == [0, 2, 0]
    trees, compiled = decode_trees(s, lengths)
    assert compiled == 2
    for b, m in enumerate(lengths):
        assert trees[b].tolist() == stanza_one_root(s[b, :m, :m]).tolist()
    s[0, 2, 3] = -0.1  # word 2 now ties between heads 1 and 3
    assert not argmax_trees(s, lengths)[1][0]


# --- real scores ---------------------------------------------------------------------------------


def _iwslt(shared: Path, n: int) -> list[list[str]]:
    sents: list[list[str]] = []
    with open(shared / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / "test.de", encoding="utf-8") as f:
        for line in f:
            w = unescape_tokens(line.split())
            sents += [w[a:b] for a, b in split_sentences(w)]
            if len(sents) >= n:
                break
    return sents[:n]


def _decode_both(parser: StanzaParser, sentences: list[list[str]]) -> dict:
    """Run the real models once; decode every batch with stanza's decoder and with synprep's."""
    model = parser.depparse.trainer.model
    vocab = parser.depparse.vocab["deprel"]
    out: dict = {"ref": [], "ours": [], "ref_resolved": [], "ours_resolved": [], "fast": 0, "sentences": 0}
    doc = parser.nlp(sentences, processors="tokenize,pos,lemma")  # stanza's own POS processor
    ours = parser.nlp(sentences[:600], processors="tokenize")
    parser._pos(ours)  # synprep's batched POS stage
    out["pos_ref"] = [(w.upos, w.xpos, w.feats) for s in doc.sentences[:600] for w in s.words]
    out["pos_ours"] = [(w.upos, w.xpos, w.feats) for s in ours.sentences for w in s.words]
    for scores, sentlens, _ in parser.depparse_batches(doc):
        for resolve, key in ((False, ""), (True, "_resolved")):  # the models' setting (False), and stanza's default
            ref = model.decode_graph_predictions(vocab, len(sentlens), scores, sentlens, resolve_head_constraints=resolve)
            ours = decode_batch(scores, sentlens, vocab, parser.relations, resolve)
            out["ref" + key] += [[(int(h), d) for h, d in s] for s in ref]
            out["ours" + key] += [[(int(h), d) for h, d in s] for s in ours]
        out["fast"] += int(argmax_trees(scores[0], np.asarray(sentlens))[1].sum())
        out["sentences"] += len(sentlens)
    return out


@pytest.fixture(scope="module")
def real(stanza_dir: Path, shared_data: Path) -> dict:
    from synprep.parallel import limit_threads

    limit_threads(1)
    de = StanzaParser(ParserSpec(lang="de", dir=str(stanza_dir), package="synprep"))
    en = StanzaParser(ParserSpec(lang="en", dir=str(stanza_dir), package="synprep", constituency=False))
    pud = [pl.words for pl in read_conllu(shared_data / "ud" / "en_pud-ud-test.conllu", words="syntactic")][:600]
    return {"de": _decode_both(de, _iwslt(shared_data, 2000)), "en": _decode_both(en, pud)}


@pytest.mark.parametrize("lang,n", [("de", 2000), ("en", 600)])
def test_real_scores_give_stanzas_trees_and_labels(real: dict, lang: str, n: int):
    assert fast_decoder_available()
    r = real[lang]
    assert r["sentences"] == n and len(r["ours"]) == n
    for key in ("", "_resolved"):
        diff = [k for k, (a, b) in enumerate(zip(r["ref" + key], r["ours" + key], strict=True)) if a != b]
        assert diff == [], f"{key}: {len(diff)} of {n} sentences decoded differently, first {diff[:5]}"
    assert r["ours"] != r["ours_resolved"]  # the repair changed some sentences: both label paths were compared
    # both paths ran: most sentences' argmax heads are the tree, the rest went through Chu-Liu-Edmonds
    assert 0.3 * n < r["fast"] < n


@pytest.mark.parametrize("lang", ["de", "en"])
def test_batched_pos_gives_stanzas_upos_xpos_and_features(real: dict, lang: str):
    """synprep's POS stage (label lookups per distinct id) against stanza's POS processor,
    on the first 600 sentences of each set."""
    r = real[lang]
    assert len(r["pos_ours"]) == len(r["pos_ref"]) > 600 * 5
    diff = [k for k, (a, b) in enumerate(zip(r["pos_ref"], r["pos_ours"], strict=True)) if a != b]
    assert diff == [], f"{len(diff)} words differ, first {[(r['pos_ref'][k], r['pos_ours'][k]) for k in diff[:3]]}"
    assert len({f for _, _, f in r["pos_ours"]}) > 20  # many feature bundles: the composite lookup is exercised


def test_parse_gives_stanzas_heads(stanza_dir: Path):
    """Through StanzaParser.parse (its own depparse config), as plain stanza.Pipeline decodes them."""
    import stanza

    words = [["Zumindest", "noch", "nicht", "."], ["Gehen", "sieht", "einfach", "aus", ",", "aber", "es", "ist",
                                                    "eines", "der", "schwierigsten", "Probleme", "."]]
    parser = StanzaParser(ParserSpec(lang="de", dir=str(stanza_dir), package="synprep"))
    nlp = stanza.Pipeline("de", dir=str(stanza_dir), package="synprep", processors="tokenize,pos,lemma,depparse",
                          tokenize_pretokenized=True, lemma_use_identity=True, download_method=None, use_gpu=False,
                          logging_level="WARN")
    want = [([w.head for w in s.words], [w.deprel for w in s.words], [w.upos for w in s.words])
            for s in nlp(words).sentences]
    assert [(p.heads, p.deprels, p.upos) for p in parser.parse(words)] == want


def test_the_parser_loads_the_compiled_decoder_with_its_models(stanza_dir):
    """A parse worker pays numba's load of the decoder (its on-disk cache, or a compile) when it loads its parser
    — during the warm-up — not inside its first batch: in a fresh process, after ``make_parser`` and before any
    parse, the decoder holds machine code for stanza's float32 scores."""
    import subprocess
    import sys

    code = ("import sys; from synprep.parse import ParserSpec, make_parser; import synprep.parse.mst as m\n"
            "assert not m._one_root.signatures\n"
            f"make_parser(ParserSpec(lang='de', dir={str(stanza_dir)!r}, package='synprep'))\n"
            "print(*[s[0].dtype for s in m._one_root.signatures])")
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "float32"


def test_warm_decodes_a_cycle_as_stanza_does():
    """:func:`synprep.parse.mst.warm`'s matrix needs the compiled decoder (the argmax heads form a cycle), so every
    part of it is loaded; its tree is stanza's."""
    from synprep.parse import mst

    a = np.array([[-np.inf, -9.0, -9.0, -9.0], [-5.0, -np.inf, -1.0, -2.0], [-5.0, -2.0, -np.inf, -1.0],
                  [-5.0, -1.0, -2.0, -np.inf]], dtype=np.float32)
    assert not argmax_trees(a[None], [4])[1][0]
    assert chuliu_edmonds_one_root(a).tolist() == stanza_one_root(a.copy()).tolist() == [0, 0, 3, 1]
    mst.warm()
