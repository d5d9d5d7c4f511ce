"""Syntactic attention weights, built in torch on the training device from a batch's features.

Three sources (SPEC.md §3, §4), and how each enters attention (scores ``s = QKᵀ/√d``):

* **SLR** — a probability mask M: ``A_syn = softmax(s + log M)`` (SPEC §3, "the mask multiplies
  probabilities"). Built once per batch as a (B, 1, T, T) additive bias that also carries the
  key padding, so every layer passes it straight to ``scaled_dot_product_attention``.
* **PASCAL** — Gaussian weights ``N(j; p_i, σ²)`` that multiply the scaled scores element-wise
  before the softmax: ``softmax(s ⊙ N)`` (SPEC §4; Bugliarello & Okazaki 2020 eq. 4–5).
* **LDD** — per head a UD label l, weights ``LDD^l[p, q]`` that multiply the scaled scores
  element-wise before the softmax, as the LDD paper does (``N^h = softmax(S^h ⊙ LDD^l)``). A piece
  inherits its word's row; a head word's probability goes to each of its pieces; the probability
  of the root "head" (q = 0) goes to the dependent word's own pieces (PASCAL's convention: the
  root points at itself); ``</s>`` and padding rows/columns are 0 (their scores become 0).

Multiplying *scores* cannot be expressed as an additive bias, so PASCAL and LDD heads take an
explicit-softmax path in :mod:`synprep.train.attention`; SLR heads use SDPA.
"""

from __future__ import annotations

import math

import torch

from synprep.features.slr_torch import slr_log_mask

__all__ = ["slr_log_mask", "slr_bias", "padding_bias", "pascal_weights", "ldd_weights", "ignore_rows", "device_index"]

_DEVICE_INDEX: dict[tuple[tuple[int, ...], torch.device], torch.Tensor] = {}


def device_index(idx: list[int], device: torch.device) -> torch.Tensor:
    """``idx`` (head or label ids) as a (len(idx),) long tensor on ``device``, made once per (ids, device), kept.

    Indexing a CUDA tensor with a Python list builds the index on the host and copies it with a blocking
    copy: a host synchronisation per call (found by ``torch.cuda.set_sync_debug_mode`` on an H100, in the
    gate's ``gate[:, heads]``). ``index_select`` with this cached device tensor makes none.
    """
    key = (tuple(idx), device)
    t = _DEVICE_INDEX.get(key)
    if t is None:
        # a normal tensor even when first asked for under torch.inference_mode (the decoder's): an inference
        # tensor kept here would make a later training step's index_select fail to save it for backward
        with torch.inference_mode(False):
            t = _DEVICE_INDEX[key] = torch.tensor(idx, dtype=torch.long, device=device)
    return t


