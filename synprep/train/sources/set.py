"""SET: the Syntax-Enhanced Transformer's relation attention, as an encoder syntax source for MT.

Source: set-syntax-enhanced-transformer §2 (a sentence encoder; synprep applies it to the NMT
encoder). Per syntactic head, with ``S^e = QKᵀ/√d_k`` the self-attention scores:

* **relations** (§2.1, §2.3): every word pair within ``set_max_path`` arcs of one sentence gets a
  relation id: ``self`` (same word), a dependency label with its direction for adjacent words
  (``i → head`` labelled with i's relation, ``i → dependent j`` with j's), or the shortest path's
  relative tree position ``(up, down)`` (arcs up to the common ancestor, arcs down) for
  non-adjacent ones; other pairs (farther, other sentences, ``</s>``) have none. Each id has a
  learnable vector ``r_ij ∈ R^{d_r}`` (``d_r`` = ``set_rel_dim``, one table for the encoder);
  eq. 1: ``S^r_ij = r_ij V_r`` with ``V_r ∈ R^{d_r}`` per head and layer.
* **semantic gate** (§2.2, eq. 2–3): ``S_ij = (1 − g_ij) S^e_ij + g_ij S^r_ij``,
  ``g_ij = act((h_i W_{g,e} + r_ij W_{g,r}) V_g)`` with ``W_{g,e} ∈ R^{d×d_r}``,
  ``W_{g,r} ∈ R^{d_r×d_r}``, ``V_g ∈ R^{d_r}`` per head and layer, ``h_i`` the hidden state of the
  query word entering the layer. Pairs without a relation keep ``S_ij = S^e_ij``.
* **subtree masks** (§2.3): in the first half of a layer's SET heads, query i attends only to the
  pieces of words in its own subtree (its descendants and itself).
* **level embeddings** (§2): a learnable vector per tree depth (root word 0, depths clipped at
  ``set_max_depth − 1``; ``</s>`` has its own) added to the input: ``h⁰ = e + p + l``.

Where the paper is ambiguous, and what synprep reads:

* **tanh or sigmoid.** The text says the gate applies "a tanh activation to scale the results
  within the range g ∈ [−1, 1]"; eq. 3 writes a sigmoid. synprep follows eq. 3 (``set_gate`` =
  ``sigmoid``): with g ∈ (0, 1), eq. 2 is a convex mix of the two scores, which its ``(1 − g)``
  form suggests; with tanh, ``1 − g`` reaches 2 and the relation score can enter negatively.
  ``set_gate = "tanh"`` selects the text's reading.
* **whose hidden state.** The text says the gate uses "the key word's hidden states", eq. 3 uses
  ``h_i`` (the query, word i attending to word j); synprep follows eq. 3.
* **threshold, d_r, depth range, which half of the heads** are not given: ``set_max_path`` 3,
  ``set_rel_dim`` 64, ``set_max_depth`` 16, the first half (synprep's choices).

The paper prepends a ``[root]`` token as the sentence representation; a translation encoder needs
none (its ``</s>`` plays no syntactic role and has no relation to any word).

The attention is explicit (scores are mixed before the softmax). Per layer the products with
``V_r`` and ``W_{g,r} V_g`` are taken on the relation table ((n_rel, H), not per pair) and then
gathered by relation id, and ``h W_{g,e} V_g`` is one (B, T, H) product, so the cost beyond plain
attention is a few (B, H, T, T) element-wise operations.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from synprep.features.relations import tree_relations
from synprep.train.sources.base import (
    AttendContext,
    SyntaxSource,
    expand_word_pairs,
    pad_word_pairs,
    piece_word_index,
    sentence_paths,
)
from synprep.train.sources.specs import GATES, LABEL0, NONE, SELF, SETSpec, n_relations  # noqa: F401 - re-exported
from synprep.types import DEPRELS, PairRecord


def path_ids(max_path: int) -> dict[tuple[int, int], int]:
    """Relation id of every relative tree position ``(up, down)`` with ``2 ≤ up + down ≤ max_path``."""
    first = LABEL0 + 2 * len(DEPRELS)
    pairs = [(u, n - u) for n in range(2, max_path + 1) for u in range(n, -1, -1)]
    return {p: first + i for i, p in enumerate(pairs)}


@functools.lru_cache(maxsize=64)
def path_table(max_path: int) -> np.ndarray:
    """(max_path + 2, max_path + 2) int64, read-only: ``[up, down]`` the relation id of that relative tree
    position (:func:`path_ids`), :data:`NONE` elsewhere; row and column ``max_path + 1`` stand for every
    longer climb or descent (look it up with ``up``, ``down`` clipped there)."""
    t = np.full((max_path + 2, max_path + 2), NONE, dtype=np.int64)
    for (u, d), rid in path_ids(max_path).items():
        t[u, d] = rid
    t.flags.writeable = False
    return t


def set_relations(heads: np.ndarray, deprel: np.ndarray, max_path: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word-level SET inputs of one line (the reference of :func:`set_relations_batch`, which the collate uses).

    Args:
        heads: (W,) 1-based line-level heads, 0 = root.
        deprel: (W,) ids in :data:`DEPRELS`.
        max_path: largest path length (arcs) that still has a relation.

    Returns:
        ``(rel, subtree, depth)``: rel (W, W) int64 relation ids (see the module docstring;
        :data:`NONE` beyond ``max_path`` or across sentences), subtree (W, W) bool (j in the subtree
        of i, i included), depth (W,) int64 (root word 0).

    Example: heads ``[2, 3, 0, 5, 3]`` (The monkey eats a banana): ``rel[0, 1]`` = det going up
    (``2 + 2·det``), ``rel[1, 0]`` = det going down (``2 + 2·det + 1``), ``rel[0, 2]`` = path (2, 0),
    ``rel[0, 3]`` = NONE with max_path 3 (path 4).
    """
    tr = tree_relations(heads)
    path = sentence_paths(tr)
    dep = np.asarray(deprel, dtype=np.int64)
    far = max_path + 1  # one lookup for every pair, not one (W, W) mask per (up, down)
    rel = path_table(max_path)[np.minimum(tr.up, far), np.minimum(tr.down, far)]
    rel[path < 0] = NONE  # other sentences of the line
    up1 = (tr.up == 1) & (tr.down == 0)  # j is the head of i: i's relation
    down1 = (tr.up == 0) & (tr.down == 1)  # j is a dependent of i: j's relation
    rel = np.where(up1, LABEL0 + 2 * dep[:, None], rel)
    rel = np.where(down1, LABEL0 + 2 * dep[None, :] + 1, rel)
    np.fill_diagonal(rel, SELF)
    return rel, tr.subtree, tr.depth.astype(np.int64)


