"""Issue 18 item 3: the head subsets of gated attention are slices (no host-built index per call),
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
