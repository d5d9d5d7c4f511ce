"""Where a training process runs: its rank in a ``torchrun`` group and its device."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from synprep.errors import ConfigError

log = logging.getLogger("synprep.train")


@dataclass
class DistEnv:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def resolve_device(device: str | None, local_rank: int = 0) -> torch.device:
    """The torch device ``--device`` names: None/``auto`` = ``cuda:LOCAL_RANK`` when CUDA is available,
    else the CPU; ``cuda`` without an index = ``cuda:LOCAL_RANK``.

    Raises:
        ConfigError: a CUDA device was asked for but CUDA is not available.
    """
    if device is None or device == "auto":
        return torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"--device {device}: CUDA is not available on this machine (use --device cpu)")
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device(f"cuda:{local_rank}")
    return dev


def init_distributed(device: str | None) -> tuple[DistEnv, torch.device]:
    """Join the ``torchrun`` process group when ``WORLD_SIZE > 1`` and pick this process's device.

    Device: ``device`` when given; else ``cuda:LOCAL_RANK`` when CUDA is available; else CPU
    (with a log line). Backend: NCCL on CUDA, gloo on CPU.

    Raises:
        ConfigError: a CUDA device was asked for but CUDA is not available.
    """
    env = DistEnv(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)),
                  int(os.environ.get("LOCAL_RANK", 0)))
    dev = resolve_device(device, env.local_rank)
    if dev.type == "cpu" and (device is None or device == "auto") and env.rank == 0:
        log.info("CUDA not available: training on the CPU")
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    if env.enabled and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
    return env, dev
