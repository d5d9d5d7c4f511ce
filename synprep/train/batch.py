"""The trainer's padded batch (:class:`Batch`), shared by the collate (:mod:`synprep.train.data`),
the model (:mod:`synprep.train.model`), the training loop and the decoder; it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import torch


@dataclass
class Batch:
    """A padded batch (B sentences; T = longest source + ``</s>``; U = longest target + 1).

    Attributes:
        ids: (B,) long, dataset indices of the pairs.
        src_tokens: (B, T) long, source ids then ``</s>``, right-padded with ``<pad>``.
        src_lengths: (B,) long, source length including ``</s>``.
        prev_tokens: (B, U) long, decoder input ``</s> y_1 … y_n`` (fairseq convention).
        target: (B, U) long, ``y_1 … y_n </s>``, padded with ``<pad>`` (ignored by the loss).
        ntokens: number of target tokens (``</s>`` included, padding excluded).
        syntax: per syntax source name, what its ``collate`` built (tensors, or tuples / dicts of
            them; e.g. ``syntax["slr"]`` (B, T-1) float32 gaps with ``GAP_EOS`` appended).
        src_padded: False when every source has T tokens (no ``<pad>`` in ``src_tokens``): the
            encoder then attends without a padding mask (the fastest kernels; a host value, no sync).
            True is always correct.
    """

    ids: torch.Tensor
    src_tokens: torch.Tensor
    src_lengths: torch.Tensor
    prev_tokens: torch.Tensor
    target: torch.Tensor
    ntokens: int
    syntax: dict[str, Any] = field(default_factory=dict)
    src_padded: bool = True

    def _map(self, fn) -> Batch:
        def go(v: Any) -> Any:
            if isinstance(v, torch.Tensor):
                return fn(v)
            if isinstance(v, tuple):
                return tuple(go(t) for t in v)
            if isinstance(v, dict):
                return {k: go(t) for k, t in v.items()}
            return v

        return Batch(**{f.name: go(getattr(self, f.name)) for f in fields(self)})

    def to(self, device: torch.device | str) -> Batch:
        """Every tensor moved to ``device`` (non-blocking from pinned memory)."""
        return self._map(lambda t: t.to(device, non_blocking=True))

    def pin_memory(self) -> Batch:  # called by DataLoader(pin_memory=True)
        return self._map(lambda t: t.pin_memory())

    @property
    def size(self) -> int:
        return int(self.src_tokens.shape[0])
