"""Collate (special gaps, parents, LDD entries), SPEC known answers through the trainer's masks,
and the length-bucketed batch sampler (bounds, coverage, determinism, DDP split, resume)."""

from __future__ import annotations

import builders
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from synprep.constants import EOS_ID, GAP_EOS, PAD_ID
from synprep.train.config import TrainConfig
from synprep.train.data import BucketBatchSampler, Collater
from synprep.train.masks import pascal_weights, slr_bias
from synprep.types import PairRecord


def record(src_ids, word_index, heads, gaps, **kw) -> PairRecord:
    return builders.record(src_ids, word_index, heads, gaps=gaps, **kw)


# SPEC.md §2: "i sw@@ im across the ri@@ ver ." stores [6,1,4,3,2,1,5]; with </s>: [6,1,4,3,2,1,5,2000]
SWIM = record([10, 11, 12, 13, 14, 15, 16, 17], [0, 1, 1, 2, 3, 4, 4, 5], [2, 0, 2, 5, 3, 2], [6, 1, 4, 3, 2, 1, 5])
# SPEC.md §4: "The mon@@ key eats a ban@@ ana", heads The→monkey, monkey→eats, eats=root, a→banana, banana→eats
MONKEY = record([20, 21, 22, 23, 24, 25, 26], [0, 1, 1, 2, 3, 4, 4], [2, 3, 0, 5, 3], [2, 1, 3, 4, 2, 1],
                ldd=([1, 2, 3], [2, 3, 0], [5, 26, 34], [0.9, 0.8, 1.0]))


def test_collate_appends_eos_with_gap_2000_and_shifts_target():
    cfg = TrainConfig(ldd_labels=["aux", "nsubj", "root", "aux"])  # relation ids 5, 26, 34
    b = Collater(["slr", "pascal", "ldd"], cfg)([(0, SWIM), (1, MONKEY)])
    gaps, ldd = b.syntax["slr"], b.syntax["ldd"]
    assert b.src_tokens.shape == (2, 9)
    assert b.src_tokens[0].tolist() == [10, 11, 12, 13, 14, 15, 16, 17, EOS_ID]
    assert b.src_tokens[1].tolist() == [20, 21, 22, 23, 24, 25, 26, EOS_ID, PAD_ID]
    assert gaps[0].tolist() == [6, 1, 4, 3, 2, 1, 5, GAP_EOS]  # the SPEC's </s> line
    assert gaps[1, :7].tolist() == [2, 1, 3, 4, 2, 1, GAP_EOS]
    assert b.prev_tokens[0].tolist() == [EOS_ID, 7, 8] and b.target[0].tolist() == [7, 8, EOS_ID]
    assert b.ntokens == 6 and b.src_lengths.tolist() == [9, 8]
    # SPEC §4 parents; </s> (position 7) and padding point at </s>
    assert b.syntax["pascal"][1].tolist() == [1.5, 3, 3, 3, 5.5, 3, 3, 7, 7]
    assert ldd["word_index"][1].tolist() == [0, 1, 1, 2, 3, 4, 4, -1, -1]
    # LDD entries: batch, 0-based dependent, 0-based head (-1 root), relation, probability
    e = [t.tolist() for t in ldd["entries"]]
    assert e[0] == [1, 1, 1] and e[1] == [0, 1, 2] and e[2] == [1, 2, -1] and e[3] == [5, 26, 34]


def test_slr_through_collate_matches_spec_known_answer():
    # "I swim across the river ." stores [6,4,3,2,5]; the trainer appends 2000
    swim = record([10, 11, 12, 13, 14, 15], range(6), [2, 0, 2, 5, 3, 2], [6, 4, 3, 2, 5])
    b = Collater(["slr"])([(0, swim)])
    pad = b.src_tokens.eq(PAD_ID)
    soft = slr_bias(b.syntax["slr"], pad, 10.0, None)[0, 0].exp()
    np.testing.assert_allclose(soft[0].numpy(), [1, 1, .5987, .3865, .2667, .1466, 0], atol=5e-5)
    np.testing.assert_allclose(soft[3].numpy(), [.1595, .4502, 1, 1, 1, .3543, 0], atol=5e-5)
    hard = ["1111110", "1111100", "0111100", "0011100", "0001110", "0111111", "1111111"]
    for mode in ("strict", "nonstrict"):
        m = slr_bias(b.syntax["slr"], pad, 10.0, mode)[0, 0].exp()
        assert ["".join(str(int(v)) for v in row) for row in m.tolist()] == hard


