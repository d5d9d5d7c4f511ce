"""HDF5 shards (docs/FORMAT.md, docs/shards.md): write, read, manifest, check.

    from synprep.shards import write_shard, ShardReader, SplitReader, open_split, Manifest, check_dir
"""

from synprep.shards.check import CheckError, CheckReport, Violation, check_dir, check_shard
from synprep.shards.manifest import Manifest, SplitEntry
from synprep.shards.reader import (
    PAIR_KEYS,
    ShardFormatError,
    ShardReader,
    SplitReader,
    iter_pairs,
    load_vocab,
    open_split,
    pad_batch,
    pair_dict,
    split_files,
    splits_in,
)
from synprep.shards.schema import parse_shard_name, shard_name
from synprep.shards.writer import ShardInfo, write_shard

__all__ = [
    "CheckError", "CheckReport", "Violation", "check_dir", "check_shard",
    "Manifest", "PAIR_KEYS", "ShardFormatError", "ShardInfo", "ShardReader", "SplitEntry", "SplitReader", "open_split",
    "iter_pairs", "load_vocab", "pad_batch", "pair_dict", "parse_shard_name", "shard_name", "split_files", "splits_in", "write_shard",
]
