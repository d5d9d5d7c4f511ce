"""CUDA graphs of the training update: each batch shape's forward and backward
recorded once and replayed, so that an update costs about the GPU's kernel time instead of the host's
~1200 eager launches (docs/train.md, "Precision, attention kernels, compilation, CUDA graphs").

``cuda_graphs: true`` in the config (one process on CUDA; the trainer checks). With ``compile: true`` too,
the graphs record the compiled layers' kernels (fewer, fused launches than eager's): a shape's eager first
run is also where Dynamo and Inductor compile for it, so its capture only runs code already built.

- The length-bucketed sampler brings the same batch shapes back every epoch: it sorts the pairs by
  (target, source) size, so the sequence of sizes, the batch boundaries and each batch's (B, T, U)
  and target-token count are the same whatever order the shuffle gives tied pairs. What follows a
  batch's contents beyond that (a syntax source's word count, LDD's entry count) the collate rounds
  up (:meth:`~synprep.train.sources.base.SyntaxSource.pad_shapes`: words to a multiple of
  :data:`WORD_MULTIPLE`, entries to a power of two; the same loss, tests/test_train_graphs.py).
- :class:`GraphedUpdates` keys a batch by the shape and dtype of every tensor the model reads, its
  target-token count (the loss gathers that many positions) and any host value among its syntax
  inputs. The first time a key comes, the batch runs eagerly: the warm-up, in which cuBLAS and the
  attention kernels settle for that shape. The second time, its forward and backward are captured
  into a :class:`torch.cuda.CUDAGraph`; from then on the batch is copied into that graph's static
  inputs and the graph replayed: from the second epoch on, every update. All graphs share one memory
  pool: they run one after the other and keep nothing between runs but their two loss scalars.
- The gradient scale (1 / the update's target tokens) is a device scalar filled before each run.
  Gradients stay allocated between updates (zeroed, not freed): the graphs add into them. Gradient
  clipping, the fused AdamW step and the learning-rate schedule run eagerly after the graphs (a few
  launches each).
- At most :data:`MAX_GRAPHS` graphs per run (an epoch's batches of IWSLT14 fit); batches of further
  shapes run eagerly. A corpus with more batches per epoch than that gains only on the shapes it
  captured.

Dropout draws new masks at every replay (PyTorch's graph-safe Philox offsets), but not the masks an
eager run from the same seed draws: runs with and without graphs give the same losses with dropout off
only (the CUDA test states the tolerance).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from synprep.train.batch import Batch

#: with ``cuda_graphs``, the sources' word counts are rounded up to a multiple of this (their
#: (B, W+1, W+1) word-pair tensors; the pieces' T is left alone, see the module docstring)
WORD_MULTIPLE = 8
#: most graphs one run captures (each holds its static inputs and ~1200 recorded kernel launches;
#: their activations share one pool); later shapes run eagerly. At most one graph per batch of an
#: epoch: some 600 for an IWSLT14-size corpus (160k pairs of ~30 pieces, 8192 tokens a batch)
MAX_GRAPHS = 1024
#: the occurrence of a batch shape at which its graph is captured (the first runs eagerly: the warm-up)
CAPTURE_AT = 2

#: ``step(batch, scale) -> (loss, nll)``: forward and backward of one batch on the device, the
#: gradients (scaled by the () float32 ``scale``) added into the parameters' ``.grad``
StepFn = Callable[[Batch, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
_READ = ("src_tokens", "src_lengths", "prev_tokens", "target", "syntax", "src_padded")  # what the model reads


def _walk(path: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, tuple | list):
        for i, v in enumerate(value):
            yield from _walk(f"{path}.{i}", v)
    elif isinstance(value, dict):
        for k in sorted(value):
            yield from _walk(f"{path}.{k}", value[k])
    else:
        yield path, value


def _leaves(batch: Batch) -> Iterator[tuple[str, Any]]:
    """``(path, value)`` of everything the model reads from ``batch``, in a fixed order."""
    for name in _READ:
        yield from _walk(name, getattr(batch, name))


def batch_key(batch: Batch) -> tuple:
    """The key of ``batch``'s graph: its target-token count; per tensor the model reads, its path, shape
    and dtype; per host value among them (e.g. LDD's ``n_words``), its path and value."""
    return (("ntokens", batch.ntokens), *((p, tuple(v.shape), str(v.dtype)) if isinstance(v, torch.Tensor)
                                           else (p, v) for p, v in _leaves(batch)))


def _tensors(batch: Batch) -> list[torch.Tensor]:
    return [v for _, v in _leaves(batch) if isinstance(v, torch.Tensor)]


@dataclass
class _Graph:
    graph: torch.cuda.CUDAGraph
    inputs: list[torch.Tensor]  # static inputs, in _tensors order
    scale: torch.Tensor
    loss: torch.Tensor  # static outputs
    nll: torch.Tensor


class GraphedUpdates:
    """Runs ``step`` on a batch: eagerly the first time its shape comes, as a captured CUDA graph after.

    Args:
        step: the forward and backward of one batch (:data:`StepFn`); it must not synchronize with
            the host, nor read host values of the batch other than those :func:`batch_key` keys
            (the trainer's reads ``ntokens``: the loss gathers that many positions).
        params: the parameters whose ``.grad`` the step adds into (allocated as zeros before the first
            capture where still None, so that every graph adds into tensors that outlive it).
        device: the CUDA device.
        max_graphs: see :data:`MAX_GRAPHS`.
        capture_at: see :data:`CAPTURE_AT`.

    Counters: ``captures``, ``replays``, ``eager`` (batches run without a graph), ``capture_s`` (wall
    seconds spent capturing).
    """

    def __init__(self, step: StepFn, params: Iterable[torch.nn.Parameter], device: torch.device | str,
                 max_graphs: int = MAX_GRAPHS, capture_at: int = CAPTURE_AT):
        self.step = step
        self.params = [p for p in params if p.requires_grad]
        self.device = torch.device(device)
        self.max_graphs, self.capture_at = max_graphs, capture_at
        self.pool = torch.cuda.graph_pool_handle()
        self.graphs: dict[tuple, _Graph] = {}
        self.seen: Counter[tuple] = Counter()
        self.captures = self.replays = self.eager = 0
        self.capture_s = 0.0

    def __call__(self, batch: Batch, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
        """Forward and backward of ``batch`` (host or device tensors), gradients scaled by ``scale``.

        Returns:
            (loss, nll): () float32 device scalars, summed over the batch's target tokens (nats). A
            replayed graph's are its static outputs, overwritten by its next run: add them up before
            the next call.
        """
        key = batch_key(batch)
        g = self.graphs.get(key)
        if g is None:
            self.seen[key] += 1
            if self.seen[key] < self.capture_at or len(self.graphs) >= self.max_graphs:
                self.eager += 1
                return self.step(batch.to(self.device), torch.full((), scale, dtype=torch.float32, device=self.device))
            g = self._capture(key, batch)
        for dst, src in zip(g.inputs, _tensors(batch), strict=True):
            dst.copy_(src, non_blocking=True)
        g.scale.fill_(scale)
        g.graph.replay()
        self.replays += 1
        return g.loss, g.nll

    def _capture(self, key: tuple, batch: Batch) -> _Graph:
        t0 = time.perf_counter()
        for p in self.params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        static = batch._map(lambda t: t.to(self.device, copy=True))  # outside the graphs' pool
        scale = torch.ones((), dtype=torch.float32, device=self.device)
        graph = torch.cuda.CUDAGraph()
        # thread_local: the DataLoader's pinning thread may allocate host memory meanwhile
        with torch.cuda.graph(graph, pool=self.pool, capture_error_mode="thread_local"):
            loss, nll = self.step(static, scale)
        g = _Graph(graph, _tensors(static), scale, loss, nll)
        self.graphs[key] = g
        self.captures += 1
        self.capture_s += time.perf_counter() - t0
        return g

    def stats(self) -> dict[str, Any]:
        """The counters as a JSON-ready dict."""
        return {"graphs": len(self.graphs), "captures": self.captures, "replays": self.replays,
                "eager": self.eager, "capture_s": round(self.capture_s, 3)}