def set_relations_batch(heads: Sequence[np.ndarray], deprel: Sequence[np.ndarray], max_path: int, extra: int = 0
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`set_relations` of B lines at once, padded: the collate's word-level inputs without a Python
    step per line (the ancestors of every line climbed together, one batched product for the common ancestors).

    Args:
        heads: B (W_b,) 1-based line-level heads, 0 = root.
        deprel: B (W_b,) ids in :data:`DEPRELS`.
        max_path: largest path length (arcs) that still has a relation.
        extra: positions added after the longest line's words (padding, like a shorter line's).

    Returns:
        ``(rel, subtree, depth)``, W = max W_b + ``extra``: rel (B, W, W) int64, line b's :func:`set_relations` ids in
        ``[:W_b, :W_b]`` and :data:`NONE` beyond; subtree (B, W, W) bool, False beyond; depth (B, W) int64,
        0 beyond.

    Raises:
        ValueError: heads out of range, a self-loop or a cycle (naming the line's position in the batch).
    """
    B = len(heads)
    n = np.array([len(h) for h in heads], dtype=np.int64)
    W = int(n.max(initial=0)) + extra
    valid = np.arange(W)[None, :] < n[:, None]  # (B, W)
    parent = np.full((B, W), -1, dtype=np.int64)  # 0-based, -1 = root (and padding)
    dep = np.zeros((B, W), dtype=np.int64)
    if valid.any():
        flat_h = np.concatenate([np.asarray(h, dtype=np.int64) for h in heads])
        parent[valid] = flat_h - 1
        dep[valid] = np.concatenate([np.asarray(d, dtype=np.int64) for d in deprel])
    bad = valid & ((parent < -1) | (parent >= n[:, None]) | (parent == np.arange(W)[None, :]))
    if bad.any():
        b = int(np.nonzero(bad.any(axis=1))[0][0])
        raise ValueError(f"line {b} of the batch: heads must lie in [0, {int(n[b])}] (1-based, 0 = root), "
                         "no word its own head")
    anc = np.zeros((B, W, W), dtype=bool)
    bi, wi = np.nonzero(valid)
    anc[bi, wi, wi] = True
    cur = parent[bi, wi]
    for _ in range(W):  # climb every word of every line one arc a round
        live = cur >= 0
        if not live.any():
            break
        bi, wi, cur = bi[live], wi[live], cur[live]
        anc[bi, wi, cur] = True
        cur = parent[bi, cur]
    else:
        if (cur >= 0).any():
            raise ValueError(f"line {int(bi[cur >= 0][0])} of the batch: heads contain a cycle")
    a = anc.astype(np.float32)
    depth = anc.sum(axis=2, dtype=np.int32) - 1  # (B, W); -1 for padding
    common = np.matmul(a, a.transpose(0, 2, 1)).astype(np.int32)  # common ancestors = depth(LCA) + 1
    up = depth[:, :, None] - common + 1
    down = depth[:, None, :] - common + 1
    far = max_path + 1  # every longer climb or descent: one row and column of the table
    pairs = valid[:, :, None] & valid[:, None, :]
    cross = up > depth[:, :, None]  # other sentences of the line: their LCA is the virtual root
    key = np.minimum(up, far) * (far + 1) + np.minimum(down, far)  # a flat index of path_table
    key[cross | ~pairs] = (far + 1) ** 2  # one past the table: NONE
    table = np.append(path_table(max_path).ravel(), NONE)
    rel = table.take(key)  # (B, W, W) int64
    head = pairs & (up == 1) & (down == 0)  # j is i's head: i's relation, going up
    rel[head] = (LABEL0 + 2 * np.broadcast_to(dep[:, :, None], rel.shape))[head]
    child = pairs & (up == 0) & (down == 1)  # j is i's dependent: j's relation, going down
    rel[child] = (LABEL0 + 2 * np.broadcast_to(dep[:, None, :], rel.shape) + 1)[child]
    diag = np.arange(W)
    rel[:, diag, diag] = np.where(valid, SELF, NONE)
    return rel, anc.transpose(0, 2, 1).copy(), np.maximum(depth, 0).astype(np.int64)


#: On CUDA, take SET's relation lookup as :class:`_SortedLookup` (rows laid out per column, the table's
#: gradient by segment sums over the pairs sorted once per batch) instead of ``F.embedding``. Off until
#: measured faster on a GPU: ``bench_train_gpu.py --set-lookup`` (run by ``gpu_suite.sh``) times both
#: (on an H100, a variant whose running sum went along dim 1 ran at 0.954× the embedding).
#: The CPU keeps the embedding either way. benchmarks/bench_train_gpu.py measures both (docs/benchmarks.md).
SORTED_LOOKUP_ON_CUDA = False


def sort_relations(rel: torch.Tensor, n_rel: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The pairs grouped by relation id, for :class:`_SortedLookup`'s gradient (once per batch: every
    layer's lookup reads the same ids).

    Args:
        rel: (B, T, T) long relation ids in ``[0, n_rel)``.

    Returns:
        ``order`` (B·T·T,) long: flat pair indices sorted by id (stable: ascending within an id);
        ``bounds`` (n_rel + 1,) long: id r's pairs are ``order[bounds[r]:bounds[r + 1]]``. On the
        device of ``rel``, without a host sync.
    """
    ids, order = torch.sort(rel.reshape(-1), stable=True)
    return order, torch.searchsorted(ids, torch.arange(n_rel + 1, device=rel.device))


class _SortedLookup(torch.autograd.Function):
    """``table[rel]`` laid out per column, (C, B, T, T), and the table's gradient as per-relation segment
    sums of the pairs sorted by id (:func:`sort_relations`): one gather of the gradient into that order,
    one float64 running sum over it (flat), its differences at the ids' bounds, one rounding to the
    gradient's dtype.

    Why: on CUDA ``F.embedding`` gathers rows of C = 2·H_s values (16 bytes in bf16) one row per pair,
    and its backward sorts the pairs' ids again in every layer, for ids that are few and skewed (most
    pairs have none: one run holds most of the batch, the "hot index" case of PyTorch's scatter and
    embedding kernels, pytorch/pytorch#194078). Here the forward is an element-wise gather from a
    (C, n_rel) table and the sort is done once per batch."""

    @staticmethod
    def forward(ctx: Any, rel: torch.Tensor, table: torch.Tensor, order: torch.Tensor,
                bounds: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(order, bounds)
        return table.t()[:, rel]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor, None, None]:
        order, bounds = ctx.saved_tensors
        C = grad.shape[0]
        g = grad.reshape(C, -1).index_select(1, order)  # (C, P) grouped by id
        P = g.shape[1]
        # one running sum over the flat C·P values: a 1-D scan (CUDA: one device-wide scan), where a
        # scan along dim 1 gives each of the C rows one thread block (1.7 ms a layer at P = 982,800 on an
        # H100, measured); float64, so the row totals it carries along cost no precision
        run = F.pad(torch.cumsum(g.reshape(-1), dim=0, dtype=torch.float64), (1, 0))  # (C·P + 1,), run[0] = 0
        at = run[torch.arange(C, device=g.device)[:, None] * P + bounds]  # (C, n_rel + 1)
        sums = at[:, 1:] - at[:, :-1]  # (C, n_rel)
        return None, sums.t().to(grad.dtype), None, None


def relation_lookup(rel: torch.Tensor, table: torch.Tensor,
                    sorted_rel: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """Per-pair values of the relation table (eq. 1's ``r_ij V_r`` and eq. 3's ``r_ij W_{g,r} V_g``),
    one (B, T, T) map per column.

    Args:
        rel: (B, T, T) long relation ids in ``[0, n_rel)``.
        table: (n_rel, C) float.
        sorted_rel: :func:`sort_relations` of ``rel``: take the lookup as :class:`_SortedLookup` (the
            same values; the gradient equal up to the summation's rounding); None: ``F.embedding``.

    Returns:
        (C, B, T, T), ``table``'s dtype (a view of (B, T, T, C) rows without ``sorted_rel``).
    """
    if sorted_rel is not None and torch.is_grad_enabled() and table.requires_grad:
        return _SortedLookup.apply(rel, table, *sorted_rel)
    # an embedding lookup: its backward is one dense kernel (advanced indexing's is a scatter)
    return F.embedding(rel, table).permute(3, 0, 1, 2)


class SETLayer(nn.Module):
    """SET's per-layer, per-head parameters: ``V_r``, ``W_{g,e}``, ``W_{g,r}``, ``V_g`` (eq. 1, 3)."""

    def __init__(self, heads: int, d_model: int, d_r: int):
        super().__init__()
        self.v_r = nn.Parameter(torch.empty(heads, d_r))
        self.w_ge = nn.Parameter(torch.empty(heads, d_model, d_r))
        self.w_gr = nn.Parameter(torch.empty(heads, d_r, d_r))
        self.v_g = nn.Parameter(torch.empty(heads, d_r))
        for p, fan_in in ((self.v_r, d_r), (self.w_ge, d_model), (self.w_gr, d_r), (self.v_g, d_r)):
            nn.init.uniform_(p, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))


class SET(SETSpec, SyntaxSource):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.n_rel = n_relations(self.opts.max_path)
        self.rel_embed = nn.Embedding(self.n_rel, self.opts.rel_dim, padding_idx=NONE)
        nn.init.normal_(self.rel_embed.weight, std=self.opts.rel_dim ** -0.5)
        nn.init.zeros_(self.rel_embed.weight[NONE])
        self.level_embed = nn.Embedding(self.opts.max_depth + 1, cfg.d_model)  # last = </s> / padding
        nn.init.normal_(self.level_embed.weight, std=cfg.d_model ** -0.5)  # fairseq's learned positions

    def collate(self, recs: Sequence[PairRecord], T: int) -> dict[str, torch.Tensor]:
        """``word_index`` (B, T); ``rel`` (B, W+1, W+1) long; ``subtree`` (B, W+1, W+1) bool;
        ``level`` (B, T) long depth ids (``set_max_depth`` for ``</s>`` and padding)."""
        B = len(recs)
        # the last word (one past the longest line's): </s> and padding
        rel, sub, depth = set_relations_batch([r.heads for r in recs], [r.deprel for r in recs], self.opts.max_path,
                                              extra=1)
        rel[:, -1, -1] = SELF  # </s> with itself
        sub[:, -1, -1] = True
        rel_t, sub_t = torch.from_numpy(rel), torch.from_numpy(sub)
        level = np.full((B, T), self.opts.max_depth, dtype=np.int64)
        lvl = np.minimum(depth, self.opts.max_depth - 1)
        for b, r in enumerate(recs):
            level[b, : len(r.src_ids)] = lvl[b][np.asarray(r.word_index)]
        return {"word_index": piece_word_index(recs, T), "rel": rel_t, "subtree": sub_t,
                "level": torch.from_numpy(level)}

    def pad_shapes(self, data: Any, multiple: int) -> dict[str, Any]:
        return {**data, "rel": pad_word_pairs(data["rel"], multiple), "subtree": pad_word_pairs(data["subtree"], multiple)}

    def prepare(self, data: Any, pad: torch.Tensor) -> dict[str, torch.Tensor]:
        """``rel`` (B, T, T) long, ``has_rel`` (B, 1, T, T) bool, ``subtree_bias`` (B, 1, T, T)
        (0 / -inf, key padding included), ``level`` (B, T)."""
        wi = data["word_index"]
        rel = expand_word_pairs(data["rel"], wi)
        sub = expand_word_pairs(data["subtree"], wi)
        bias = torch.zeros(sub.shape, dtype=torch.float32, device=sub.device).masked_fill(~sub, float("-inf"))
        bias = bias.masked_fill(pad[:, None, :], float("-inf"))
        return {"rel": rel, "has_rel": rel.ne(NONE).unsqueeze(1), "subtree_bias": bias.unsqueeze(1),
                "level": data["level"]}

    def embed(self, prepared: Any) -> torch.Tensor:
        return self.level_embed(prepared["level"])

    def layer_module(self, layer: int, heads: list[int]) -> nn.Module:
        return SETLayer(len(heads), self.cfg.d_model, self.opts.rel_dim)

    def attend(self, q, k, v, heads, prepared, ctx: AttendContext) -> torch.Tensor:
        m = ctx.module
        assert isinstance(m, SETLayer) and ctx.x is not None
        Hs = len(heads)
        s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)  # S^e (B, Hs, T, T)
        E = self.rel_embed.weight  # (n_rel, d_r)
        w_g = torch.einsum("hrs,hs->hr", m.w_gr, m.v_g)  # W_{g,r} V_g (Hs, d_r)
        table = torch.matmul(E, torch.cat([m.v_r, w_g], 0).t())  # (n_rel, 2Hs): S^r and r W_{g,r} V_g
        rel = prepared["rel"]
        sorted_rel = None
        if SORTED_LOOKUP_ON_CUDA and rel.is_cuda and torch.is_grad_enabled():
            if "rel_sorted" not in prepared:  # once per batch, for every layer (prepare's dict lives one pass)
                prepared["rel_sorted"] = sort_relations(rel, self.n_rel)
            sorted_rel = prepared["rel_sorted"]
        per_pair = relation_lookup(rel, table.to(s.dtype), sorted_rel).transpose(0, 1)  # (B, 2Hs, T, T)
        s_r, g_r = per_pair[:, :Hs], per_pair[:, Hs:]
        u = torch.einsum("hdr,hr->hd", m.w_ge, m.v_g)  # W_{g,e} V_g (Hs, d)
        g_e = torch.matmul(ctx.x, u.t().to(ctx.x.dtype)).transpose(1, 2).unsqueeze(-1)  # (B, Hs, T, 1)
        z = g_e.to(s.dtype) + g_r
        g = torch.sigmoid(z) if self.opts.gate == "sigmoid" else torch.tanh(z)
        s = torch.where(prepared["has_rel"], s + g * (s_r - s), s)  # eq. 2 where a relation exists
        if ctx.pad_bias is not None:
            s = s + ctx.pad_bias
        half = Hs // 2
        if half:  # subtree masks (0 / -inf, padding included): added in place, no copy of the other heads
            s[:, :half] += prepared["subtree_bias"].to(s.dtype)
        a = torch.softmax(s, dim=-1)
        if ctx.dropout_p > 0:
            a = F.dropout(a, ctx.dropout_p)
        return torch.matmul(a, v)
