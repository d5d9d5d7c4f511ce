"""Config presets and overrides; decoding (greedy = beam 1, length limits); BLEU and BPE removal."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from helpers import run_cli

from synprep.errors import ConfigError
from synprep.train.config import (
    TrainConfig,
    load_config,
    load_preset,
    parse_override,
    preset_names,
    with_overrides,
)
from synprep.train.data import Collater
from synprep.train.decode import beam_search, greedy_search
from synprep.train.metrics import bleu_scores, remove_bpe
from synprep.train.model import Seq2Seq
from synprep.train.toydata import build_vocab, record_of_words


def test_iwslt_preset_is_the_papers_setup():
    c = load_preset("gated_iwslt14_de_en")  # (the per-field check of the presets: tests/test_presets.py)
    assert (c.d_model, c.ffn_dim, c.heads, c.encoder_layers, c.decoder_layers) == (512, 1024, 4, 6, 6)
    assert (c.dropout, c.attention_dropout, c.label_smoothing, c.weight_decay) == (0.3, 0.2, 0.1, 1e-4)
    assert (c.lr, c.warmup_init_lr, c.warmup_updates, c.adam_betas) == (7e-3, 1e-3, 4000, [0.9, 0.98])
    assert (c.syntax_dropout, c.gate_freeze_epochs, c.slr_tau, c.beam, c.lenpen) == (0.4, 80, 10.0, 5, 1.0)
    assert c.max_tokens * c.update_freq == 16384
    assert c.share_embeddings and c.syntax == "gated" and c.head_sources() == {i: ["slr"] * 4 for i in range(6)}
    assert {"iwslt14_de_en", "gated_iwslt14_de_en", "tiny"} <= set(preset_names())


def test_overrides_and_errors(tmp_path):
    assert parse_override("syntax_layers=[0,1]") == ("syntax_layers", [0, 1])
    assert parse_override("syntax=vanilla") == ("syntax", "vanilla")
    with pytest.raises(ConfigError, match="unknown key"):
        parse_override("d_modle=4")
    with pytest.raises(ConfigError, match="no preset"):
        load_preset("wmt")
    (tmp_path / "c.json").write_text('{"heads": 3}')
    with pytest.raises(ConfigError, match="divisible"):
        load_config(tmp_path / "c.json")
    (tmp_path / "c.json").write_text('{"heads": 4,}')
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_config(tmp_path / "c.json")
    hard = with_overrides(load_preset("tiny"), {"syntax": "hard", "syntax_heads": [0, 1]})
    assert hard.head_sources() == {0: ["slr", "slr", None, None]}  # hard: layer 0 by default
    mixed = TrainConfig(encoder_layers=2, syntax_source=["pascal", ["slr", "ldd", "slr", "pascal"]])
    assert mixed.head_sources()[1] == ["slr", "ldd", "slr", "pascal"] and mixed.sources_used() == {"slr", "ldd", "pascal"}
    assert TrainConfig(syntax="vanilla").head_sources() == {}


def test_cli_reports_config_errors_without_traceback(tmp_path):
    proc = run_cli("train", "--shards", str(tmp_path), "--preset", "tiny", "--out", str(tmp_path / "o"),
                   "--set", "syntax=soft", check=False)
    assert proc.returncode == 2 and "syntax must be one of" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("train", "--shards", str(tmp_path / "none"), "--preset", "tiny", "--out", str(tmp_path / "o"),
                   check=False)
    assert proc.returncode == 2 and "synprep: error:" in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def model_and_batch():
    rng = np.random.default_rng(1)
    sents = [["ein", "mann", "schläft"], ["zwei", "hunde", "rennen", "über", "eine", "wiese"], ["ja"]]
    vocab = build_vocab(sents, split_len=4)
    recs = [record_of_words(i + 1, [s], s, vocab.symbols, rng, split_len=4) for i, s in enumerate(sents)]
    torch.manual_seed(0)
    model = Seq2Seq(load_preset("tiny"), len(vocab)).eval()
    return model, Collater({"slr"})(list(enumerate(recs)))


def test_beam_one_equals_greedy(model_and_batch):
    model, batch = model_and_batch
    g = greedy_search(model, batch, 0.0, 12)
    assert g == beam_search(model, batch, beam=1, lenpen=1.0, max_len_a=0.0, max_len_b=12)
    assert all(len(h) <= 11 for h in g)  # the limit counts </s>


def test_beam_respects_length_limit_and_scores_at_least_greedy(model_and_batch):
    model, batch = model_and_batch
    limits = [int(1.0 * n + 2) for n in batch.src_lengths.tolist()]
    beams = beam_search(model, batch, beam=5, lenpen=1.0, max_len_a=1.0, max_len_b=2)
    for h, lim in zip(beams, limits, strict=True):
        assert len(h) + 1 <= lim
    g = greedy_search(model, batch, 1.0, 2)

    def score(b, hyp):  # Σ log p(hyp </s>) / len^1, teacher-forced on one sentence
        sub = Collater({"slr"})([(0, _record_of(batch, b))])
        prev = torch.tensor([[2, *hyp]])
        enc = model.encode(sub)
        with torch.no_grad():
            lp = torch.log_softmax(model.decode(prev, enc).float(), -1)[0]
        tgt = [*hyp, 2]
        return float(sum(lp[i, t] for i, t in enumerate(tgt))) / len(tgt)

    for b in range(batch.size):
        assert score(b, beams[b]) >= score(b, g[b]) - 1e-5


def _record_of(batch, b):
    from synprep.types import PairRecord

    n = int(batch.src_lengths[b]) - 1
    gaps = batch.syntax["slr"][b, : n - 1].numpy().astype(np.int64)
    e = np.zeros(0, dtype=np.int64)
    return PairRecord(line=1, src_ids=batch.src_tokens[b, :n].numpy(), tgt_ids=e, word_index=e, heads=e, deprel=e,
                      upos=e, sent_start=e, gaps_cnf=gaps, gaps_nary=gaps, ldd_dep=e, ldd_head=e, ldd_rel=e,
                      ldd_prob=e.astype(np.float32))


def test_remove_bpe():
    assert remove_bpe("the ri@@ ver is wi@@ de") == "the river is wide"
    assert remove_bpe("a b@@") == "a b"


def test_bleu_on_real_iwslt_references(shared_data):
    refs = (shared_data / "iwslt14_de-en/fairseq_prepared/test.en").read_text("utf-8").splitlines()[:300]
    refs = [remove_bpe(r) for r in refs]
    perfect = bleu_scores(refs, refs, "en")
    assert perfect["bleu"] == 100.0 and perfect["tok_bleu"] == 100.0
    hyps = [" ".join(r.split()[:-1]) for r in refs]  # drop the last token of every sentence
    res = bleu_scores(hyps, refs, "en")
    import sacrebleu

    assert res["tok_bleu"] == round(sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", force=True).score, 2)
    assert 40 < res["tok_bleu"] < 100 and 40 < res["bleu"] < 100
    assert res["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    upper = bleu_scores([h.upper() for h in hyps], refs, "en", lowercase=True)
    assert upper["tok_bleu"] == res["tok_bleu"] and "case:lc" in upper["bleu_signature"]


def test_evaluate_cli_with_ref_lines(shared_data, tmp_path):
    ref = shared_data / "iwslt14_de-en/fairseq_prepared/test.en"
    lines = ref.read_text("utf-8").splitlines()
    (tmp_path / "hyp").write_text("\n".join([lines[4], lines[2]]) + "\n", "utf-8")
    (tmp_path / "lines").write_text("5\n3\n")
    out = run_cli("evaluate", "--hyp", str(tmp_path / "hyp"), "--ref", str(ref), "--ref-lines", str(tmp_path / "lines"),
                  "--json")
    assert json.loads(out.stdout)["bleu"] == 100.0 and "|task:evaluate|" in out.stderr
    bad = run_cli("evaluate", "--hyp", str(tmp_path / "hyp"), "--ref", str(ref), check=False)
    assert bad.returncode == 2 and "hypotheses but" in bad.stderr
