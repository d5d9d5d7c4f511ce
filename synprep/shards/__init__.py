"""HDF5 shards (docs/FORMAT.md, docs/shards.md): write, read, manifest, check.

    from synprep.shards import write_shard, ShardReader, SplitReader, open_split, Manifest, check_dir
"""

from typing import TYPE_CHECKING

from synprep.lazy import lazy_names

if TYPE_CHECKING:  # the names as the type checker reads them; at run time, :func:`__getattr__`
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

#: each public name → the module that defines it, imported on first use (so that :mod:`synprep.shards.config` imports without h5py: ``synprep pipeline --help``)
_LAZY = {
    "CheckError": "synprep.shards.check",
    "CheckReport": "synprep.shards.check",
    "Violation": "synprep.shards.check",
    "check_dir": "synprep.shards.check",
    "check_shard": "synprep.shards.check",
    "Manifest": "synprep.shards.manifest",
    "SplitEntry": "synprep.shards.manifest",
    "PAIR_KEYS": "synprep.shards.reader",
    "ShardFormatError": "synprep.shards.reader",
    "ShardReader": "synprep.shards.reader",
    "SplitReader": "synprep.shards.reader",
    "iter_pairs": "synprep.shards.reader",
    "load_vocab": "synprep.shards.reader",
    "open_split": "synprep.shards.reader",
    "pad_batch": "synprep.shards.reader",
    "pair_dict": "synprep.shards.reader",
    "split_files": "synprep.shards.reader",
    "splits_in": "synprep.shards.reader",
    "parse_shard_name": "synprep.shards.schema",
    "shard_name": "synprep.shards.schema",
    "ShardInfo": "synprep.shards.writer",
    "write_shard": "synprep.shards.writer",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "CheckError", "CheckReport", "Violation", "check_dir", "check_shard",
    "Manifest", "PAIR_KEYS", "ShardFormatError", "ShardInfo", "ShardReader", "SplitEntry", "SplitReader", "open_split",
    "iter_pairs", "load_vocab", "pad_batch", "pair_dict", "parse_shard_name", "shard_name", "split_files", "splits_in", "write_shard",
]
