"""``synprep export --format factors``: token-parallel factor files (sockeye ``--source-factors``, OpenNMT-py ``src_feats``).

Per split, line k of every file belongs to pair k, and the factor files have exactly one label per
source piece (the BPE pieces of ``SPLIT.SRC``, no ``</s>``; sockeye and OpenNMT-py add their own):

================== =====================================================================================
file               content
================== =====================================================================================
SPLIT.SRC          source BPE pieces (Moses-escaped, ``@@`` markers), space-separated, as segmented
                   (the folder's ``text/SPLIT.bpe.SRC``; never ``<unk>`` for a piece outside dict.txt)
SPLIT.TGT          target BPE pieces
SPLIT.SRC.deprel   the UD relation of the piece's word (``nsubj``, ``root``, …)
SPLIT.SRC.upos     the UPOS tag of the piece's word
SPLIT.SRC.headdir  where the word's head is: ``L`` (left), ``R`` (right), ``ROOT``
SPLIT.SRC.bpos     the piece's position in its word: ``B`` first, ``I`` inside, ``E`` last, ``S`` the whole word
SPLIT.SRC.parent   head word minus the piece's word, in words (``-2``, ``+1``; ``0`` for the root)
SPLIT.lines        the 1-based line of the pair in the split's original input
================== =====================================================================================

A folder that keeps no text (``annotate``, ``shard``) gives its pieces only where every id is in
``dict.txt`` (the ids' symbols are the pieces there): a split with ``<unk>`` ids is refused
(:func:`known_pieces`), since a text file cannot say that a piece is not known.

With the same language on both sides (``-s en -t en``) ``SRC``/``TGT`` are ``en_src``/``en_tgt``
(:func:`synprep.export.base.side_names`): ``train.en_src`` and its factor files ``train.en_src.deprel``
…, ``train.en_tgt`` the target.

sockeye: ``sockeye-train --source SPLIT.SRC --source-factors SPLIT.SRC.deprel SPLIT.SRC.upos …``;
OpenNMT-py 2.x: ``src_feats: {deprel: SPLIT.SRC.deprel, …}`` in the data config.

``--factors-style onmt3`` writes the layout OpenNMT-py 3.x reads instead (its ``parse_features`` in
onmt/inputters/text_utils.py): no factor files, each source piece carries its factors inline,
``piece￨deprel￨upos￨headdir￨bpos￨parent`` (U+FFE8, :data:`ONMT_FEATS_SEPARATOR`; the order of
:data:`FACTORS`), and ``DEST/onmt3.yaml`` is the data configuration that trains on it
(``n_src_feats: 5``, the ``inferfeats`` transform OpenNMT-py requires with features; paths
relative to DEST): ``cd DEST; onmt_build_vocab -config onmt3.yaml -n_sample -1; onmt_train -config
onmt3.yaml …``. A piece holding U+FFE8 is refused (OpenNMT-py would cut it there).
"""

from __future__ import annotations

import json
import os

import numpy as np

from synprep.errors import ConfigError, InputError
from synprep.export.base import Exporter, ExportRecord, Unit, UnitFiles
from synprep.export.columns import ShardBlock
from synprep.export.text import SplitPieces
from synprep.textio import atomic_write

#: the layout's version
FACTORS_FORMAT_VERSION = 2
#: the factor files, in the order sockeye's --source-factors is documented with
FACTORS = ("deprel", "upos", "headdir", "bpos", "parent")
#: the layouts (``--factors-style``): one file per factor, or the factors inline (OpenNMT-py 3.x)
STYLES = ("files", "onmt3")
#: OpenNMT-py 3.x's feature separator, U+FFE8 (``parse_features`` in onmt/inputters/text_utils.py)
ONMT_FEATS_SEPARATOR = "\uffe8"
#: the OpenNMT-py 3.x data configuration an ``onmt3`` export writes
ONMT_CONFIG = "onmt3.yaml"