def test_slr_padding_neither_changes_real_rows_nor_leaves_empty_rows():
    b = Collater(["slr"])([(0, SWIM), (1, record([5, 6], [0, 1], [2, 0], [3]))])
    pad = b.src_tokens.eq(PAD_ID)
    both = slr_bias(b.syntax["slr"], pad, 10.0, "strict")
    alone = slr_bias(Collater(["slr"])([(1, b_rec := record([5, 6], [0, 1], [2, 0], [3]))]).syntax["slr"],
                     torch.zeros(1, 3, dtype=torch.bool), 10.0, "strict")
    assert b_rec.gaps_cnf.tolist() == [3]
    torch.testing.assert_close(both[1, 0, :3, :3], alone[0, 0])
    assert torch.isfinite(both).any(-1).all()  # every row (padding rows too) keeps a finite entry


def test_pascal_weights_known_values():
    w = pascal_weights(torch.tensor([[2.0, 2.0, 2.0, 2.0, 2.0]]))[0, 0, 0]
    np.testing.assert_allclose(w.numpy(), [.053991, .241971, .398942, .241971, .053991], atol=1e-6)


# --- the batch sampler ------------------------------------------------------------------------
lengths = st.lists(st.tuples(st.integers(1, 60), st.integers(1, 60)), min_size=1, max_size=120)


@settings(max_examples=60, deadline=None)
@given(lengths, st.integers(64, 400), st.integers(0, 5))
def test_sampler_bound_and_coverage(pairs, max_tokens, epoch):
    src, tgt = (np.array(x) for x in zip(*pairs, strict=True))
    s = BucketBatchSampler(src, tgt, max_tokens, seed=3)
    s.set_epoch(epoch)
    batches = list(s)
    sizes = np.maximum(src, tgt) + 1
    for b in batches:
        assert len(b) * sizes[b].max() <= max_tokens
    seen = sorted(i for b in batches for i in b)
    assert seen == sorted(np.flatnonzero(sizes <= max_tokens).tolist())  # each fitting pair once
    assert s.skipped == int((sizes > max_tokens).sum())
    assert [list(b) for b in s.rank_batches(epoch)] == batches  # deterministic


@settings(max_examples=30, deadline=None)
@given(lengths, st.integers(2, 4))
def test_sampler_ddp_ranks_split_the_epoch(pairs, world):
    src, tgt = (np.array(x) for x in zip(*pairs, strict=True))
    full = BucketBatchSampler(src, tgt, 200, seed=1).global_batches(2)
    ranks = [BucketBatchSampler(src, tgt, 200, seed=1, rank=r, world_size=world).rank_batches(2) for r in range(world)]
    assert len({len(r) for r in ranks}) == 1  # same number of steps on every rank
    union = [b for r in ranks for b in r]
    assert len(union) == -(-len(full) // world) * world
    assert {tuple(b) for b in union} == {tuple(b) for b in full}  # padding only repeats batches


def test_sampler_epochs_differ_and_resume_skips():
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(1, 40, 300), rng.integers(1, 40, 300)
    s = BucketBatchSampler(src, tgt, 256, seed=7)
    e0, e1 = s.global_batches(0), s.global_batches(1)
    assert e0 != e1 and e0 == BucketBatchSampler(src, tgt, 256, seed=7).global_batches(0)
    s.set_epoch(1, start=5)
    assert list(s) == e1[5:] and len(s) == len(e1) - 5


def test_sampler_without_shuffle_is_sorted_by_length():
    src, tgt = np.array([5, 1, 9, 3]), np.array([2, 2, 2, 2])
    batches = BucketBatchSampler(src, tgt, 10_000, shuffle=False).global_batches(0)
    assert batches == [[1, 3, 0, 2]]


@pytest.mark.parametrize("max_positions", [8, None])
def test_sampler_skips_pairs_over_max_positions(max_positions):
    s = BucketBatchSampler(np.array([3, 20]), np.array([3, 3]), 100, max_positions=max_positions)
    assert s.skipped == (1 if max_positions else 0)
