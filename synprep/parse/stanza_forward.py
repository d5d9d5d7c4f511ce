"""The forward stage of a stanza parse: the POS and depparse models over a document's batches.

These are the calls stanza's ``POSProcessor`` and ``DepparseProcessor`` make — the same datasets,
batches and models — without their per-word Python decoding and two products on work the output
does not need (:mod:`synprep.parse.stanza_scores`: the depparse relation scores of padding pairs, the POS
columns' bilinear product per word where it is one per parent tag; the same tags, heads and relations,
the relation log-probabilities equal to float rounding):
:func:`pos_stage` looks the POS labels up per batch (:func:`synprep.parse.stanza_decode.unmap_ids`),
:func:`depparse_scores` returns each sentence's compact score arrays for the decode stage
(:class:`synprep.parse.stanza_decode.SentenceScores`, decoded by
:meth:`synprep.parse.stanza_decode.DecodeContext.decode`, possibly in another process).

:func:`forward_words` is the same on the batches :class:`synprep.parse.stanza_inputs.InputBuilder`
builds from the word lists (no Document, no stanza ``Dataset``/``DataLoader``: equal tensors); the
Document functions stay the reference and the fallback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from synprep.parse.stanza_decode import unmap_ids
from synprep.parse.stanza_inputs import InputBuilder
from synprep.parse.stanza_scores import graph_scores, pos_scores


def pos_stage(pos: Any, doc: Any) -> None:
    """stanza 1.15's ``POSProcessor.process``: the same batches and forward, labels looked up per batch.

    stanza's ``Trainer.predict`` maps every word's ids back to strings one by one in Python
    (``vocab.unmap``; the features' composite vocabulary formats ``key=value`` pairs for each
    word). Here each batch's argmax ids are gathered for the real words only and each distinct
    id (tuple) is mapped once with the same ``vocab.id2unit``, so the strings are stanza's
    (tests/test_parse_mst.py compares UPOS/XPOS/features with stanza's Pipeline).

    Args:
        pos: the pipeline's POS processor (``nlp.processors["pos"]``).
        doc: a tokenized stanza Document; its words get UPOS, XPOS and FEATS.
    """
    import torch
    from stanza.models.common import doc as sdoc
    from stanza.models.common.utils import unsort
    from stanza.models.pos.data import Dataset
    from stanza.models.pos.trainer import unpack_batch

    cfg = pos.config
    dataset = Dataset(doc, cfg, pos.pretrain, vocab=pos.vocab, evaluation=True, sort_during_eval=True)
    loader = dataset.to_length_limited_loader(batch_size=cfg["batch_size"],
                                              maximum_tokens=cfg.get("batch_maximum_tokens", 5000))
    trainer = pos.trainer
    model = trainer.model
    device = next(model.parameters()).device
    columns = [(k, c) for k, c in enumerate(model.tag_columns) if c.output]
    preds: list = []
    idx: list = []
    model.eval()
    with torch.no_grad():
        for b in loader:
            idx.extend(b[-1])
            inputs, orig_idx, word_orig_idx, sentlens, wordlens, text = unpack_batch(b, device)
            word, word_mask, wordchars, wordchars_mask, tags, pretrained = inputs
            _, out = pos_scores(model, word, word_mask, wordchars, wordchars_mask, tags, pretrained, word_orig_idx,
                                sentlens, wordlens, text)
            lengths = np.asarray(sentlens)
            real = np.arange(int(lengths.max()))[None, :] < lengths[:, None]  # (B, L) the real words
            seqs = [unmap_ids(trainer.vocab[c.name], out[k].cpu().numpy()[:, : real.shape[1]][real])
                    for k, c in columns]
            starts = np.concatenate([[0], np.cumsum(lengths)]).tolist()
            tokens = [[[seq[w] for seq in seqs] for w in range(starts[i], starts[i + 1])] for i in range(len(lengths))]
            preds += unsort(tokens, orig_idx)
    preds = unsort(preds, idx)
    dataset.doc.set([sdoc.UPOS, sdoc.XPOS, sdoc.FEATS], [y for x in preds for y in x])


def depparse_batches(dp: Any, doc: Any) -> tuple[Any, Any]:
    """Run stanza's depparse model over a document's batches, as ``DepparseProcessor.process`` does.

    The same ``DataLoader(doc, ..., evaluation=True)`` batches and ``GraphParser.forward`` call;
    nothing is decoded here.

    Args:
        dp: the pipeline's depparse processor.
        doc: a stanza Document with POS tags.

    Returns:
        ``(loader, batches)``: stanza's DataLoader (its ``data_orig_idx`` restores document order) and
        an iterator of ``(scores, sentlens, orig_idx)`` per batch: the model's three numpy score arrays
        (see :func:`synprep.parse.stanza_decode.decode_batch`), the nodes (words + 1) per sentence, and
        stanza's ``orig_idx`` (the batch's order back to the length-sorted document order).
    """
    loader = _loader(dp, doc)
    return loader, _forward(dp, loader)


def _loader(dp: Any, doc: Any) -> Any:
    """stanza's depparse ``DataLoader`` over a document, as ``DepparseProcessor.process`` builds it."""
    from stanza.models.depparse.data import DataLoader
    from stanza.pipeline.depparse_processor import DEFAULT_SEPARATE_BATCH

    cfg = dp.config
    loader = DataLoader(
        doc,
        cfg["batch_size"],
        cfg,
        dp.pretrain,
        vocab=dp.vocab,
        evaluation=True,
        sort_during_eval=cfg.get("sort_during_eval", True),
        min_length_to_batch_separately=cfg.get("min_length_to_batch_separately", DEFAULT_SEPARATE_BATCH),
    )
    return loader


