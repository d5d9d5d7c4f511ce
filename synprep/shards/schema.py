"""Shard format version 1, written down once (docs/FORMAT.md): axes, datasets, attributes.

The writer, the reader and ``synprep check`` all take the layout from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from synprep.errors import name_problem
from synprep.subword import DEFAULT_SCHEME
from synprep.types import smallest_unsigned  # noqa: F401 - re-exported: the writer's dtype rule

#: the ragged axes, in the order their ``/offsets/AXIS`` datasets are written
AXES = ("src", "tgt", "word", "gap", "sent", "ldd")


@dataclass(frozen=True)
class Field:
    """One ragged dataset.

    Attributes:
        name: dataset name (= :class:`~synprep.types.PairRecord` attribute).
        axis: the ``/offsets/AXIS`` it lives on.
        kind: ``ids`` (uint16, or int32 when an id exceeds 65535), ``unsigned`` (smallest of
            uint8/uint16/uint32 holding the shard's maximum), ``uint8``, ``int16``, ``float16``.
    """

    name: str
    axis: str
    kind: str


#: every ragged dataset, in writing order (docs/FORMAT.md table)
FIELDS = (
    Field("src_ids", "src", "ids"),
    Field("word_index", "src", "unsigned"),
    Field("tgt_ids", "tgt", "ids"),
    Field("heads", "word", "unsigned"),
    Field("deprel", "word", "uint8"),
    Field("upos", "word", "uint8"),
    Field("gaps_cnf", "gap", "int16"),
    Field("gaps_nary", "gap", "int16"),
    Field("sent_start", "sent", "unsigned"),
    Field("ldd_dep", "ldd", "unsigned"),
    Field("ldd_head", "ldd", "unsigned"),
    Field("ldd_rel", "ldd", "uint8"),
    Field("ldd_prob", "ldd", "float16"),
)
#: the words the parser read (cased, Moses escapes undone), on the ``word`` axis: one uint8 dataset of
#: their UTF-8 bytes, each word followed by ``WORD_END``; added after version 1 was fixed (like the
#: ``subword`` attribute): an old reader ignores it, a shard without it has no stored words
WORDS = "words"
WORD_END = b"\n"
#: the per-pair (not ragged) dataset: 1-based original line number, uint32
LINE = "line"
LINE_DTYPE = np.dtype(np.uint32)
OFFSETS_GROUP = "offsets"
OFFSETS_DTYPE = np.dtype(np.int64)

#: root attributes the caller gives the writer (docs/FORMAT.md "Root attributes")
REQUIRED_ATTRS = ("split", "shard_index", "src_lang", "tgt_lang", "signature", "config", "tree_source",
                  "ldd_threshold", "vocab_path", "vocab_sha256")
#: root attributes with a default (the label inventories of synprep.types)
OPTIONAL_ATTRS = ("deprel_labels", "upos_labels")
#: root attributes added after version 1 was fixed, with the value that a shard without one means:
#: the writer always writes them, readers fill them in (an old reader ignores them, and reads the
#: shard right: they add information, they change no dataset)
DEFAULTED_ATTRS = {"subword": DEFAULT_SCHEME}
#: root attributes the writer sets itself
WRITER_ATTRS = ("format", "format_version", "n_pairs")
#: root attributes stored as text: the caller's (the writer checks their type); the writer adds ``format``
STR_ATTRS = ("split", "src_lang", "tgt_lang", "signature", "tree_source", "vocab_path", "vocab_sha256", "subword")
#: root attributes stored as int64
INT_ATTRS = ("shard_index", "n_pairs", "format_version")
#: attributes stored as JSON text
JSON_ATTRS = ("config", "deprel_labels", "upos_labels")
TREE_SOURCES = ("constituency", "dependency", "mixed")

#: gzip level and chunk length (elements) of the ragged datasets
GZIP_LEVEL = 4
CHUNK_ELEMS = 1 << 15
#: HDF5 file-format bounds, pinned so that a newer HDF5 library writes the same bytes
LIBVER = ("v110", "v110")

SHARD_NAME_RE = re.compile(r"^(?P<split>[A-Za-z0-9_\-]+)\.(?P<index>\d{5})\.h5$")


def inside_name(path: Any) -> bool:
    """True for a relative path that stays inside its folder (``dict.txt``, ``sub/dict.txt``; not
    ``../x``, ``/etc/x``, ``''``): what a manifest's ``vocab.path`` and a shard's ``vocab_path`` may be."""
    return name_problem(path) is None


def shard_name(split: str, index: int) -> str:
    """File name of shard ``index`` (0-based) of ``split``: ``SPLIT.NNNNN.h5``."""
    if not re.fullmatch(r"[A-Za-z0-9_\-]+", split):
        raise ValueError(f"split name must be letters, digits, '_' or '-': {split!r}")
    if not 0 <= index <= 99999:
        raise ValueError(f"shard index must be in [0, 99999], got {index}")
    return f"{split}.{index:05d}.h5"


def parse_shard_name(name: str) -> tuple[str, int] | None:
    """``("train", 3)`` for ``train.00003.h5``; None for any other name."""
    m = SHARD_NAME_RE.match(name)
    return (m["split"], int(m["index"])) if m else None


def ids_dtype(max_id: int) -> np.dtype:
    """uint16 when every id is <= 65535 (a vocabulary of at most 65536), else int32."""
    if max_id <= np.iinfo(np.uint16).max:
        return np.dtype(np.uint16)
    if max_id <= np.iinfo(np.int32).max:
        return np.dtype(np.int32)
    raise ValueError(f"id {max_id} does not fit int32")
