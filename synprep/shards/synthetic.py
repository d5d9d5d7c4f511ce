"""Consistent synthetic :class:`~synprep.types.PairRecord` values for tests and benchmarks.

Every record satisfies every invariant ``synprep check`` verifies (docs/shards.md): random
projective-or-not trees per sentence (one root each, heads inside their sentence), pieces per word
>= 1, gaps 1 inside a word, d+1 (d >= 1) between words, 999 between sentences, and an LDD whose
rows sum to at most 1 with the tree's own arc first. Not linguistically meaningful.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from synprep.constants import GAP_SENTENCE, UNK_ID, VOCAB_NAME
from synprep.parallel import chunked
from synprep.shards.manifest import Manifest
from synprep.shards.schema import shard_name
from synprep.shards.writer import write_shard
from synprep.types import DEPRELS, UPOS_TAGS, PairRecord
from synprep.vocab import Vocab


def random_heads(n: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) int64 random tree over n words: 1-based sentence-relative heads, exactly one 0."""
    order = rng.permutation(n)
    heads = np.zeros(n, dtype=np.int64)
    for k in range(1, n):
        heads[order[k]] = order[rng.integers(0, k)] + 1
    return heads


def make_record(line: int, sent_lengths: Sequence[int], pieces_per_word: Sequence[int], tgt_len: int,
                rng: np.random.Generator, *, vocab_size: int = 10_000, ldd_extra: int = 1,
                unk_rate: float = 0.02) -> PairRecord:
    """One consistent record.

    Args:
        line: 1-based line number.
        sent_lengths: words per sentence (each >= 1); W = sum.
        pieces_per_word: (W,) pieces of each word (each >= 1); T = sum.
        tgt_len: U target pieces.
        rng: numpy Generator (all other values are drawn from it).
        vocab_size: ids are drawn from [4, vocab_size), then a fraction ``unk_rate`` set to <unk>=3.
        unk_rate: the fraction of the ids that are <unk> (the same draws from ``rng`` for every rate).
        ldd_extra: at most this many extra LDD entries per word besides its tree arc.
    """
    W = int(sum(sent_lengths))
    if len(pieces_per_word) != W or min(sent_lengths, default=0) < 1 or min(pieces_per_word, default=0) < 1:
        raise ValueError("need >= 1 word per sentence, >= 1 piece per word, one piece count per word")
    sent_start = np.concatenate([[0], np.cumsum(sent_lengths)[:-1]]).astype(np.int64)
    heads = np.zeros(W, dtype=np.int64)
    for s0, n in zip(sent_start, sent_lengths, strict=True):
        h = random_heads(n, rng)
        heads[s0:s0 + n] = np.where(h > 0, h + s0, 0)
    word_index = np.repeat(np.arange(W), pieces_per_word)
    T = len(word_index)
    sent_of_word = np.repeat(np.arange(len(sent_lengths)), sent_lengths)

    def gaps() -> np.ndarray:
        same_word = word_index[1:] == word_index[:-1]
        boundary = sent_of_word[word_index[1:]] != sent_of_word[word_index[:-1]]
        g = rng.integers(2, 12, size=T - 1)
        g[same_word] = 1
        g[boundary] = GAP_SENTENCE
        return g.astype(np.int64)

    deps, lheads, rels, probs = [], [], [], []
    for j in range(W):
        s = sent_of_word[j]
        lo, n = int(sent_start[s]), int(sent_lengths[s])
        candidates = [0] + [lo + k + 1 for k in range(n) if lo + k != j]
        k = int(rng.integers(0, ldd_extra + 1))
        others = [c for c in candidates if c != heads[j]]
        extra = list(rng.choice(others, size=min(k, len(others)), replace=False)) if others else []
        p = rng.dirichlet(np.ones(1 + len(extra) + 1))[:-1]  # leave some mass to dropped entries
        p[0] = max(p[0], 0.05)
        p = np.clip(p, 1e-3, 1.0)
        p = p / max(1.0, float(p.sum()))
        for head, prob in zip([heads[j], *extra], p, strict=True):
            deps.append(j + 1)
            lheads.append(int(head))
            rels.append(int(rng.integers(0, len(DEPRELS))))
            probs.append(float(prob))

    def ids(n: int) -> np.ndarray:
        a = rng.integers(4, vocab_size, size=n)
        a[rng.random(n) < unk_rate] = UNK_ID
        return a.astype(np.int64)

    return PairRecord(
        line=line, src_ids=ids(T), tgt_ids=ids(tgt_len), word_index=word_index.astype(np.int64), heads=heads,
        deprel=rng.integers(0, len(DEPRELS), size=W), upos=rng.integers(0, len(UPOS_TAGS), size=W),
        sent_start=sent_start, gaps_cnf=gaps(), gaps_nary=gaps(),
        ldd_dep=np.asarray(deps, dtype=np.int64), ldd_head=np.asarray(lheads, dtype=np.int64),
        ldd_rel=np.asarray(rels, dtype=np.int64), ldd_prob=np.asarray(probs, dtype=np.float32),
    )


#: the mean pieces per word of :func:`random_records` (T ≈ 1.5 W)
PIECES_PER_WORD = 1.5