def _forward(dp: Any, batches: Any):
    """stanza's ``GraphParser.forward`` over the batches: ``(scores, sentlens, orig_idx)`` per batch (the reference
    of :func:`_forward_cut`)."""
    import torch
    from stanza.models.depparse.trainer import unpack_batch

    model = dp.trainer.model
    device = model.get_device()
    model.eval()
    with torch.no_grad():
        for b in batches:
            inputs, orig_idx, word_orig_idx, sentlens, wordlens, text = unpack_batch(b, device)
            _, scores = model(*inputs, word_orig_idx, sentlens, wordlens, text)
            yield scores, sentlens, orig_idx


def _cut_batch(scores: Any, sentlens: list[int], with_labels: bool) -> list:
    cut = []
    for i, m in enumerate(sentlens):
        labels = np.ascontiguousarray(scores[1][i, :m, :m], dtype=np.int32) if with_labels else None
        cut.append((np.ascontiguousarray(scores[0][i, :m, :m]), labels, np.ascontiguousarray(scores[2][i, :m, :m])))
    return cut


def _cut(batches: Any, data_orig_idx: list | None, with_labels: bool) -> list:
    """Each sentence's score arrays of :func:`_forward`'s batches, in document order."""
    from stanza.models.common.utils import unsort

    out: list = []
    for scores, sentlens, orig_idx in batches:
        out += unsort(_cut_batch(scores, sentlens, with_labels), orig_idx)
    if data_orig_idx is not None:
        out = unsort(out, data_orig_idx)
    return out


def _forward_cut(dp: Any, batches: Any, data_orig_idx: list | None, with_labels: bool) -> list:
    """:func:`_cut` of :func:`_forward`, with the relation scores computed per sentence (:mod:`stanza_scores`).

    A model :func:`~synprep.parse.stanza_scores.graph_scores` does not reproduce runs stanza's own forward.
    """
    import torch
    from stanza.models.common.utils import unsort
    from stanza.models.depparse.trainer import unpack_batch

    model = dp.trainer.model
    device = model.get_device()
    model.eval()
    out: list = []
    with torch.inference_mode():
        for b in batches:
            inputs, orig_idx, word_orig_idx, sentlens, wordlens, text = unpack_batch(b, device)
            cut = graph_scores(model, inputs, word_orig_idx, sentlens, wordlens, text, with_labels)
            if cut is None:
                _, scores = model(*inputs, word_orig_idx, sentlens, wordlens, text)
                cut = _cut_batch(scores, sentlens, with_labels)
            out += unsort(cut, orig_idx)
    if data_orig_idx is not None:
        out = unsort(out, data_orig_idx)
    return out


def depparse_scores(dp: Any, doc: Any, with_labels: bool) -> list[tuple[np.ndarray, np.ndarray | None, np.ndarray]]:
    """Each sentence's depparse score arrays, in document order, cut to its own ``n+1`` nodes.

    Args:
        dp: the depparse processor.
        doc: a stanza Document with POS tags.
        with_labels: keep the model's argmax label ids (needed unless ``resolve_head_constraints``).

    Returns:
        per sentence ``(head_logp (n+1, n+1) float32, label_ids (n+1, n+1) int32 or None,
        rel_logp (n+1, n+1, R) float32)``: the values of the padded batch, unchanged.
    """
    loader = _loader(dp, doc)
    return _forward_cut(dp, loader, loader.data_orig_idx, with_labels)


