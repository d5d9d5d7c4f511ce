"""Transformer encoder-decoder with gated syntactic self-attention in the encoder (SPEC.md §6).

The architecture is fairseq's ``transformer_iwslt_de_en`` (post-norm by default, sinusoidal
positions, embeddings scaled by √d, ReLU FFN, shared embeddings) with the encoder self-attention
of chosen layers replaced by :class:`~synprep.train.attention.SyntacticSelfAttention` and, for
``syntax = "gated"``, one :class:`~synprep.train.gate.GateNetwork` per such layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from synprep.constants import PAD_ID
from synprep.train.attention import MultiheadAttention, SyntacticSelfAttention
from synprep.train.batch import Batch
from synprep.train.config import TrainConfig, check_model_size
from synprep.train.gate import GateNetwork
from synprep.train.masks import padding_bias
from synprep.train.sources import source_class
from synprep.train.sources.base import SyntaxInputs, SyntaxSource


def sinusoidal_positions(n: int, d: int) -> torch.Tensor:
    """(n, d) sinusoidal position table (fairseq layout: sines in the first half, cosines after)."""
    half = d // 2
    freq = torch.exp(torch.arange(half, dtype=torch.float32) * -(math.log(10000.0) / max(half - 1, 1)))
    ang = torch.arange(n, dtype=torch.float32)[:, None] * freq[None, :]
    table = torch.cat([torch.sin(ang), torch.cos(ang)], dim=1)
    if d % 2:
        table = torch.cat([table, torch.zeros(n, 1)], dim=1)
    return table


class FeedForward(nn.Module):
    def __init__(self, d: int, ffn: int, activation_dropout: float):
        super().__init__()
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.activation_dropout = activation_dropout
        for lin in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.fc1(x))
        return self.fc2(F.dropout(h, self.activation_dropout, True) if self.training else h)


class _ResidualLayer(nn.Module):
    """Base of the encoder and decoder layers: the residual sub-layer block (no parameters of its own)."""

    normalize_before: bool
    dropout: float

    def _block(self, x, norm, fn):
        """``x + dropout(fn(norm(x)))`` (pre-norm) or ``norm(x + dropout(fn(x)))`` (post-norm); in eval
        mode no dropout call (an identity then, but one operator per call: a search step has 24)."""
        h = norm(x) if self.normalize_before else x
        y = fn(h)
        x = x + (F.dropout(y, self.dropout, True) if self.training else y)
        return x if self.normalize_before else norm(x)


class EncoderLayer(_ResidualLayer):
    """One encoder layer; syntactic when ``sources`` names a source for some head.

    ``modules``: per source name, this layer's parameters of that source (or none).
    """

    def __init__(self, cfg: TrainConfig, sources: list[str | None] | None,
                 modules: dict[str, nn.Module] | None = None):
        super().__init__()
        self.normalize_before = cfg.normalize_before
        self.dropout = cfg.dropout
        self.gate: GateNetwork | None = None
        if sources is None:
            self.self_attn: MultiheadAttention = MultiheadAttention(cfg.d_model, cfg.heads, cfg.attention_dropout)
        else:
            gate_value = cfg.gate_value
            self.self_attn = SyntacticSelfAttention(cfg.d_model, cfg.heads, cfg.attention_dropout, sources,
                                                    gate_value=gate_value, syntax_dropout=cfg.syntax_dropout,
                                                    modules=modules)
            if gate_value is None:
                self.gate = GateNetwork(cfg.d_model, cfg.gate_hidden, cfg.heads, batch_norm=bool(cfg.gate_batch_norm))
        self.attn_norm = nn.LayerNorm(cfg.d_model)
        self.ffn = FeedForward(cfg.d_model, cfg.ffn_dim, cfg.activation_dropout)
        self.ffn_norm = nn.LayerNorm(cfg.d_model)

    def forward(self, x: torch.Tensor, pad: torch.Tensor, pad_bias: torch.Tensor | None,
                syntax: SyntaxInputs) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: (B, T, D) → ((B, T, D), G of shape (B, H) or None)."""
        g = self.gate(x, pad) if self.gate is not None else None  # gate reads the layer's input H^l
        if isinstance(self.self_attn, SyntacticSelfAttention):
            attn = self.self_attn
            x = self._block(x, self.attn_norm, lambda h: attn(h, bias=pad_bias, gate=g, syntax=syntax))
        else:
            x = self._block(x, self.attn_norm, lambda h: self.self_attn(h, bias=pad_bias))
        return self._block(x, self.ffn_norm, self.ffn), g


