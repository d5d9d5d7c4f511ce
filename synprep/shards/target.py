"""A split's shards as the annotation stage writes them (:class:`SplitShards`: where, with which vocabulary,
manifest and attributes; :meth:`SplitShards.write` writes one shard and its manifest entry together)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synprep.lock import folder_lock
from synprep.shards.config import ShardConfig
from synprep.shards.manifest import Manifest
from synprep.shards.schema import shard_name
from synprep.shards.writer import write_shard
from synprep.subword import DEFAULT_SCHEME
from synprep.subword.offsets import AlignStats
from synprep.timeline import mark
from synprep.types import DEPRELS, UPOS_TAGS
from synprep.vocab import Vocab

log = logging.getLogger(__name__)


@dataclass
class SplitShards:
    """Where and how a split's shards are written (:func:`annotate_split`'s target).

    Attributes:
        out: the output folder (shards, ``dict.txt`` and ``manifest.json`` live there).
        split: the split's name (``train``, ``valid``, ``test``, …).
        vocab: the joint vocabulary (already saved as ``OUT/dict.txt``).
        manifest: the folder's manifest; updated and saved after every shard.
        signature: the signature line stored in every shard.
        attrs: the configuration stored in every shard (its ``config`` attribute).
        src_lang: the source language (the shards' attribute).
        tgt_lang: the target language.
        section: the folder's shard section (its ``shard_size``: input pairs per shard; the last shard of a split
            may hold fewer).
        subword: the subword scheme of the pieces (the shards' ``subword`` attribute). When the items
            carry offset alignments, the manifest records their rule counts per shard.
        shards: which shards to make, by 0-based index (default all; ``--part I/N``: the part's,
            :meth:`synprep.pipeline.parts.Part.owns`).
        save: ``save(manifest, complete)`` after each shard made, instead of saving ``manifest.json`` under the
            folder lock (``--part``: the part's own record, :func:`synprep.pipeline.parts.save_part`); called
            once more with ``complete`` True at the end.
    """

    out: Path
    split: str
    vocab: Vocab
    manifest: Manifest
    signature: str
    attrs: dict[str, Any]
    src_lang: str
    tgt_lang: str
    section: ShardConfig = field(default_factory=ShardConfig)
    subword: str = DEFAULT_SCHEME
    shards: Callable[[int], bool] | None = None
    save: Callable[[Manifest, bool], None] | None = None

    def __post_init__(self) -> None:
        self.out = Path(self.out)

    def mine(self, k: int) -> bool:
        """Whether this run makes shard ``k``."""
        return self.shards is None or self.shards(k)

    def shard_attrs(self, k: int, sources: set[str], ldd_threshold: float) -> dict[str, Any]:
        """The root attributes of shard ``k`` (docs/FORMAT.md)."""
        return {
            "split": self.split, "shard_index": k, "src_lang": self.src_lang, "tgt_lang": self.tgt_lang,
            "signature": self.signature, "config": self.attrs, "tree_source": _merged_source(sources),
            "ldd_threshold": ldd_threshold, "vocab_path": "dict.txt", "vocab_sha256": self.vocab.sha256,
            "deprel_labels": list(DEPRELS), "upos_labels": list(UPOS_TAGS), "subword": self.subword,
        }

    def write(self, k: int, block: list[Any], built: tuple, stats: AlignStats, ldd_threshold: float) -> str | None:
        """Shard ``k`` of a block's built records (``(records, drops, tree sources, words)``), its drops and its
        manifest entry, written together; returns the shard's name, or None when every pair was dropped."""
        records, drops, sources, words = built
        out, manifest, name = self.out, self.manifest, shard_name(self.split, k)
        manifest.record_drops(self.split, drops)
        # the shard and its manifest entry appear together (synprep.lock); a part writes only its own files
        with folder_lock(out) if self.save is None else contextlib.nullcontext():
            if records:
                manifest.add_shard(self.split, write_shard(out / name, records, self.shard_attrs(k, sources, ldd_threshold),
                                                           words=words))
                if any(it.alignment is not None for it in block):
                    manifest.set_alignment(self.split, name, stats.as_dict())
            if self.save is None:
                manifest.save(out)
            else:
                self.save(manifest, False)
        mark(f"shard {name}")
        log.info("%s: %d pairs, %d dropped", name, len(records), len(drops))
        return name if records else None


def _merged_source(sources: set[str]) -> str:
    if not sources:
        return "constituency"
    return sources.pop() if len(sources) == 1 else "mixed"
