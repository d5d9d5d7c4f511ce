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

import weakref
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


# --- the POS model's tag columns conditioned on the UPOS tag ------------------------------------------------


class _ParentTagScorer:
    """A POS tag column's ``BiaffineScorer`` for a parent that is a tag's embedding, from the tag's id.

    stanza scores the column as ``[h, 1]ᵀ W_k [e(t), 1] + b_k`` for each word's hidden state ``h`` and its
    parent tag ``t``'s embedding ``e(t)``: a ``(I, J)`` product per label and word. The parent has a few dozen
    tags, so ``W_k [e(t), 1]`` is computed once per tag (``(V, K, I)``, at load) and each word's scores are one
    row of ``[h, 1]`` times the ``(V·K, I)`` matrix, its tag's ``K`` columns kept: the same sums in another order.
    """

    def __init__(self, scorer: Any, embedding: Any):
        import torch

        weight, self.bias = scorer.W_bilin.weight, scorer.W_bilin.bias  # (K, I, J), (K,)
        tags = torch.cat([embedding.weight, embedding.weight.new_ones(embedding.weight.shape[0], 1)], 1)  # (V, J)
        self.n_tags, self.n_labels = tags.shape[0], weight.shape[0]
        self.per_tag = torch.einsum("kij,vj->vki", weight, tags).reshape(-1, weight.shape[1]).T.contiguous()

    def __call__(self, hidden: Any, tag_ids: Any) -> Any:
        import torch

        h = torch.cat([hidden, hidden.new_ones(hidden.shape[0], 1)], 1)
        every = (h @ self.per_tag).view(h.shape[0], self.n_tags, self.n_labels)
        return every.gather(1, tag_ids.view(-1, 1, 1).expand(-1, 1, self.n_labels)).squeeze(1) + self.bias


class _TagIdParents:
    """A stand-in for a POS ``Tagger`` whose tag columns get their parent tag's ids (not its embedding) and score
    them with :class:`_ParentTagScorer`: ``Tagger.forward(stand_in, ...)`` runs stanza's code otherwise."""

    def __init__(self, model: Any):
        import torch

        self._model = model
        self.tag_clf: dict[str, Any] = {}
        for name, clf in model.tag_clf.items():
            (parent,) = model.column_parents[name]
            emb = model.upos_emb if parent == "upos" else model.tag_emb[parent]
            self.tag_clf[name] = ([_ParentTagScorer(c, emb) for c in clf] if isinstance(clf, torch.nn.ModuleList)
                                  else _ParentTagScorer(clf, emb))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def parent_representation(self, name: str, hids: dict, tag_scores: dict, gold: dict) -> Any:
        (parent,) = self._model.column_parents[name]
        return tag_scores[parent].max(1)[1]  # stanza's predicted parent tag (whose embedding stanza passes on)


def pos_reproduced(model: Any) -> bool:
    """Whether :func:`pos_scores` computes ``model``'s tags: stanza's ``Tagger`` in evaluation mode whose tag
    columns each hang off one parent through the parent's tag embedding, each scored by a ``BiaffineScorer``."""
    import torch
    from stanza.models.common.biaffine import BiaffineScorer
    from stanza.models.pos.model import Tagger
    from stanza.models.pos.tag_columns import TAG_LINK_EMB

    if type(model) is not Tagger or model.training or model.share_hid or model.link_mode != TAG_LINK_EMB:
        return False
    for name, clf in model.tag_clf.items():
        scorers = list(clf) if isinstance(clf, torch.nn.ModuleList) else [clf]
        parents = tuple(model.column_parents.get(name, ()))
        if len(parents) != 1 or any(type(s) is not BiaffineScorer or type(s.W_bilin) is not torch.nn.Bilinear
                                    for s in scorers):
            return False
        if parents[0] != "upos" and parents[0] not in model.tag_emb:
            return False
    return True


_POS_STAND_INS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> its _TagIdParents


def pos_scores(model: Any, *args: Any) -> Any:
    """``model(*args)`` of a POS ``Tagger`` (stanza's ``forward`` arguments), the tag columns conditioned on a
    parent tag scored per tag (:class:`_ParentTagScorer`) where :func:`pos_reproduced`, else stanza's forward.

    Returns:
        what stanza's ``Tagger.forward`` returns: ``(loss, predictions)``, the predictions' argmax ids
        ``(B, L)`` (or ``(B, L, K)`` for a composite column), the same tags up to float rounding of the scores.
    """
    if not pos_reproduced(model):
        return model(*args)
    stand_in = _POS_STAND_INS.get(model)
    if stand_in is None:
        stand_in = _POS_STAND_INS[model] = _TagIdParents(model)
    return type(model).forward(stand_in, *args)
