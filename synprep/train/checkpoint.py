"""Checkpoints that resume exactly: model, optimizer, scheduler, trainer position and RNG states.

A checkpoint is one ``torch.save`` dict (written atomically: temp file + rename)::

    {"format": "synprep-checkpoint", "version": 1,
     "config": TrainConfig as dict, "symbols": [id → piece], "signature": str,
     "model": state_dict, "optimizer": state_dict, "scheduler": state_dict,
     "state": {"epoch", "batch_in_epoch", "step", "best_valid", "epoch_sums", ...},
     "rng": [per-rank {"torch", "cuda"}]}

It holds numpy/python objects besides tensors, so it is loaded with ``weights_only=False``: only
load checkpoints you trust (as with any pickle).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import torch

from synprep.errors import InputError
from synprep.textio import atomic_write

CHECKPOINT_FORMAT = "synprep-checkpoint"
CHECKPOINT_VERSION = 1
LAST = "checkpoint_last.pt"
BEST = "checkpoint_best.pt"


def rng_state() -> dict[str, Any]:
    """This process's torch RNG states (CPU and, when present, every CUDA device)."""
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned."""
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Write a checkpoint atomically (nothing half-written is ever left under ``path``)."""
    payload = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **payload}
    with atomic_write(path, "wb", encoding=None) as f:
        torch.save(payload, f)


def copy_checkpoint(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy a checkpoint file atomically (``checkpoint_last.pt`` → ``checkpoint_best.pt``)."""
    with atomic_write(dst, "wb", encoding=None) as f, open(src, "rb") as g:
        shutil.copyfileobj(g, f)


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a synprep checkpoint.

    Raises:
        InputError: missing file, not a torch file, or not a synprep checkpoint of a known version.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("no such checkpoint", str(p))
    try:
        ck = torch.load(p, map_location=map_location, weights_only=False)
    except Exception as e:  # noqa: BLE001 - any unpickling failure means "not a checkpoint"
        raise InputError(f"cannot read checkpoint: {e}", str(p)) from None
    if not isinstance(ck, dict) or ck.get("format") != CHECKPOINT_FORMAT:
        raise InputError("not a synprep checkpoint", str(p))
    if ck.get("version") != CHECKPOINT_VERSION:
        raise InputError(f"checkpoint version {ck.get('version')!r} is not supported (this synprep reads "
                         f"{CHECKPOINT_VERSION})", str(p))
    return ck
