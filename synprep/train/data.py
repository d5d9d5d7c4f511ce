"""Data for the trainer: datasets over shards, length-bucketed batches, and the collate.

* :class:`ShardDataset` — pairs of one split read from HDF5 shards (docs/FORMAT.md). Each process
  (every DataLoader worker included) opens its own h5py handles on first use.
* :class:`RecordDataset` — the same over in-memory :class:`~synprep.types.PairRecord` (tests,
  benchmarks).
* :class:`BucketBatchSampler` — fairseq-style batches: pairs sorted by length, cut so that
  ``batch size × longest pair ≤ max_tokens`` (padding included), batch order shuffled per epoch
  from ``(seed, epoch)``; under DDP every rank takes every ``world``-th batch (the list is padded
  with its own first batches so all ranks make the same number of steps). Deterministic, and
  resumable at any batch (``set_epoch(epoch, start)``).
* :class:`Collater` — pads (``</s>`` appended to the source) and asks every syntax source the
  model uses for its batch inputs (:meth:`synprep.train.sources.base.SyntaxSource.collate`: e.g.
  SLR's gaps with 2000 (``GAP_EOS``) before ``</s>``, PASCAL's parent positions, LDD entries).
  Masks themselves are built on the training device (``SyntaxSource.prepare``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from synprep.constants import EOS_ID, MANIFEST_NAME, PAD_ID
from synprep.defaults import RUNTIME_DEFAULTS
from synprep.errors import InputError
from synprep.parallel import limit_threads, usable_cpus
from synprep.train.batch import Batch  # noqa: F401 - re-exported (its home before synprep.train.batch)
from synprep.train.config import TrainConfig
from synprep.train.graphs import WORD_MULTIPLE
from synprep.train.rundir import bounded_workers
from synprep.train.schema import BATCH_ORDERS
from synprep.train.sources import source_class
from synprep.types import PairRecord

log = logging.getLogger("synprep.train")

if TYPE_CHECKING:
    from synprep.train.model import Seq2Seq
    from synprep.train.sources.base import SyntaxSource


class Collater:
    """Turn a list of ``(index, PairRecord)`` into a :class:`Batch`.

    Args:
        sources: the syntax sources whose inputs to build (objects, or registry names built with
            ``cfg``); none for a vanilla model.
        cfg: the configuration names are built with (default: :class:`TrainConfig` defaults).
        graph_shapes: the sources' sizes that follow a batch's contents (word counts, LDD's entry
            counts) rounded up (:meth:`SyntaxSource.pad_shapes`; the same loss), so that a batch brings
            the same shapes every epoch (``cuda_graphs``, :mod:`synprep.train.graphs`).
    """

    def __init__(self, sources: Iterable[SyntaxSource | str] = (), cfg: TrainConfig | None = None,
                 graph_shapes: bool = False):
        conf = cfg or TrainConfig()
        self.sources = {}
        for s in sources:
            obj = source_class(s)(conf) if isinstance(s, str) else s
            self.sources[obj.name] = obj
        self.graph_shapes = graph_shapes

    @classmethod
    def for_model(cls, model: Seq2Seq, graph_shapes: bool = False) -> Collater:
        """The collate that builds exactly the syntactic inputs ``model`` reads."""
        return cls(model.sources_map().values(), graph_shapes=graph_shapes)

    @classmethod
    def for_config(cls, cfg: TrainConfig) -> Collater:
        """The collate of a model built from ``cfg`` (without building the model)."""
        return cls(sorted(cfg.sources_used()), cfg)

    def __call__(self, items: list[tuple[int, PairRecord]]) -> Batch:
        B = len(items)
        recs = [r for _, r in items]
        src_len = np.array([len(r.src_ids) + 1 for r in recs])
        tgt_len = np.array([len(r.tgt_ids) + 1 for r in recs])
        T, U = int(src_len.max()), int(tgt_len.max())
        src = np.full((B, T), PAD_ID, dtype=np.int64)
        prev = np.full((B, U), PAD_ID, dtype=np.int64)
        tgt = np.full((B, U), PAD_ID, dtype=np.int64)
        for b, r in enumerate(recs):
            n, m = len(r.src_ids), len(r.tgt_ids)
            src[b, :n] = r.src_ids
            src[b, n] = EOS_ID
            prev[b, 0] = EOS_ID
            prev[b, 1:m + 1] = r.tgt_ids
            tgt[b, :m] = r.tgt_ids
            tgt[b, m] = EOS_ID
        syntax = {name: src_.collate(recs, T) for name, src_ in self.sources.items()}
        if self.graph_shapes:
            syntax = {name: self.sources[name].pad_shapes(data, WORD_MULTIPLE) for name, data in syntax.items()}
        return Batch(ids=torch.as_tensor([i for i, _ in items], dtype=torch.long),
                     src_tokens=torch.from_numpy(src), src_lengths=torch.from_numpy(src_len.astype(np.int64)),
                     prev_tokens=torch.from_numpy(prev), target=torch.from_numpy(tgt), ntokens=int(tgt_len.sum()),
                     syntax=syntax, src_padded=bool(src_len.min() < T))


# --------------------------------------------------------------------------------------------
# datasets
# --------------------------------------------------------------------------------------------
class RecordDataset(Dataset):
    """In-memory pairs. ``dataset[i]`` → ``(i, PairRecord)``."""

    def __init__(self, records: Sequence[PairRecord]):
        self.records = list(records)
        self.src_lengths = np.array([len(r.src_ids) for r in self.records], dtype=np.int64)
        self.tgt_lengths = np.array([len(r.tgt_ids) for r in self.records], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, i: int) -> tuple[int, PairRecord]:
        return i, self.records[i]

    def line(self, i: int) -> int:
        return int(self.records[i].line)


class ShardDataset(Dataset):
    """Pairs of one split across its shards (``SPLIT.NNNNN.h5``). ``dataset[i]`` → ``(i, PairRecord)``.

    A thin view over :class:`synprep.shards.SplitReader`: readers pickle as their paths, so every
    DataLoader worker opens its own h5py handles.

    Args:
        shards_dir: the output folder of ``synprep pipeline`` / ``synprep shard``.
        split: ``train``, ``valid``, ``test``, …
        map_dir: a folder for the shards' decoded arrays, which every process then maps read-only
            instead of holding its own copy (:mod:`synprep.shards.mapped`: a process's memory stays flat
            with the corpus size; ``train`` gives the shard folder's ``arrays/``,
            :func:`synprep.train.run.arrays_folder`), written there when the split is opened
            (:func:`~synprep.shards.open_split`), so that forked workers share them. None: each process that
            reads a shard keeps its arrays (a single pass, as ``translate``'s).

    Attributes:
        src_lengths: (N,) int64 piece counts (no ``</s>``).
        tgt_lengths: (N,) int64 piece counts (no ``</s>``).
        attrs: the first shard's root attributes (``signature``, ``vocab_path``, ``vocab_sha256``, …).

    Raises:
        InputError: no such folder or split (``option``, the command-line option that names the split,
            is named with the folder's splits), or a shard of an unknown format.
    """

    def __init__(self, shards_dir: str | Path, split: str, map_dir: str | Path | None = None,
                 option: str | None = None):
        # imported here: loads h5py, not needed to import this module
        from synprep.shards import SplitReader, open_split

        readers = open_split(shards_dir, split, map_dir=map_dir)
        if not readers:
            raise InputError(no_split_message(shards_dir, split, option), str(shards_dir))
        self.split = split
        self.reader = SplitReader(readers)
        self.attrs: dict = dict(readers[0].attrs)
        self.src_lengths = np.asarray(self.reader.src_lengths, dtype=np.int64)
        self.tgt_lengths = np.asarray(self.reader.tgt_lengths, dtype=np.int64)
        self.lines = np.asarray(self.reader.lines, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.reader)

    def __getitem__(self, i: int) -> tuple[int, PairRecord]:
        return i, self.reader[i]

    def line(self, i: int) -> int:
        return int(self.lines[i])


def load_symbols(shards_dir: str | Path, attrs: dict) -> list[str]:
    """The vocabulary (id → piece) a split's shards were written with, checked against its sha256
    (:func:`synprep.shards.reader.load_vocab`).

    Raises:
        InputError: ``dict.txt`` missing or not the one the shards name (sha256 differs); a
            ``vocab_path`` outside the folder.
    """
    # imported here: loads h5py, not needed to import this module
    from synprep.shards.reader import load_vocab

    return list(load_vocab(shards_dir, attrs).symbols)


# --------------------------------------------------------------------------------------------
# batching
# --------------------------------------------------------------------------------------------
class BucketBatchSampler(Sampler[list[int]]):
    """Length-bucketed batches of at most ``max_tokens`` (padding included), fairseq-style.

    A pair's size is ``max(source + 1, target + 1)`` (``</s>`` included); pairs larger than
    ``min(max_tokens, max_positions)`` are skipped and counted in :attr:`skipped`. Pairs are sorted by
    (target size, source size) (``order="target"``, the default) or by (source size, target size)
    (``order="source"``, as fairseq's ``LanguagePairDataset.ordered_indices``: most batches of a large
    corpus then have sources of one length, which need no padding mask), the shuffled order kept among
    ties, and cut into batches as fairseq's ``data_utils.batch_by_size`` cuts that order with
    ``required_batch_size_multiple=1`` (tests/test_train_batches_fairseq.py, real fairseq: unshuffled,
    ``order="source"`` gives fairseq's own batches; the shuffle is synprep's).

    Args:
        src_lengths: (N,) piece counts without ``</s>``.
        tgt_lengths: (N,) piece counts without ``</s>``.
        max_tokens: bound on ``batch size × largest size`` per batch.
        shuffle: shuffle pairs (ties) and batch order per epoch (training); else a fixed order.
        seed: with the epoch, seeds the shuffle (``numpy.random.default_rng([seed, epoch])``).
        rank: this process's DDP rank: it takes batches ``rank::world_size`` of the batch list.
        world_size: the number of DDP processes.
        max_positions: model limit on a sequence's length.
        order: ``"target"`` or ``"source"``: the size sorted by first (``batch_order``).

    Raises:
        ValueError: another ``order``.
    """

    def __init__(self, src_lengths: np.ndarray, tgt_lengths: np.ndarray, max_tokens: int, *, shuffle: bool = True,
                 seed: int = 1, rank: int = 0, world_size: int = 1, max_positions: int | None = None,
                 order: str = "target"):
        self.sizes = np.maximum(np.asarray(src_lengths) + 1, np.asarray(tgt_lengths) + 1).astype(np.int64)
        self.src_sizes = np.asarray(src_lengths, dtype=np.int64) + 1
        self.tgt_sizes = np.asarray(tgt_lengths, dtype=np.int64) + 1
        limit = max_tokens if max_positions is None else min(max_tokens, max_positions)
        self.valid = np.flatnonzero(self.sizes <= limit)
        self.skipped = int(len(self.sizes) - len(self.valid))
        if order not in BATCH_ORDERS:
            raise ValueError(f"order must be one of {', '.join(BATCH_ORDERS)}, got {order!r}")
        self.order = order
        self.max_tokens = max_tokens
        self.shuffle = shuffle
        self.seed = seed
        self.rank, self.world_size = rank, world_size
        self.epoch, self.start = 0, 0
        self._cache: tuple[int, list[list[int]]] | None = None

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        """Select the epoch (0-based) and the first batch of this rank to yield (resume)."""
        self.epoch, self.start = epoch, start

    def global_batches(self, epoch: int) -> list[list[int]]:
        """Every batch of an epoch, before the DDP split (identical on all ranks)."""
        idx = self.valid
        rng = np.random.default_rng([self.seed, epoch]) if self.shuffle else None
        if rng is not None:
            idx = idx[rng.permutation(len(idx))]
        # sort by (target size, source size) or (source, target); the stable sort keeps the shuffled order among ties
        first, then = (self.tgt_sizes, self.src_sizes) if self.order == "target" else (self.src_sizes, self.tgt_sizes)
        idx = idx[np.lexsort((then[idx], first[idx]), axis=0)] if len(idx) else idx
        batches: list[list[int]] = []
        cur: list[int] = []
        longest = 0
        for i in idx.tolist():
            s = int(self.sizes[i])
            if cur and max(longest, s) * (len(cur) + 1) > self.max_tokens:
                batches.append(cur)
                cur, longest = [], 0
            cur.append(i)
            longest = max(longest, s)
        if cur:
            batches.append(cur)
        if rng is not None:
            batches = [batches[j] for j in rng.permutation(len(batches))]
        return batches

    def rank_batches(self, epoch: int) -> list[list[int]]:
        """The batches this rank yields in ``epoch`` (cached for the last epoch asked)."""
        if self._cache is not None and self._cache[0] == epoch:
            return self._cache[1]
        batches = self.global_batches(epoch)
        if self.world_size > 1:
            if self.shuffle and batches and len(batches) % self.world_size:
                short = self.world_size - len(batches) % self.world_size
                batches = batches + [batches[j % len(batches)] for j in range(short)]
            batches = batches[self.rank :: self.world_size]
        self._cache = (epoch, batches)
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        yield from self.rank_batches(self.epoch)[self.start :]

    def __len__(self) -> int:
        return max(len(self.rank_batches(self.epoch)) - self.start, 0)


def make_loaders(cfg: Any, train_ds: Any, valid_ds: Any, collate: Any, rank: int, world_size: int,
                 device: torch.device, log_skipped: bool = True) -> tuple[Any, Any, Any, Any]:
    """The trainer's length-bucketed samplers (this rank's share) and DataLoaders of both splits.

    Args:
        cfg: the :class:`~synprep.train.config.TrainConfig`.
        train_ds: datasets with ``src_lengths``/``tgt_lengths``.
        valid_ds: datasets with ``src_lengths``/``tgt_lengths``.
        collate: :meth:`Collater.for_model`.
        log_skipped: log the count of training pairs too long to fit (the main rank).

    Returns:
        (train_sampler, valid_sampler, train_loader, valid_loader).

    Raises:
        InputError: no training pair fits ``max_tokens`` / ``max_positions``.
    """
    train_sampler = BucketBatchSampler(train_ds.src_lengths, train_ds.tgt_lengths, cfg.max_tokens, shuffle=True,
                                       seed=cfg.seed, rank=rank, world_size=world_size, max_positions=cfg.max_positions,
                                       order=cfg.batch_order)
    valid_sampler = BucketBatchSampler(valid_ds.src_lengths, valid_ds.tgt_lengths, cfg.max_tokens, shuffle=False,
                                       rank=rank, world_size=world_size, max_positions=cfg.max_positions,
                                       order=cfg.batch_order)
    if train_sampler.skipped and log_skipped:
        log.info("skipping %d training pairs longer than %d tokens", train_sampler.skipped,
                 min(cfg.max_tokens, cfg.max_positions))
    if not len(train_sampler.valid):
        raise InputError("no training pair fits max_tokens / max_positions")
    workers = bounded_workers(loader_workers(cfg.num_workers, device))  # num_workers: 1000 starts no 1000 processes
    if cfg.num_workers < 0 and workers and log_skipped:  # on CUDA; the CPU (none) stays quiet
        log.info("num_workers auto: %d DataLoader workers on %s", workers, device.type)
    loader_kw: dict[str, Any] = dict(collate_fn=collate, num_workers=workers,
                                     pin_memory=device.type == "cuda", generator=torch.Generator(),
                                     worker_init_fn=loader_worker_init if workers else None)
    # both loaders' workers live across epochs and validations (not started anew each time: 0.13 s of a 0.18 s
    # validation on the CPU); the sampler is read in this process at every iter(), so the
    # batches are the same
    return (train_sampler, valid_sampler,
            DataLoader(train_ds, batch_sampler=train_sampler, persistent_workers=bool(workers), **loader_kw),
            DataLoader(valid_ds, batch_sampler=valid_sampler, persistent_workers=bool(workers), **loader_kw))


def loader_workers(num_workers: int, device: torch.device) -> int:
    """DataLoader workers of a training process: ``num_workers``, or for -1 (auto, the default) 0 on the CPU,
    whose cores are the update's, and :attr:`synprep.defaults.RuntimeDefaults.cuda_loader_workers` (2) on
    CUDA (at most the CPUs this process may run on), where reading and collating a batch between updates
    would hold the GPU up (docs/train.md, "Inputs and outputs")."""
    if num_workers >= 0:
        return num_workers

    return min(RUNTIME_DEFAULTS.cuda_loader_workers, usable_cpus()) if device.type == "cuda" else 0


def loader_worker_init(_: int) -> None:
    """A DataLoader worker's start: one thread for torch and the numeric libraries (the trainer's and
    ``translate``'s readers; the process's cores are the main process's)."""
    limit_threads(1)


def no_split_message(shards_dir: str | Path, split: str, option: str | None = None) -> str:
    """``no shards of split 'valid' (expected valid.00000.h5, …); the folder's splits: test, train: name one
    with --valid-split SPLIT, or make the split (synprep pipeline --split valid …)``."""
    import json

    msg = f"no shards of split {split!r} (expected {split}.00000.h5, …)"
    if option is None:
        return msg
    try:
        names = sorted(json.loads((Path(shards_dir) / MANIFEST_NAME).read_text(encoding="utf-8"))["splits"])
    except (OSError, ValueError, KeyError, TypeError):
        names = []
    have = f"the folder's splits: {', '.join(names)}: " if names else ""
    return f"{msg}; {have}name one with {option} SPLIT, or make the split (synprep pipeline --split {split} …)"
