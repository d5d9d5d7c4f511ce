"""A batch whose sources all have one length (``Batch.src_padded`` False) is encoded without a padding
mask (SDPA's fastest kernels take none), with the loss, the gradients and the hypotheses of the same batch
with its all-zero mask, for vanilla and every registered syntax source; ``batch_order: source`` makes
such batches the common case (fairseq's order: tests/test_train_batches_fairseq.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from synprep.errors import ConfigError
from synprep.shards.synthetic import random_records
from synprep.train.config import with_overrides
from synprep.train.data import BucketBatchSampler, Collater
from synprep.train.decode import beam_search
from synprep.train.graphs import batch_key
from synprep.train.model import Seq2Seq
from synprep.train.sources import SOURCES
from tests.test_train_graphs import _config, _loss_and_grads


def _same_length(n: int = 4):
    """``n`` synthetic records whose sources have one piece count, and one longer record."""
    recs = list(random_records(120, np.random.default_rng(3), words=7, tgt_len=9, vocab_size=200))
    by_len: dict[int, list] = {}
    for r in recs:
        by_len.setdefault(len(r.src_ids), []).append(r)
    length, group = max(by_len.items(), key=lambda kv: len(kv[1]))
    other = next(r for r in recs if len(r.src_ids) > length)
    return group[:n], other


def test_the_collate_says_whether_a_source_is_padded():
    same, other = _same_length()
    collate = Collater()
    assert collate(list(enumerate(same))).src_padded is False
    mixed = collate(list(enumerate([*same, other])))
    assert mixed.src_padded is True and bool((mixed.src_tokens == 1).any())  # <pad> is id 1
    assert batch_key(collate(list(enumerate(same)))) != batch_key(dataclasses.replace(
        collate(list(enumerate(same))), src_padded=True))  # a graph captured with a mask is not replayed without


@pytest.mark.parametrize("source", [None, *sorted(SOURCES)])
def test_no_mask_gives_the_loss_gradients_and_hypotheses_of_the_zero_mask(source):
    torch.manual_seed(0)
    model = Seq2Seq(_config(source), 200)
    model.train()  # dropout is off (_config); LISA's auxiliary loss exists in training only
    same, _ = _same_length()
    plain = Collater.for_model(model)(list(enumerate(same)))
    masked = dataclasses.replace(plain, src_padded=True)
    assert plain.src_padded is False
    assert model.encode(plain).bias is None and model.encode(masked).bias is not None
    loss_a, grads_a = _loss_and_grads(model, masked)
    loss_b, grads_b = _loss_and_grads(model, plain)
    torch.testing.assert_close(loss_b, loss_a, rtol=1e-6, atol=1e-6)
    assert grads_a.keys() == grads_b.keys()
    for name, g in grads_a.items():
        torch.testing.assert_close(grads_b[name], g, rtol=1e-5, atol=1e-6, msg=name)
    model.eval()
    assert beam_search(model, plain, 3, 1.0, 0.0, 12) == beam_search(model, masked, 3, 1.0, 0.0, 12)


def test_batch_order():
    """``source``: pairs sorted by (source, target) size; ``target`` (the default) by (target, source);
    anything else is refused, in the sampler and in the config."""
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(1, 40, 300), rng.integers(1, 40, 300)
    for order, first, then in (("target", tgt, src), ("source", src, tgt)):
        batches = BucketBatchSampler(src, tgt, 256, shuffle=False, order=order).global_batches(0)
        flat = [i for b in batches for i in b]
        keys = [(first[i], then[i], i) for i in flat]
        assert keys == sorted(keys), order
    assert BucketBatchSampler(src, tgt, 256, shuffle=False).order == "target"
    with pytest.raises(ValueError, match="order must be one of target, source"):
        BucketBatchSampler(src, tgt, 256, order="length")
    with pytest.raises(ConfigError, match="batch_order must be one of target, source"):
        with_overrides(_config(None), {"batch_order": "length"})
