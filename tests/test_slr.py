"""SLR masks (SPEC.md §3): known answers, Definition 3.1 on random trees, soft → hard, torch = numpy."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from nltk.tree import Tree
from nltk.tree.transforms import chomsky_normal_form
from strategies import trees

from synprep.constants import GAP_EOS
from synprep.features import slr_torch
from synprep.features.distance import cnf_gaps, nary_gaps
from synprep.features.slr import (
    hard_slr_log_mask,
    hard_slr_mask,
    local_range_mask,
    slr_mask,
    soft_slr_log_mask,
    soft_slr_mask,
)

SPEC_GAPS = [6, 4, 3, 2, 5, 2000]
SPEC_HARD = ["1111110", "1111100", "0111100", "0011100", "0001110", "0111111", "1111111"]
SWIM = "(ROOT (S (NP (PRP I)) (VP (VBP swim) (PP (IN across) (NP (DT the) (NN river)))) (. .)))"


def rows(mask: np.ndarray) -> list[str]:
    return ["".join("1" if x else "0" for x in r) for r in mask]


# --- SPEC.md §3 known answers ------------------------------------------------------------------

@pytest.mark.parametrize("strict", [True, False])
def test_hard_known_answer(strict):
    m = hard_slr_mask(np.array(SPEC_GAPS), strict=strict)
    assert m.dtype == bool and m.shape == (7, 7)
    assert rows(m) == SPEC_HARD


def test_soft_known_answer_rows():
    m = soft_slr_mask(np.array(SPEC_GAPS))  # τ = 10 by default
    assert m.dtype == np.float32 and m.shape == (7, 7)
    np.testing.assert_allclose(m[0], [1, 1, .5987, .3865, .2667, .1466, 0], atol=5e-5)  # "I"
    np.testing.assert_allclose(m[3], [.1595, .4502, 1, 1, 1, .3543, 0], atol=5e-5)  # "the"
    np.testing.assert_array_equal(soft_slr_mask(SPEC_GAPS, tau=10.0), m)


@settings(max_examples=200, deadline=None)
@given(arrays(np.int64, st.integers(0, 15), elements=st.integers(1, 12)), st.integers(-5, 500),
       st.floats(0.5, 30))
def test_adding_a_constant_changes_neither_mask(gaps, c, tau):
    shifted = gaps + c
    for strict in (True, False):
        np.testing.assert_array_equal(hard_slr_mask(gaps, strict), hard_slr_mask(shifted, strict))
    np.testing.assert_allclose(soft_slr_mask(gaps, tau), soft_slr_mask(shifted, tau), atol=1e-6)


def test_definition_3_1_on_the_spec_tree_and_cnf_disagreement():
    tree = Tree("TOP", [Tree.fromstring(SWIM), "</s>"])
    d31 = local_range_mask(tree)
    # "." (row 5) ranges over the whole sentence: it is a non-leftmost child of S
    assert rows(d31) == ["1111110", "1111100", "0111100", "0011100", "0001110", "1111111", "1111111"]
    nary = np.append(nary_gaps(SWIM), GAP_EOS)
    assert np.array_equal(hard_slr_mask(nary, strict=False), d31)
    # the cnf gaps (the reference data) give row 5 = 0111111: they do not equal Definition 3.1
    assert not np.array_equal(hard_slr_mask(np.append(cnf_gaps(SWIM), GAP_EOS)), d31)


def test_small_cases():
    assert soft_slr_mask(np.zeros(0)).tolist() == [[1.0]]
    assert hard_slr_mask(np.array([7])).tolist() == [[True, True], [True, True]]
    # a flat node: nary ties; only the non-strict mask keeps the whole constituent
    assert rows(hard_slr_mask(np.array([1, 1, 1]), strict=False)) == ["1111"] * 4
    assert rows(hard_slr_mask(np.array([1, 1, 1]), strict=True)) == ["1100", "1110", "0111", "0011"]


def test_bad_input():
    with pytest.raises(ValueError):
        soft_slr_mask(np.ones((2, 2)))
    with pytest.raises(ValueError):
        soft_slr_mask(np.array([1.0, np.nan]))
    with pytest.raises(ValueError):
        soft_slr_mask(np.array([1.0]), tau=0)
    with pytest.raises(ValueError):
        slr_mask(np.array([1.0]), hard="lenient")


# --- the mask equals Definition 3.1 computed on the tree ---------------------------------------

@settings(max_examples=300, deadline=None)
@given(trees, st.integers(0, 1000))
def test_hard_nonstrict_on_nary_gaps_equals_definition_3_1(tree, extra):
    # </s> enters the tree as the right sibling of the sentence: TOP -> [tree, </s>]; its gap
    # is any value above every sentence gap (the trainer's 2000)
    gaps = nary_gaps(tree)
    top = (gaps.max() if gaps.size else 0) + 1 + extra
    expected = local_range_mask(Tree("TOP", [tree, "</s>"]))
    assert np.array_equal(hard_slr_mask(np.append(gaps, top), strict=False), expected)


@settings(max_examples=200, deadline=None)
@given(trees)
def test_cnf_gaps_equal_definition_3_1_on_the_binarized_tree(tree):
    # a binary tree has no ties between a query's gap and the gaps it spans: both hard masks agree
    binarized = tree.copy(deep=True)
    chomsky_normal_form(binarized, factor="right")
    expected = local_range_mask(Tree("TOP", [binarized, "</s>"]))
    gaps = np.append(cnf_gaps(tree), GAP_EOS)
    assert np.array_equal(hard_slr_mask(gaps, strict=True), expected)
    assert np.array_equal(hard_slr_mask(gaps, strict=False), expected)


# --- soft: the SPEC product formula, its τ → 0 limit, log variants ------------------------------

def brute_soft(gaps: np.ndarray, tau: float) -> np.ndarray:
    """SPEC §3 literally, three nested loops."""
    t = len(gaps) + 1
    sig = lambda x: (1 + np.tanh(x / tau)) / 2  # noqa: E731
    m = np.ones((t, t))
    for r in range(t):
        for c in range(t):
            if c <= r - 2:
                m[r, c] = np.prod([sig(gaps[r - 1] - gaps[k]) for k in range(c, r - 1)])
            elif c >= r + 2:
                m[r, c] = np.prod([sig(gaps[r] - gaps[k]) for k in range(r + 1, c)])
    return m


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(0, 14), elements=st.floats(1, 60)), st.floats(0.3, 40))
def test_soft_equals_spec_product_formula(gaps, tau):
    np.testing.assert_allclose(soft_slr_mask(gaps, tau), brute_soft(gaps, tau), atol=2e-6, rtol=1e-5)


@settings(max_examples=300, deadline=None)
@given(arrays(np.int64, st.integers(0, 14), elements=st.integers(1, 5)))
def test_soft_tends_to_hard_with_half_per_tie(gaps):
    # integer gaps differ by 0 or >= 1; at τ = 1e-3 every non-tie factor is 0 or 1 in float64
    t = gaps.size + 1
    soft = soft_slr_mask(gaps, tau=1e-3).astype(np.float64)
    strict, nonstrict = hard_slr_mask(gaps, True), hard_slr_mask(gaps, False)
    ties = np.zeros((t, t), dtype=int)
    for r in range(t):
        for c in range(t):
            if c <= r - 2:
                ties[r, c] = int(np.sum(gaps[c : r - 1] == gaps[r - 1]))
            elif c >= r + 2:
                ties[r, c] = int(np.sum(gaps[r + 1 : c] == gaps[r]))
    limit = np.where(nonstrict, 0.5 ** ties, 0.0)
    np.testing.assert_allclose(soft, limit, atol=1e-6)
    # strict = no tie on the way; non-strict = not blocked
    assert np.array_equal(strict, nonstrict & (ties == 0))
    assert np.array_equal(strict, soft > 0.75)
    assert np.array_equal(nonstrict, soft > 1e-6)


def test_soft_stable_with_special_gaps_and_tiny_tau():
    gaps = np.array([3, 1, 2, 999, 4, 1, 1, 2000])
    for tau in (1e-4, 1e-2, 1.0, 10.0, 1e4):
        log = soft_slr_log_mask(gaps, tau)
        assert np.isfinite(log).all() and (log <= 0).all()
        m = soft_slr_mask(gaps, tau)
        assert ((m >= 0) & (m <= 1)).all()
        assert np.all(np.diag(m) == 1) and np.all(np.diag(m, 1) == 1) and np.all(np.diag(m, -1) == 1)
    # a query inside the second sentence never reaches across the 999 gap at small τ
    m = soft_slr_mask(gaps, 1e-2)
    assert m[5, :4].max() < 1e-30


def test_log_variants():
    g = np.array(SPEC_GAPS)
    np.testing.assert_allclose(np.exp(soft_slr_log_mask(g)), soft_slr_mask(g), rtol=1e-6)
    for strict in (True, False):
        log = hard_slr_log_mask(g, strict)
        assert log.dtype == np.float32
        assert np.array_equal(log == 0, hard_slr_mask(g, strict))
        assert np.all(np.isneginf(log[~hard_slr_mask(g, strict)]))
    np.testing.assert_array_equal(slr_mask(g, hard="nonstrict"), hard_slr_mask(g, strict=False))
    np.testing.assert_array_equal(slr_mask(g, tau=3.0, log=True), soft_slr_log_mask(g, 3.0))


# --- torch -------------------------------------------------------------------------------------

def _padded_batch(seqs: list[np.ndarray], pad_values: list[float], left: bool) -> tuple[torch.Tensor, list[int]]:
    n = max(len(s) for s in seqs)
    out, offsets = [], []
    for s, v in zip(seqs, pad_values, strict=True):
        pad = np.full(n - len(s), v)
        out.append(np.concatenate([pad, s] if left else [s, pad]))
        offsets.append(n - len(s) if left else 0)
    return torch.tensor(np.stack(out), dtype=torch.float32), offsets


@settings(max_examples=100, deadline=None)
@given(st.lists(arrays(np.int64, st.integers(0, 20), elements=st.integers(1, 30)), min_size=1, max_size=5),
       st.floats(0.2, 20), st.booleans(), st.data())
def test_torch_equals_numpy_with_any_padding(seqs, tau, left, data):
    seqs = [np.append(s, GAP_EOS).astype(np.float64) for s in seqs]
    pads = [data.draw(st.floats(-1e4, 1e4)) for _ in seqs]
    batch, offsets = _padded_batch(seqs, pads, left)
    soft = slr_torch.soft_slr_log_mask(batch, tau)
    strict = slr_torch.hard_slr_log_mask(batch, strict=True)
    nonstrict = slr_torch.hard_slr_log_mask(batch, strict=False)
    assert soft.shape == (len(seqs), batch.shape[1] + 1, batch.shape[1] + 1)
    assert soft.dtype == torch.float32
    assert torch.isfinite(soft).all()
    for b, (s, o) in enumerate(zip(seqs, offsets, strict=True)):
        t = len(s) + 1
        block = slice(o, o + t)
        np.testing.assert_allclose(np.exp(soft[b, block, block].numpy()), soft_slr_mask(s, tau), atol=1e-6)
        assert np.array_equal(strict[b, block, block].numpy() == 0, hard_slr_mask(s, True))
        assert np.array_equal(nonstrict[b, block, block].numpy() == 0, hard_slr_mask(s, False))
        # every row keeps its diagonal, so a softmax never sees a row of -inf only
        assert (torch.diagonal(strict[b]) == 0).all()


def test_torch_keeps_dtype_and_dispatch():
    g = torch.tensor([SPEC_GAPS], dtype=torch.float64)
    out = slr_torch.slr_log_mask(g, tau=10.0)
    assert out.dtype == torch.float64 and out.device == g.device
    np.testing.assert_allclose(np.exp(out[0].numpy()), soft_slr_mask(SPEC_GAPS), atol=1e-6)
    hard = slr_torch.slr_log_mask(torch.tensor([SPEC_GAPS]), hard="strict")
    assert rows((hard[0] == 0).numpy()) == SPEC_HARD
    with pytest.raises(ValueError):
        slr_torch.slr_log_mask(g[0])
    with pytest.raises(ValueError):
        slr_torch.slr_log_mask(g, hard="maybe")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_torch_on_cuda_matches_cpu():
    g = torch.tensor([SPEC_GAPS, [1, 2, 3, 4, 5, 2000]], dtype=torch.float32)
    for fn in (lambda x: slr_torch.soft_slr_log_mask(x), lambda x: slr_torch.hard_slr_log_mask(x, False)):
        gpu = fn(g.cuda())
        assert gpu.device.type == "cuda"
        np.testing.assert_allclose(np.exp(gpu.cpu().numpy()), np.exp(fn(g).numpy()), atol=1e-6)


# --- CLI ---------------------------------------------------------------------------------------

def test_cli_mask():
    out = run_cli("mask", "--gaps", "6 4 3 2 5 2000", "--hard", "strict")
    assert out.stdout.splitlines() == [" ".join(r) for r in SPEC_HARD]
    out = run_cli("mask", "--gaps", "6 4 3 2 5 2000", "--hard", "nonstrict")
    assert out.stdout.splitlines() == [" ".join(r) for r in SPEC_HARD]
    out = run_cli("mask", "--gaps", "6 4 3 2 5 2000")
    lines = out.stdout.splitlines()
    assert lines[0] == "1.0000 1.0000 0.5987 0.3865 0.2667 0.1466 0.0000"
    assert lines[3] == "0.1595 0.4502 1.0000 1.0000 1.0000 0.3543 0.0000"
    assert run_cli("mask", "--gaps", "6 4 3 2 5 2000", "--tau", "10").stdout == out.stdout
    assert "feat:slr-soft-tau10" in out.stderr


def test_cli_mask_bad_options():
    out = run_cli("mask", "--gaps", "6 x", check=False)
    assert out.returncode == 2 and "--gaps" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("mask", "--gaps", "6 4", "--tau", "1", "--hard", "strict", check=False)
    assert out.returncode == 2 and "exclude each other" in out.stderr
    out = run_cli("mask", "--gaps", "6 4", "--tau", "0", check=False)
    assert out.returncode == 2 and "--tau" in out.stderr
