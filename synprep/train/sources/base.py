"""The base class of a syntax source, and the helpers several sources share.

A source's life in one training step:

1. **collate** (CPU, in the DataLoader): ``collate(records, T)`` reads the shard fields it declares
   in :attr:`SyntaxSource.record_fields` and returns CPU tensors (a tensor, a tuple or a dict of
   them); the batch carries them in ``Batch.syntax[name]``. Features the shards do not hold are
   computed here from those they do (heads, deprel ids, word_index); the shard format never changes.
2. **prepare** (training device, once per forward): ``prepare(data, pad)`` builds what every
   syntactic layer shares — a (B, 1, T, T) bias, weights, relation ids.
3. **embed** (optional): a (B, T, D) term added to the encoder input (SET's level embeddings).
4. **attend** (per layer): ``attend(q, k, v, heads, prepared, ctx)`` returns ``A_syn V`` of the
   given heads, (B, len(heads), T, dh). The gated mixing with ``A_raw`` (SPEC.md §6) is done by
   :func:`synprep.train.attention.gated_heads`, the same for every source. A source with trainable
   parameters per layer returns them from :meth:`SyntaxSource.layer_module` (they reach ``attend`` as
   ``ctx.module``); model-wide parameters are the source's own (it is an ``nn.Module``).
5. **extra loss** (optional): ``attend`` may append a summed loss to ``ctx.aux`` (LISA); the
   trainer adds it to the summed translation loss before dividing by the target tokens.

Defaults. :attr:`SyntaxSource.defaults` holds the values the source's own paper uses for the
fields of :data:`synprep.train.config.SOURCE_DEFAULTED` (e.g. no syntax dropout for SLR or PASCAL),
applied when the source runs in one of its :attr:`SyntaxSource.paper_modes` (how its paper uses
it); in other modes (e.g. a gated PASCAL head) the gated paper's values apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from synprep.train.runtime import sdpa
from synprep.train.sources.specs import SourceSpec
from synprep.types import PairRecord

if TYPE_CHECKING:
    from synprep.train.config import TrainConfig


@dataclass
class AttendContext:
    """What ``attend`` gets besides q, k, v (one layer, one forward).

    Attributes:
        pad_bias: (B, 1, 1, T) key padding, 0 / -inf, or None.
        dropout_p: dropout on A_syn (attention dropout combined with syntax dropout; 0 in eval).
        training: the layer's training flag (PASCAL parent ignoring, …).
        x: (B, T, D) the attention's input (the hidden states H^l entering the layer).
        module: the layer's :meth:`SyntaxSource.layer_module`, or None.
        aux: summed auxiliary losses of this forward (appended to by ``attend``).
    """

    pad_bias: torch.Tensor | None
    dropout_p: float = 0.0
    training: bool = False
    x: torch.Tensor | None = None
    module: nn.Module | None = None
    aux: list[torch.Tensor] = field(default_factory=list)


@dataclass
class SyntaxInputs:
    """One forward's syntactic inputs, shared by the encoder's syntactic layers.

    Attributes:
        sources: the model's source objects by name (they live in ``Seq2Seq.syntax_sources``).
        feats: each source's :meth:`SyntaxSource.prepare` output by name.
        aux: the auxiliary losses appended during the forward (summed into ``EncoderOut.aux_loss``).
    """

    sources: Mapping[str, SyntaxSource] = field(default_factory=dict)
    feats: dict[str, Any] = field(default_factory=dict)
    aux: list[torch.Tensor] = field(default_factory=list)


class SyntaxSource(SourceSpec, nn.Module):
    """One kind of syntactic input of the syntactic heads (see the module docstring).

    Args:
        cfg: the run's configuration (a source reads its own fields, e.g. ``slr_tau``).
    """

    def __init__(self, cfg: TrainConfig):
        super().__init__()
        self.cfg = cfg
        #: the source's own options (its ``Options`` dataclass, from ``cfg``'s ``NAME_FIELD`` keys), or None
        self.opts: Any = self.options_of(cfg)

    # --- data ------------------------------------------------------------------------------------
    def collate(self, recs: Sequence[PairRecord], T: int) -> Any:
        """CPU tensors for a batch of ``recs`` whose padded source length (``</s>`` included) is T."""
        return None

    def pad_shapes(self, data: Any, multiple: int) -> Any:
        """:meth:`collate`'s ``data`` with its sizes that follow the batch's contents rounded up (a word
        count to a multiple of ``multiple``, an entry count to a power of two), and the same
        :meth:`prepare` output: fewer distinct batch shapes for ``cuda_graphs``
        (:mod:`synprep.train.graphs`). The default returns ``data``: sizes that follow T alone need nothing."""
        return data

    def prepare(self, data: Any, pad: torch.Tensor) -> Any:
        """Per-forward inputs on the device from the collated ``data``; pad: (B, T) bool."""
        return data

    def embed(self, prepared: Any) -> torch.Tensor | None:
        """(B, T, D) added to the encoder's input embeddings, or None."""
        return None

    # --- attention -----------------------------------------------------------------------------
    def layer_module(self, layer: int, heads: list[int]) -> nn.Module | None:
        """Trainable parameters of one layer's heads of this source, or None."""
        return None

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: list[int], prepared: Any,
               ctx: AttendContext) -> torch.Tensor:
        """``A_syn V`` of ``heads``.

        Args:
            q: (B, Hs, T, dh), the heads of this source only (Hs = ``len(heads)``).
            k: (B, Hs, T, dh), the heads of this source only (Hs = ``len(heads)``).
            v: (B, Hs, T, dh), the heads of this source only (Hs = ``len(heads)``).
            heads: their 0-based indices in the layer.

        Returns:
            (B, Hs, T, dh).
        """
        raise NotImplementedError


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------
def bias_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor,
                   dropout_p: float) -> torch.Tensor:
    """``softmax(s + bias) V`` through SDPA; bias (B, 1|Hs, T, T) carries the key padding too."""
    mask = bias if bias.dtype == q.dtype else bias.to(q.dtype)
    return sdpa(q, k, v, attn_mask=mask, dropout_p=dropout_p)


