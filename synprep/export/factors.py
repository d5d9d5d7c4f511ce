"""``synprep export --format factors``: token-parallel factor files (sockeye ``--source-factors``, OpenNMT-py ``src_feats``).

Per split, line k of every file belongs to pair k, and the factor files have exactly one label per
source piece (the BPE pieces of ``SPLIT.SRC``, no ``</s>``; sockeye and OpenNMT-py add their own):

================== =====================================================================================
file               content
================== =====================================================================================
SPLIT.SRC          source BPE pieces (Moses-escaped, ``@@`` markers), space-separated
SPLIT.TGT          target BPE pieces
SPLIT.SRC.deprel   the UD relation of the piece's word (``nsubj``, ``root``, …)
SPLIT.SRC.upos     the UPOS tag of the piece's word
SPLIT.SRC.headdir  where the word's head is: ``L`` (left), ``R`` (right), ``ROOT``
SPLIT.SRC.bpos     the piece's position in its word: ``B`` first, ``I`` inside, ``E`` last, ``S`` the whole word
SPLIT.SRC.parent   head word minus the piece's word, in words (``-2``, ``+1``; ``0`` for the root)
SPLIT.lines        the 1-based line of the pair in the split's original input
================== =====================================================================================

With the same language on both sides (``-s en -t en``) ``SRC``/``TGT`` are ``en_src``/``en_tgt``
(:func:`synprep.export.base.side_names`): ``train.en_src`` and its factor files ``train.en_src.deprel``
…, ``train.en_tgt`` the target.

sockeye: ``sockeye-train --source SPLIT.SRC --source-factors SPLIT.SRC.deprel SPLIT.SRC.upos …``;
OpenNMT-py 2.x: ``src_feats: {deprel: SPLIT.SRC.deprel, …}`` in the data config.
"""

from __future__ import annotations

import os

import numpy as np

from synprep.export.base import Exporter, Unit, UnitFiles
from synprep.export.columns import ShardBlock

#: the layout's version
FACTORS_FORMAT_VERSION = 1
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


def _lines(tokens: np.ndarray, offsets: np.ndarray) -> str:
    return "".join(" ".join(tokens[a:b].tolist()) + "\n" for a, b in zip(offsets[:-1], offsets[1:], strict=True))


class FactorsExporter(Exporter):
    """Token-parallel text: pieces and one label per piece per factor."""

    name = "factors"
    version = FACTORS_FORMAT_VERSION

    def __init__(self, ctx):
        super().__init__(ctx)
        vocab = ctx.vocab
        self.symbols = np.array([vocab[i] for i in range(len(vocab))], dtype=object)

    def write_unit(self, unit: Unit, files: UnitFiles) -> int:
        src, tgt = self.ctx.sides
        names = {"src": f"{unit.split}.{src}", "tgt": f"{unit.split}.{tgt}", "lines": f"{unit.split}.lines",
                 **{f: f"{unit.split}.{src}.{f}" for f in FACTORS}}
        outs = {key: files.path(name).open("w", encoding="utf-8", newline="\n") for key, name in names.items()}
        pairs = 0
        try:
            for reader in self.ctx.readers(unit):
                block = ShardBlock.read(reader)
                outs["src"].write(_lines(self.symbols[block.data["src_ids"].astype(np.int64)], block.offsets["src"]))
                outs["tgt"].write(_lines(self.symbols[block.data["tgt_ids"].astype(np.int64)], block.offsets["tgt"]))
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
