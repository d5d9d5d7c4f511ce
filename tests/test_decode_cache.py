"""The search's self-attention step (MultiheadAttention.step_self: beam reorder and cache growth in one
copy) gives bit for bit the outputs and the keys/values of the decoder's cached forward with fairseq's
reorder (a cat per step, then index_select), the path tests/decode_reference.py decodes with."""

from __future__ import annotations

import pytest
import torch

from synprep.train.attention import MultiheadAttention


def _orders(n_rows: int, g: int, steps: int, gen: torch.Generator) -> list[torch.Tensor | None]:
    """Per step after the first: rows reordered within groups of g (beams), and in some steps one
    group dropped (a finished sentence); None where the rows stay."""
    out: list[torch.Tensor | None] = []
    for s in range(steps - 1):
        groups = n_rows // g
        if s == 1:
            out.append(None)
            continue
        keep = torch.arange(groups)
        if s % 2 == 0 and groups > 1:  # a sentence leaves
            keep = keep[keep != int(torch.randint(groups, (1,), generator=gen))]
        parents = torch.randint(g, (keep.numel(), g), generator=gen)
        out.append((keep[:, None] * g + parents).reshape(-1))
        n_rows = keep.numel() * g
    return out


@pytest.mark.parametrize("bf16", [False, True])
def test_step_self_equals_the_cached_forward_with_reorders(bf16):
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    att = MultiheadAttention(32, 4).eval()
    g, steps = 3, 7
    n = 5 * g
    orders = _orders(n, g, steps, gen)
    cache: dict = {}
    kv = None
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        for s in range(steps):
            order = orders[s - 1] if s else None
            if order is not None:
                n = order.numel()
                cache["k"], cache["v"] = cache["k"].index_select(0, order), cache["v"].index_select(0, order)
            x = torch.randn(n, 1, 32, generator=gen)
            ref = att(x, cache=cache)
            out, kv = att.step_self(x, kv, order)
            assert kv.shape == (2, n, 4, s + 1, 8)
            assert torch.equal(kv[0], cache["k"]) and torch.equal(kv[1], cache["v"])
            assert torch.equal(out, ref)
    assert len({o.numel() for o in orders if o is not None}) > 1  # rows were dropped on the way
