"""The head subsets of gated attention are slices (no host-built index per call),
LDD weights are scattered without nonzero() and SET's relation table is an embedding lookup;
each equals the earlier implementation (written out here as the reference)."""

from __future__ import annotations

import pytest
import torch

from synprep.train.attention import _take, gated_heads
from synprep.train.masks import ldd_weights, padding_bias, slr_bias

B, H, T, DH = 3, 4, 9, 8


def _old_gated_heads_mix(raw, groups, raw_heads, sources, gate, H):
    """The mixing of the earlier gated_heads: list indexing and a final inverse permutation."""
    raw_pos = {h: i for i, h in enumerate(raw_heads)}
    pieces = []
    for heads, syn in groups:
        r = raw if len(heads) == len(raw_heads) == H else raw[:, [raw_pos[h] for h in heads]]
        g = gate[:, heads][:, :, None, None]
        pieces.append((heads, g * syn + (1.0 - g) * r))
    plain = [h for h in range(H) if sources[h] is None]
    if plain:
        pieces.append((plain, raw if len(plain) == H else raw[:, [raw_pos[h] for h in plain]]))
    order = [h for heads, _ in pieces for h in heads]
    return torch.cat([t for _, t in pieces], dim=1)[:, [order.index(h) for h in range(H)]]


@pytest.mark.parametrize("sources", [["slr", None, None, None], [None, "slr", "slr", None], ["slr", None, "slr", None],
                                     [None, None, None, "slr"], ["slr", "pascal", None, "slr"]])
def test_head_subsets_equal_the_list_indexed_mix(sources):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, T, DH, generator=g, dtype=torch.float64) for _ in range(3))
    pad = torch.arange(T)[None, :] >= torch.tensor([9, 6, 3])[:, None]
    gaps = torch.randint(1, 5, (B, T - 1), generator=g).double()
    bias = slr_bias(gaps, pad, 10.0, None).double()
    pw = torch.rand(B, 1, T, T, generator=g, dtype=torch.float64)
    gate = torch.rand(B, H, generator=g, dtype=torch.float64)
    pb = padding_bias(pad, torch.float64)
    out = gated_heads(q, k, v, sources=sources, gate=gate, gate_value=None, pad_bias=pb,
                      feats={"slr": bias, "pascal": pw})
    # the reference: each source's heads alone through gated_heads with G ≡ 1, the raw heads as
    # plain attention, mixed the old way
    raw = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=pb)
    groups = []
    for name in dict.fromkeys(s for s in sources if s is not None):
        heads = [h for h, s in enumerate(sources) if s == name]
        syn = gated_heads(q[:, heads], k[:, heads], v[:, heads], sources=[name] * len(heads), gate=None,
                          gate_value=1.0, pad_bias=pb, feats={"slr": bias, "pascal": pw})
        groups.append((heads, syn))
    expected = _old_gated_heads_mix(raw, groups, list(range(H)), sources, gate, H)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)


def test_take_slices_consecutive_heads_and_indexes_others():
    t = torch.arange(2 * 5 * 3).view(2, 5, 3)
    for idx in ([0], [1, 2], [2, 3, 4], [0, 2], [3, 1]):
        assert torch.equal(_take(t, idx, 5), t[:, idx]), idx
    view = _take(t, [1, 2], 5)  # a view: nothing copied, no index tensor built
    assert view.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()


def _old_ldd_weights(word_index, n_words, ent_batch, ent_dep, ent_head, ent_rel, ent_prob, labels):
    """The earlier ldd_weights (nonzero() over the (entry, label) hits)."""
    B, T = word_index.shape
    L = len(labels)
    words = torch.zeros(B, L, n_words + 1, n_words + 1)
    if ent_prob.numel():
        hit = ent_rel[:, None] == torch.as_tensor(labels)[None, :]
        k, li = hit.nonzero(as_tuple=True)
        head = torch.where(ent_head[k] < 0, ent_dep[k], ent_head[k])
        words.index_put_((ent_batch[k], li, ent_dep[k], head), ent_prob[k].float(), accumulate=True)
    wi = torch.where(word_index < 0, n_words, word_index)
    rows = torch.gather(words, 2, wi[:, None, :, None].expand(B, L, T, n_words + 1))
    return torch.gather(rows, 3, wi[:, None, None, :].expand(B, L, T, T))


