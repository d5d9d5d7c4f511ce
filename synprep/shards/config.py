"""The shards' section of a data folder's configuration (:class:`ShardConfig`; composed by
:class:`synprep.pipeline.config.DataConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synprep.defaults import SHARD_DEFAULTS
from synprep.lock import check_split_name
from synprep.settings import at_least


@dataclass(frozen=True)
class ShardConfig:
    """The folder's shards and their vocabulary.

    Attributes:
        shard_size: input pairs per shard (the unit of resume).
        vocab_split: the split whose subword pieces make ``dict.txt`` (the folder's one vocabulary);
            every other split waits for it while that split is being written, or is refused. Saved in
            ``pipeline.json`` only when it is not ``train`` (folders of earlier versions keep their bytes).
    """

    shard_size: int = SHARD_DEFAULTS.shard_size
    vocab_split: str = field(default="train", metadata={"optional": True})

    def __post_init__(self) -> None:
        at_least(self, shard_size=1)
        check_split_name(self.vocab_split)
