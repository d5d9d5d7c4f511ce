"""Labeled dependency distributions (LDD): line-level sparse entries and dense per-label piece matrices.

Source: SPEC.md §4; Liu & Sima'an (ldd-parser-uncertainty): ``LDD^l[p, q] = P(head(p) = q,
rel(p) = l)``, multiplied element-wise into the attention scores of the head attached to label l
(``softmax(S ⊙ LDD^l)``).

Sparse form (what shards store, docs/FORMAT.md): parallel arrays ``dep`` (1-based line-level
dependent word), ``head`` (1-based line-level head word, 0 = root), ``rel`` (id in
:data:`synprep.types.DEPRELS`), ``prob``. A sentence without parser scores (``ldd is None``, e.g.
a gold CoNLL-U file) gives one-hot entries from its heads and deprels.

Dense piece form (what the trainer multiplies in): a piece inherits its word's row, and a head
word's probability applies to each of its pieces. The root column (head 0) has no piece; by
default (``root="self"``) its probability goes to the dependent word's own pieces, as PASCAL
points a root word at itself; ``root="drop"`` leaves it out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from synprep.features.distance import check_word_index
from synprep.types import DEPRELS, ParsedSentence, deprel_id

ROOT_MODES = ("self", "drop")


def sentence_ldd(sentence: ParsedSentence) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sparse LDD of one sentence, sentence-relative: ``(dep, head, rel, prob)``.

    Returns:
        ``dep`` ``(K,) int64`` 1-based, ``head`` ``(K,) int64`` 1-based (0 = root), ``rel``
        ``(K,) int64`` ids in :data:`~synprep.types.DEPRELS`, ``prob`` ``(K,) float32``; one-hot
        (``K = n``, prob 1) when ``sentence.ldd`` is None.

    Raises:
        ValueError: the sentence's LDD arrays disagree in length, or an index or probability is
            out of range.
    """
    n = len(sentence.words)
    if sentence.ldd is None:
        dep = np.arange(1, n + 1, dtype=np.int64)
        head = np.asarray(sentence.heads, dtype=np.int64)
        rel = np.array([deprel_id(r) for r in sentence.deprels], dtype=np.int64)
        return dep, head, rel, np.ones(n, dtype=np.float32)
    ldd = sentence.ldd
    dep = np.asarray(ldd.dep, dtype=np.int64)
    head = np.asarray(ldd.head, dtype=np.int64)
    prob = np.asarray(ldd.prob, dtype=np.float32)
    if not (dep.shape == head.shape == prob.shape == (len(ldd.rel),)):
        raise ValueError(f"LDD arrays differ in length: dep {dep.shape}, head {head.shape}, "
                         f"rel ({len(ldd.rel)},), prob {prob.shape}")
    if dep.size and (dep.min() < 1 or dep.max() > n or head.min() < 0 or head.max() > n):
        raise ValueError(f"LDD index out of range for a sentence of {n} words")
    if prob.size and not (np.all(prob > 0) and np.all(prob <= 1)):
        raise ValueError("LDD probabilities must lie in (0, 1]")
    rel = np.array([deprel_id(r) for r in ldd.rel], dtype=np.int64)
    return dep, head, rel, prob


