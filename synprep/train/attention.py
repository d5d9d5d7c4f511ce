"""Multi-head attention: plain (decoder, cross, vanilla encoder) and gated syntactic (encoder).

Gated syntactic self-attention (gated-syntax-attention eq. 7–11, SPEC.md §6), per head i::

    A_raw = softmax(s + pad)                     s = Q Kᵀ / √d_k   (B, H, T, T)
    A_syn = softmax(s + log M + pad)             SLR / SLA heads (an additive bias)
          = softmax(s ⊙ W + pad)                 PASCAL / LDD heads (W multiplies the scores)
          = the source's own attention           LISA, SET (synprep.train.sources)
    A     = G_i · A_syn + (1 − G_i) · A_raw
    out   = A V = G_i · (A_syn V) + (1 − G_i) · (A_raw V)

The last line is how it is computed: two attention calls mixed per head by G, never an explicit
A. Each syntax source computes ``A_syn V`` of its heads in one call
(:meth:`synprep.train.sources.base.SyntaxSource.attend`): bias sources (SLR, SLA) and the raw
heads go through ``F.scaled_dot_product_attention``; PASCAL/LDD heads need the scores themselves
(a product with s is not an additive bias), so they take an explicit softmax. Heads whose G is
constant skip the call they do not need (G ≡ 1: no raw call; plain heads: no syntactic call).

Dropout. Attention dropout (rate a) applies inside each call. Syntax ignoring (rate p, paper
§4.5 "vanilla Dropout on the syntactic attention") is a second, independent dropout on A_syn.
Two independent inverted-dropout masks multiply to one mask with keep probability
(1−a)(1−p) and scale 1/((1−a)(1−p)), so the syntactic call uses ``dropout_p = 1 − (1−a)(1−p)``:
exactly "attention dropout, then syntax dropout" on A_syn. The one difference from dropping the
mixed A with a single mask is that A_syn and A_raw get independent masks (same expectation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from synprep.train.config import TrainConfig
from synprep.train.masks import device_index
from synprep.train.runtime import sdpa
from synprep.train.sources import source_class
from synprep.train.sources.base import AttendContext, SyntaxInputs, SyntaxSource


def _like(mask: torch.Tensor | None, q: torch.Tensor) -> torch.Tensor | None:
    """An additive mask in the query's dtype (SDPA wants them equal, e.g. under bf16 autocast)."""
    return mask if mask is None or mask.dtype == q.dtype else mask.to(q.dtype)


