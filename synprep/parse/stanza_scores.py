"""stanza's graph parser scores for one batch, with the relation scorer run on each sentence's own words.

``GraphParser.forward`` scores every (dependent, head) pair of the padded batch with the deep biaffine
relation scorer: an ``[B, L, L, R]`` tensor, then its argmax and log-softmax over relations — more than
half of the depparse model's CPU time, and most of it on padding (a batch pads every sentence to its
longest one: on English PUD in batches of 64 sentences, 1.5 times the real nodes and 2.3 times the real
pairs). :func:`graph_scores` runs the same model pieces: stanza's own ``forward_scores`` for the head scores
(the relation scorer stood in for, so the head log-probabilities are the same floats), and the relation
scorer's linear layers and bilinear product on the real nodes of each sentence only — the same products
summed over the same axes, so the same relation scores up to float rounding (the matrix products' rounding
depends on their shapes: stanza's own scores of a sentence differ so between batches), the same argmax
relations (tests/test_stanza_scores.py compares them with stanza's forward on real sentences).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class _RelationsDeferred:
    """A stand-in for a ``GraphParser`` whose relation scorer returns its (dropout-free) input, the LSTM output.

    ``GraphParser.forward_scores(stand_in, ...)`` then runs stanza's code for the head scores and hands back
    the ``[B, L, 2H]`` LSTM states in place of the ``[B, L, L, R]`` relation scores.
    """

    def __init__(self, model: Any):
        self._model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    @staticmethod
    def deprel(states: Any, _states: Any) -> Any:
        return states


def reproduced(model: Any) -> bool:
    """Whether :func:`graph_scores` computes ``model``'s scores: stanza's ``GraphParser`` (not an ensemble)
    in evaluation mode without the arc embedding, its relation scorer a pairwise deep biaffine scorer."""
    from stanza.models.common.biaffine import DeepBiaffineScorer, PairwiseBiaffineScorer, PairwiseBilinear
    from stanza.models.depparse.model import GraphParser

    scorer: Any = getattr(model, "deprel", None)
    return (type(model) is GraphParser and not model.training and not model.args.get("use_arc_embedding")
            and type(scorer) is DeepBiaffineScorer and type(scorer.scorer) is PairwiseBiaffineScorer
            and type(scorer.scorer.W_bilin) is PairwiseBilinear)


def graph_scores(model: Any, inputs: list, word_orig_idx: Any, sentlens: list[int], wordlens: Any, text: Any,
                 with_labels: bool) -> list[tuple[np.ndarray, np.ndarray | None, np.ndarray]] | None:
    """One batch's per-sentence scores, as stanza's ``GraphParser.forward`` cut to each sentence's nodes.

    Args:
        model: the depparse model.
        inputs: the eleven tensors of stanza's depparse ``unpack_batch``.
        word_orig_idx: stanza's word order of the batch's characters.
        sentlens: ``(B,)`` nodes (words + 1) per sentence.
        wordlens: the characters per word.
        text: the batch's words.
        with_labels: also return the argmax relation ids.

    Returns:
        per sentence of the batch, in its order, ``(head_logp (n+1, n+1) float32, label_ids (n+1, n+1) int32
        or None, rel_logp (n+1, n+1, R) float32)``; None for a model :func:`reproduced` rejects.
    """
    import torch
    import torch.nn.functional as F
    from stanza.models.common.vocab import VOCAB_PREFIX_SIZE
    from stanza.models.depparse.model import GraphParser

    if not reproduced(model):
        return None
    unlabeled, states, *_ = GraphParser.forward_scores(_RelationsDeferred(model), *inputs, word_orig_idx, sentlens,
                                                       wordlens, text)
    head_logp = F.log_softmax(unlabeled, 2).detach().cpu().numpy()
    d = model.deprel
    lengths = torch.tensor(sentlens, device=states.device)
    real = states[torch.arange(states.shape[1], device=states.device)[None, :] < lengths[:, None]]  # (nodes, 2H)

    def hidden(linear: Any) -> Any:
        h = d.dropout(d.hidden_func(linear(real)))
        return torch.cat([h, h.new_ones(h.shape[0], 1)], 1)

    dep, head = hidden(d.W1), hidden(d.W2)  # (nodes, I), (nodes, J): PairwiseBiaffineScorer's inputs
    bilinear = d.scorer.W_bilin
    n_in, n_head, n_rel = bilinear.weight.shape
    # (nodes, R, J): each dependent's product with every relation's matrix; R before J, so each sentence's
    # product with its heads is one matrix product of this tensor's rows
    per_dep = dep @ bilinear.weight.permute(0, 2, 1).reshape(n_in, n_rel * n_head)
    out = []
    start = 0
    for i, m in enumerate(sentlens):
        rows = slice(start, start + m)
        start += m
        rel = (per_dep[rows].reshape(m * n_rel, n_head) @ head[rows].T).view(m, n_rel, m).permute(0, 2, 1)
        rel = rel + bilinear.bias.expand(rel.shape)  # (m, m, R): dependent, head, relation
        labels = None
        if with_labels:
            labels = (rel.max(2)[1] + VOCAB_PREFIX_SIZE).cpu().numpy().astype(np.int32)
        out.append((np.ascontiguousarray(head_logp[i, :m, :m]), labels, F.log_softmax(rel, 2).cpu().numpy()))
    return out
