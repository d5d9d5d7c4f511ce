"""``synprep export --format fairseq``: fairseq's binarized language pair plus one indexed dataset per syntax field.

``DEST`` after an export of a de→en folder (docs/export.md):

```
dict.de.txt  dict.en.txt                 synprep's joint dict.txt (fairseq's format), twice
train.de-en.de.{bin,idx}                 source ids + </s> (= 2), as fairseq-preprocess writes them
train.de-en.en.{bin,idx}                 target ids + </s>
train.de-en.de.FIELD.{bin,idx}           one dataset per syntax field, item i = pair i
synprep_fairseq/__init__.py              the --user-dir plugin (task syntax_translation)
synprep_fairseq/model.py, vendor/        its model (--arch synprep_gated_transformer_iwslt_de_en), built
                                         from synprep's own model modules (synprep.export.fairseq_model)
labels.json                              the names of the deprel / upos ids
export.json                              signature line, shard config, checksums
```

With the same language on both sides (``-s en -t en``) the sides are named ``en_src``/``en_tgt``
(:func:`synprep.export.base.side_names`): ``train.en_src-en_tgt.en_src.bin``, ``…en_tgt.bin``,
``dict.en_src.txt``, ``dict.en_tgt.txt``, and fairseq is run with ``-s en_src -t en_tgt`` (fairseq
names both sides' files ``train.en-en.en`` otherwise, so one side would overwrite the other).

Syntax fields (:data:`FIELDS`; item i belongs to pair i of the language pair; ``T`` source pieces, the
source item has ``T+1`` tokens with ``</s>``):

========== ======= ======== ===================================================================
field      dtype   length   value
========== ======= ======== ===================================================================
word_index int32   T+1      0-based word of each token; ``</s>`` is word W (one past the last)
parents    float64 T+1      PASCAL mean parent position (0-based token, SPEC.md §4); ``</s>`` → T
gaps_cnf   int32   T        gap between token j and j+1 (SPEC.md §2), the ``</s>`` gap 2000 last
gaps_nary  int32   T        the same, n-ary trees
heads      int32   W        1-based head word, 0 = root
deprel     int32   W        id in the shard's ``deprel_labels`` (listed in export.json)
upos       int32   W        id in ``upos_labels``
sent_start int32   S        0-based first word of each sentence
ldd_dep    int32   K        LDD entries (1-based dependent, head with 0 = root, relation id,
ldd_head   int32   K        probability)
ldd_rel    int32   K
ldd_prob   float64 K
========== ======= ======== ===================================================================
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from importlib import resources

import numpy as np

from synprep.constants import EOS_ID, GAP_EOS
from synprep.errors import InputError
from synprep.export.base import Exporter, ExportRecord, Unit, UnitFiles
from synprep.export.columns import ShardBlock
from synprep.export.fairseq_model import VENDOR_DIR, write_model_plugin
from synprep.export.mmidx import MMapIndexedWriter, token_dtype
from synprep.shards.schema import FIELDS as SHARD_FIELDS
from synprep.textio import atomic_write

#: the layout's version (export.json ``exporter_version``)
FAIRSEQ_FORMAT_VERSION = 1
#: the plugin's folder in DEST (a --user-dir)
PLUGIN_DIR = "synprep_fairseq"
#: the label names of the ``deprel``/``upos``/``ldd_rel`` ids
LABELS_NAME = "labels.json"


def _append_per_pair(values: np.ndarray, offsets: np.ndarray, extra: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """Append one value (``extra``: scalar or ``(N,)``) to each pair's run; returns (values, lengths)."""
    n = len(offsets) - 1
    out = np.insert(values, offsets[1:], extra if np.ndim(extra) else np.full(n, extra))
    return out, np.diff(offsets) + 1


def _plain(name: str) -> Callable[[ShardBlock], tuple[np.ndarray, np.ndarray]]:
    axis = {fl.name: fl.axis for fl in SHARD_FIELDS}[name]
    return lambda b: (b.data[name].astype(np.int64), b.lengths(axis))


def _word_index(b: ShardBlock) -> tuple[np.ndarray, np.ndarray]:
    return _append_per_pair(b.data["word_index"].astype(np.int64), b.offsets["src"], b.lengths("word"))


def _parents(b: ShardBlock) -> tuple[np.ndarray, np.ndarray]:
    return _append_per_pair(b.mean_parents().astype(np.float64), b.offsets["src"], b.lengths("src").astype(np.float64))


def _gaps(name: str) -> Callable[[ShardBlock], tuple[np.ndarray, np.ndarray]]:
    return lambda b: _append_per_pair(b.data[name].astype(np.int64), b.offsets["gap"], GAP_EOS)


