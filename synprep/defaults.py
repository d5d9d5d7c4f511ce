"""The stages' own defaults, in one typed place that imports nothing.

Stage modules (:mod:`synprep.text.clean`, :mod:`synprep.parse`, the annotation stage) read their
defaults from here, never from the application's configuration; :class:`synprep.config.DataConfig`
takes its field defaults from here too, so each number is written once.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CleanDefaults:
    """clean-corpus-n.perl's filter as fairseq's IWSLT14 recipe runs it (SPEC.md §1).

    Attributes:
        ratio: maximum token-count ratio either way. min_len, max_len: inclusive token-count bounds.
    """

    ratio: float = 1.5
    min_len: int = 1
    max_len: int = 175


@dataclass(frozen=True)
class ParseDefaults:
    """The parser stage.

    Attributes:
        max_words: longer sentences are recorded as ``parse:too_long``, never parsed (stanza hangs or
            runs out of memory on 400+ words).
        batch_size: sentences per parser call sent to a worker.
        ldd_threshold: LDD entries with P(head, rel) below this are dropped (SPEC.md §4).
    """

    max_words: int = 250
    batch_size: int = 64
    ldd_threshold: float = 0.01


@dataclass(frozen=True)
class ShardDefaults:
    """The shard writer. Attributes: shard_size: input pairs per shard (the unit of resume)."""

    shard_size: int = 10000


@dataclass(frozen=True)
class RuntimeDefaults:
    """How a run uses the machine: never part of a folder's configuration, never changes the output.

    Attributes:
        gpu_workers_per_device: a ``--device cuda`` parse on this machine (loky) runs this many workers per
            visible GPU without ``-j``, and at most this many with it (``$SYNPREP_GPU_WORKERS_PER_DEVICE``
            overrides it). Measured on one H100 with 16 cores, IWSLT14 test.de (docs/parse.md "GPU
            figures"): 4 workers 1665, 8 workers 1759, 16 workers 664 sentences/s.
    """

    gpu_workers_per_device: int = 8


CLEAN_DEFAULTS = CleanDefaults()
PARSE_DEFAULTS = ParseDefaults()
SHARD_DEFAULTS = ShardDefaults()
RUNTIME_DEFAULTS = RuntimeDefaults()
