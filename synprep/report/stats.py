"""The numbers of one split, collected shard by shard through the verified reader.

:func:`split_stats` opens the split with :func:`synprep.shards.reader.open_split` (``verify=True``:
the shards are checked against ``manifest.json``; a damaged folder is an :class:`InputError`), then
reads one shard at a time with one read per dataset (:func:`~synprep.shards.reader.shard_arrays`),
adds its counts to fixed-size counters (:mod:`synprep.report.hist`) and releases it: memory is one
shard's arrays plus counters whose size does not depend on the corpus (the vocabulary's "seen" flags:
one byte per vocabulary entry). Everything is computed with numpy over the whole shard; only the
non-projectivity test loops over sentences.

Conventions (docs/FORMAT.md): heads are 1-based line-level word indices (0 = root), ``sent_start``
0-based first word of each sentence, gaps ``(T-1,)`` between pieces (999 between sentences).
Tree depth counts words on the path to the root (the root word has depth 1); dependency length is
``|head - dependent|`` in words; LDD entropy is in bits over the stored entries (entries below the
folder's ``ldd_threshold`` are not stored, so a one-hot parse has entropy 0).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from synprep.constants import GAP_MODES, GAP_SENTENCE, UNK_ID
from synprep.escape import unescape
from synprep.report.hist import FloatHist, IntHist
from synprep.shards.manifest import Manifest
from synprep.shards.reader import open_split, shard_arrays
from synprep.subword import scheme_class
from synprep.types import DEPRELS, UPOS_TAGS

#: bins of the length histograms (longer values are counted in one overflow bin)
LENGTH_CAP = 200
DEP_LENGTH_CAP = 40
DEPTH_CAP = 30
GAP_CAP = 30
SENTS_CAP = 10
PIECES_PER_WORD_CAP = 10
#: a sentence of at least this many words whose every word hangs on its root word counts as flat
FLAT_MIN_WORDS = 4
#: dropped lines shown per reason
DROP_EXAMPLES = 3


def word_start_flags(symbols: list[str], scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """Per vocabulary id: ``(continues, starts)`` bool arrays of the subword scheme's word markers.

    bpe: a piece ending in ``@@`` continues into the next one; spm: a piece starting with ``▁``
    starts a word; hf (byte-level BPE): ``Ġ`` or ``▁`` starts one. Used to count target words.
    """
    cont = np.array([s.endswith("@@") for s in symbols], dtype=bool)
    starts = np.array([s.startswith(("\u2581", "\u0120")) for s in symbols], dtype=bool)
    if scheme_class(scheme).bpe_markers:
        starts[:] = False
    return cont, starts


def words_per_pair(ids: np.ndarray, off: np.ndarray, cont: np.ndarray, starts: np.ndarray, scheme: str) -> np.ndarray:
    """``(N,)`` words of each pair's pieces by the scheme's markers (:func:`word_start_flags`)."""
    n = len(off) - 1
    lengths = np.diff(off)
    if not ids.size:
        return np.zeros(n, dtype=np.int64)
    ids = np.minimum(ids.astype(np.int64), len(cont) - 1)
    first = np.zeros(ids.size, dtype=bool)
    first[off[:-1][lengths > 0]] = True
    if scheme_class(scheme).bpe_markers:
        prev_cont = np.concatenate([[False], cont[ids[:-1]]])
        begin = first | ~prev_cont
    else:
        begin = first | starts[ids]
    pair = np.repeat(np.arange(n), lengths)
    return np.bincount(pair, weights=begin, minlength=n).astype(np.int64)


def depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every node of a forest given ``parent`` (index, -1 for a root): the root has depth 1.

    Pointer jumping (``O(n log depth)``); a cycle (never in a verified shard) stops after 64 rounds.
    """
    n = parent.size
    dist = (parent >= 0).astype(np.int64)
    up = np.where(parent >= 0, parent, np.arange(n))
    for _ in range(64):
        nxt = up[up]
        if np.array_equal(nxt, up):
            break
        dist = dist + np.where(up != np.arange(n), dist[up], 0)
        up = nxt
    return dist + 1


