"""The shards' section of a data folder's configuration (:class:`ShardConfig`; composed by
:class:`synprep.pipeline.config.DataConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synprep.constants import MAX_SHARD_PAIRS
from synprep.defaults import SHARD_DEFAULTS
from synprep.lock import check_split_name
from synprep.settings import check_bounds, option


@dataclass(frozen=True)
class ShardConfig:
    """The folder's shards and their vocabulary.

    Attributes:
        shard_size: input pairs per shard (the unit of resume).
        vocab_split: the split whose subword pieces make ``dict.txt`` (the folder's one vocabulary);
            every other split waits for it while that split is being written, or is refused. Saved in
            ``pipeline.json`` only when it is not ``train`` (folders of earlier versions keep their bytes).
    """

    shard_size: int = field(default=SHARD_DEFAULTS.shard_size, metadata=option(
        "Input pairs per shard (the unit of resume; at most 2^24, what a reader accepts).", low=1,
        high=MAX_SHARD_PAIRS))
    vocab_split: str = field(default="train", metadata=option(
        "The split whose pieces make OUT/dict.txt (recorded in pipeline.json); another split waits for it while "
        "it runs, else is refused. Name the first split of a folder that has no train split.", optional=True))

    def __post_init__(self) -> None:
        check_bounds(self)
        check_split_name(self.vocab_split)
