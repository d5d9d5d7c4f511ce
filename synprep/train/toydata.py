"""Structurally valid pair records from plain words, for tests, benchmarks and smoke runs.

Real shards come from the pipeline (stanza parses). This module builds :class:`PairRecord` s from
word lists with a *random* but well-formed syntax: a random binary bracketing of every sentence
gives the constituency gaps (``cnf`` = ``nary`` on a binary tree, SPEC.md §2) and, by choosing a
head child at each node, a projective dependency tree consistent with it; LDD rows put 0.8 on the
tree's arc and 0.2 on a second candidate head (one-hot for one-word sentences). Words longer than
``split_len`` characters are cut into two BPE pieces (``ri@@ ver``). Nothing here claims
linguistic truth: it exercises shapes, offsets, pieces, sentence breaks and the trainer's maths.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from synprep.constants import BPE_SEPARATOR, GAP_INTRA_WORD, GAP_SENTENCE, UNK_ID, VOCAB_NAME
from synprep.parallel import chunked
from synprep.types import DEPRELS, PairRecord
from synprep.vocab import Vocab


def split_word(word: str, split_len: int = 7) -> list[str]:
    """``"crocodile"`` → ``["croc@@", "odile"]`` when longer than ``split_len``; else ``[word]``."""
    if len(word) <= split_len:
        return [word]
    cut = len(word) // 2
    return [word[:cut] + BPE_SEPARATOR, word[cut:]]


def pieces_of(words: Iterable[str], split_len: int = 7) -> list[str]:
    return [p for w in words for p in split_word(w, split_len)]


def build_vocab(lines: Iterable[Sequence[str]], split_len: int = 7):
    """A fairseq-style :class:`~synprep.vocab.Vocab` over the pieces of word lists (``</s>`` counted per line)."""
    counts = Counter(p for words in lines for p in pieces_of(words, split_len))
    return Vocab.from_counts(counts)


def random_tree(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random binary tree over n words.

    Returns:
        (heads (n,) 1-based sentence-relative, 0 = root; gaps (n-1,) word-level cnf distances ≥ 1).
    """
    heads = np.zeros(n, dtype=np.int64)
    gaps = np.zeros(max(n - 1, 0), dtype=np.int64)

    def build(i: int, j: int) -> tuple[int, int]:  # span [i, j) → (height, head word)
        if j - i == 1:
            return 1, i
        k = int(rng.integers(i + 1, j))
        hl, wl = build(i, k)
        hr, wr = build(k, j)
        h = 1 + max(hl, hr)
        gaps[k - 1] = h - 1
        head, dep = (wl, wr) if rng.random() < 0.5 else (wr, wl)
        heads[dep] = head + 1
        return h, head

    _, root = build(0, n)
    heads[root] = 0
    return heads, gaps


def record_of_words(line: int, src_sentences: Sequence[Sequence[str]], tgt_words: Sequence[str], symbols: Sequence[str],
                    rng: np.random.Generator, split_len: int = 7) -> PairRecord:
    """One :class:`PairRecord` with random well-formed syntax (see the module docstring).

    Args:
        line: 1-based line number to record.
        src_sentences: the source line's sentences, each a list of words.
        tgt_words: the target words.
        symbols: vocabulary (unknown pieces map to ``<unk>``).
    """
    index = {s: i for i, s in enumerate(symbols)}
    src_pieces: list[str] = []
    word_index: list[int] = []
    heads: list[int] = []
    gaps: list[int] = []
    sent_start: list[int] = []
    ldd: list[tuple[int, int, int, float]] = []
    deprel: list[int] = []
    root_rel = DEPRELS.index("root")
    for words in src_sentences:
        w0 = len(heads)
        sent_start.append(w0)
        h, g = random_tree(len(words), rng)
        if w0:
            gaps.append(GAP_SENTENCE)
        for w, word in enumerate(words):
            ps = split_word(word, split_len)
            if w:
                gaps.append(int(g[w - 1]) + 1)
            gaps.extend([GAP_INTRA_WORD] * (len(ps) - 1))
            src_pieces.extend(ps)
            word_index.extend([w0 + w] * len(ps))
            heads.append(int(h[w]) + w0 if h[w] else 0)
        for w in range(len(words)):
            dep = w0 + w + 1
            head = heads[w0 + w]
            rel = root_rel if head == 0 else int(rng.integers(len(DEPRELS)))
            deprel.append(rel)
            others = [q for q in range(w0, w0 + len(words) + 1) if q != head and q != dep and (q > w0 or q == 0)]
            if len(words) > 1 and others:
                alt = int(rng.choice(others))
                ldd += [(dep, head, rel, 0.8), (dep, alt, int(rng.integers(len(DEPRELS))), 0.2)]
            else:
                ldd.append((dep, head, rel, 1.0))
    W = len(heads)
    src_ids = np.array([index.get(p, UNK_ID) for p in src_pieces], dtype=np.int32)
    tgt_ids = np.array([index.get(p, UNK_ID) for p in pieces_of(tgt_words, split_len)], dtype=np.int32)
    ld = np.array(ldd, dtype=np.float64).reshape(-1, 4)
    return PairRecord(
        line=line, src_ids=src_ids, tgt_ids=tgt_ids, word_index=np.array(word_index, dtype=np.int32),
        heads=np.array(heads, dtype=np.int32), deprel=np.array(deprel, dtype=np.uint8),
        upos=rng.integers(0, 17, size=W).astype(np.uint8), sent_start=np.array(sent_start, dtype=np.int32),
        gaps_cnf=np.array(gaps, dtype=np.int16), gaps_nary=np.array(gaps, dtype=np.int16),
        ldd_dep=ld[:, 0].astype(np.int32), ldd_head=ld[:, 1].astype(np.int32), ldd_rel=ld[:, 2].astype(np.uint8),
        ldd_prob=ld[:, 3].astype(np.float32))