def _merge_duplicates(dep: np.ndarray, head: np.ndarray, rel: np.ndarray, prob: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sum entries with the same ``(dep, head, rel)``; sorted by that key.

    Subtyped relations reduce to their base (``nmod:poss`` → ``nmod``), so the parser's
    ``P(head, nmod)`` and ``P(head, nmod:poss)`` become one entry holding their sum.
    """
    order = np.lexsort((rel, head, dep))
    dep, head, rel, prob = dep[order], head[order], rel[order], prob[order]
    if dep.size < 2:
        return dep, head, rel, prob
    new = np.ones(dep.size, dtype=bool)
    new[1:] = (dep[1:] != dep[:-1]) | (head[1:] != head[:-1]) | (rel[1:] != rel[:-1])
    starts = np.flatnonzero(new)
    summed = np.minimum(np.add.reduceat(prob.astype(np.float64), starts), 1.0).astype(np.float32)
    return dep[starts], head[starts], rel[starts], summed


def _keep(dep: np.ndarray, prob: np.ndarray, threshold: float) -> np.ndarray:
    """Entries at or above ``threshold``, plus each dependent's most probable entry (never none)."""
    keep = prob >= threshold
    if dep.size:
        order = np.lexsort((-prob, dep))  # by dep, most probable first
        first = np.ones(dep.size, dtype=bool)
        first[1:] = dep[order][1:] != dep[order][:-1]
        keep[order[first]] = True
    return keep


def line_ldd(sentences: Sequence[ParsedSentence], threshold: float = 0.0
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sparse LDD of a whole line, line-level: every sentence's indices offset by its start (SPEC.md §1).

    Entries that reduce to the same ``(dep, head, rel)`` (relation subtypes) are summed; then
    entries below ``threshold`` are dropped, except each word's most probable entry, so every
    word keeps at least one (``synprep check`` requires it).

    Args:
        sentences: the line's sentences in order.
        threshold: drop entries with probability below this (on top of the parser's own
            threshold; one-hot entries, prob 1, always stay).

    Returns:
        ``(dep, head, rel, prob)``: ``(K,) int64`` ×3 and ``(K,) float32``, sorted by
        ``(dep, head, rel)``; ``head`` 0 stays 0 (root).

    Raises:
        ValueError: see :func:`sentence_ldd`.
    """
    parts = []
    start = 0
    for s in sentences:
        dep, head, rel, prob = _merge_duplicates(*sentence_ldd(s))
        keep = _keep(dep, prob, threshold)
        parts.append((dep[keep] + start, np.where(head[keep] > 0, head[keep] + start, 0), rel[keep], prob[keep]))
        start += len(s.words)
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy(), z.copy(), np.zeros(0, dtype=np.float32)
    dep, head, rel, prob = (np.concatenate(x) for x in zip(*parts, strict=True))
    order = np.lexsort((rel, head, dep))
    return dep[order], head[order], rel[order], prob[order].astype(np.float32)


def label_ids(labels: Sequence[str | int]) -> np.ndarray:
    """``(L,) int64`` relation ids of ``labels`` (names through :func:`~synprep.types.deprel_id`, or ids).

    Raises:
        ValueError: an id outside :data:`~synprep.types.DEPRELS`.
    """
    ids = [deprel_id(x) if isinstance(x, str) else int(x) for x in labels]
    for i in ids:
        if not 0 <= i < len(DEPRELS):
            raise ValueError(f"relation id {i} outside 0..{len(DEPRELS) - 1}")
    return np.asarray(ids, dtype=np.int64)


def ldd_piece_matrix(dep: np.ndarray, head: np.ndarray, rel: np.ndarray, prob: np.ndarray,
                     word_index: np.ndarray, labels: Sequence[str | int], *, root: str = "self",
                     eos: bool = False) -> np.ndarray:
    """Dense per-label LDD over pieces: ``out[l, p, q] = P(head(word(p)) = word(q), rel = labels[l])``.

    Args:
        dep: ``(K,)`` the line-level sparse LDD's 1-based dependents (:func:`line_ldd`, or a shard's ``ldd_dep``).
        head: ``(K,)`` its 1-based heads, 0 = root (``ldd_head``).
        rel: ``(K,)`` its relation ids (``ldd_rel``).
        prob: ``(K,)`` its probabilities (``ldd_prob``).
        word_index: ``(T,)`` 0-based word of each piece.
        labels: the L relations wanted (names or ids), one matrix each.
        root: ``"self"`` (root probability on the dependent word's own pieces) or ``"drop"``.
        eos: add a ``</s>`` row and column of zeros.

    Returns:
        ``(L, T, T) float32`` (``(L, T+1, T+1)`` with ``eos``). Entries of one (dep, head, rel)
        listed twice add up.

    Raises:
        ValueError: unknown root mode, bad word_index, indices outside the line's words.
    """
    if root not in ROOT_MODES:
        raise ValueError(f"unknown root mode {root!r}; choose one of {', '.join(ROOT_MODES)}")
    wi = check_word_index(word_index)
    n_words = int(wi[-1]) + 1
    dep = np.asarray(dep, dtype=np.int64)
    head = np.asarray(head, dtype=np.int64)
    rel = np.asarray(rel, dtype=np.int64)
    prob = np.asarray(prob, dtype=np.float32)
    if dep.size and (dep.min() < 1 or dep.max() > n_words or head.min() < 0 or head.max() > n_words):
        raise ValueError(f"LDD index out of range for a line of {n_words} words")
    lab = label_ids(labels)
    word = np.zeros((lab.size, n_words, n_words + 1), dtype=np.float32)  # column 0 = root
    slot = np.full(len(DEPRELS), -1, dtype=np.int64)
    slot[lab] = np.arange(lab.size)
    keep = slot[rel] >= 0
    np.add.at(word, (slot[rel[keep]], dep[keep] - 1, head[keep]), prob[keep])
    out = word[:, wi[:, None], wi[None, :] + 1]
    if root == "self":
        same = wi[:, None] == wi[None, :]
        out += word[:, wi, 0][:, :, None] * same[None, :, :]
    if eos:
        out = np.pad(out, ((0, 0), (0, 1), (0, 1)))
    return out.astype(np.float32)
