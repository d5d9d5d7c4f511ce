"""``report --against OTHER``: how far two folders made from the same lines agree on their parses.

Both folders are read through the verified reader, split by split, pair by pair in line order (a
merge on the stored ``line``: memory is one shard of each). A line stored in both whose source words
are the same is written to two CoNLL-U files (one sentence block per stored sentence, heads made
sentence-relative), which the CoNLL 2018 scorer the project uses for ``parse evaluate``
(:func:`synprep.parse.evaluate.evaluate_conllu`, udtools) scores: UAS/LAS/UPOS of this folder (the
system) against OTHER (the reference), F1 × 100. Lines with different words (another tokenization)
and lines only one folder keeps are counted, not scored. The lines that differ most are those with the
most words whose head or relation differ.
"""

from __future__ import annotations

import functools
import heapq
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from synprep.escape import unescape_tokens
from synprep.shards.manifest import Manifest
from synprep.shards.reader import load_vocab, open_split
from synprep.subword import scheme_class
from synprep.types import DEPRELS, UPOS_TAGS

#: lines shown per split among those that differ most
WORST_LINES = 10


@functools.lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet (character → byte), as byte-level BPE tokenizers use it."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


def piece_words(pieces: list[str], word_index: np.ndarray, scheme: str) -> list[str]:
    """The source words of a pair from its pieces and stored ``word_index`` (markers removed, Moses
    escapes undone for bpe; byte-level pieces decoded for hf)."""
    n = int(word_index.max()) + 1 if word_index.size else 0
    parts: list[list[str]] = [[] for _ in range(n)]
    for piece, w in zip(pieces, word_index.tolist(), strict=True):
        parts[w].append(piece)
    cls = scheme_class(scheme)
    if cls.bpe_markers:
        return unescape_tokens(["".join(p[:-2] if p.endswith("@@") else p for p in ps) for ps in parts])
    if cls.byte_level:
        dec = _byte_decoder()
        out = []
        for ps in parts:
            text = "".join(ps)
            try:
                out.append(bytes(dec[c] for c in text).decode("utf-8", errors="replace").strip())
            except KeyError:
                out.append(text.replace("\u2581", "").replace("\u0120", ""))
        return out
    return ["".join(ps).replace("\u2581", "") for ps in parts]


def _lines(folder: Path, split: str, manifest: Manifest) -> Iterator[tuple[int, list[str], np.ndarray, np.ndarray,
                                                                           np.ndarray, np.ndarray]]:
    """``(line, words, heads, deprel, upos, sent_start)`` of every stored pair, in line order."""
    readers = open_split(folder, split, manifest=manifest)
    if not readers:
        return
    vocab = load_vocab(folder, readers[0].attrs)
    scheme = str(readers[0].attrs.get("subword") or "bpe")
    for reader in readers:
        try:
            for rec in reader:
                yield (rec.line, piece_words(vocab.decode(rec.src_ids), rec.word_index, scheme), rec.heads, rec.deprel,
                       rec.upos, rec.sent_start)
        finally:
            reader.close()


def _write(f: IO[str], words: list[str], heads: np.ndarray, rel: np.ndarray, upos: np.ndarray,
           starts: np.ndarray) -> None:
    bounds = [*starts.tolist(), len(words)]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        for k in range(a, b):
            h = int(heads[k])
            head = h - a if h > 0 else 0
            f.write(f"{k - a + 1}\t{words[k] or '_'}\t_\t{UPOS_TAGS[min(int(upos[k]), len(UPOS_TAGS) - 1)]}\t_\t_\t"
                    f"{head}\t{DEPRELS[min(int(rel[k]), len(DEPRELS) - 1)]}\t_\t_\n")
        f.write("\n")


def split_agreement(folder: str | os.PathLike, other: str | os.PathLike, split: str, manifest: Manifest,
                    other_manifest: Manifest) -> dict[str, Any]:
    """Agreement of one split of ``folder`` (system) with the same split of ``other`` (reference).

    Returns:
        ``{"compared", "only_here", "only_other", "different_words", "scores": {UAS, LAS, UPOS, Words}
        (None when no line was compared), "worst": [{line, words, differ, diffs}]}``.

    Raises:
        InputError: either folder is damaged; the scorer rejects the files.
    """
    # imported here: loads conllu and orjson, not needed to import this module
    from synprep.parse.evaluate import evaluate_conllu

    a_it, b_it = _lines(Path(folder), split, manifest), _lines(Path(other), split, other_manifest)
    counts = {"compared": 0, "only_here": 0, "only_other": 0, "different_words": 0}
    worst: list[tuple[float, int, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="synprep-report-") as tmp:
        sys_path, gold_path = Path(tmp) / "system.conllu", Path(tmp) / "reference.conllu"
        with open(sys_path, "w", encoding="utf-8") as fs, open(gold_path, "w", encoding="utf-8") as fg:
            a, b = next(a_it, None), next(b_it, None)
            while a is not None or b is not None:
                if b is None or (a is not None and a[0] < b[0]):
                    counts["only_here"] += 1
                    a = next(a_it, None)
                    continue
                if a is None or b[0] < a[0]:
                    counts["only_other"] += 1
                    b = next(b_it, None)
                    continue
                if a[1] != b[1]:
                    counts["different_words"] += 1
                else:
                    counts["compared"] += 1
                    _write(fs, *a[1:])
                    _write(fg, *b[1:])
                    differ = (a[2] != b[2]) | (a[3] != b[3])
                    k = int(differ.sum())
                    if k:
                        item = {"line": a[0], "words": len(a[1]), "differ": k,
                                "diffs": [f"{a[1][i]}: {int(a[2][i])}/{DEPRELS[int(a[3][i])]} vs "
                                          f"{int(b[2][i])}/{DEPRELS[int(b[3][i])]}"
                                          for i in np.flatnonzero(differ)[:6].tolist()]}
                        entry = (k / len(a[1]), -a[0], item)
                        if len(worst) < WORST_LINES:
                            heapq.heappush(worst, entry)
                        else:
                            heapq.heappushpop(worst, entry)
                a, b = next(a_it, None), next(b_it, None)
        scores = None
        if counts["compared"]:
            got = evaluate_conllu(sys_path, gold_path)
            scores = {m: round(got[m], 4) for m in ("UAS", "LAS", "UPOS", "Words")}
    return {**counts, "scores": scores, "worst": [e[2] for e in sorted(worst, reverse=True)]}
