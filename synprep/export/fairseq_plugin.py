"""synprep's fairseq plugin: ``--user-dir DEST/synprep_fairseq --task syntax_translation``.

Written into an export folder by ``synprep export --format fairseq`` (this file is copied there as
``synprep_fairseq/__init__.py``); it needs only fairseq, torch and numpy, not synprep.

The task is fairseq's ``translation`` task plus the syntax fields that synprep exported beside the
language pair (``SPLIT.SRC-TGT.SRC.FIELD.{bin,idx}``, one item per sentence pair, in the pair's
order). ``--syntax-fields`` names the ones to load (default: all that the export has). Every batch
gets ``batch["syntax"][FIELD]``: a ``(B, L)`` tensor, rows in the batch's order, padded with -1 on
the side fairseq pads the source (``--left-pad-source``, default left), so that a token-aligned
field (``word_index``, ``parents``: ``T+1`` values per pair) is column-aligned with
``batch["net_input"]["src_tokens"]`` and ``gaps_*`` (``T`` values) with its first ``L-1`` columns
(column j = gap between tokens j and j+1). Integer fields are int64, ``parents`` and ``ldd_prob``
float32. Word-level and LDD fields are padded to their own longest row.

A model that wants the syntax reads ``sample["syntax"]`` (in its criterion or a custom
``forward``); models that do not look at it train unchanged. A model class with ``reads_syntax = True``
(synprep's own, ``--arch synprep_gated_transformer_iwslt_de_en``: ``model.py`` beside this file) also
gets it as ``net_input["syntax"]``, so that its encoder sees it in ``fairseq-generate`` too.
"""

import importlib
import os
from dataclasses import dataclass, field

import numpy as np
import torch
from fairseq import utils
from fairseq.data import BaseWrapperDataset, data_utils
from fairseq.data.indexed_dataset import MMapIndexedDataset
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask

#: padding value of every syntax field
PAD = -1
#: every field synprep exports, and its length per pair (T = source pieces, W words, S sentences, K LDD entries)
FIELDS = {"word_index": "T+1", "parents": "T+1", "gaps_cnf": "T", "gaps_nary": "T", "heads": "W", "deprel": "W",
          "upos": "W", "sent_start": "S", "ldd_dep": "K", "ldd_head": "K", "ldd_rel": "K", "ldd_prob": "K"}


class TypedMMapDataset(MMapIndexedDataset):
    """fairseq's mmap dataset, but float items stay float (fairseq casts every item to int64)."""

    def __getitem__(self, i):
        ptr, size = self._index[i]
        arr = np.frombuffer(self._bin_buffer, dtype=self._index.dtype, count=int(size), offset=int(ptr))
        return torch.from_numpy(arr.astype(np.float32 if arr.dtype.kind == "f" else np.int64))


class SyntaxPairDataset(BaseWrapperDataset):
    """A LanguagePairDataset whose items and batches also carry the syntax fields."""

    def __init__(self, pairs, fields, left_pad):
        super().__init__(pairs)
        self.fields = fields
        self.left_pad = left_pad
        #: also put the syntax into ``net_input`` (set by the task for a model that reads it)
        self.into_net_input = False

    def __getitem__(self, index):
        item = self.dataset[index]
        item["syntax"] = {name: ds[index] for name, ds in self.fields.items()}
        return item

    def collater(self, samples, **kwargs):
        batch = self.dataset.collater(samples, **kwargs)
        if not batch or not self.fields:
            return batch
        by_id = {int(s["id"]): s for s in samples}
        ordered = [by_id[int(i)] for i in batch["id"]]  # the pair collater sorts by source length
        batch["syntax"] = {name: data_utils.collate_tokens([s["syntax"][name] for s in ordered], PAD,
                                                           left_pad=self.left_pad)
                           for name in self.fields}
        if self.into_net_input:
            batch["net_input"]["syntax"] = batch["syntax"]
        return batch


@dataclass
class SyntaxTranslationConfig(TranslationConfig):
    syntax_fields: str = field(default="", metadata={
        "help": "comma-separated syntax fields to load (default: every field exported beside the pair): "
                + ", ".join(FIELDS)})


@register_task("syntax_translation", dataclass=SyntaxTranslationConfig)
class SyntaxTranslationTask(TranslationTask):
    """fairseq's translation task + synprep's source-side syntax fields in every batch."""

    #: whether the model reads the syntax from ``net_input`` (:meth:`build_model`)
    model_reads_syntax = False

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        if getattr(model, "reads_syntax", False):
            self.model_reads_syntax = True
            for ds in self.datasets.values():
                if isinstance(ds, SyntaxPairDataset):
                    ds.into_net_input = True
        return model

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        """fairseq's pairs of ``split`` with the syntax fields of ``--syntax-fields`` (default: all).

        Raises:
            ValueError: an unknown field, or a field's items that do not match the pairs or their lengths.
            FileNotFoundError: a field named in ``--syntax-fields`` whose ``.idx``/``.bin`` files are missing
                (a missing field not named there is left out).
        """
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        paths = utils.split_paths(self.cfg.data)
        data_path = paths[(epoch - 1) % len(paths)]
        src, tgt = self.cfg.source_lang, self.cfg.target_lang
        pairs = self.datasets[split]
        names = [f for f in self.cfg.syntax_fields.split(",") if f] or list(FIELDS)
        fields = {}
        for name in names:
            if name not in FIELDS:
                raise ValueError(f"unknown syntax field {name!r}; synprep exports {', '.join(FIELDS)}")
            prefix = os.path.join(data_path, f"{split}.{src}-{tgt}.{src}.{name}")
            if not MMapIndexedDataset.exists(prefix):
                if self.cfg.syntax_fields:
                    raise FileNotFoundError(f"syntax field {name}: {prefix}.idx/.bin not found "
                                            f"(synprep export --format fairseq writes them)")
                continue
            ds = TypedMMapDataset(prefix)
            if len(ds) != len(pairs):
                raise ValueError(f"{prefix}: {len(ds)} items for {len(pairs)} sentence pairs")
            shift = {"T+1": 0, "T": 1}.get(FIELDS[name])
            if shift is not None and not np.array_equal(ds.sizes + shift, pairs.src_sizes):
                raise ValueError(f"{prefix}: lengths do not match the source tokens ({FIELDS[name]} per pair)")
            fields[name] = ds
        self.datasets[split] = SyntaxPairDataset(pairs, fields, left_pad=self.cfg.left_pad_source)
        self.datasets[split].into_net_input = self.model_reads_syntax


# the model (--arch synprep_*), written beside this file by the export
if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.py")):
    importlib.import_module(f"{__name__}.model")