def crossing(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``(n,) bool``: arcs ``[lo, hi]`` that cross another arc (``lo_i < lo_j < hi_i < hi_j`` either way)."""
    a = (lo[:, None] < lo[None, :]) & (lo[None, :] < hi[:, None]) & (hi[:, None] < hi[None, :])
    return np.asarray(a.any(axis=1) | a.any(axis=0), dtype=bool)


class SplitStats:
    """Counters of one split (see the module docstring for the conventions)."""

    def __init__(self, name: str, vocab_size: int):
        self.name = name
        self.pairs = 0
        self.sentences = 0
        self.len = {"src_words": IntHist(LENGTH_CAP), "src_pieces": IntHist(LENGTH_CAP),
                    "tgt_words": IntHist(LENGTH_CAP), "tgt_pieces": IntHist(LENGTH_CAP)}
        self.pieces_per_word = IntHist(PIECES_PER_WORD_CAP)
        self.sents_per_line = IntHist(SENTS_CAP)
        self.sent_words = IntHist(LENGTH_CAP)
        self.unk = {"src": 0, "tgt": 0}
        self.seen = {"src": np.zeros(vocab_size, dtype=bool), "tgt": np.zeros(vocab_size, dtype=bool)}
        self.upos = np.zeros(len(UPOS_TAGS), dtype=np.int64)
        self.deprel = np.zeros(len(DEPRELS), dtype=np.int64)
        self.depth = IntHist(DEPTH_CAP)
        self.dep_length = IntHist(DEP_LENGTH_CAP)
        self.gaps = {"cnf": IntHist(GAP_CAP), "nary": IntHist(GAP_CAP)}
        self.sentence_gaps = 0
        self.nonproj_sentences = 0
        self.nonproj_arcs = 0
        self.arcs = 0
        self.flat_sentences = 0
        self.flat_eligible = 0
        self.ldd_entropy = FloatHist(0.0, 4.0, 40)
        self.ldd_entries = 0
        self.ldd_argmax_not_head = 0
        self.attrs: dict[str, Any] = {}

    # --- one shard ------------------------------------------------------------------------
    def add_shard(self, arrays: dict[str, np.ndarray], off: dict[str, np.ndarray], cont: np.ndarray,
                  starts: np.ndarray, scheme: str) -> None:
        n = len(off["src"]) - 1
        self.pairs += n
        t, u = np.diff(off["src"]), np.diff(off["tgt"])
        w, s = np.diff(off["word"]), np.diff(off["sent"])
        self.len["src_pieces"].add(t)
        self.len["tgt_pieces"].add(u)
        self.len["src_words"].add(w)
        self.len["tgt_words"].add(words_per_pair(arrays["tgt_ids"], off["tgt"], cont, starts, scheme))
        self.sents_per_line.add(s)
        self.sentences += int(s.sum())
        for side, key in (("src", "src_ids"), ("tgt", "tgt_ids")):
            ids = arrays[key].astype(np.int64)
            self.unk[side] += int(np.count_nonzero(ids == UNK_ID))
            self.seen[side][ids[ids < self.seen[side].size]] = True
        # pieces per word
        piece_pair = np.repeat(np.arange(n), t)
        gword = off["word"][:-1][piece_pair] + arrays["word_index"].astype(np.int64)
        total_words = int(off["word"][-1])
        self.pieces_per_word.add(np.bincount(gword, minlength=total_words))
        self.upos += np.bincount(np.minimum(arrays["upos"], len(UPOS_TAGS) - 1), minlength=len(UPOS_TAGS))
        self.deprel += np.bincount(np.minimum(arrays["deprel"], len(DEPRELS) - 1), minlength=len(DEPRELS))
        self._trees(arrays, off, n, w, s)
        self._gaps(arrays, off, n, t)
        self._ldd(arrays, off, n)

    def _trees(self, arrays: dict[str, np.ndarray], off: dict[str, np.ndarray], n: int, w: np.ndarray,
               s: np.ndarray) -> None:
        heads = arrays["heads"].astype(np.int64)
        word_pair = np.repeat(np.arange(n), w)
        base = off["word"][:-1][word_pair]
        parent = np.where(heads > 0, base + heads - 1, -1)
        d = depths(parent)
        sent_gstart = off["word"][:-1][np.repeat(np.arange(n), s)] + arrays["sent_start"].astype(np.int64)
        if not heads.size:
            return
        sent_of = np.searchsorted(sent_gstart, np.arange(heads.size), side="right") - 1
        n_sent = sent_gstart.size
        sent_len = np.bincount(sent_of, minlength=n_sent)
        self.sent_words.add(sent_len)
        sent_depth = np.zeros(n_sent, dtype=np.int64)
        np.maximum.at(sent_depth, sent_of, d)
        self.depth.add(sent_depth[sent_len > 0])
        local = np.arange(heads.size) - base + 1  # 1-based line-level position of each word
        nonroot = heads > 0
        self.arcs += int(nonroot.sum())
        self.dep_length.add(np.abs(heads[nonroot] - local[nonroot]))
        eligible = sent_len >= FLAT_MIN_WORDS
        self.flat_eligible += int(eligible.sum())
        self.flat_sentences += int((eligible & (sent_depth <= 2)).sum())
        # non-projective arcs: crossing another arc, the root's arc from just before the sentence included
        bounds = np.concatenate([np.flatnonzero(np.diff(sent_of)) + 1, [heads.size]])
        start = 0
        for end in bounds.tolist():
            if end - start > 2:
                pos = local[start:end]
                hd = heads[start:end]
                root_at = pos[0] - 1
                h = np.where(hd > 0, hd, root_at)
                lo, hi = np.minimum(pos, h), np.maximum(pos, h)
                cross = crossing(lo, hi)
                if cross.any():
                    self.nonproj_sentences += 1
                    self.nonproj_arcs += int(cross[hd > 0].sum())
            start = end

    def _gaps(self, arrays: dict[str, np.ndarray], off: dict[str, np.ndarray], n: int, t: np.ndarray) -> None:
        g = np.diff(off["gap"])
        gap_pair = np.repeat(np.arange(n), g)
        k = np.arange(int(off["gap"][-1])) - off["gap"][:-1][gap_pair]
        piece = off["src"][:-1][gap_pair] + k
        wi = arrays["word_index"].astype(np.int64)
        between = wi[piece + 1] != wi[piece] if piece.size else np.zeros(0, dtype=bool)
        for mode in GAP_MODES:
            v = arrays[f"gaps_{mode}"].astype(np.int64)[between]
            boundary = v >= GAP_SENTENCE
            if mode == "cnf":
                self.sentence_gaps += int(boundary.sum())
            self.gaps[mode].add(v[~boundary])

    def _ldd(self, arrays: dict[str, np.ndarray], off: dict[str, np.ndarray], n: int) -> None:
        k = np.diff(off["ldd"])
        if not int(k.sum()):
            return
        pair = np.repeat(np.arange(n), k)
        key = off["word"][:-1][pair] + arrays["ldd_dep"].astype(np.int64) - 1
        p = arrays["ldd_prob"].astype(np.float64)
        self.ldd_entries += int(p.size)
        nwords = int(off["word"][-1])
        plogp = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
        h = np.bincount(key, weights=plogp, minlength=nwords)
        has = np.bincount(key, minlength=nwords) > 0
        self.ldd_entropy.add(h[has])
        order = np.lexsort((-p, key))
        first = order[np.concatenate([[True], key[order][1:] != key[order][:-1]])]
        heads = arrays["heads"].astype(np.int64)
        self.ldd_argmax_not_head += int(np.count_nonzero(arrays["ldd_head"].astype(np.int64)[first] != heads[key[first]]))

    # --- results --------------------------------------------------------------------------
    def to_json(self, vocab_size: int) -> dict[str, Any]:
        """The split's numbers as JSON-ready values (docs/report.md lists every key)."""
        src_pieces, tgt_pieces = self.len["src_pieces"].total, self.len["tgt_pieces"].total
        words = self.len["src_words"].total
        upos_total = int(self.upos.sum())
        real = max(vocab_size - 4, 1)  # the four special symbols are not pieces
        return {
            "pairs": self.pairs,
            "sentences": self.sentences,
            "lengths": {k: h.to_json() for k, h in self.len.items()},
            "sentence_words": self.sent_words.to_json(),
            "pieces_per_word": {"mean": round(src_pieces / words, 4) if words else 0.0,
                                **self.pieces_per_word.to_json()},
            "sentences_per_line": self.sents_per_line.to_json(),
            "unk": {side: {"count": self.unk[side], "pieces": tot, "rate": self.unk[side] / tot if tot else 0.0}
                    for side, tot in (("src", src_pieces), ("tgt", tgt_pieces))},
            "vocab_coverage": {side: {"types_seen": int(self.seen[side][4:].sum()), "vocab_types": real,
                                      "share": round(float(self.seen[side][4:].sum()) / real, 6)}
                               for side in ("src", "tgt")},
            "upos": {tag: int(c) for tag, c in zip(UPOS_TAGS, self.upos.tolist(), strict=True)},
            "deprel": {rel: int(c) for rel, c in zip(DEPRELS, self.deprel.tolist(), strict=True)},
            "upos_top": _top_share(self.upos, UPOS_TAGS, upos_total),
            "tree_depth": self.depth.to_json(),
            "dependency_length": self.dep_length.to_json(),
            "gaps": {m: h.to_json() for m, h in self.gaps.items()},
            "sentence_gaps": self.sentence_gaps,
            "non_projective": {"sentences": self.nonproj_sentences, "arcs": self.nonproj_arcs,
                               "sentence_share": self.nonproj_sentences / self.sentences if self.sentences else 0.0,
                               "arc_share": self.nonproj_arcs / self.arcs if self.arcs else 0.0},
            "flat_trees": {"sentences": self.flat_sentences, "eligible": self.flat_eligible,
                           "min_words": FLAT_MIN_WORDS,
                           "share": self.flat_sentences / self.flat_eligible if self.flat_eligible else 0.0},
            "ldd": {"entries": self.ldd_entries, "entropy_bits": self.ldd_entropy.to_json(),
                    "argmax_not_head": self.ldd_argmax_not_head,
                    "argmax_not_head_share": self.ldd_argmax_not_head / words if words else 0.0},
        }


def _top_share(counts: np.ndarray, names: tuple[str, ...], total: int) -> dict[str, Any]:
    if not total:
        return {"tag": None, "share": 0.0}
    i = int(np.argmax(counts))
    return {"tag": names[i], "share": float(counts[i]) / total}


def iter_shards(folder: Path, split: str, manifest: Manifest) -> Iterator[tuple[Any, dict[str, np.ndarray]]]:
    """``(reader, arrays)`` of each verified shard of ``split`` in order; each shard is released after use."""
    for reader in open_split(folder, split, manifest=manifest):
        try:
            yield reader, shard_arrays(reader)
        finally:
            reader.close()


def split_stats(folder: str | os.PathLike, split: str, manifest: Manifest, symbols: list[str]) -> dict[str, Any]:
    """Every number of one split (see :class:`SplitStats`) plus its manifest entry's counts.

    Args:
        folder: the output folder.
        split: the split's name.
        manifest: the folder's manifest.
        symbols: the vocabulary's symbols by id (``dict.txt`` order, specials first).

    Raises:
        InputError: a damaged folder (whatever :func:`~synprep.shards.reader.open_split` refuses).
    """
    folder = Path(folder)
    st = SplitStats(split, len(symbols))
    scheme = "bpe"
    cont = starts = np.zeros(len(symbols), dtype=bool)
    for reader, arrays in iter_shards(folder, split, manifest):
        if not st.attrs:
            st.attrs = dict(reader.attrs)
            scheme = str(reader.attrs.get("subword") or "bpe")
            cont, starts = word_start_flags(symbols, scheme)
        st.add_shard(arrays, reader.offsets, cont, starts, scheme)
    out = st.to_json(len(symbols))
    entry = manifest.splits.get(split)
    attrs = st.attrs
    out.update({
        "input_lines": entry.input_lines if entry else 0,
        "dropped": {k: v for k, v in (entry.dropped if entry else {}).items()},
        "drop_examples": drop_examples(folder, split, entry, attrs),
        "subword_alignment": _alignment_total(entry),
        "subword": attrs.get("subword", "bpe"),
        "tree_source": attrs.get("tree_source"),
        "signature": attrs.get("signature", ""),
        "src_lang": attrs.get("src_lang"), "tgt_lang": attrs.get("tgt_lang"),
        "config": attrs.get("config") or {},
    })
    return out


def _alignment_total(entry: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    if entry is None:
        return total
    for counts in entry.alignment.values():
        for k, v in counts.items():
            total[k] = total.get(k, 0) + int(v)
    return dict(sorted(total.items()))


def text_file(folder: Path, split: str, stage: str, side: str, lang: str | None, same: bool) -> Path | None:
    """``OUT/text/SPLIT.STAGE.L`` (or ``SPLIT.STAGE.SIDE.L`` for a same-language folder) when it exists."""
    if not lang:
        return None
    name = f"{split}.{stage}.{side}.{lang}" if same else f"{split}.{stage}.{lang}"
    p = folder / "text" / name
    return p if p.is_file() else None


def read_lines_at(path: Path | None, wanted: set[int], limit: int = 300) -> dict[int, str]:
    """The 1-based lines ``wanted`` of a text file (each cut to ``limit`` characters), streaming."""
    out: dict[int, str] = {}
    if path is None or not wanted:
        return out
    last = max(wanted)
    with open(path, encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f, 1):
            if i in wanted:
                out[i] = line.rstrip("\n")[:limit]
            if i >= last:
                break
    return out


def drop_examples(folder: Path, split: str, entry: Any, attrs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Up to :data:`DROP_EXAMPLES` dropped lines per reason: ``{line, detail, src, tgt}`` (the tokenized text
    from ``OUT/text/SPLIT.tok.L``, Moses escapes undone, when the folder keeps it, else empty)."""
    if entry is None:
        return {}
    picked: dict[str, list[list[Any]]] = {}
    for d in entry.dropped_lines:
        lst = picked.setdefault(str(d[1]), [])
        if len(lst) < DROP_EXAMPLES:
            lst.append(d)
    wanted = {int(d[0]) for lst in picked.values() for d in lst}
    src_lang, tgt_lang = attrs.get("src_lang"), attrs.get("tgt_lang")
    same = bool(src_lang) and src_lang == tgt_lang

    texts = {side: {k: unescape(v) for k, v in read_lines_at(text_file(folder, split, "tok", side, lang, same),
                                                              wanted).items()}
             for side, lang in (("src", src_lang), ("tgt", tgt_lang))}
    return {reason: [{"line": int(d[0]), "detail": str(d[2]) if len(d) > 2 else "",
                      "src": texts["src"].get(int(d[0]), ""), "tgt": texts["tgt"].get(int(d[0]), "")}
                     for d in lst] for reason, lst in picked.items()}
