"""Gate math (SPEC.md §6, gated-syntax-attention eq. 7–11): the SDPA path against explicit matrices."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from synprep.train.attention import (
    MultiheadAttention,
    SyntacticSelfAttention,
    default_sources,
    gated_heads,
    reference_attention,
)
from synprep.train.config import TrainConfig, load_preset, with_overrides
from synprep.train.data import Collater
from synprep.train.gate import GateNetwork
from synprep.train.masks import ldd_weights, padding_bias, pascal_weights, slr_bias, slr_log_mask
from synprep.train.model import Seq2Seq
from synprep.train.sources.base import SyntaxInputs
from synprep.train.sources.pascal import Pascal
from synprep.train.toydata import build_vocab, record_of_words

B, H, T, DH = 3, 4, 9, 8


@pytest.fixture()
def qkv():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, T, DH, generator=g, dtype=torch.float64) for _ in range(3))
    lengths = torch.tensor([9, 6, 3])
    pad = torch.arange(T)[None, :] >= lengths[:, None]
    # real gaps per sentence (cnf-like values, 2000 before </s>), padding gaps arbitrary
    gaps = torch.tensor([[3, 1, 4, 2, 5, 2, 3, 2000],
                         [2, 4, 1, 3, 2000, 7, 7, 7],
                         [2, 2000, 0, 0, 0, 0, 0, 0]], dtype=torch.float64)
    return q, k, v, pad, gaps


def _slr_inputs(gaps, pad, tau=10.0, hard=None):
    bias = slr_bias(gaps, pad, tau, hard).double()  # (B, 1, T, T) log M + padding
    probs = slr_log_mask(gaps, tau=tau, hard=hard).exp().double().unsqueeze(1)  # M
    return bias, probs


def _real(x, pad):
    """Zero the padded query rows (their values are irrelevant and never used)."""
    return x.masked_fill(pad[:, None, :, None], 0.0)


def test_gate_zero_equals_vanilla_attention(qkv):
    q, k, v, pad, gaps = qkv
    bias, _ = _slr_inputs(gaps, pad)
    pb = padding_bias(pad, torch.float64)
    out = gated_heads(q, k, v, sources=["slr"] * H, gate=torch.zeros(B, H, dtype=torch.float64), gate_value=None,
                      pad_bias=pb, feats={"slr": bias})
    vanilla = F.scaled_dot_product_attention(q, k, v, attn_mask=pb)
    torch.testing.assert_close(_real(out, pad), _real(vanilla, pad), rtol=0, atol=1e-12)


def test_gate_one_equals_softmax_plus_log_mask(qkv):
    q, k, v, pad, gaps = qkv
    bias, probs = _slr_inputs(gaps, pad)
    pb = padding_bias(pad, torch.float64)
    out = gated_heads(q, k, v, sources=["slr"] * H, gate=torch.ones(B, H, dtype=torch.float64), gate_value=None,
                      pad_bias=pb, feats={"slr": bias})
    # the paper's eq. 9 written out: m e^s / Σ m e^s over real keys
    s = q @ k.transpose(-1, -2) / DH ** 0.5
    e = probs * torch.exp(s) * (~pad)[:, None, None, :]
    expected = (e / e.sum(-1, keepdim=True)) @ v
    torch.testing.assert_close(_real(out, pad), _real(expected, pad), rtol=0, atol=1e-10)
    # and G ≡ 1 as a constant ("pure") skips the raw call but gives the same result
    pure = gated_heads(q, k, v, sources=["slr"] * H, gate=None, gate_value=1.0, pad_bias=pb, feats={"slr": bias})
    torch.testing.assert_close(_real(pure, pad), _real(expected, pad), rtol=0, atol=1e-10)


@pytest.mark.parametrize("hard", [None, "strict", "nonstrict"])
def test_sdpa_path_equals_naive_reference_slr(qkv, hard):
    q, k, v, pad, gaps = qkv
    bias, probs = _slr_inputs(gaps, pad, hard=hard)
    gate = torch.rand(B, H, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    out = gated_heads(q.float(), k.float(), v.float(), sources=["slr"] * H, gate=gate.float(), gate_value=None,
                      pad_bias=padding_bias(pad), feats={"slr": bias.float()})
    ref, a = reference_attention(q, k, v, gate, mask=probs, pad=pad)
    assert torch.allclose(a.sum(-1).transpose(1, 2)[~pad], torch.ones(()).double())  # rows of A are distributions
    torch.testing.assert_close(_real(out.double(), pad), _real(ref, pad), rtol=0, atol=1e-5)


def test_sdpa_path_equals_naive_reference_mixed_heads(qkv):
    """One layer mixing an SLR head, a PASCAL head, an LDD head and a plain head."""
    q, k, v, pad, gaps = qkv
    bias, probs = _slr_inputs(gaps, pad)
    parents = torch.tensor([[1.5, 3, 3, 3, 5.5, 3, 3, 8, 8], [2, 2, 4, 2, 5, 5, 5, 5, 5], [1, 2, 2, 2, 2, 2, 2, 2, 2]])
    pw = pascal_weights(parents).double()
    ldd = torch.rand(B, H, T, T, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    gate = torch.rand(B, H, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    sources = ["slr", "pascal", "ldd", None]
    out = gated_heads(q, k, v, sources=sources, gate=gate, gate_value=None, pad_bias=padding_bias(pad, torch.float64),
                      feats={"slr": bias, "pascal": pw, "ldd": ldd})
    g_eff = gate.clone()
    g_eff[:, 3] = 0.0  # a plain head is G ≡ 0
    ref_slr, _ = reference_attention(q, k, v, g_eff, mask=probs.expand(B, H, T, T), pad=pad)
    w = torch.cat([torch.ones_like(pw), pw, ldd[:, 2:3], torch.ones_like(pw)], dim=1)
    ref_w, _ = reference_attention(q, k, v, g_eff, weights=w, pad=pad)
    expected = torch.cat([ref_slr[:, :1], ref_w[:, 1:]], dim=1)
    torch.testing.assert_close(_real(out, pad), _real(expected, pad), rtol=0, atol=1e-10)


def test_syntax_dropout_touches_only_the_syntactic_attention(qkv):
    """Syntax ignoring is dropout on A_syn: with G = 0 the output is the undropped A_raw V."""
    q, k, v, pad, gaps = qkv
    bias, _ = _slr_inputs(gaps, pad)
    pb = padding_bias(pad, torch.float64)
    kw = dict(sources=["slr"] * H, gate_value=None, pad_bias=pb, feats={"slr": bias})
    torch.manual_seed(0)
    dropped = gated_heads(q, k, v, gate=torch.zeros(B, H, dtype=torch.float64), syntax_dropout=0.5, **kw)
    clean = gated_heads(q, k, v, gate=torch.zeros(B, H, dtype=torch.float64), **kw)
    torch.testing.assert_close(dropped, clean, rtol=0, atol=0)
    torch.manual_seed(0)
    syn = gated_heads(q, k, v, gate=torch.ones(B, H, dtype=torch.float64), syntax_dropout=0.5, **kw)
    assert not torch.allclose(_real(syn, pad), _real(gated_heads(q, k, v, gate=torch.ones(B, H, dtype=torch.float64), **kw), pad))


def test_parent_ignoring_all_rows_is_raw_attention(qkv):
    q, k, v, pad, _ = qkv
    parents = torch.full((B, T), 2.0)
    pb = padding_bias(pad, torch.float64)
    pascal = Pascal(TrainConfig(parent_ignore=1.0 - 1e-12))
    out = gated_heads(q, k, v, sources=["pascal"] * H, impls={"pascal": pascal}, gate=None, gate_value=1.0,
                      pad_bias=pb, feats={"pascal": pascal_weights(parents).double()}, training=True)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=pb), rtol=0, atol=1e-12)


def test_module_with_gate_zero_equals_plain_module():
    torch.manual_seed(0)
    plain = MultiheadAttention(32, 4).eval()
    syn = SyntacticSelfAttention(32, 4, 0.0, ["slr"] * 4).eval()
    syn.load_state_dict(plain.state_dict())
    x = torch.randn(2, 5, 32)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    gaps = torch.tensor([[2.0, 3, 1, 2000], [2, 2000, 0, 0]])
    pb = padding_bias(pad)
    inputs = SyntaxInputs(sources=default_sources(["slr"]), feats={"slr": slr_bias(gaps, pad, 10.0, None)})
    out = syn(x, bias=pb, gate=torch.zeros(2, 4), syntax=inputs)
    torch.testing.assert_close(out[~pad], plain(x, bias=pb)[~pad], rtol=0, atol=1e-6)


# --- the gate network ignores padding ---------------------------------------------------------
def test_gate_network_maxpool_and_batchnorm_ignore_padding():
    torch.manual_seed(0)
    net = GateNetwork(16, 8, 4)
    x = torch.randn(5, 7, 16)
    lengths = torch.tensor([7, 5, 3, 6, 2])
    pad = torch.arange(7)[None, :] >= lengths[:, None]
    x_noisy = x.masked_fill(pad[:, :, None], 1e4)  # garbage under padding must not matter
    net.train()
    g_train = net(x, pad)
    torch.testing.assert_close(net(x_noisy, pad), g_train)  # train mode: batch statistics over sentences
    net.eval()
    g_batch = net(x_noisy, pad)
    for b in range(5):
        n = int(lengths[b])
        alone = net(x[b:b + 1, :n], torch.zeros(1, n, dtype=torch.bool))
        torch.testing.assert_close(alone[0], g_batch[b], rtol=0, atol=1e-6)
    assert ((g_batch > 0) & (g_batch < 1)).all()


def test_gate_network_single_sentence_in_training_uses_running_stats():
    net = GateNetwork(8, 4, 2).train()
    g = net(torch.randn(1, 3, 8), torch.zeros(1, 3, dtype=torch.bool))
    assert g.shape == (1, 2) and torch.isfinite(g).all()


@pytest.mark.parametrize("source", ["slr", "pascal", "ldd"])
def test_encoder_sentence_alone_equals_sentence_in_padded_batch(source):
    """Whole encoder in eval mode: padding changes neither states nor gates of a sentence."""
    rng = np.random.default_rng(0)
    sents = [["ein", "hund", "läuft", "über", "die", "wiese"], ["zwei", "kinder"],
             ["eine", "frau", "mit", "einem", "großen", "sonnenschirm", "steht", "am", "strand"]]
    symbols = build_vocab(sents, split_len=5).symbols
    recs = [record_of_words(i + 1, [s], s[:3], symbols, rng, split_len=5) for i, s in enumerate(sents)]
    cfg = with_overrides(load_preset("tiny"), {"syntax_source": source, "dropout": 0.0})
    torch.manual_seed(0)
    model = Seq2Seq(cfg, len(symbols)).eval()
    collate = Collater.for_model(model)
    with torch.no_grad():
        together = model.encode(collate(list(enumerate(recs))))
        for b, r in enumerate(recs):
            alone = model.encode(collate([(b, r)]))
            n = len(r.src_ids) + 1
            torch.testing.assert_close(alone.x[0, :n], together.x[b, :n], rtol=0, atol=1e-5)
            for layer in alone.gates:
                torch.testing.assert_close(alone.gates[layer][0], together.gates[layer][b], rtol=0, atol=1e-6)
    assert set(together.gates) == {0, 1}


def test_ldd_weights_inherit_word_rows_and_spread_heads():
    # "The mon@@ key eats": words The(0) monkey(1) eats(2); pieces 0 | 1 2 | 3, </s> = 4
    word_index = torch.tensor([[0, 1, 1, 2, -1]])
    ent = [torch.tensor(x) for x in ([0, 0, 0, 0], [0, 1, 1, 2], [1, 2, 0, -1], [5, 26, 26, 34], [0.9, 0.7, 0.3, 1.0])]
    w = ldd_weights(word_index, 3, *ent[:4], ent[4].float(), labels=[5, 26, 34])
    assert w.shape == (1, 3, 5, 5)
    det, nsubj, root = w[0]
    assert det[0, 1] == det[0, 2] == pytest.approx(0.9) and det.sum() == pytest.approx(1.8)
    assert nsubj[1, 3] == nsubj[2, 3] == pytest.approx(0.7)  # both pieces inherit the row
    assert nsubj[1, 0] == nsubj[2, 0] == pytest.approx(0.3)
    assert root[3, 3] == pytest.approx(1.0) and root.sum() == pytest.approx(1.0)  # root → own piece
    assert w[0, :, 4].abs().sum() == 0 and w[0, :, :, 4].abs().sum() == 0  # </s> row and column


def test_config_rejects_bad_syntax_source():
    from synprep.errors import ConfigError

    with pytest.raises(ConfigError):
        TrainConfig(syntax_source="dependency")
    with pytest.raises(ConfigError):
        TrainConfig(syntax="hard", syntax_layers=[0], syntax_source=["slr", "slr"])
