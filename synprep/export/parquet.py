"""``synprep export --format parquet|hf``: one Parquet file per shard, one row per pair (docs/export.md).

Loadable with plain ``pyarrow`` and with HuggingFace ``datasets``
(``load_dataset("parquet", data_files=…)``, or ``load_dataset(DEST)`` through the dataset card's
``configs``): the schema metadata carries the ``datasets`` features (so ``deprel``, ``upos`` and
``ldd.rel`` load as ``ClassLabel`` with the shard's label names), and a ``synprep`` entry with the
signature line, the export format version and the shard config. Every column of a shard is built in
one vectorised Arrow pass (no Python loop per pair).

Columns (T pieces, W words, S sentences, K LDD entries of the pair; docs/FORMAT.md index bases):

=============== ========================== ===========================================================
column          type                       meaning
=============== ========================== ===========================================================
line            int64                      1-based line of the pair in the split's original input
translation     {SRC: str, TGT: str}       the tokenized pair (HF ``Translation``; keys: the side names
                                           of :func:`~synprep.export.base.side_names`, ``en_src``/
                                           ``en_tgt`` for an en→en folder): the text the pieces were
                                           made from, Moses escapes undone, lowercased if the
                                           signature says ``lc:yes`` (:mod:`synprep.export.text`)
src_words       list<str> (W)              the words the parser read, as it read them (cased)
src_pieces      list<str> (T)              the BPE pieces (Moses-escaped, ``@@`` markers), no ``</s>``, as
                                           segmented (:class:`~synprep.export.text.SplitPieces`: a
                                           piece outside ``dict.txt`` is itself, its id ``<unk>``);
                                           null where the folder keeps no text and the side has an
                                           ``<unk>`` id
src_ids         list<int32> (T)            their ids in ``dict.txt`` (fairseq order)
tgt_pieces      list<str> (U)              target pieces. tgt_ids: list<int32> (U)
word_index      list<int32> (T)            0-based word of each piece
heads           list<int32> (W)            1-based head word, 0 = root
deprel, upos    list<ClassLabel> (W)       UD relation / UPOS (names in the features)
sent_start      list<int32> (S)            0-based first word of each sentence
gaps_cnf/_nary  list<int16> (T-1)          piece-level syntactic distances (SPEC.md §2)
parents         list<float32> (T)          PASCAL mean parent position, 0-based piece (SPEC.md §4)
ldd             list<{dep, head, rel, prob}> (K)  LDD entries: 1-based dependent and head (0 = root),
                                           ClassLabel relation, float32 probability
=============== ========================== ===========================================================
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from synprep.errors import ConfigError, InputError
from synprep.export.base import Exporter, ExportRecord, Unit, UnitFiles
from synprep.export.columns import ShardBlock
from synprep.export.text import PairText, SplitPieces, SplitText
from synprep.subword import DEFAULT_SCHEME, scheme_class
from synprep.textio import atomic_write

#: the Parquet layout's version (schema metadata ``synprep.format_version``)
PARQUET_FORMAT_VERSION = 2
#: zstd: ~2x smaller than snappy on these columns at a similar write speed
COMPRESSION = "zstd"


def _value(dtype: str) -> dict[str, Any]:
    return {"dtype": dtype, "_type": "Value"}


def _list(feature: dict[str, Any]) -> dict[str, Any]:
    return {"feature": feature, "_type": "List"}


def _labels(names: list[str]) -> dict[str, Any]:
    return {"names": list(names), "_type": "ClassLabel"}


def hf_features(src_lang: str, tgt_lang: str, deprels: list[str], upos: list[str]) -> dict[str, Any]:
    """The ``datasets`` features of the table, as ``datasets.Features.to_dict()`` writes them (datasets >= 4).

    ``src_lang``/``tgt_lang`` are the ``translation`` keys: the side names of
    :func:`synprep.export.base.side_names` (``en_src``/``en_tgt`` for an en→en folder).
    """
    return {
        "line": _value("int64"),
        "translation": {"languages": sorted([src_lang, tgt_lang]), "_type": "Translation"},
        "src_words": _list(_value("string")),
        "src_pieces": _list(_value("string")),
        "src_ids": _list(_value("int32")),
        "tgt_pieces": _list(_value("string")),
        "tgt_ids": _list(_value("int32")),
        "word_index": _list(_value("int32")),
        "heads": _list(_value("int32")),
        "deprel": _list(_labels(deprels)),
        "upos": _list(_labels(upos)),
        "sent_start": _list(_value("int32")),
        "gaps_cnf": _list(_value("int16")),
        "gaps_nary": _list(_value("int16")),
        "parents": _list(_value("float32")),
        "ldd": _list({"dep": _value("int32"), "head": _value("int32"), "rel": _labels(deprels),
                      "prob": _value("float32")}),
    }


def _unescape(arr: Any) -> Any:
    """Moses escapes undone with sacremoses' own table (its regexes, in its order), on the strings holding ``&`` only."""
    import pyarrow.compute as pc
    from sacremoses import MosesDetokenizer

    mask = pc.match_substring(arr, "&")
    if not pc.any(mask).as_py():
        return arr
    sub = arr.filter(mask)
    for regexp, substitution in MosesDetokenizer.MOSES_UNESCAPE_XML_REGEXES:
        sub = pc.replace_substring_regex(sub, pattern=regexp.pattern, replacement=substitution)
    return pc.replace_with_mask(arr, mask, sub)