#: syntax field → (dtype, function of a shard giving (flat values, per-pair lengths))
FIELDS: dict[str, tuple[np.dtype, Callable[[ShardBlock], tuple[np.ndarray, np.ndarray]]]] = {
    "word_index": (np.dtype(np.int32), _word_index),
    "parents": (np.dtype(np.float64), _parents),
    "gaps_cnf": (np.dtype(np.int32), _gaps("gaps_cnf")),
    "gaps_nary": (np.dtype(np.int32), _gaps("gaps_nary")),
    **{name: (np.dtype(np.int32), _plain(name))
       for name in ("heads", "deprel", "upos", "sent_start", "ldd_dep", "ldd_head", "ldd_rel")},
    "ldd_prob": (np.dtype(np.float64), lambda b: (b.data["ldd_prob"].astype(np.float64), b.lengths("ldd"))),
}


class FairseqExporter(Exporter):
    """fairseq's binarized layout for each split, the syntax fields beside it, the plugin and dictionaries."""

    name = "fairseq"
    version = FAIRSEQ_FORMAT_VERSION
    replaced = (f"{PLUGIN_DIR}/{VENDOR_DIR}",)  # write_model_plugin removes it first

    def __init__(self, ctx):
        super().__init__(ctx)
        self.vocab_size = len(ctx.vocab)
        self.labels: dict[str, list[str]] = {}

    def usage(self) -> str:
        d, (s, t) = self.ctx.dest, self.ctx.sides
        return f"train with: fairseq-train {d} --user-dir {d / PLUGIN_DIR} --task syntax_translation -s {s} -t {t} ..."

    def prefix(self, split: str, lang: str) -> str:
        """``SPLIT.SRC-TGT.LANG``, fairseq's file prefix of one side of a split (sides named by
        :func:`~synprep.export.base.side_names`)."""
        src, tgt = self.ctx.sides
        return f"{split}.{src}-{tgt}.{lang}"

    def write_unit(self, unit: Unit, files: UnitFiles) -> int:
        src, tgt = self.ctx.sides
        streams = {src: token_dtype(self.vocab_size), tgt: token_dtype(self.vocab_size)}
        streams.update({f"{src}.{name}": dtype for name, (dtype, _) in FIELDS.items()})
        bins = {key: open(files.path(f"{self.prefix(unit.split, '')}{key}.bin"), "wb") for key in streams}
        writers = {key: MMapIndexedWriter(bins[key], dtype, self.ctx.dest) for key, dtype in streams.items()}
        pairs = 0
        try:
            for reader in self.ctx.readers(unit):
                block = ShardBlock.read(reader)
                self._labels(block)
                for lang, axis, ids in ((src, "src", "src_ids"), (tgt, "tgt", "tgt_ids")):
                    if block.data[ids].size and int(block.data[ids].max()) >= self.vocab_size:
                        raise InputError("an id is outside the vocabulary (run synprep check)", block.name)
                    writers[lang].add(*_append_per_pair(block.data[ids].astype(np.int64), block.offsets[axis], EOS_ID))
                for name, (_, make) in FIELDS.items():
                    writers[f"{src}.{name}"].add(*make(block))
                pairs += block.n
            for key, writer in writers.items():
                bins[key].flush()
                os.fsync(bins[key].fileno())
                with files.open(f"{self.prefix(unit.split, '')}{key}.idx") as idx:
                    writer.write_index(idx)
        finally:
            for key in streams:
                writers[key].close()
                bins[key].close()
        return pairs

    def _labels(self, block: ShardBlock) -> None:
        labels = {"deprel": list(block.attrs["deprel_labels"]), "upos": list(block.attrs["upos_labels"])}
        if self.labels and labels != self.labels:
            raise InputError("its deprel/upos label lists differ from the other shards'", block.name)
        self.labels = labels

    def finish(self, record: ExportRecord) -> None:
        dest = self.ctx.dest
        data = self.ctx.vocab_path.read_bytes()
        if hashlib.sha256(data).hexdigest() != self.ctx.vocab.sha256:  # replaced since the export verified it
            raise InputError("changed during the export (run the export again)", str(self.ctx.vocab_path))
        for side in self.ctx.sides:
            with atomic_write(dest / f"dict.{side}.txt", "wb") as f:
                f.write(data)
        plugin = resources.files("synprep.export").joinpath("fairseq_plugin.py").read_text(encoding="utf-8")
        with atomic_write(dest / PLUGIN_DIR / "__init__.py") as f:
            f.write(plugin)
        shutil.rmtree(dest / PLUGIN_DIR / "__pycache__", ignore_errors=True)
        write_model_plugin(dest / PLUGIN_DIR)
        if not self.labels:  # every unit was done by an earlier run: the labels of a verified shard's header
            attrs = self.ctx.split_readers[self.ctx.splits[0]][0].attrs
            self.labels = {"deprel": list(attrs["deprel_labels"]), "upos": list(attrs["upos_labels"])}
        with atomic_write(dest / LABELS_NAME) as f:
            f.write(json.dumps(self.labels, indent=1) + "\n")