def piece_factors(block: ShardBlock) -> dict[str, np.ndarray]:
    """Every factor of every piece of the shard: ``{factor: (ΣT,) str array}`` (see the module table)."""
    gw = block.global_word()
    wpo = block.word_piece_offsets()
    word_pair = block.owner("word")
    local_word = np.arange(int(block.offsets["word"][-1])) - block.offsets["word"][:-1][word_pair]
    heads = block.data["heads"].astype(np.int64)
    offset = np.where(heads > 0, heads - 1 - local_word, 0)
    deprels = np.array(block.attrs["deprel_labels"], dtype=object)
    upos = np.array(block.attrs["upos_labels"], dtype=object)
    headdir = np.where(heads == 0, "ROOT", np.where(offset < 0, "L", "R")).astype(object)
    parent = np.array([f"{o:+d}" if o else "0" for o in offset.tolist()], dtype=object)
    pos = np.arange(gw.size)
    first, last = pos == wpo[:-1][gw], pos == wpo[1:][gw] - 1
    bpos = np.where(first & last, "S", np.where(first, "B", np.where(last, "E", "I"))).astype(object)
    return {"deprel": deprels[block.data["deprel"].astype(np.int64)][gw],
            "upos": upos[block.data["upos"].astype(np.int64)][gw],
            "headdir": headdir[gw], "bpos": bpos, "parent": parent[gw]}


def known_pieces(block: ShardBlock, split_pieces: SplitPieces) -> tuple[list[list[str]], list[list[str]]]:
    """(source, target): the pieces of every pair of ``block`` (:class:`~synprep.export.text.SplitPieces`).

    Raises:
        InputError: a pair whose pieces are not known (the folder keeps no text and the pair has a
            piece outside ``dict.txt``), or a piece file that is not the shards'.
    """
    pieces = split_pieces.pairs(block)
    n_src, n_tgt = pieces.unknown()
    if n_src or n_tgt:
        n = sum(s is None or t is None for s, t in zip(pieces.src, pieces.tgt, strict=True))
        raise InputError(f"{n} of {block.n} pairs have pieces outside dict.txt (<unk>) and the folder keeps no text of "
                         f"them (source side: {n_src}, target side: {n_tgt}): a factor file would hold <unk> in place "
                         f"of their pieces; export the synprep pipeline folder of this split (its text/ keeps the "
                         f"pieces), or use --format hf (null for those pieces) or fairseq (ids)", block.name)
    return [p for p in pieces.src if p is not None], [p for p in pieces.tgt if p is not None]


def _lines(tokens: np.ndarray, offsets: np.ndarray) -> str:
    return "".join(" ".join(tokens[a:b].tolist()) + "\n" for a, b in zip(offsets[:-1], offsets[1:], strict=True))


class FactorsExporter(Exporter):
    """Token-parallel text: pieces and one label per piece per factor, in one file per factor
    (``factors_style`` ``files``, the default) or inline (``onmt3``: OpenNMT-py 3.x, module docstring).

    Raises:
        ConfigError: a ``factors_style`` other than ``files`` or ``onmt3``.
    """

    name = "factors"
    version = FACTORS_FORMAT_VERSION
    options = ("factors_style",)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.style = str(ctx.options.get("factors_style") or "files")
        if self.style not in STYLES:
            raise ConfigError(f"--factors-style must be one of {', '.join(STYLES)}, got {self.style!r}")

    def signature(self) -> str:
        """The base signature; ``|export:factors-onmt3-vN`` for the inline layout (another export's files)."""
        if self.style == "files":
            return super().signature()
        return f"{self.ctx.manifest.signature}|export:{self.name}-{self.style}-v{self.version}"

    def usage(self) -> str | None:
        if self.style != "onmt3":
            return None
        return (f"train with OpenNMT-py 3.x from {self.ctx.dest}: onmt_build_vocab -config {ONMT_CONFIG} -n_sample -1; "
                f"onmt_train -config {ONMT_CONFIG} (plus the model's options)")

    def write_unit(self, unit: Unit, files: UnitFiles) -> int:
        src, tgt = self.ctx.sides
        names = {"src": f"{unit.split}.{src}", "tgt": f"{unit.split}.{tgt}", "lines": f"{unit.split}.lines"}
        if self.style == "files":
            names.update({f: f"{unit.split}.{src}.{f}" for f in FACTORS})
        outs = {key: files.path(name).open("w", encoding="utf-8", newline="\n") for key, name in names.items()}
        split_pieces = SplitPieces(self.ctx.source, self.ctx.manifest.config, unit.split, self.ctx.vocab)
        pairs = 0
        try:
            for reader in self.ctx.readers(unit):
                block = ShardBlock.read(reader)
                src_pieces, tgt_pieces = known_pieces(block, split_pieces)
                factors = piece_factors(block)
                if self.style == "onmt3":
                    outs["src"].write(_lines(inline_factors(block, src_pieces, factors), block.offsets["src"]))
                else:
                    outs["src"].write("".join(" ".join(p) + "\n" for p in src_pieces))
                    for factor, labels in factors.items():
                        outs[factor].write(_lines(labels, block.offsets["src"]))
                outs["tgt"].write("".join(" ".join(p) + "\n" for p in tgt_pieces))
                outs["lines"].write("".join(f"{n}\n" for n in block.lines.tolist()))
                pairs += block.n
            for f in outs.values():
                f.flush()
                os.fsync(f.fileno())
        finally:
            for f in outs.values():
                f.close()
        return pairs

    def finish(self, record: ExportRecord) -> None:
        if self.style == "onmt3":
            with atomic_write(self.ctx.dest / ONMT_CONFIG) as f:
                f.write(onmt3_config(record.splits(), *self.ctx.sides))


