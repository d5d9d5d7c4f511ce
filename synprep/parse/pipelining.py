"""When a parse runs its two stages apart, and with how many forward processes (docs/parse-internals.md, "Forward and decode").

Read by :func:`synprep.parse.run.parse_block`: :func:`pipelined` (off unless asked: ``$SYNPREP_PARSE_PIPELINE=1``;
on an H100 it is slower than unpipelined GPU workers: benchmarks/gpu_suite.py, figure ``parse_workers``), :func:`forward_workers` (one per visible GPU; ``$SYNPREP_PARSE_FORWARD_WORKERS``),
:func:`gpu_parse_jobs` (unpipelined GPU workers: at most 8 per visible GPU; ``$SYNPREP_GPU_WORKERS_PER_DEVICE``).
:class:`ParseAhead`: ``annotate`` parses the next shard's block while it writes the current one (when
pipelined). None of them changes the output: every mode gives the same bytes.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from synprep.defaults import RUNTIME_DEFAULTS
from synprep.errors import ConfigError
from synprep.parse.base import ParserSpec

log = logging.getLogger(__name__)


def visible_gpus() -> int:
    """The GPUs torch sees (0 without CUDA); one forward worker each in a pipelined GPU parse."""
    import torch

    return int(torch.cuda.device_count())


def _env_count(name: str) -> int | None:
    """The whole number >= 1 in ``$name``, None when unset or empty.

    Raises:
        ConfigError: the variable is set to anything else.
    """
    env = os.environ.get(name, "")
    if env and (not env.isdigit() or int(env) < 1):
        raise ConfigError(f"{name} must be a whole number >= 1, not {env!r}")
    return int(env) if env else None


def gpu_workers_per_device() -> int:
    """Parse workers per visible GPU: ``$SYNPREP_GPU_WORKERS_PER_DEVICE`` when set, else
    :attr:`synprep.defaults.RuntimeDefaults.gpu_workers_per_device` (8).

    Raises:
        ConfigError: the variable is not a whole number >= 1.
    """
    n = _env_count("SYNPREP_GPU_WORKERS_PER_DEVICE")
    return RUNTIME_DEFAULTS.gpu_workers_per_device if n is None else n


def gpu_parse_jobs(jobs: int, device: str, backend: str, scheduler: str | None, gpus: int | None = None) -> int:
    """The workers of a parse given ``-j jobs``: ``jobs``, except for a ``device="cuda"`` parse
    on this machine (loky), capped at ``gpu_workers_per_device`` (:class:`synprep.defaults.RuntimeDefaults`, or
    ``$SYNPREP_GPU_WORKERS_PER_DEVICE``) per visible GPU: more processes than that slow the shared GPU down.
    The output is the same bytes with any worker count.

    Args:
        gpus: the GPUs to count with; default: :func:`visible_gpus` (which imports torch). The warm-up starts
            one GPU's workers with ``gpus=1``, then counts with the GPUs its workers report
            (:func:`synprep.parse.warming.first_workers`).

    Raises:
        ConfigError: the variable is not a whole number >= 1.
    """
    if device != "cuda" or not local_pool(backend, scheduler) or jobs <= 1:
        return jobs
    per = gpu_workers_per_device()
    cap = per * max(1, visible_gpus() if gpus is None else gpus)
    if jobs > cap and gpus is None:
        log.info("parse: %d GPU workers (%d per visible GPU; -j %d): more processes slow a shared GPU down "
                 "(SYNPREP_GPU_WORKERS_PER_DEVICE)", cap, per, jobs)
    return min(jobs, cap)


def pipelined(spec: ParserSpec, backend: str, scheduler: str | None, pipeline: bool | None) -> bool:
    """Whether :func:`~synprep.parse.run.parse_block` runs the two stages apart (forward here or in GPU workers, decode in a pool).

    ``pipeline`` when given; else ``$SYNPREP_PARSE_PIPELINE`` (``1``/``0``) when set; else off. Measured on one
    H100 with 16 cores (IWSLT14 test.de, benchmarks/gpu_suite.py, figures ``parse_workers`` and ``annotate``): stanza's forward is host-bound (12 % mean
    GPU utilization), so one forward process feeding 16 decode processes parsed no faster than one unpipelined
    GPU worker (295 against 305 sentences/s), and ``annotate -j 16`` took 44-55 s pipelined against 35 s
    unpipelined (16 workers sharing the GPU). A dask backend is never pipelined (its workers parse whole batches).
    """
    if pipeline is None:
        pipeline = env_switch("SYNPREP_PARSE_PIPELINE") is True and local_pool(backend, scheduler)
    return pipeline


def env_switch(name: str) -> bool | None:
    """The on/off environment variable ``name``: True for ``1``, False for ``0``, None when unset or empty.

    Raises:
        ConfigError: any other value.
    """
    env = os.environ.get(name, "")
    if env not in ("", "0", "1"):
        raise ConfigError(f"{name} must be 0 or 1, not {env!r}")
    return None if env == "" else env == "1"


def local_pool(backend: str, scheduler: str | None) -> bool:
    """Whether ``-j`` workers are processes of this machine (joblib's loky), not dask's or threads."""
    return backend == "loky" and scheduler is None


def forward_workers(spec: ParserSpec) -> int:
    """The forward stage's processes in a pipelined parse: ``$SYNPREP_PARSE_FORWARD_WORKERS`` when set (workers
    beyond the GPUs share them), else one per visible GPU (``device="cuda"``) or 1 (the CPU: this process).

    Raises:
        ConfigError: the variable is not a whole number >= 1.
    """
    n = _env_count("SYNPREP_PARSE_FORWARD_WORKERS")
    if n is not None:
        return n
    return visible_gpus() if spec.device == "cuda" else 1


def records_while_parsing(device: str, jobs: int, backend: str, scheduler: str | None) -> bool:
    """Whether ``annotate`` builds a shard's records while its parse runs (:func:`synprep.annotate.build_records_streamed`).

    ``$SYNPREP_ANNOTATE_STREAM`` (``1``/``0``) when set; else on for a ``device="cuda"`` parse: its GPU workers
    (at most ``gpu_workers_per_device`` per GPU) leave CPU cores free for the records. Off on the CPU, where the
    ``-j`` parse workers already take the cores: measured on 2 cores (600 IWSLT14 lines, ``-j 2``), building the
    records beside the parse made annotate slower (a second pool's start-up competing with the parse).
    Needs ``-j`` > 1 on this machine (loky); the bytes are the same either way.

    Raises:
        ConfigError: the variable is set to anything but 0 or 1.
    """
    forced = env_switch("SYNPREP_ANNOTATE_STREAM")
    if jobs <= 1 or not local_pool(backend, scheduler):
        return False
    return forced if forced is not None else device == "cuda"


class ParseAhead:
    """Parse the next block in a background thread while the caller finishes the current one.

    ``annotate``'s shard loop: while the main thread aligns, computes the features of and writes shard
    ``k``, block ``k+1`` is already being parsed (its forward on the GPU, its decode in the pool), so the
    GPU does not wait for the shard writing. Parses run one at a time, in block order (one thread), and
    each result is handed out with any exception its parse raised, when the caller asks for that block —
    so errors surface in the same order as without it, and the bytes are the same (a block's parse
    depends on nothing but the block). At most one block is read and parsed ahead.

    Args:
        parse: ``parse(block) -> parses`` (one call per block).
        enabled: False: :meth:`parses` parses in the caller's thread, nothing runs ahead.
    """

    def __init__(self, parse: Callable[[Any], Any], enabled: bool):
        self.parse = parse
        self.enabled = enabled
        self.futures: dict[int, Any] = {}
        self.pool: Any = None

    def blocks(self, blocks: Iterable[tuple[int, Any]], wanted: Callable[[int], bool]) -> Iterator[tuple[int, Any]]:
        """``blocks`` (``(k, block)``) as they come, each wanted one's parse started before the previous is yielded."""
        if not self.enabled:
            yield from blocks
            return
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="synprep-parse-ahead")
        it = iter(blocks)
        try:
            cur = next(it, None)
            if cur is not None and wanted(cur[0]):
                self.futures[cur[0]] = self.pool.submit(self.parse, cur[1])
            while cur is not None:
                nxt = next(it, None)
                if nxt is not None and wanted(nxt[0]):  # runs once the current block's parse is done
                    self.futures[nxt[0]] = self.pool.submit(self.parse, nxt[1])
                yield cur
                cur = nxt
        finally:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def parses(self, k: int, block: Any) -> Any:
        """Block ``k``'s parses: the background parse's result (or its exception), else parsed here."""
        future = self.futures.pop(k, None)
        return future.result() if future is not None else self.parse(block)
