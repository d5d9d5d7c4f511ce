"""When a parse runs its two stages apart, and with how many forward processes (docs/parse.md, "Forward and decode").

Read by :func:`synprep.parse.run.parse_block`: :func:`pipelined` (on by default with ``device="cuda"``;
``$SYNPREP_PARSE_PIPELINE``), :func:`forward_workers` (one per visible GPU; ``$SYNPREP_PARSE_FORWARD_WORKERS``).
Neither changes the output: every mode gives the same bytes.
"""

from __future__ import annotations

import os

from synprep.errors import ConfigError
from synprep.parse.base import ParserSpec


def visible_gpus() -> int:
    """The GPUs torch sees (0 without CUDA); one forward worker each in a pipelined GPU parse."""
    import torch

    return int(torch.cuda.device_count())


def pipelined(spec: ParserSpec, backend: str, scheduler: str | None, pipeline: bool | None) -> bool:
    """Whether :func:`~synprep.parse.run.parse_block` runs the two stages apart (forward here or in GPU workers, decode in a pool).

    ``pipeline`` when given; else ``$SYNPREP_PARSE_PIPELINE`` (``1``/``0``) when set; else on for
    ``device="cuda"`` with the loky backend (a dask cluster's workers parse whole batches, as before).
    """
    if pipeline is None:
        env = os.environ.get("SYNPREP_PARSE_PIPELINE", "")
        if env not in ("", "0", "1"):
            raise ConfigError(f"SYNPREP_PARSE_PIPELINE must be 0 or 1, not {env!r}")
        pipeline = env == "1" if env else spec.device == "cuda" and backend == "loky" and scheduler is None
    return pipeline


def forward_workers(spec: ParserSpec) -> int:
    """The forward stage's processes in a pipelined parse: ``$SYNPREP_PARSE_FORWARD_WORKERS`` when set (workers
    beyond the GPUs share them), else one per visible GPU (``device="cuda"``) or 1 (the CPU: this process).

    Raises:
        ConfigError: the variable is not a whole number >= 1.
    """
    env = os.environ.get("SYNPREP_PARSE_FORWARD_WORKERS", "")
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ConfigError(f"SYNPREP_PARSE_FORWARD_WORKERS must be a whole number >= 1, not {env!r}")
        return int(env)
    return visible_gpus() if spec.device == "cuda" else 1