@dataclass
class WordsForward:
    """:func:`forward_words`' result for S sentences of N words in all.

    Attributes:
        upos: ``(N,)`` object arrays of the POS labels (stanza's strings), flat in order.
        xpos: ``(N,)`` object arrays of the POS labels (stanza's strings), flat in order.
        feats: ``(N,)`` object arrays of the POS labels (stanza's strings), flat in order.
        starts: ``(S+1,)`` the sentences' word offsets in those arrays.
        scores: per sentence, :func:`depparse_scores`' arrays.
    """

    upos: np.ndarray
    xpos: np.ndarray
    feats: np.ndarray
    starts: np.ndarray
    scores: list


def pos_words(pos: Any, builder: InputBuilder, t: Any) -> tuple[dict, dict]:
    """The POS model over the batches :meth:`InputBuilder.pos_batches` builds; labels looked up per distinct id.

    Returns:
        ``(labels, dep)``: per column (``upos``, ``xpos``, ``feats``) the ``(N,)`` object array of labels
        and the ``(N,)`` / ``(N, K)`` ids of those labels in the depparse vocabulary, flat document order.
    """
    import torch
    from stanza.models.pos.trainer import unpack_batch

    model = pos.trainer.model
    device = next(model.parameters()).device
    columns = [(k, c.name) for k, c in enumerate(model.tag_columns) if c.output]
    n_words = len(t.rows)
    labels = {name: np.empty(n_words, dtype=object) for _, name in columns}
    dep: dict = {}
    model.eval()
    with torch.no_grad():
        for b, idx in builder.pos_batches(t):
            inputs, orig_idx, word_orig_idx, sentlens, wordlens, text = unpack_batch(b, device)
            word, word_mask, wordchars, wordchars_mask, tags, pretrained = inputs
            _, out = pos_scores(model, word, word_mask, wordchars, wordchars_mask, tags, pretrained, word_orig_idx,
                                sentlens, wordlens, text)
            sel = np.asarray(idx, dtype=np.int64)[np.asarray(orig_idx, dtype=np.int64)]  # sorted order -> sentence
            lengths = t.lengths[sel]
            real = np.arange(int(lengths.max()))[None, :] < lengths[:, None]
            before = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            where = np.repeat(t.starts[sel] - before, lengths) + np.arange(int(lengths.sum()))  # flat positions
            for k, name in columns:
                names, ids = builder.dp_tags(name, out[k].cpu().numpy()[:, : real.shape[1]][real])
                labels[name][where] = names
                if name not in dep:
                    dep[name] = np.zeros((n_words,) + ids.shape[1:], dtype=np.int64)
                dep[name][where] = ids
    return labels, dep


def forward_words(pos: Any, dp: Any, builder: InputBuilder, sentences: list[list[str]],
                  with_labels: bool) -> WordsForward | None:
    """POS and depparse forward over word lists, stanza's batches built by ``builder`` (no Document).

    The same forward calls on equal tensors as :func:`pos_stage` + :func:`depparse_scores` on the
    Document stanza builds from these words (tests/test_stanza_inputs.py), so the same floats.

    Args:
        pos: the pipeline's POS processor.
        dp: its depparse processor (with ``pos``, a pair
            :func:`~synprep.parse.stanza_inputs.unsupported_reason` accepts).
        builder: their :class:`InputBuilder`.
        sentences: non-empty word lists.
        with_labels: see :func:`depparse_scores`.

    Returns:
        the labels and scores, or None where stanza's Document path behaves otherwise, which the caller
        then takes (with stanza's own errors): an empty word or one with white space (the Document
        rejects it), or a word whose POS word id is PAD (``<PAD>`` in a case-sensitive vocabulary:
        stanza's loader miscounts that sentence).
    """
    t = builder.table(sentences)
    if t.blank or (t.pos_word == 0).any():
        return None
    labels, dep = pos_words(pos, builder, t)
    data_orig_idx, batches = builder.dp_batches(t, dep["upos"], dep["xpos"], dep["feats"])
    scores = _forward_cut(dp, batches, data_orig_idx, with_labels)
    return WordsForward(labels["upos"], labels["xpos"], labels["feats"], t.starts, scores)