def inline_factors(block: ShardBlock, src_pieces: list[list[str]], factors: dict[str, np.ndarray]) -> np.ndarray:
    """``(ΣT,)``: each source piece with its factors, ``piece￨deprel￨upos￨headdir￨bpos￨parent``
    (:data:`ONMT_FEATS_SEPARATOR`, the order of :data:`FACTORS`).

    Raises:
        InputError: a piece holding the separator (OpenNMT-py would cut it there): names the shard
            and the pair's line.
    """
    flat = np.array([p for pieces in src_pieces for p in pieces], dtype=object)
    bad = [k for k, pieces in enumerate(src_pieces) if any(ONMT_FEATS_SEPARATOR in p for p in pieces)]
    if bad:
        piece = next(p for p in src_pieces[bad[0]] if ONMT_FEATS_SEPARATOR in p)
        raise InputError(f"the pair of line {int(block.lines[bad[0]])} has the piece {piece!r}, which holds OpenNMT-py's "
                         f"feature separator U+FFE8 (pairs of the shard with such a piece: {len(bad)}): OpenNMT-py 3.x would cut it "
                         f"there; export with --factors-style files", block.name)
    for factor in FACTORS:
        flat = flat + ONMT_FEATS_SEPARATOR + factors[factor]
    return flat


def onmt3_config(splits: list[str], src: str, tgt: str) -> str:
    """``DEST/onmt3.yaml``: the OpenNMT-py 3.x data configuration of an ``onmt3`` export of ``splits``
    (the train split as a training corpus, the valid split as ``valid``; paths relative to DEST)."""
    data = [f"  {'valid' if split == 'valid' else 'corpus_' + split}:\n    path_src: {json.dumps(f'{split}.{src}')}\n"
            f"    path_tgt: {json.dumps(f'{split}.{tgt}')}\n    transforms: [inferfeats]\n"
            for split in splits if split in ("train", "valid")]
    others = [s for s in splits if s not in ("train", "valid")]
    return "".join([
        "# OpenNMT-py 3.x data configuration of this synprep export (--format factors --factors-style onmt3).\n",
        "# Run from this folder: onmt_build_vocab -config onmt3.yaml -n_sample -1\n",
        "#                       onmt_train -config onmt3.yaml   (plus the model's and the run's options)\n",
        f"# Source lines: {' '.join(['piece', *FACTORS])} joined by U+FFE8, one value of each factor per piece\n",
        "# (already per piece). OpenNMT-py requires the inferfeats transform with n_src_feats; with no\n",
        "# tokenization transform before it, it keeps each piece's values as they are.\n",
        *([f"# Not trained on: {', '.join(others)} (onmt_translate -config onmt3.yaml -src SPLIT.{src} ...).\n"]
          if others else []),
        "save_data: onmt3\n",
        "src_vocab: onmt3/vocab.src\n",
        "tgt_vocab: onmt3/vocab.tgt\n",
        f"n_src_feats: {len(FACTORS)}\n",
        "data:\n" if data else "# data: no train or valid split exported\n",
        *data,
    ])