def scaled_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, weights: torch.Tensor,
                     pad_bias: torch.Tensor | None, dropout_p: float) -> torch.Tensor:
    """``softmax(s ⊙ W + pad) V`` with ``s = QKᵀ/√d`` (PASCAL / LDD heads, SPEC.md §4).

    Args:
        q: (B, H, T, dh).
        k: (B, H, T, dh).
        v: (B, H, T, dh).
        weights: broadcastable to (B, H, T, T).
        pad_bias: (B, 1, 1, T) or None.

    Returns:
        (B, H, T, dh).
    """
    s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)  # (B, H, T, T)
    s = s * weights
    if pad_bias is not None:
        s = s + pad_bias
    a = torch.softmax(s, dim=-1)
    if dropout_p > 0:
        a = F.dropout(a, dropout_p)
    return torch.matmul(a, v)


def piece_word_index(recs: Sequence[PairRecord], T: int) -> torch.Tensor:
    """(B, T) long: 0-based word of every piece; -1 for ``</s>`` and padding."""
    wi = np.full((len(recs), T), -1, dtype=np.int64)
    for b, r in enumerate(recs):
        wi[b, : len(r.src_ids)] = r.word_index
    return torch.from_numpy(wi)


def stack_word_pairs(mats: Sequence[np.ndarray], fill: Any, dtype: Any) -> torch.Tensor:
    """Pad word-level (W_b, W_b) matrices into (B, W+1, W+1), W the largest; the extra last word
    stands for ``</s>`` and padding (see :func:`expand_word_pairs`); every padded cell is ``fill``."""
    W = max((m.shape[0] for m in mats), default=0)
    out = np.full((len(mats), W + 1, W + 1), fill, dtype=dtype)
    for b, m in enumerate(mats):
        n = m.shape[0]
        out[b, :n, :n] = m
    return torch.from_numpy(out)


def round_up(n: int, multiple: int) -> int:
    """``n`` rounded up to a multiple of ``multiple`` (:meth:`SyntaxSource.pad_shapes`' word counts)."""
    return -(-n // multiple) * multiple


def pad_word_pairs(words: torch.Tensor, multiple: int) -> torch.Tensor:
    """(B, W+1, W+1) → (B, W'+1, W'+1), W' = W rounded up to a multiple of ``multiple``: the
    ``</s>``/padding word's row and column move to index W'; the words between (no piece maps to them,
    so :func:`expand_word_pairs` never reads them) hold zeros."""
    B, W1, _ = words.shape
    W = W1 - 1
    Wp = round_up(W, multiple)
    if Wp == W:
        return words
    out = words.new_zeros((B, Wp + 1, Wp + 1))
    keep = [*range(W), Wp]
    out[:, :W, :W] = words[:, :W, :W]
    out[:, keep, Wp] = words[:, :, W]
    out[:, Wp, keep] = words[:, W, :]
    return out


def pad_entries(entries: tuple[torch.Tensor, ...], fill: tuple[Any, ...], least: int = 64) -> tuple[torch.Tensor, ...]:
    """(K,) entry columns padded to the next power of two (at least ``least``), column i with ``fill[i]``."""
    K = int(entries[0].shape[0])
    Kp = max(least, 1 << max(K - 1, 0).bit_length())
    if Kp == K:
        return entries
    return tuple(torch.cat([c, torch.full((Kp - K,), f, dtype=c.dtype)]) for c, f in zip(entries, fill, strict=True))


def expand_word_pairs(words: torch.Tensor, word_index: torch.Tensor) -> torch.Tensor:
    """Piece-level (B, T, T) from word-level (B, W+1, W+1): piece p takes its word's row and column.

    Args:
        words: (B, W+1, W+1); index W is the ``</s>``/padding "word".
        word_index: (B, T) long, -1 for ``</s>`` and padding (they map to index W).
    """
    B, W1, _ = words.shape
    wi = torch.where(word_index < 0, W1 - 1, word_index)
    b = torch.arange(B, device=words.device)[:, None, None]
    return words[b, wi[:, :, None], wi[:, None, :]]


def sentence_paths(rel: Any) -> np.ndarray:
    """(W, W) int64 path lengths (arcs) within a sentence; -1 between words of different sentences.

    Args:
        rel: :class:`synprep.features.relations.TreeRelations` of a line's (line-level) heads. Two
            words of different sentences meet only at the virtual root (``up[i, j] = depth[i] + 1``).
    """
    cross = rel.up > rel.depth[:, None]
    return np.where(cross, -1, rel.path).astype(np.int64)