def test_ldd_weights_equal_the_nonzero_version():
    g = torch.Generator().manual_seed(4)
    B_, W, T_, K = 4, 6, 11, 60
    word_index = torch.randint(-1, W, (B_, T_), generator=g)
    ent = (torch.randint(0, B_, (K,), generator=g), torch.randint(0, W, (K,), generator=g),
           torch.randint(-1, W, (K,), generator=g), torch.randint(0, 8, (K,), generator=g))
    prob = torch.rand(K, generator=g)
    for labels in ([1], [1, 3, 5], [7, 7]):
        new = ldd_weights(word_index, W, *ent, prob, labels=labels)
        old = _old_ldd_weights(word_index, W, *ent, prob, labels=labels)
        assert torch.equal(new, old), labels
        assert new.sum() > 0


def test_set_relation_lookup_equals_indexing_with_gradients():
    from synprep.train.config import TrainConfig
    from synprep.train.sources.base import AttendContext
    from synprep.train.sources.set import SET, SETLayer

    torch.manual_seed(0)
    cfg = TrainConfig(d_model=16, heads=2, encoder_layers=1, decoder_layers=1, syntax="pure", syntax_source="set",
                      set_rel_dim=8)
    src, layer = SET(cfg), SETLayer(2, 16, 8)
    n_rel = src.rel_embed.weight.shape[0]
    rel = torch.randint(0, n_rel, (2, 5, 5))
    prepared = {"rel": rel, "has_rel": rel.ne(0).unsqueeze(1), "subtree_bias": torch.zeros(2, 1, 5, 5)}
    q, k, v, x = (torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 5, 16))

    def run():
        src.zero_grad()
        layer.zero_grad()
        out = src.attend(q, k, v, [0, 1], prepared, AttendContext(pad_bias=None, dropout_p=0.0, training=False,
                                                                   x=x, module=layer, aux=[]))
        out.square().sum().backward()
        return out.detach(), src.rel_embed.weight.grad.clone(), layer.v_r.grad.clone()

    new = run()
    orig = torch.nn.functional.embedding
    try:  # the earlier lookup: advanced indexing of the table
        torch.nn.functional.embedding = lambda idx, table, *a, **kw: table[idx]
        old = run()
    finally:
        torch.nn.functional.embedding = orig
    for a, b in zip(new, old, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_set_sorted_lookup_table_gradient_is_the_exact_sum():
    """``relation_lookup(sorted_rel=...)`` (``_SortedLookup``, the CUDA candidate of
    ``SORTED_LOOKUP_ON_CUDA``): the embedding's values, per column, and the table's gradient the exact
    per-relation sum of the pairs' gradients (float64) rounded once to the dtype, on skewed ids as SET's
    (most pairs have none; some ids have no pair at all). In float32 the embedding's gradient is the same
    sum; in bfloat16 the CPU's embedding backward adds in bfloat16 (off by ~1 at sums of ~20)."""
    from synprep.train.sources import set as set_mod

    torch.manual_seed(0)
    n_rel = 83
    rel = torch.randint(0, n_rel // 2, (6, 11, 11))  # ids n_rel // 2 … n_rel - 2: no pair
    rel[torch.rand(rel.shape) < 0.7] = 0
    rel[0, 0, 0] = n_rel - 1  # the last id
    order, bounds = set_mod.sort_relations(rel, n_rel)
    assert torch.equal(rel.reshape(-1)[order], rel.reshape(-1).sort(stable=True).values)
    assert bounds.tolist() == [0, *torch.bincount(rel.reshape(-1), minlength=n_rel).cumsum(0).tolist()]
    for dtype in (torch.float32, torch.bfloat16):
        base = torch.randn(n_rel, 8)
        grad_out = torch.randn(8, 6, 11, 11).to(dtype)  # (C, B, T, T)
        flat = grad_out.reshape(8, -1).t().double()
        exact, magnitude = (torch.zeros(n_rel, 8, dtype=torch.float64).index_add_(0, rel.reshape(-1), g)
                            for g in (flat, flat.abs()))
        results = []
        for sorted_rel in (None, (order, bounds)):
            table = base.clone().requires_grad_(True)
            out = set_mod.relation_lookup(rel, table.to(dtype), sorted_rel)
            assert out.shape == (8, 6, 11, 11)
            out.backward(grad_out)
            results.append((out.detach(), table.grad.double()))
        (out_e, grad_e), (out_s, grad_s) = results
        assert out_s.dtype == dtype and torch.equal(out_s, out_e)
        # float64 sums (1e-12 of the summed magnitudes), rounded once to dtype (float32: eps 1.2e-7)
        bound = torch.finfo(dtype).eps / 2 * exact.abs() + 1e-12 * magnitude
        assert ((grad_s - exact).abs() <= bound).all(), (grad_s - exact).abs().max()
        if dtype == torch.float32:
            torch.testing.assert_close(grad_s, grad_e, rtol=1e-5, atol=1e-5)
        assert exact[0].abs().sum() > 0 and exact[n_rel - 1].abs().sum() > 0 and grad_s[n_rel - 2].eq(0).all()
        # the sorted path is the one taken: its graph node is the Function
        table = base.clone().requires_grad_(True)
        assert type(set_mod.relation_lookup(rel, table, (order, bounds)).grad_fn).__name__ == "_SortedLookupBackward"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_set_sorted_lookup_in_the_attention_on_cuda(monkeypatch):
    """``SORTED_LOOKUP_ON_CUDA`` on: SET's attention on CUDA gives the outputs and gradients of the embedding
    lookup (float32; bf16 autocast within bf16's rounding), and the batch's sort is made once, by the first
    layer. ``make gpu-tests``."""
    from synprep.train.config import TrainConfig
    from synprep.train.sources import set as set_mod
    from synprep.train.sources.base import AttendContext

    torch.manual_seed(0)
    cfg = TrainConfig(d_model=16, heads=2, encoder_layers=1, decoder_layers=1, syntax="pure", syntax_source="set",
                      set_rel_dim=8)
    src, layer = set_mod.SET(cfg).cuda(), set_mod.SETLayer(2, 16, 8).cuda()
    rel = torch.randint(0, src.n_rel, (4, 23, 23), device="cuda")
    rel[torch.rand(rel.shape, device="cuda") < 0.7] = set_mod.NONE
    q, k, v = (torch.randn(4, 2, 23, 8, device="cuda") for _ in range(3))
    x = torch.randn(4, 23, 16, device="cuda")

    def run(on: bool, bf16: bool):
        monkeypatch.setattr(set_mod, "SORTED_LOOKUP_ON_CUDA", on)
        prepared = {"rel": rel, "has_rel": rel.ne(set_mod.NONE).unsqueeze(1),
                    "subtree_bias": torch.zeros(4, 1, 23, 23, device="cuda")}
        src.zero_grad()
        layer.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            out = src.attend(q, k, v, [0, 1], prepared, AttendContext(pad_bias=None, dropout_p=0.0, training=True,
                                                                       x=x, module=layer, aux=[]))
        out.float().square().sum().backward()
        assert ("rel_sorted" in prepared) == on
        return out.detach().float(), src.rel_embed.weight.grad.clone(), layer.v_r.grad.clone()

    for bf16, tol in ((False, 1e-5), (True, 3e-2)):
        for a, b in zip(run(True, bf16), run(False, bf16), strict=True):
            torch.testing.assert_close(a, b, rtol=tol, atol=tol)
