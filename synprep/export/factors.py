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
"""

from __future__ import annotations

import os

import numpy as np

from synprep.errors import InputError
from synprep.export.base import Exporter, Unit, UnitFiles
from synprep.export.columns import ShardBlock
from synprep.export.text import SplitPieces

#: the layout's version
FACTORS_FORMAT_VERSION = 2
#: the factor files, in the order sockeye's --source-factors is documented with
FACTORS = ("deprel", "upos", "headdir", "bpos", "parent")


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
    """Token-parallel text: pieces and one label per piece per factor."""

    name = "factors"
    version = FACTORS_FORMAT_VERSION

    def write_unit(self, unit: Unit, files: UnitFiles) -> int:
        src, tgt = self.ctx.sides
        names = {"src": f"{unit.split}.{src}", "tgt": f"{unit.split}.{tgt}", "lines": f"{unit.split}.lines",
                 **{f: f"{unit.split}.{src}.{f}" for f in FACTORS}}
        outs = {key: files.path(name).open("w", encoding="utf-8", newline="\n") for key, name in names.items()}
        split_pieces = SplitPieces(self.ctx.source, self.ctx.manifest.config, unit.split, self.ctx.vocab)
        pairs = 0
        try:
            for reader in self.ctx.readers(unit):
                block = ShardBlock.read(reader)
                src_pieces, tgt_pieces = known_pieces(block, split_pieces)
                outs["src"].write("".join(" ".join(p) + "\n" for p in src_pieces))
                outs["tgt"].write("".join(" ".join(p) + "\n" for p in tgt_pieces))
                outs["lines"].write("".join(f"{n}\n" for n in block.lines.tolist()))
                for factor, labels in piece_factors(block).items():
                    outs[factor].write(_lines(labels, block.offsets["src"]))
                pairs += block.n
            for f in outs.values():
                f.flush()
                os.fsync(f.fileno())
        finally:
            for f in outs.values():
                f.close()
        return pairs