def padding_bias(pad: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Additive key-padding bias.

    Args:
        pad: (B, T) bool, True at padding.

    Returns:
        (B, 1, 1, T): 0 at real keys, -inf at padding keys.
    """
    return torch.zeros(pad.shape, dtype=dtype, device=pad.device).masked_fill(pad, float("-inf"))[:, None, None, :]


def slr_bias(gaps: torch.Tensor, pad: torch.Tensor, tau: float, hard: str | None) -> torch.Tensor:
    """SDPA bias for SLR heads: ``log M`` plus the key padding (SPEC.md §3).

    Rows of padding queries get no SLR mask (only the key padding), so every row keeps a finite
    entry and no NaN reaches the padded outputs.

    Args:
        gaps: (B, T-1) gaps with the ``</s>`` gap (2000) appended; values under padding are ignored.
        pad: (B, T) bool, True at padding.
        tau: soft temperature τ (SPEC §3 default 10).
        hard: None, ``"strict"`` or ``"nonstrict"``.

    Returns:
        (B, 1, T, T) in the gaps' floating dtype (float32 for integer gaps).
    """
    log_m = slr_log_mask(gaps, tau=tau, hard=hard)  # (B, T, T)
    log_m = log_m.masked_fill(pad[:, :, None], 0.0)
    return (log_m + padding_bias(pad, log_m.dtype)[:, 0]).unsqueeze(1)


def pascal_weights(parents: torch.Tensor, sigma: float = 1.0) -> torch.Tensor:
    """PASCAL weights ``N(j; p_i, σ²)`` (SPEC.md §4; N(0)=.398942, N(±1)=.241971, N(±2)=.053991).

    Args:
        parents: (B, T) float, parent position p_i of every query piece (0-based; ``</s>`` and
            padding point at the sentence's ``</s>``).
        sigma: standard deviation σ (SPEC: 1).

    Returns:
        (B, 1, T, T) float32, row i = the Gaussian density centred at p_i evaluated at j = 0..T-1.
    """
    T = parents.shape[1]
    j = torch.arange(T, device=parents.device, dtype=torch.float32)
    z = (j[None, None, :] - parents.float()[:, :, None]) / sigma
    return (torch.exp(-0.5 * z * z) / (sigma * math.sqrt(2.0 * math.pi))).unsqueeze(1)


def ldd_weights(word_index: torch.Tensor, n_words: int, ent_batch: torch.Tensor, ent_dep: torch.Tensor,
                ent_head: torch.Tensor, ent_rel: torch.Tensor, ent_prob: torch.Tensor,
                labels: list[int]) -> torch.Tensor:
    """Piece-level LDD weights, one (T, T) matrix per requested label (SPEC.md §4).

    Args:
        word_index: (B, T) long, 0-based word of each piece; -1 for ``</s>`` and padding.
        n_words: W, at least the largest word count in the batch.
        ent_batch: (K,) long, each entry's sentence in the batch.
        ent_dep: (K,) long, its 0-based dependent word.
        ent_head: (K,) long, its 0-based head word (-1 = root).
        ent_rel: (K,) long, its relation id (:data:`synprep.types.DEPRELS`).
        ent_prob: (K,) float, ``P(head(dep) = head, rel(dep) = rel)``.
        labels: L relation ids; output channel i holds ``LDD^{labels[i]}``.

    Returns:
        (B, L, T, T) float32; ``[b, i, p, q]`` = probability that the word of piece p has the
        word of piece q as head with relation ``labels[i]``; a root entry lands on the word's own
        pieces; 0 wherever p or q is ``</s>`` or padding.
    """
    B, T = word_index.shape
    L = len(labels)
    dev = word_index.device
    words = torch.zeros(B, L, n_words + 1, n_words + 1, dtype=torch.float32, device=dev)  # last = "none"
    if ent_prob.numel():
        lab = device_index([int(x) for x in labels], dev)
        hit = ent_rel[:, None] == lab[None, :]  # (K, L)
        # every (entry, label) pair is scattered, the probability times 0 where the relation differs:
        # no nonzero() (a host sync on CUDA) and the same sums (adding 0.0 changes no value)
        K = ent_prob.shape[0]
        li = torch.arange(L, device=dev).expand(K, L)
        head = torch.where(ent_head < 0, ent_dep, ent_head)[:, None].expand(K, L)
        val = ent_prob.float()[:, None] * hit
        words.index_put_((ent_batch[:, None].expand(K, L), li, ent_dep[:, None].expand(K, L), head), val,
                         accumulate=True)
    wi = torch.where(word_index < 0, n_words, word_index)  # (B, T)
    rows = torch.gather(words, 2, wi[:, None, :, None].expand(B, L, T, n_words + 1))  # (B, L, T, W+1)
    return torch.gather(rows, 3, wi[:, None, None, :].expand(B, L, T, T))


def ignore_rows(weights: torch.Tensor, p: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """PASCAL parent ignoring: each query row replaced by ones with probability p (SPEC.md §4).

    Args:
        weights: (B, H, T, T) multiplicative weights (a broadcast (B, 1, T, T) is expanded first).
        p: probability of ignoring a row.

    Returns:
        A new (B, H, T, T) tensor.
    """
    drop = torch.rand(weights.shape[:-1] + (1,), device=weights.device, generator=generator) < p
    return torch.where(drop, torch.ones((), dtype=weights.dtype, device=weights.device), weights)
