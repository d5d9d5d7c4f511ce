"""stanza 1.15's depparse decoding and POS label lookup, reproduced fast (docs/parse.md).

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

import numpy as np

from synprep.signature import package_version

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
        sentlens: ``(B,)`` words + 1 per sentence. vocab: the deprel vocabulary.
        relations: ``(R,)`` the relation names of the label columns.

    Returns:
        per sentence, per word ``[head, deprel]`` (head 1-based, 0 = root), as stanza returns them.
    """
    from stanza.models.depparse import head_constraints
    from stanza.models.depparse.head_constraints import DEPREL_TO_GROUP

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