def _unbpe(arr: Any) -> Any:
    """subword-nmt's ``sed -r 's/(@@ )|(@@ ?$)//g'`` on each string."""
    import pyarrow.compute as pc

    arr = pc.replace_substring(arr, pattern="@@ ", replacement="")
    mask = pc.ends_with(arr, "@@")
    if not pc.any(mask).as_py():
        return arr
    return pc.replace_with_mask(arr, mask, pc.replace_substring_regex(arr.filter(mask), pattern="@@$", replacement=""))


def _piece_lists(pieces: list[list[str] | None]) -> Any:
    """``list<string>`` of the pairs' pieces, null where they are not known."""
    import pyarrow as pa

    return pa.array(pieces, pa.list_(pa.string()))


class ParquetExporter(Exporter):
    """One ``data/SPLIT-NNNNN-of-MMMMM.parquet`` per shard, a ``README.md`` dataset card beside."""

    name = "parquet"
    version = PARQUET_FORMAT_VERSION
    requires = ("pyarrow",)
    per_shard = True

    def __init__(self, ctx):
        super().__init__(ctx)
        import pyarrow as pa

        vocab = ctx.vocab
        symbols = [vocab[i] for i in range(len(vocab))]
        self._pieces = pa.array(symbols, pa.string())
        self._stripped = pa.array([s[:-2] if s.endswith("@@") else s for s in symbols], pa.string())
        self._labels: tuple[list[str], list[str]] | None = None
        self._text: dict[str, SplitText] = {}
        self._split_piece_files: dict[str, SplitPieces] = {}

    def _split_text(self, split: str) -> SplitText:
        if split not in self._text:
            self._text[split] = SplitText(self.ctx.source, self.ctx.manifest.config, split)
        return self._text[split]

    def _split_pieces(self, split: str) -> SplitPieces:
        if split not in self._split_piece_files:
            self._split_piece_files[split] = SplitPieces(self.ctx.source, self.ctx.manifest.config, split,
                                                         self.ctx.vocab)
        return self._split_piece_files[split]

    def usage(self) -> str:
        return f"load with: datasets.load_dataset({str(self.ctx.dest)!r})"

    @staticmethod
    def file_name(unit: Unit) -> str:
        return f"data/{unit.split}-{unit.index:05d}-of-{unit.n_shards:05d}.parquet"

    def _check_labels(self, block: ShardBlock) -> tuple[list[str], list[str]]:
        scheme = block.attrs.get("subword", DEFAULT_SCHEME)
        if not scheme_class(scheme).bpe_markers:  # words and text are rebuilt from ``@@``-marked pieces only
            raise ConfigError(f"{block.name}: the parquet/hf export rebuilds words from subword-nmt BPE pieces; "
                              f"these are {scheme!r} pieces (export them with --format fairseq or factors)")
        labels = (list(block.attrs["deprel_labels"]), list(block.attrs["upos_labels"]))
        if self._labels is None:
            self._labels = labels
        elif labels != self._labels:
            raise InputError("its deprel/upos label lists differ from the other shards'; export them apart",
                             block.name)
        return labels

    def table(self, block: ShardBlock) -> Any:
        """The shard as a ``pyarrow.Table`` (schema metadata included).

        Raises:
            InputError: an id outside the vocabulary, or label lists that differ from the other shards'.
            ConfigError: a shard whose pieces are not subword-nmt BPE pieces (``@@`` markers).
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        deprels, upos = self._check_labels(block)
        d, off = block.data, {k: pa.array(v.astype(np.int32)) for k, v in block.offsets.items()}

        def lst(axis: str, values: Any) -> Any:
            return pa.ListArray.from_arrays(off[axis], values)

        def ints(name: str, dtype: Any = np.int32) -> Any:
            return pa.array(d[name].astype(dtype))

        src_ids, tgt_ids = d["src_ids"].astype(np.int64), d["tgt_ids"].astype(np.int64)
        if src_ids.size and src_ids.max() >= len(self._pieces) or tgt_ids.size and tgt_ids.max() >= len(self._pieces):
            raise InputError("an id is outside the vocabulary (run synprep check)", block.name)
        tgt_pieces = self._pieces.take(pa.array(tgt_ids))
        split = str(block.attrs["split"])
        pieces = self._split_pieces(split).pairs(block)  # as segmented: the ids' symbols hold <unk>
        wpo = pa.array(block.word_piece_offsets().astype(np.int32))
        words = _unescape(pc.binary_join(pa.ListArray.from_arrays(wpo, self._stripped.take(pa.array(src_ids))), ""))
        src_words = lst("word", words)
        src_text = pc.binary_join(src_words, " ")
        tgt_text = _unescape(_unbpe(pc.binary_join(lst("tgt", tgt_pieces), " ")))
        true = self._split_text(split).pairs(
            block, lambda: PairText(src_words.to_pylist(), src_text.to_pylist(), tgt_text.to_pylist()))
        if true is not None:  # the text files' text (the pieces' text holds <unk> or is lowercased)
            src_words = pa.array(true.words, pa.list_(pa.string()))
            src_text, tgt_text = pa.array(true.src, pa.string()), pa.array(true.tgt, pa.string())
        side_src, side_tgt = self.ctx.sides
        langs = {side_src: src_text, side_tgt: tgt_text}
        translation = pa.StructArray.from_arrays([langs[k] for k in sorted(langs)], names=sorted(langs))
        ldd = pa.StructArray.from_arrays(
            [ints("ldd_dep"), ints("ldd_head"), ints("ldd_rel", np.int64), pa.array(d["ldd_prob"].astype(np.float32))],
            names=["dep", "head", "rel", "prob"])
        columns = {
            "line": pa.array(block.lines.astype(np.int64)),
            "translation": translation,
            "src_words": src_words,
            "src_pieces": _piece_lists(pieces.src),
            "src_ids": lst("src", ints("src_ids")),
            "tgt_pieces": _piece_lists(pieces.tgt),
            "tgt_ids": lst("tgt", ints("tgt_ids")),
            "word_index": lst("src", ints("word_index")),
            "heads": lst("word", ints("heads")),
            "deprel": lst("word", ints("deprel", np.int64)),
            "upos": lst("word", ints("upos", np.int64)),
            "sent_start": lst("sent", ints("sent_start")),
            "gaps_cnf": lst("gap", ints("gaps_cnf", np.int16)),
            "gaps_nary": lst("gap", ints("gaps_nary", np.int16)),
            "parents": lst("src", pa.array(block.mean_parents())),
            "ldd": lst("ldd", ldd),
        }
        features = hf_features(*self.ctx.sides, deprels, upos)
        meta = {"format": "synprep-parquet", "format_version": PARQUET_FORMAT_VERSION, "signature": self.signature(),
                "config": self.ctx.manifest.config, "split": block.attrs["split"], "shard": block.name}
        table = pa.Table.from_pydict(columns)
        return table.replace_schema_metadata({
            # key order matters: datasets matches struct fields by position against the Arrow schema
            "huggingface": json.dumps({"info": {"features": features}}),
            "synprep": json.dumps(meta, sort_keys=True, ensure_ascii=False)})

    def write_unit(self, unit: Unit, files: UnitFiles) -> int:
        import pyarrow.parquet as pq

        (reader,) = list(self.ctx.readers(unit))
        block = ShardBlock.read(reader)
        table = self.table(block)
        with files.open(self.file_name(unit)) as f:
            pq.write_table(table, f, compression=COMPRESSION)
        return block.n

    def finish(self, record: ExportRecord) -> None:
        labels = self._labels
        if labels is None:  # every unit was skipped (a re-run): the labels of the verified shards the files hold
            labels = next(((list(r.attrs["deprel_labels"]), list(r.attrs["upos_labels"]))
                           for readers in self.ctx.split_readers.values() for r in readers), None)
        with atomic_write(self.ctx.dest / "README.md") as f:
            f.write(dataset_card(record, labels))


def dataset_card(record: ExportRecord, labels: tuple[list[str], list[str]] | None) -> str:
    """The ``README.md`` beside the Parquet files: HF metadata (configs, languages) and what the columns mean."""
    splits = record.splits()
    head = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split in splits:
        head += [f"  - split: {split}", f"    path: data/{split}-*"]
    head += ["task_categories:", "- translation", "language:",
             *(f"- {lang}" for lang in dict.fromkeys([record.src_lang, record.tgt_lang])),
             "tags:", "- synprep", "- syntax", "- dependency-parsing", "---", ""]
    counts = "\n".join(f"| {s} | {record.pairs(s)} |" for s in splits)
    deprels, upos = labels or ([], [])
    body = f"""# synprep export: {record.src_lang}→{record.tgt_lang} with source-side syntax