def _split(x: torch.Tensor, heads: int) -> torch.Tensor:
    B, T, D = x.shape
    return x.view(B, T, heads, D // heads).transpose(1, 2)  # (B, H, T, dh)


def _merge(x: torch.Tensor) -> torch.Tensor:
    B, H, T, dh = x.shape
    return x.transpose(1, 2).reshape(B, T, H * dh)  # (B, T, D)


class MultiheadAttention(nn.Module):
    """Plain multi-head attention through SDPA, with an optional key/value cache for decoding.

    Args:
        d_model: model width D.
        heads: H.
        dropout: attention dropout rate.
    """

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0):
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        for lin in (self.q_proj, self.k_proj, self.v_proj):  # fairseq's initialisation
            nn.init.xavier_uniform_(lin.weight, gain=1 / math.sqrt(2))
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.zeros_(self.out_proj.bias)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, T, D) → q, k, v each (B, H, T, dh)."""
        return _split(self.q_proj(x), self.heads), _split(self.k_proj(x), self.heads), _split(self.v_proj(x), self.heads)

    def forward(self, query: torch.Tensor, memory: torch.Tensor | None = None, *, bias: torch.Tensor | None = None,
                causal: bool = False, cache: dict | None = None, static_kv: bool = False) -> torch.Tensor:
        """Attend from ``query`` to ``memory`` (self-attention when None).

        Args:
            query: (B, Tq, D).
            memory: (B, Tk, D) or None.
            bias: additive mask broadcastable to (B, H, Tq, Tk) (e.g. key padding), or None.
            causal: mask future keys (self-attention over a whole target prefix).
            cache: dict kept between incremental decoding steps; self-attention appends this step's
                k/v, cross-attention (``static_kv``) computes k/v from ``memory`` once.

        Returns:
            (B, Tq, D).
        """
        q = _split(self.q_proj(query), self.heads)
        if cache is not None and static_kv and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            src = query if memory is None else memory
            k, v = _split(self.k_proj(src), self.heads), _split(self.v_proj(src), self.heads)
            if cache is not None:
                if not static_kv and "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        p = self.dropout if self.training else 0.0
        out = sdpa(q, k, v, attn_mask=_like(bias, q), dropout_p=p, is_causal=causal and bias is None)
        return self.out_proj(_merge(out))


    def step_self(self, x: torch.Tensor, kv: torch.Tensor | None, order: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """One incremental decoding step of causal self-attention.

        Args:
            x: (N, 1, D) this step's states.
            kv: the cache, (2, N', H, t, dh) keys and values of the t earlier steps of the N' rows of the
                previous step (one tensor), or None (t = 0).
            order: (N,) long, the previous step's row that each row continues (a beam reorder, and
                rows dropped), or None: the same N rows in order.

        Returns:
            ((N, 1, D), the new cache (2, N, H, t + 1, dh), contiguous). The reorder and the growth
            are one copy: the reordered cache is written straight into the first t positions of the
            new tensor (``index_select(out=…)``), this step's keys/values into the last; SDPA reads
            the contiguous result (it is slower on a strided view of a preallocated buffer).
        """
        dev = x.device.type
        if x.dtype == torch.float32 and torch.is_autocast_enabled(dev):
            x = x.to(torch.get_autocast_dtype(dev))  # autocast's cast of x, once for the three projections
        q = _split(self.q_proj(x), self.heads)
        N, H, _, dh = q.shape
        t = 0 if kv is None else kv.shape[3]
        new = torch.empty((2, N, H, t + 1, dh), dtype=q.dtype, device=q.device)
        if kv is not None:
            if order is None:
                new[:, :, :, :t] = kv
            else:
                torch.index_select(kv, 1, order, out=new[:, :, :, :t])
        keys, values = new.unbind(0)
        keys[:, :, t] = self.k_proj(x).view(N, H, dh)  # (N, 1, D): position t of each head
        values[:, :, t] = self.v_proj(x).view(N, H, dh)
        return self.out_proj(_merge(sdpa(q, keys, values))), new

    def step_cross(self, x: torch.Tensor, kv: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """One incremental decoding step of cross-attention, the ``g`` beams of a sentence at once.

        Args:
            x: (A·g, 1, D), the g rows of a sentence adjacent.
            kv: (2, A, H, T, dh) the keys and values of the A sentences' encoder output (:meth:`memory_kv`),
                computed once.
            bias: (A, 1, 1, T) additive key padding mask, or None (no padding).

        Returns:
            (A·g, 1, D). The g queries of a sentence attend its one copy of the keys (no copy per beam).
        """
        _, A, H, _, dh = kv.shape
        N = x.shape[0]
        q = self.q_proj(x).view(A, N // A, H, dh).transpose(1, 2)  # (A, H, g, dh)
        keys, values = kv.unbind(0)
        out = sdpa(q, keys, values, attn_mask=_like(bias, q))  # (A, H, g, dh)
        return self.out_proj(out.transpose(1, 2).reshape(N, 1, H * dh))

    def memory_kv(self, memory: torch.Tensor) -> torch.Tensor:
        """(B, T, D) encoder output → (2, B, H, T, dh) its keys and values (for :meth:`step_cross`)."""
        return torch.stack([_split(self.k_proj(memory), self.heads), _split(self.v_proj(memory), self.heads)])


class SyntacticSelfAttention(MultiheadAttention):
    """Encoder self-attention whose heads mix syntactic and raw attention by a gate.

    Args:
        d_model: as :class:`MultiheadAttention` (dropout = attention dropout a).
        heads: as :class:`MultiheadAttention` (dropout = attention dropout a).
        dropout: as :class:`MultiheadAttention` (dropout = attention dropout a).
        sources: per head a syntax source name (:data:`synprep.train.sources.SOURCES`) or None
            (plain head, G ≡ 0).
        gate_value: None for a learned gate (G passed to :meth:`forward`), else the constant G of
            every syntactic head (0.5 "avg", 1.0 "pure"/"hard").
        syntax_dropout: syntax ignoring rate p on A_syn (paper §4.5).
        modules: per source name, its trainable parameters of this layer
            (:meth:`~synprep.train.sources.base.SyntaxSource.layer_module`), if any.

    Raises:
        ValueError: ``sources`` does not have one entry per head.
    """

    def __init__(self, d_model: int, heads: int, dropout: float, sources: list[str | None],
                 gate_value: float | None = None, syntax_dropout: float = 0.0,
                 modules: dict[str, nn.Module] | None = None):
        super().__init__(d_model, heads, dropout)
        if len(sources) != heads:
            raise ValueError(f"sources needs one entry per head ({heads}), got {len(sources)}")
        self.sources = list(sources)
        self.gate_value = gate_value
        self.syntax_dropout = syntax_dropout
        self.syntax_modules = nn.ModuleDict(modules or {})

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, *, bias: torch.Tensor | None = None,
                causal: bool = False, cache: dict | None = None, static_kv: bool = False,
                gate: torch.Tensor | None = None, syntax: SyntaxInputs | None = None) -> torch.Tensor:  # type: ignore[override]
        """Gated syntactic self-attention.

        Args:
            x: (B, T, D).
            bias: (B, 1, 1, T) key-padding bias (0 / -inf).
            gate: (B, H) learned G in (0, 1) when ``gate_value`` is None.
            syntax: the batch's sources and their prepared inputs
                (:meth:`synprep.train.model.Seq2Seq.syntax_inputs`).

        Returns:
            (B, T, D).
        """
        q, k, v = self.project(x)
        syn = syntax or SyntaxInputs()
        out = gated_heads(q, k, v, sources=self.sources, impls=syn.sources, gate=gate,
                          gate_value=self.gate_value, pad_bias=bias, feats=syn.feats,
                          attn_dropout=self.dropout if self.training else 0.0,
                          syntax_dropout=self.syntax_dropout if self.training else 0.0,
                          training=self.training, x=x, modules=dict(self.syntax_modules.items()), aux=syn.aux)
        return self.out_proj(_merge(out))


def _take(t: torch.Tensor, idx: list[int], H: int) -> torch.Tensor:
    """Heads ``idx`` of a (B, H|1, ...) tensor (no copy when idx is every head or t broadcasts).

    Consecutive heads (the usual case: ``syntax_heads`` [0], [0, 1], …) are a slice (a view): no
    index tensor is built on the host and copied to the device per call.
    """
    if t.shape[1] == 1 or len(idx) == H:
        return t
    if idx == list(range(idx[0], idx[0] + len(idx))):
        return t[:, idx[0]:idx[0] + len(idx)]
    return t.index_select(1, device_index(idx, t.device))


def default_sources(names: list[str | None]) -> dict[str, SyntaxSource]:
    """Source objects of ``names`` with the default configuration (tests, readers)."""
    cfg = TrainConfig()
    return {n: source_class(n)(cfg) for n in dict.fromkeys(names) if n is not None}


def gated_heads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, sources: list[str | None],
                impls: Mapping[str, SyntaxSource] | None = None, raw_heads: list[int] | None = None,
                gate: torch.Tensor | None, gate_value: float | None, pad_bias: torch.Tensor | None,
                feats: Mapping[str, Any], attn_dropout: float = 0.0, syntax_dropout: float = 0.0,
                training: bool = False, x: torch.Tensor | None = None,
                modules: Mapping[str, nn.Module] | None = None, aux: list[torch.Tensor] | None = None) -> torch.Tensor:
    """Per-head ``G·(A_syn V) + (1−G)·(A_raw V)`` (paper eq. 10–11; see the module docstring).

    Args:
        q: (B, H, T, dh).
        k: (B, H, T, dh).
        v: (B, H, T, dh).
        sources: per head a source name or None (plain head: raw only).
        impls: the source objects by name (default: :func:`default_sources`); each computes
            ``A_syn V`` of its heads in one call (:meth:`~synprep.train.sources.base.SyntaxSource.attend`).
        raw_heads: heads that need the raw call (default: every head unless ``gate_value == 1``
            makes a syntactic head purely syntactic).
        gate: (B, H) G when ``gate_value`` is None.
        gate_value: constant G of syntactic heads.
        pad_bias: (B, 1, 1, T) key padding (0 / -inf) or None.
        feats: each source's prepared inputs by name (e.g. ``"slr"`` (B, 1, T, T) bias).
        attn_dropout: a.
        syntax_dropout: p (A_syn gets ``1 − (1−a)(1−p)``).
        training: the layer's mode (source-specific regularisers such as parent ignoring).
        x: (B, T, D) the attention's input (SET's gate).
        modules: per source, this layer's parameters.
        aux: list that auxiliary losses are appended to (LISA).

    Returns:
        (B, H, T, dh) per-head outputs A V.
    """
    B, H, T, _ = q.shape
    syn_heads = [h for h, s in enumerate(sources) if s is not None]
    if impls is None:
        impls = default_sources(sources)
    if raw_heads is None:
        raw_heads = [h for h in range(H) if not (sources[h] is not None and gate_value == 1.0)]
    p_syn = 1.0 - (1.0 - attn_dropout) * (1.0 - syntax_dropout)

    raw = None
    if raw_heads:
        raw = sdpa(_take(q, raw_heads, H), _take(k, raw_heads, H), _take(v, raw_heads, H),
                   attn_mask=_like(pad_bias, q), dropout_p=attn_dropout)  # (B, R, T, dh)
    raw_pos = {h: i for i, h in enumerate(raw_heads)}

    # syntactic calls, one per source: (heads, A_syn V)
    groups: list[tuple[list[int], torch.Tensor]] = []
    aux_list: list[torch.Tensor] = [] if aux is None else aux
    for name in dict.fromkeys(sources[h] for h in syn_heads):
        assert name is not None
        heads = [h for h in syn_heads if sources[h] == name]
        ctx = AttendContext(pad_bias=pad_bias, dropout_p=p_syn, training=training, x=x,
                            module=modules[name] if modules is not None and name in modules else None, aux=aux_list)
        groups.append((heads, impls[name].attend(_take(q, heads, H), _take(k, heads, H), _take(v, heads, H),
                                                 heads, feats[name], ctx)))

    # mix per head, out of place (SDPA kernels may keep their output for backward)
    pieces: list[tuple[list[int], torch.Tensor]] = []
    for heads, syn in groups:
        if gate_value == 1.0:
            pieces.append((heads, syn))
            continue
        assert raw is not None
        r = raw if len(heads) == len(raw_heads) == H else _take(raw, [raw_pos[h] for h in heads], len(raw_heads))
        if gate_value is None:
            assert gate is not None, "a learned gate needs G"
            g = _take(gate, heads, H)[:, :, None, None].to(syn.dtype)  # (B, Hs, 1, 1)
        else:
            g = torch.full((), gate_value, dtype=syn.dtype, device=syn.device)
        pieces.append((heads, g * syn + (1.0 - g) * r))
    plain = [h for h in range(H) if sources[h] is None]
    if plain:
        assert raw is not None
        pieces.append((plain, raw if len(plain) == H else _take(raw, [raw_pos[h] for h in plain], len(raw_heads))))
    return _in_head_order(pieces, H)


def _in_head_order(pieces: list[tuple[list[int], torch.Tensor]], H: int) -> torch.Tensor:
    """:func:`gated_heads`' output from its pieces ``(heads, (B, len(heads), T, dh))``: (B, H, T, dh), heads in order."""
    if len(pieces) == 1:
        return pieces[0][1]  # every head in one piece, in order
    pieces.sort(key=lambda p: p[0][0])
    order = [h for heads, _ in pieces for h in heads]
    out = torch.cat([t for _, t in pieces], dim=1)
    return out if order == list(range(H)) else out.index_select(1, device_index([order.index(h) for h in range(H)],
                                                                               out.device))


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, gate: torch.Tensor,
                        mask: torch.Tensor | None = None, weights: torch.Tensor | None = None,
                        pad: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The gated attention written out with explicit matrices (for tests and readers; no dropout).

    ``A_raw = softmax(s)``, ``A_syn[i,j] = M[i,j] e^{s[i,j]} / Σ_k M[i,k] e^{s[i,k]}`` (paper eq. 9;
    SLR) or ``softmax(s ⊙ W)`` (PASCAL/LDD), ``A = G A_syn + (1−G) A_raw`` (eq. 10), padding keys
    excluded.

    Args:
        q: (B, H, T, dh).
        k: (B, H, T, dh).
        v: (B, H, T, dh).
        gate: (B, H).
        mask: (B, 1|H, T, T) probabilities M (SLR); give it or ``weights``.
        weights: (B, 1|H, T, T) score multipliers; give it or ``mask``.
        pad: (B, T) bool, True at padding.

    Returns:
        (A V of shape (B, H, T, dh), A of shape (B, H, T, T)).
    """
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    keep = torch.ones_like(s) if pad is None else (~pad)[:, None, None, :].to(s.dtype).expand_as(s)
    e = torch.exp(s - s.amax(-1, keepdim=True)) * keep
    a_raw = e / e.sum(-1, keepdim=True)
    if mask is not None:
        m = mask * keep
        e_syn = m * torch.exp(s - s.amax(-1, keepdim=True))
    else:
        assert weights is not None
        sw = s * weights
        e_syn = torch.exp(sw - sw.amax(-1, keepdim=True)) * keep
    a_syn = e_syn / e_syn.sum(-1, keepdim=True)
    g = gate[:, :, None, None]
    a = g * a_syn + (1 - g) * a_raw
    return torch.matmul(a, v), a
