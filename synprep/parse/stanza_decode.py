"""The decode stage of a stanza parse, and stanza 1.15's decoding and POS label lookup reproduced fast.

A stanza parse runs in two stages (docs/parse-internals.md, "Forward and decode"): the forward stage
(:meth:`synprep.parse.stanza_parser.StanzaParser.forward`: the models, on the CPU or a GPU) gives each
sentence's :class:`SentenceScores` — its words, UPOS, constituency tree and the compact score arrays
of its depparse forward — and the decode stage (:meth:`DecodeContext.decode`, a pure function of those
arrays, run in any process) gives its heads, relations and LDD. ``StanzaParser.parse`` is the two in
a row, so a pipelined run (decoding in CPU worker processes while the next batch's forward runs) gives
the same bytes by construction.

:func:`decode_batch` stands in for ``GraphParser.decode_graph_predictions`` (trees from
:mod:`synprep.parse.mst`), :func:`unmap_ids` for the POS trainer's per-word ``vocab.unmap``. Both give
stanza's results exactly (tests/test_parse_mst.py); :func:`stanza_reproduced` and
:func:`fast_decoder_available` say where they apply (stanza 1.15.x; numba for the decoder).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from synprep.signature import package_version
from synprep.types import ParsedSentence, SparseLDD

log = logging.getLogger("synprep.parse.stanza_parser")


#: the stanza versions whose depparse decoding :func:`decode_batch` reproduces (root penalty, head constraints)
FAST_DECODER_STANZA = ("1.15",)


@functools.lru_cache(maxsize=1)
def stanza_reproduced() -> bool:
    """Whether the installed stanza is one whose POS and depparse decoding synprep reproduces (1.15.x).

    Otherwise stanza's own POS processor and ``decode_graph_predictions`` run (logged once).
    """
    version = package_version("stanza")
    if any(version == v or version.startswith(v + ".") for v in FAST_DECODER_STANZA):
        return True
    log.info("stanza %s: its own POS processor and tree decoder are used (synprep reproduces stanza %s)",
             version, "/".join(FAST_DECODER_STANZA))
    return False


@functools.lru_cache(maxsize=1)
def fast_decoder_available() -> bool:
    """Whether :func:`decode_batch` can stand in for stanza's decoder here: stanza 1.15.x and numba.

    Otherwise stanza's own ``decode_graph_predictions`` decodes (same trees, slower), logged once.
    """
    if not stanza_reproduced():
        return False
    try:
        import synprep.parse.mst  # noqa: F401
    except ImportError as e:
        log.warning("the compiled tree decoder is unavailable (%s): stanza's own decoder is used (same trees, "
                    "slower); pip install numba", e)
        return False
    return True


def unmap_ids(vocab, ids: np.ndarray) -> list:
    """``vocab.unmap`` of many words' ids, each distinct id (or id tuple) mapped once.

    Args:
        vocab: a stanza vocabulary (plain: one id per word; composite, e.g. features: K ids per word).
        ids: ``(N,)`` or ``(N, K)`` int array, one row per word.

    Returns:
        the N strings ``vocab.id2unit`` gives for each row (called with Python ints / int lists, as
        stanza's ``unmap`` over ``tensor.tolist()`` calls it).
    """
    if len(ids) == 0:
        return []
    uniq, inverse = np.unique(ids, axis=0, return_inverse=True)
    names = [vocab.id2unit(u.tolist()) for u in uniq]
    return [names[k] for k in inverse.reshape(-1).tolist()]


@contextlib.contextmanager
def compiled_decoder_in(module) -> Iterator[None]:
    """Within the block, ``module.chuliu_edmonds_one_root`` is :func:`synprep.parse.mst.chuliu_edmonds_one_root`.

    stanza's ``head_constraints`` module calls the decoder by its module-global name; the compiled
    one returns the same trees (tests/test_parse_mst.py), so the repair logic stays stanza's own.
    The name is restored on exit (this process parses in one thread).
    """
    # imported here: loads numba (compiles), not needed to import this module
    from synprep.parse.mst import chuliu_edmonds_one_root

    saved = module.chuliu_edmonds_one_root
    module.chuliu_edmonds_one_root = chuliu_edmonds_one_root
    try:
        yield
    finally:
        module.chuliu_edmonds_one_root = saved


def decode_batch(scores, sentlens: list[int], vocab, relations: list[str], resolve: bool) -> list[list[list]]:
    """stanza 1.15's ``GraphParser.decode_graph_predictions``, with the same trees and labels, fast.

    Trees: :func:`synprep.parse.mst.decode_trees` (the argmax heads where they already are the
    best single-root tree, else stanza's Chu-Liu-Edmonds compiled). Labels, gathered for the whole
    batch at once: without ``resolve`` the model's argmax label of each chosen arc; with ``resolve``
    (the depparse config's ``resolve_head_constraints``: False in the ``synprep`` package's models)
    each arc's most probable relation, and a sentence where one head gets two subjects or two objects goes
    through stanza's own ``resolve_head_constraint_violations``, as in stanza — with its
    Chu-Liu-Edmonds calls (one per offending dependent) made by the compiled decoder
    (:func:`compiled_decoder_in`), which returns stanza's trees bit for bit.

    Args:
        scores: the model's ``preds``: ``[0]`` head log-probs ``(B, L, L)``, ``[1]`` argmax label ids
            ``(B, L, L)`` (vocabulary ids), ``[2]`` label log-probs ``(B, L, L, R)``.
        sentlens: ``(B,)`` words + 1 per sentence.
        vocab: the deprel vocabulary.
        relations: ``(R,)`` the relation names of the label columns.

    Returns:
        per sentence, per word ``[head, deprel]`` (head 1-based, 0 = root), as stanza returns them.
    """
    from stanza.models.depparse import head_constraints
    from stanza.models.depparse.head_constraints import DEPREL_TO_GROUP

    # imported here: loads numba (compiles), not needed to import this module
    from synprep.parse.mst import decode_trees

    lengths = np.asarray(sentlens, dtype=np.int64)
    trees, _ = decode_trees(scores[0], lengths)
    # every word of the batch as (sentence, dependent, head), for one gather per score array
    sent = np.repeat(np.arange(len(trees)), lengths - 1)
    dep = np.concatenate([np.arange(1, n) for n in lengths])
    head = np.concatenate([t[1:] for t in trees])
    starts = np.concatenate([[0], np.cumsum(lengths - 1)]).tolist()
    if not resolve:  # stanza: the label the model's argmax gave the chosen arc (scores[1], vocabulary ids)
        names = vocab.unmap(scores[1][sent, dep, head].tolist())
        return [[[h, d] for h, d in zip(tree[1:], names[starts[i] : starts[i + 1]], strict=True)]
                for i, tree in enumerate(trees)]
    # each word's most probable relation on its arc: one gather + argmax for the whole batch
    raw = scores[2][sent, dep, head].argmax(axis=1)
    groups = {g: k for k, g in enumerate(sorted(set(DEPREL_TO_GROUP.values())))}
    group_of = np.array([groups.get(DEPREL_TO_GROUP.get(r, ""), -1) for r in relations], dtype=np.int64)
    g = group_of[raw]
    has = g >= 0
    keys = np.stack([sent[has], head[has], g[has]], axis=1)
    uniq, counts = np.unique(keys, axis=0, return_counts=True) if len(keys) else (keys, np.zeros(0, np.int64))
    violating = set(uniq[counts > 1, 0].tolist())
    out = []
    for i, tree in enumerate(trees):
        ids = raw[starts[i] : starts[i + 1]].tolist()
        if i in violating:
            n = int(lengths[i])
            with compiled_decoder_in(head_constraints):
                tree, ids = head_constraints.resolve_head_constraint_violations(
                    scores[0][i][:n, :n], scores[2][i][:n, :n, :], tree, vocab)
        out.append([[h, relations[r]] for h, r in zip(tree[1:], ids, strict=True)])
    return out


# --- the decode stage ---------------------------------------------------------------------------


@dataclass
class SentenceScores:
    """What the forward stage hands the decode stage for one sentence (picklable, compact).

    Attributes:
        words: ``(n,)`` the words as given.
        upos: ``(n,)`` stanza's UPOS tags.
        tree: the constituency tree (leaves == words) or None.
        head_logp: ``(n+1, n+1)`` float32, stanza's head log-probabilities (row = dependent,
            column = head, 0 = ROOT), cut out of the padded batch the model ran on (values unchanged).
        label_ids: ``(n+1, n+1)`` int32, the model's argmax relation (vocabulary ids) of every arc;
            None when the model's ``resolve_head_constraints`` is on (then the labels come from ``rel_logp``).
        rel_logp: ``(n+1, n+1, R)`` float32, the relation log-probabilities of every arc.
    """

    words: list[str]
    upos: list[str]
    tree: str | None
    head_logp: np.ndarray
    label_ids: np.ndarray | None
    rel_logp: np.ndarray


@dataclass
class DecodeContext:
    """Everything the decode stage needs besides the scores (one per loaded parser, picklable).

    Attributes:
        vocab: stanza's deprel vocabulary.
        relations: ``(R,)`` the names of the label columns.
        resolve: the depparse config's ``resolve_head_constraints``.
        reverse: the model reads sentences reversed (``trainer.args["reversed"]``).
        threshold: the LDD threshold (``spec.ldd_threshold``).
    """

    vocab: Any
    relations: list[str]
    resolve: bool
    reverse: bool
    threshold: float

    def decode(self, s: SentenceScores) -> ParsedSentence:
        """One sentence's heads, relations and LDD from its scores (pure: the same scores give the same bytes).

        The tree: :func:`decode_batch` (stanza 1.15 and numba) or stanza's own
        ``GraphParser.decode_graph_predictions`` (:func:`fast_decoder_available`); both give stanza's trees.
        The LDD: :func:`biaffine_ldd`. A reversed model's output is turned back as stanza's trainer does.
        """
        n = len(s.words)
        labels = s.label_ids if s.label_ids is not None else np.zeros(s.head_logp.shape, np.int32)
        preds = (s.head_logp[None], labels[None], s.rel_logp[None])
        if fast_decoder_available():
            tokens = decode_batch(preds, [n + 1], self.vocab, self.relations, self.resolve)[0]
        else:
            from stanza.models.depparse.model import GraphParser

            tokens = GraphParser.decode_graph_predictions(self.vocab, 1, preds, [n + 1],
                                                          resolve_head_constraints=self.resolve)[0]
        ldd = biaffine_ldd(s.head_logp, s.rel_logp, n, self.relations, self.threshold)
        if self.reverse:  # stanza's Trainer.reverse_predictions, and the LDD mapped the same way
            tokens = [t if t[0] == 0 else [n + 1 - t[0], t[1]] for t in tokens[::-1]]
            ldd = reverse_ldd(ldd, n)
        return ParsedSentence(words=list(s.words), upos=list(s.upos), heads=[int(t[0]) for t in tokens],
                              deprels=[t[1] for t in tokens], tree=s.tree,
                              tree_source="constituency" if s.tree else None, ldd=ldd)


def biaffine_ldd(
    head_logp: np.ndarray, rel_logp: np.ndarray, n: int, relations: list[str], threshold: float
) -> SparseLDD:
    """Sparse LDD of one sentence from stanza's biaffine log-probabilities (SPEC.md §4).

    Args:
        head_logp: (L, L) float, L >= n+1: log-softmax over head candidates (row = dependent,
            column = head, index 0 = ROOT); only the first n+1 rows/columns are used, and each row
            is renormalized over them (padding columns carry mass in stanza's batch softmax).
        rel_logp: (L, L, R) float: log-softmax over relations for every (dependent, head) arc.
        n: number of words.
        relations: (R,) relation names of the R label columns.
        threshold: keep entries with probability >= threshold, and each word's most probable
            entry whatever its probability (so no word is left without one).

    Returns:
        SparseLDD with 1-based ``dep``, ``head`` (0 = root), sorted by dep then head then relation.
    """
    h = np.asarray(head_logp[1 : n + 1, : n + 1], dtype=np.float64)  # (n, n+1)
    h = h - np.logaddexp.reduce(h, axis=1, keepdims=True)
    joint = h[:, :, None] + np.asarray(rel_logp[1 : n + 1, : n + 1, :], dtype=np.float64)  # (n, n+1, R)
    logt = np.log(threshold) if threshold > 0 else -np.inf
    keep = joint >= logt if threshold > 0 else np.isfinite(joint)
    best = joint.reshape(n, -1).argmax(axis=1)  # each word's most probable (head, relation)
    keep.reshape(n, -1)[np.arange(n), best] = True
    dep, head, rel = np.nonzero(keep)
    prob = np.exp(joint[dep, head, rel]).astype(np.float32)
    return SparseLDD(
        dep=(dep + 1).astype(np.int32),
        head=head.astype(np.int32),
        rel=[relations[r] for r in rel],
        prob=prob,
        threshold=float(threshold),
    )


def reverse_ldd(ldd: SparseLDD, n: int) -> SparseLDD:
    """Map an LDD computed on the reversed sentence back to the original word order."""
    dep = (n + 1 - ldd.dep).astype(np.int32)
    head = np.where(ldd.head == 0, 0, n + 1 - ldd.head).astype(np.int32)
    order = np.lexsort((head, dep))
    return SparseLDD(dep[order], head[order], [ldd.rel[i] for i in order], ldd.prob[order], ldd.threshold)


def ldd_argmax(ldd: SparseLDD, n: int) -> tuple[list[int], list[str | None]]:
    """The most probable (head, relation) of each word 1..n in a sparse LDD (None when a row is empty)."""
    best: list[tuple[float, int, str | None]] = [(-1.0, -1, None)] * n
    for d, h, r, p in zip(ldd.dep, ldd.head, ldd.rel, ldd.prob, strict=True):
        if p > best[d - 1][0]:
            best[d - 1] = (float(p), int(h), r)
    return [b[1] for b in best], [b[2] for b in best]