class DecoderLayer(_ResidualLayer):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        self.normalize_before = cfg.normalize_before
        self.dropout = cfg.dropout
        self.self_attn = MultiheadAttention(cfg.d_model, cfg.heads, cfg.attention_dropout)
        self.self_norm = nn.LayerNorm(cfg.d_model)
        self.cross_attn = MultiheadAttention(cfg.d_model, cfg.heads, cfg.attention_dropout)
        self.cross_norm = nn.LayerNorm(cfg.d_model)
        self.ffn = FeedForward(cfg.d_model, cfg.ffn_dim, cfg.activation_dropout)
        self.ffn_norm = nn.LayerNorm(cfg.d_model)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, mem_bias: torch.Tensor | None,
                cache: dict | None = None) -> torch.Tensor:
        """x: (B, U, D) target states; memory: (B, T, D); mem_bias: (B, 1, 1, T) or None (no padding)."""
        self_cache = cache["self"] if cache is not None else None
        cross_cache = cache["cross"] if cache is not None else None
        x = self._block(x, self.self_norm, lambda h: self.self_attn(h, causal=cache is None, cache=self_cache))
        x = self._block(x, self.cross_norm, lambda h: self.cross_attn(
            h, memory, bias=mem_bias, cache=cross_cache, static_kv=True))
        return self._block(x, self.ffn_norm, self.ffn)


    def step(self, x: torch.Tensor, self_kv: torch.Tensor | None, order: torch.Tensor | None,
             mem_kv: torch.Tensor, mem_bias: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """One incremental decoding step (:meth:`Seq2Seq.decode_step`): x (N, 1, D), the N rows
        being the g = N / A hypotheses of each of the A sentences of ``mem_kv`` (2, A, H, T, dh),
        adjacent; ``self_kv`` (2, N', H, t, dh) of the previous step's rows or None, ``order`` (N,) the
        previous row each row continues or None (:meth:`MultiheadAttention.step_self`). Returns
        ((N, 1, D), the new self-attention cache (2, N, H, t + 1, dh))."""
        kv: torch.Tensor | None = None

        def self_attn(h: torch.Tensor) -> torch.Tensor:
            nonlocal kv
            out, kv = self.self_attn.step_self(h, self_kv, order)
            return out

        x = self._block(x, self.self_norm, self_attn)
        x = self._block(x, self.cross_norm, lambda h: self.cross_attn.step_cross(h, mem_kv, mem_bias))
        assert kv is not None
        return self._block(x, self.ffn_norm, self.ffn), kv


@dataclass
class EncoderOut:
    """Encoder output. x: (B, T, D); pad: (B, T) bool; bias: (B, 1, 1, T) key padding (0 / -inf), or
    None when no source is padded (``Batch.src_padded``); gates: {layer: (B, H)}; aux_loss: scalar sum
    of the sources' auxiliary losses in training (LISA), else None."""

    x: torch.Tensor
    pad: torch.Tensor
    bias: torch.Tensor | None
    gates: dict[int, torch.Tensor] = field(default_factory=dict)
    aux_loss: torch.Tensor | None = None

    def index_select(self, order: torch.Tensor) -> EncoderOut:
        """Reorder / repeat sentences (beam search)."""
        return EncoderOut(self.x.index_select(0, order), self.pad.index_select(0, order),
                          None if self.bias is None else self.bias.index_select(0, order),
                          {k: g.index_select(0, order) for k, g in self.gates.items()})


class Seq2Seq(nn.Module):
    """The encoder-decoder.

    Args:
        cfg: the configuration (architecture and syntax variant).
        vocab_size: V, size of the joint dictionary (``dict.txt`` + fairseq's 4 specials).

    Raises:
        ConfigError: the model would be above :data:`~synprep.train.config.MAX_MODEL_ELEMENTS`.
    """

    def __init__(self, cfg: TrainConfig, vocab_size: int):
        check_model_size(cfg, vocab_size, "model")  # before any allocation (a hostile config or dict.txt)
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed_scale = math.sqrt(d)
        self.embed = nn.Embedding(vocab_size, d, padding_idx=PAD_ID)
        nn.init.normal_(self.embed.weight, mean=0.0, std=d ** -0.5)
        nn.init.zeros_(self.embed.weight[PAD_ID])
        if cfg.share_embeddings:
            self.dec_embed = self.embed
        else:
            self.dec_embed = nn.Embedding(vocab_size, d, padding_idx=PAD_ID)
            nn.init.normal_(self.dec_embed.weight, mean=0.0, std=d ** -0.5)
            nn.init.zeros_(self.dec_embed.weight[PAD_ID])
        self.positions: torch.Tensor
        self.register_buffer("positions", sinusoidal_positions(cfg.max_positions + 2, d), persistent=False)
        self.head_sources = cfg.head_sources()
        self.sources_used = cfg.sources_used()
        #: one object per syntax source the heads use (model-wide parameters live in them)
        self.syntax_sources = nn.ModuleDict({n: source_class(n)(cfg) for n in sorted(self.sources_used)})
        layers = []
        for i in range(cfg.encoder_layers):
            row = self.head_sources.get(i)
            modules: dict[str, nn.Module] = {}
            for name, src in self.syntax_sources.items():
                heads = [h for h, s in enumerate(row or []) if s == name]
                m = src.layer_module(i, heads) if heads else None  # type: ignore[operator]
                if m is not None:
                    modules[name] = m
            layers.append(EncoderLayer(cfg, row, modules))
        self.encoder = nn.ModuleList(layers)
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.decoder_layers))
        self.enc_final_norm = nn.LayerNorm(d) if cfg.normalize_before else None
        self.dec_final_norm = nn.LayerNorm(d) if cfg.normalize_before else None

    # --- parameters --------------------------------------------------------------------------
    def gate_parameters(self) -> list[nn.Parameter]:
        """Parameters of every gate network (frozen during pre-warmup)."""
        gates = [getattr(layer, "gate", None) for layer in self.encoder]
        return [p for g in gates if g is not None for p in g.parameters()]

    # --- encoder -----------------------------------------------------------------------------
    def syntax_inputs(self, batch: Batch, pad: torch.Tensor) -> SyntaxInputs:
        """Prepare every source's inputs for ``batch`` on its device (once per forward).

        Raises:
            ValueError: the batch lacks a source's collated data (collate with the model's config).
        """
        out = SyntaxInputs(sources=self.sources_map())
        for name, src in out.sources.items():
            if name not in batch.syntax:
                raise ValueError(f"a {name!r} model needs its syntax inputs in the batch "
                                 "(collate with Collater.for_model)")
            out.feats[name] = src.prepare(batch.syntax[name], pad)
        return out

    def sources_map(self) -> dict[str, SyntaxSource]:
        """The source objects by name."""
        return {n: m for n, m in self.syntax_sources.items()}  # type: ignore[misc]

    def encode(self, batch: Batch) -> EncoderOut:
        """Encode ``batch.src_tokens`` (B, T) → :class:`EncoderOut`.

        Raises:
            ValueError: T is above the model's ``max_positions``.
        """
        tokens = batch.src_tokens
        pad = tokens.eq(PAD_ID)  # (B, T)
        T = tokens.shape[1]
        if T > self.positions.shape[0]:
            raise ValueError(f"source of {T} tokens exceeds max_positions={self.cfg.max_positions}")
        x = self.embed(tokens) * self.embed_scale + self.positions[:T]
        syntax = self.syntax_inputs(batch, pad) if self.sources_used else SyntaxInputs()
        for name, src in syntax.sources.items():
            extra = src.embed(syntax.feats[name])  # e.g. SET's level embeddings (B, T, D)
            if extra is not None:
                x = x + extra
        x = F.dropout(x, self.cfg.dropout, self.training)
        # no padding mask where no source is padded (known on the host): SDPA's fastest kernels take none
        bias = padding_bias(pad, x.dtype) if batch.src_padded else None
        gates: dict[int, torch.Tensor] = {}
        for i, layer in enumerate(self.encoder):
            x, g = layer(x, pad, bias, syntax)
            if g is not None:
                gates[i] = g
        if self.enc_final_norm is not None:
            x = self.enc_final_norm(x)
        aux = torch.stack(syntax.aux).sum() if syntax.aux else None
        return EncoderOut(x, pad, bias, gates, aux)

    # --- decoder -----------------------------------------------------------------------------
    def decode(self, prev_tokens: torch.Tensor, enc: EncoderOut, cache: list[dict] | None = None,
               project: bool = True) -> torch.Tensor:
        """Next-token logits.

        Args:
            prev_tokens: (B, U) decoder input (``</s>`` then the target), right-padded; with a
                ``cache`` only the newest token (B, 1) is read.
            enc: the encoder output.
            cache: :meth:`new_cache` state for incremental decoding.
            project: False returns the final hidden states (B, U, D) instead of logits.

        Returns:
            (B, U, V) logits (U = 1 with a cache).
        """
        if cache is not None:
            step = cache[0]["self"]["k"].shape[2] if "k" in cache[0]["self"] else 0
            tokens = prev_tokens[:, -1:]
            pos = self.positions[step:step + 1]
        else:
            tokens = prev_tokens
            pos = self.positions[: tokens.shape[1]]
        x = self.dec_embed(tokens) * self.embed_scale + pos
        x = F.dropout(x, self.cfg.dropout, self.training)
        for i, layer in enumerate(self.decoder):
            x = layer(x, enc.x, enc.bias, cache[i] if cache is not None else None)
        if self.dec_final_norm is not None:
            x = self.dec_final_norm(x)
        return F.linear(x, self.dec_embed.weight) if project else x

    def decode_step(self, tokens: torch.Tensor, step: int, self_kv: list[torch.Tensor | None],
                    order: torch.Tensor | None, mem_kv: list[torch.Tensor], mem_bias: torch.Tensor | None) -> torch.Tensor:
        """Next-token logits of one incremental decoding step, for beam and greedy search.

        The same computation as :meth:`decode` with a cache, laid out for search: the N rows are
        g = N / A hypotheses per sentence (adjacent), and the cross-attention keys/values are kept
        once per sentence, not per hypothesis.

        Args:
            tokens: (N,) the newest token of each row.
            step: its position (0 = the leading ``</s>``).
            self_kv: per decoder layer (2, N', H, step, dh), the previous step's N' rows, or None at step 0;
                replaced in place by the new caches (2, N, H, step + 1, dh).
            order: (N,) long, the previous step's row that each row continues (beam reorder and dropped rows,
                applied to ``self_kv`` in the same copy that grows it), or None: the same rows.
            mem_kv: per layer :meth:`MultiheadAttention.memory_kv` of the A sentences' encoder output.
            mem_bias: (A, 1, 1, T) the encoder's padding bias, or None (no padding).

        Returns:
            (N, V) logits.
        """
        x = self.dec_embed(tokens[:, None]) * self.embed_scale + self.positions[step:step + 1]
        for i, layer in enumerate(self.decoder):
            x, self_kv[i] = cast(DecoderLayer, layer).step(x, self_kv[i], order, mem_kv[i], mem_bias)
        if self.dec_final_norm is not None:
            x = self.dec_final_norm(x)
        return F.linear(x, self.dec_embed.weight)[:, -1]

    def new_cache(self) -> list[dict]:
        return [{"self": {}, "cross": {}} for _ in self.decoder]

    @staticmethod
    def reorder_cache(cache: list[dict], order: torch.Tensor) -> None:
        """Reorder every cached key/value along the batch dimension (beam search), in place."""
        for layer in cache:
            for part in layer.values():
                for key in ("k", "v"):
                    if key in part:
                        part[key] = part[key].index_select(0, order)

    def forward(self, batch: Batch) -> tuple[torch.Tensor, EncoderOut]:
        """Teacher-forced logits of the real (non-padding) target positions.

        Returns:
            (logits (N, V) for the N positions where ``batch.target != <pad>``, in row-major order,
            i.e. aligned with ``batch.target[batch.target != <pad>]``; the encoder output). Padding
            rows never reach the output projection, the costliest matrix product of a small model.
        """
        enc = self.encode(batch)
        hidden = self.decode(batch.prev_tokens, enc, project=False)  # (B, U, D)
        real = hidden.flatten(0, 1).index_select(0, real_positions(batch))
        return F.linear(real, self.dec_embed.weight), enc


def real_positions(batch: Batch) -> torch.Tensor:
    """(N,) long: the flat (row-major) indices of ``batch.target``'s non-padding positions, without a
    host sync (N = ``batch.ntokens`` is known on the host; a boolean-mask index would wait for the
    device to count them)."""
    keep = batch.target.ne(PAD_ID).flatten()
    return torch.nonzero_static(keep, size=batch.ntokens)[:, 0]