def read_pairs(src_path, tgt_path, n: int, src_lang: str, tgt_lang: str, *, lowercase: bool = True,
               skip: int = 0) -> list[tuple[list[str], list[str]]]:
    """The first ``n`` pairs (after ``skip``) of two parallel raw text files (``.gz`` read too),
    Moses-tokenized (sacremoses, ``escape=True``) and optionally lowercased."""
    import gzip

    from sacremoses import MosesTokenizer

    def head(path) -> list[str]:
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            out = []
            for i, line in enumerate(f):
                if i >= skip + n:
                    break
                if i >= skip:
                    out.append(line.rstrip("\n"))
            return out

    ts, tt = MosesTokenizer(src_lang), MosesTokenizer(tgt_lang)
    pairs = []
    for s, t in zip(head(src_path), head(tgt_path), strict=True):
        s, t = (s.lower(), t.lower()) if lowercase else (s, t)
        pairs.append((ts.tokenize(s, escape=True), tt.tokenize(t, escape=True)))
    return pairs


def write_toy_shards(folder, splits: dict[str, list[PairRecord]], vocab, *, shard_size: int = 1000,
                     src_lang: str = "de", tgt_lang: str = "en"):
    """Write records as a complete shard folder (``dict.txt``, ``SPLIT.NNNNN.h5``, ``manifest.json``)
    with the shards stage's writer, so the trainer reads them exactly as it reads pipeline output.
    Each split's records are numbered 1..n (its input lines), whatever ``line`` they carry.

    Returns:
        the saved :class:`~synprep.shards.manifest.Manifest`.
    """
    import dataclasses
    from pathlib import Path

    # imported here: loads h5py, not needed to import this module
    from synprep.shards import Manifest, shard_name, write_shard
    from synprep.shards.synthetic import shard_attrs

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    sha = vocab.save(folder / VOCAB_NAME)
    sig = "synprep:0.1.0|toydata:random-trees|shard:v1"
    config = {"toydata": "random binary trees over Moses words (synprep.train.toydata)", "ldd_threshold": 0.0}
    manifest = Manifest(sig, config)
    manifest.set_vocab(VOCAB_NAME, sha, len(vocab))
    for split, recs in splits.items():
        # a split's lines are its own input's, 1..n (a record numbered past them would be a line the
        # split neither stored nor dropped, which readers refuse as an incomplete split)
        recs = [r if r.line == k else dataclasses.replace(r, line=k) for k, r in enumerate(recs, 1)]
        for index, part in enumerate(chunked(recs, shard_size)):
            attrs = shard_attrs(split, index, vocab_sha256=sha, signature=sig, config=config, ldd_threshold=0.0,
                                src_lang=src_lang, tgt_lang=tgt_lang)
            manifest.add_shard(split, write_shard(folder / shard_name(split, index), part, attrs))
        manifest.set_input_lines(split, max((r.line for r in recs), default=0))
    manifest.save(folder)
    return manifest