def random_records(n: int, rng: np.random.Generator, *, first_line: int = 1, words: int = 20,
                   tgt_len: int = 30, vocab_size: int = 10_000, multi_sentence: float = 0.1,
                   unk_rate: float = 0.02) -> Iterator[PairRecord]:
    """``n`` realistic-sized records (W ≈ ``words``, T ≈ 1.5 W: :data:`PIECES_PER_WORD`, K ≈ 2 W), lines
    increasing by 1-2.

    A fraction ``multi_sentence`` of the lines hold two sentences; a fraction ``unk_rate`` of the
    pieces are ``<unk>`` (id 3: pieces outside the vocabulary).
    """
    line = first_line
    for _ in range(n):
        W = max(1, int(rng.poisson(words)))
        if W >= 2 and rng.random() < multi_sentence:
            cut = int(rng.integers(1, W))
            sents = [cut, W - cut]
        else:
            sents = [W]
        ppw = 1 + rng.poisson(PIECES_PER_WORD - 1, size=W)
        U = max(1, int(rng.poisson(tgt_len)))
        yield make_record(line, sents, list(ppw), U, rng, vocab_size=vocab_size, ldd_extra=2, unk_rate=unk_rate)
        line += 1 + int(rng.random() < 0.05)


def shard_attrs(split: str, index: int, *, vocab_sha256: str = "0" * 64, **overrides) -> dict:
    """Root attributes for a synthetic shard (see :func:`synprep.shards.writer.write_shard`)."""
    attrs = {"split": split, "shard_index": index, "src_lang": "de", "tgt_lang": "en",
             "signature": "synprep:0.1.0|synthetic|shard:v1", "config": {"synthetic": True, "ldd_threshold": 0.001},
             "tree_source": "constituency", "ldd_threshold": 0.001, "vocab_path": "dict.txt",
             "vocab_sha256": vocab_sha256}
    attrs.update(overrides)
    return attrs


def write_folder(folder, pairs: dict[str, int], *, shard_size: int = 100, seed: int = 0, vocab_size: int = 1000,
                 drop_every: int = 0, **record_kw):
    """Write a complete, valid output folder of synthetic data: ``dict.txt``, shards, ``manifest.json``.

    For tests (here and in the trainer) and benchmarks. Every ``drop_every``-th input line (0:
    none) is recorded as dropped (``clean:ratio``) instead of stored.

    Args:
        folder: output folder (created).
        pairs: split → number of stored pairs.
        shard_size: pairs per shard.
        seed: seed of the numpy Generator.
        vocab_size: size of the synthetic vocabulary (ids drawn below it).
        record_kw: passed to :func:`random_records` (``words``, ``tgt_len``, …).

    Returns:
        the saved :class:`~synprep.shards.manifest.Manifest`.
    """
    rng = np.random.default_rng(seed)
    splits, drops = {}, {}
    for split, n in pairs.items():
        recs = list(random_records(n, rng, vocab_size=vocab_size, **record_kw))
        line, dropped = 0, []
        for rec in recs:
            line += 1
            if drop_every and line % drop_every == 0:
                dropped.append((line, "clean:ratio", "synthetic"))
                line += 1
            rec.line = line
        splits[split], drops[split] = recs, dropped
    return write_folder_records(folder, splits, shard_size=shard_size, vocab_size=vocab_size, drops=drops)


def write_folder_records(folder, splits: Mapping[str, Iterable[PairRecord]], *, shard_size: int = 100,
                         vocab_size: int = 1000, drops: dict[str, list[tuple[int, str, str]]] | None = None,
                         input_lines: dict[str, int] | None = None):
    """Write given records as an output folder (``dict.txt`` of ``vocab_size`` symbols, shards, manifest).

    Args:
        splits: split → its records, line numbers increasing (any iterable: read once, a shard at a time).
        shard_size: pairs per shard.
        drops: split → ``(line, reason, detail)`` of the dropped input lines.
        input_lines: split → input line count (default: the largest line stored or dropped).

    Returns:
        the saved :class:`~synprep.shards.manifest.Manifest`.
    """
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = Vocab.from_counts({f"p{i}": vocab_size - i for i in range(vocab_size - 4)}, padding_factor=1)
    sha = vocab.save(folder / VOCAB_NAME)
    base = shard_attrs("x", 0, vocab_sha256=sha)
    manifest = Manifest(base["signature"], base["config"])
    manifest.set_vocab(VOCAB_NAME, sha, len(vocab))
    drops = drops or {}
    for split, recs in splits.items():
        last = 0
        for index, batch in enumerate(chunked(recs, shard_size)):
            info = write_shard(folder / shard_name(split, index), batch, shard_attrs(split, index, vocab_sha256=sha))
            manifest.add_shard(split, info)
            last = max(last, *(r.line for r in batch))
        manifest.declare_reasons(split, ["clean:ratio", "parse:failed"])
        manifest.record_drops(split, drops.get(split, []))
        last = max([last] + [d[0] for d in drops.get(split, [])])
        manifest.set_input_lines(split, (input_lines or {}).get(split, last))
    manifest.save(folder)
    return manifest
