"""What a training run carries from update to update: its position (:class:`TrainState`, saved in
every checkpoint), the learning-rate schedule, the gates every head applies, and the run's signature."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from synprep.signature import package_version, signature
from synprep.train.config import TrainConfig


@dataclass
class TrainState:
    """Where a run is. ``epoch`` is 0-based; ``batch_in_epoch`` counts this rank's batches done."""

    epoch: int = 0
    batch_in_epoch: int = 0
    step: int = 0
    best_valid: float = math.inf
    epoch_loss: float = 0.0  # running sums over the current epoch (natural log)
    epoch_nll: float = 0.0
    epoch_tokens: int = 0
    validated: bool = True  # the end-of-period validation of ``step`` is done (False between an
    #                         update and its period's end: an interval checkpoint saved then resumes
    #                         into that validation instead of skipping it)
    interval: dict[str, float] = field(default_factory=dict)  # sums since the last metrics row (rundir.py)


def inverse_sqrt(cfg: TrainConfig):
    """fairseq's ``inverse_sqrt`` schedule as a LambdaLR factor of ``cfg.lr``.

    Linear warm-up from ``warmup_init_lr`` to ``lr`` over ``warmup_updates`` updates, then
    ``lr · sqrt(warmup_updates / step)`` (paper §5.1: 1e-3 → 7e-3 over 4000 updates).
    """
    w = max(cfg.warmup_updates, 1)

    def factor(step: int) -> float:
        if step < w:
            return (cfg.warmup_init_lr + step * (cfg.lr - cfg.warmup_init_lr) / w) / cfg.lr
        return math.sqrt(w / step)

    return factor


def effective_gates(cfg: TrainConfig, learned: dict[int, list[float]] | None = None) -> list[list[float]]:
    """(encoder_layers, heads) matrix of the G every head applies: the learned mean for gated
    heads, the constant for avg/pure/hard heads, 0 for plain heads and vanilla layers."""
    const = cfg.gate_value
    sources = cfg.head_sources()
    out = []
    for layer in range(cfg.encoder_layers):
        row = []
        for h in range(cfg.heads):
            src = sources.get(layer, [None] * cfg.heads)[h]
            if src is None:
                row.append(0.0)
            elif const is not None:
                row.append(const)
            else:
                row.append(float(learned[layer][h]) if learned and layer in learned else float("nan"))
        out.append(row)
    return out


def train_signature(cfg: TrainConfig, data_signature: str | None = None, world_size: int = 1) -> str:
    """Signature line of a training run (model, syntax variant, data, seed, torch)."""
    data = None
    if data_signature:
        import hashlib

        data = hashlib.sha256(data_signature.encode("utf-8")).hexdigest()[:8]
    return signature(task="train", model=f"d{cfg.d_model}-ffn{cfg.ffn_dim}-h{cfg.heads}-L{cfg.encoder_layers}+{cfg.decoder_layers}",
                     syntax=cfg.describe(), data=data, seed=cfg.seed, world=world_size if world_size > 1 else None,
                     torch=package_version("torch"))
