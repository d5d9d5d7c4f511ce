"""``synprep check``'s view of a shard's maps (:mod:`synprep.shards.mapped`): every map compared with the shard.

The seal of a map folder (the sha256 in its ``index.json``) is no secret: whoever can write the folder can change
a value to another valid one and seal it again. So a map folder is trusted only once every value equals the
shard's, decoded from the verified shard file: by every process that maps a folder it did not write itself (once
per process and folder version, :func:`synprep.shards.mapped.differs_from_shard`), and by ``synprep check``
(:func:`map_problem`), for every map folder of the shard's current version.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from synprep.shards.mapped import _INDEX_MAX, BIN, INDEX, LAYOUT, _open, _sealed, map_key
from synprep.shards.schema import AXES


def map_problem(shard: Any, map_dir: Path) -> tuple[str, str] | None:
    """For ``synprep check``: what is wrong with the maps of a shard in ``map_dir`` (those a reader of the
    shard's current version would map), as ``(file under map_dir, what)``, or None (sound, or none there). Of
    another layout is not wrong (a reader decodes them again). Verified in full, every value compared with the
    shard's, whatever this process verified before.

    Args:
        shard: the shard's :class:`~synprep.shards.shard_reader.ShardReader` (verified: its size, sha256 and
            values; made with the manifest's sha256 and the vocabulary's size), built by the caller so that this
            module never imports the reader that imports it.
        map_dir: the map folder.
    """
    path, sha256 = shard.path, shard.map_expect().sha256
    folder = map_dir / map_key(path)
    if not folder.is_dir():
        return None
    try:
        version = json.loads((folder / INDEX).read_text(encoding="utf-8")).get("version") \
            if (folder / INDEX).stat().st_size <= _INDEX_MAX else LAYOUT
    except (OSError, ValueError, AttributeError, RecursionError):
        version = LAYOUT
    if version != LAYOUT:
        return None
    got, index, why = _open(folder, sha256, len(shard))
    if got is not None and (not np.array_equal(got.lines, shard.lines)
                            or not all(np.array_equal(got.offsets[a], shard.offsets[a]) for a in AXES)):
        got, why = None, f"{BIN}: the header's maps differ from the shard's header"
    if got is not None and index is not None:
        why = _sealed(folder, index, got, shard.map_expect(), path)
    if not why:
        return None
    file, what = why.split(None, 1)
    return f"{folder.name}/{file.rstrip(':')}", what