Sentence pairs with the syntax of the source sentence (dependency heads and relations, UPOS,
syntactic distances, PASCAL parent positions, labeled dependency distributions), aligned to the BPE
pieces, exported from synprep shards. One row per pair.

```python
from datasets import load_dataset
ds = load_dataset("parquet", data_files={{"train": "data/train-*.parquet"}})   # or load_dataset(THIS_FOLDER)
```

| split | pairs |
|---|---|
{counts}

## Columns

| column | type | meaning |
|---|---|---|
| `line` | int64 | 1-based line of the pair in the split's original input |
| `translation` | Translation | the tokenized pair (keys {", ".join(f"`{k}`" for k in record.sides or [record.src_lang, record.tgt_lang])}): the text the pieces were made from, escapes undone (lowercased if the signature says `lc:yes`) |
| `src_words` | list of string (W) | the source words the parser read, as it read them (cased) |
| `src_pieces`, `src_ids` | list (T) | BPE pieces and their `dict.txt` ids (fairseq order: `<s>`=0 `<pad>`=1 `</s>`=2 `<unk>`=3), no `</s>`; a piece outside `dict.txt` is itself here and `<unk>` (3) in the ids; the pieces are null where the exported folder kept no text of a pair with such a piece |
| `tgt_pieces`, `tgt_ids` | list (U) | the same for the target |
| `word_index` | list of int32 (T) | 0-based word of each source piece |
| `heads` | list of int32 (W) | 1-based head word, 0 = root |
| `deprel` | list of ClassLabel (W) | UD relation ({len(deprels)} names) |
| `upos` | list of ClassLabel (W) | universal POS ({len(upos)} names) |
| `sent_start` | list of int32 (S) | 0-based first word of each sentence of the line |
| `gaps_cnf`, `gaps_nary` | list of int16 (T-1) | syntactic distance between consecutive pieces: 1 inside a word, d+1 between words, 999 between sentences |
| `parents` | list of float32 (T) | PASCAL mean parent position (0-based piece) |
| `ldd` | list of struct (K) | labeled dependency distribution: `dep` (1-based), `head` (1-based, 0 = root), `rel` (ClassLabel), `prob` |

Word-level fields (`src_words`, `heads`, `deprel`, `upos`) are meant for re-tokenizing with another
model's tokenizer; `word_index` maps the pieces to them.

## Provenance

Signature (everything that determined the data):

```
{record.signature}
```

Configuration:

```json
{json.dumps(record.config, sort_keys=True, indent=2, ensure_ascii=False)}
```

Made with [synprep](https://github.com/synprep/synprep); the features follow the papers listed in
synprep's docs/cite.md.
"""
    return "\n".join(head) + body
