"""Read HDF5 shards (docs/FORMAT.md): one shard, or every shard of a split as one indexed view.

:class:`ShardReader` is cheap to create and to pickle: it reads the attributes, offsets and line
numbers once (a short-lived h5py handle), and the pair data only on first use. With
``cache=True`` (default) the first :meth:`ShardReader.__getitem__` loads every dataset with one
read each and keeps the arrays in memory (a shard is bounded in size), so reading pair ``i`` is a
few numpy slices; with ``cache=False`` each pair costs a dozen small h5py reads through a handle
kept open (see benchmarks/bench_shards.py for both). A pickled reader carries only its path, so a
torch DataLoader worker opens its own file; a handle inherited through ``fork`` is never reused.

Whatever the stored dtypes (chosen per shard), a :class:`~synprep.types.PairRecord` read back
has int64 integer arrays and float32 ``ldd_prob``, so records of different shards collate.

Hostile files: before any dataset is read, every declared shape is compared with the header
(``n_pairs``, at most :data:`MAX_SHARD_PAIRS`) and the offsets, and the data a shard declares may not
exceed what its file size can hold (:data:`MAX_EXPANSION` × bytes, deflate's bound) nor
:data:`~synprep.constants.MAX_SHARD_BYTES` (128 MiB, whatever the file's size: a deflate bomb), so a
small file declaring 2^28 entries is a one-line :class:`~synprep.errors.InputError`, never gigabytes
of memory.
:func:`open_split` (``verify=True``, what ``train``, ``translate``, ``show`` and ``export`` use) also
checks every shard against ``manifest.json`` — list, size, sha256 (hashed once per process) —
and refuses the split naming the shard; :func:`load_vocab` then gives the ``dict.txt`` those
verified shards name, its sha256 checked (``train``, ``translate`` and ``export`` decode with it).

The module re-exports its parts: :mod:`synprep.shards.shard_reader` (:class:`ShardReader`,
:class:`SplitReader`, the shard files), :mod:`synprep.shards.verified` (:func:`open_split`,
:func:`open_shard`, :func:`load_vocab`) and :mod:`synprep.shards.pairs` (:func:`iter_pairs`, plain dicts).
"""

from __future__ import annotations

from synprep.shards.layout import (  # noqa: F401 - re-exported: the reader's public names
    EXPANSION_SLACK,
    MAX_EXPANSION,
    ShardFormatError,
    check_declared_size,
    check_layout,
    declared_bytes,
    read_attrs,
)
from synprep.shards.pairs import PAIR_KEYS, iter_pairs, pad_batch, pair_dict, shard_arrays  # noqa: F401
from synprep.shards.shard_reader import ShardReader, SplitReader, split_files, splits_in  # noqa: F401
from synprep.shards.verified import (  # noqa: F401
    load_vocab,
    open_shard,
    open_split,
    refuse_incomplete,
    resume_command,
    split_entry,
    verify_values,
)
