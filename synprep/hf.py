"""Batches for your own PyTorch loop from the rows of ``synprep export --format hf`` (docs/export.md).

```python
from datasets import load_dataset
from torch.utils.data import DataLoader
from synprep.hf import SyntaxCollator

rows = load_dataset("DEST")["train"]
loader = DataLoader(rows, batch_size=32, shuffle=True, collate_fn=SyntaxCollator(["slr", "pascal", "ldd"]))
```

A batch is the :class:`~synprep.train.batch.Batch` synprep's trainer builds from its shards
(:class:`synprep.train.data.Collater`, the same code): ``src_tokens`` (B, T) int64, the source ids then
``</s>`` (2), right-padded with ``<pad>`` (1); ``prev_tokens`` / ``target`` (B, U) int64; and per
syntax source in ``batch.syntax[NAME]`` what its attention reads — ``slr``: (B, T-1) float32 gaps
(SLR masks are built from them by :func:`synprep.train.masks.slr_bias`); ``pascal``: (B, T) float32
parent positions; ``ldd``: the (K,) LDD entries and (B, T) word index of
:func:`synprep.train.masks.ldd_weights`; and so on for every source of :data:`synprep.train.sources.SOURCES`.
The ``datasets`` package (the ``hf`` extra) is not imported here: a row is any mapping with the
export's columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from synprep.train.batch import Batch
from synprep.train.config import TrainConfig
from synprep.train.data import Collater
from synprep.types import PairRecord

__all__ = ["SyntaxCollator", "row_record"]

#: the export's integer list columns → PairRecord fields (``ldd`` is a list of structs)
_INT_COLUMNS = ("src_ids", "tgt_ids", "word_index", "heads", "deprel", "upos", "sent_start", "gaps_cnf", "gaps_nary")


def _ldd(entries: Any) -> dict[str, np.ndarray]:
    """The ``ldd`` column of one row (a list of ``{dep, head, rel, prob}``, or the same as lists) as arrays."""
    if isinstance(entries, Mapping):  # datasets' "dict of lists" form of a list of structs
        cols = {k: list(entries[k]) for k in ("dep", "head", "rel", "prob")}
    else:
        cols = {k: [e[k] for e in entries] for k in ("dep", "head", "rel", "prob")}
    return {"ldd_dep": np.asarray(cols["dep"], dtype=np.int32), "ldd_head": np.asarray(cols["head"], dtype=np.int32),
            "ldd_rel": np.asarray(cols["rel"], dtype=np.int32), "ldd_prob": np.asarray(cols["prob"], dtype=np.float32)}


def row_record(row: Mapping[str, Any]) -> PairRecord:
    """One row of ``export --format hf`` as the :class:`~synprep.types.PairRecord` the shard held.

    Args:
        row: a mapping with the export's columns (``datasets`` rows, plain or torch/numpy-formatted).

    Raises:
        KeyError: a column the record needs is missing (name it in ``load_dataset(..., columns=…)``).
    """
    ints = {name: np.asarray(row[name], dtype=np.int32) for name in _INT_COLUMNS}
    return PairRecord(line=int(row["line"]), **ints, **_ldd(row["ldd"]))


class SyntaxCollator:
    """``collate_fn`` turning rows of ``export --format hf`` into synprep's padded :class:`~synprep.train.batch.Batch`.

    Args:
        sources: the syntax sources whose inputs to build (names of :data:`synprep.train.sources.SOURCES`:
            ``slr``, ``pascal``, ``ldd``, …), built with ``cfg``.
        cfg: the configuration the sources read their options from (``slr_gaps``, …); default: synprep's defaults.

    Raises:
        ConfigError: an unknown source name (the message lists them).
    """

    def __init__(self, sources: Iterable[str] = ("slr",), cfg: TrainConfig | None = None):
        self.collater = Collater(list(sources), cfg)

    @classmethod
    def for_config(cls, cfg: TrainConfig) -> SyntaxCollator:
        """The collator of a model built from ``cfg``: the sources its heads use, with its options."""
        return cls(sorted(cfg.sources_used()), cfg)

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> Batch:
        """Pad ``rows`` (in their order; ``batch.ids`` = 0..B-1) into one batch."""
        return self.collater([(i, row_record(row)) for i, row in enumerate(rows)])
