"""The POS and depparse models' input tensors built from the word lists, without a stanza Document.

stanza 1.15 builds them per word in Python: a ``Document`` from the pretokenized words
(``TokenizeProcessor``), the POS ``Dataset`` and the depparse ``DataLoader`` (``doc.get``,
``simplify_punct``, ``vocab.map`` per word and per character, ``get_long_tensor``). Here each distinct
word's ids (word, pretrained, characters; for depparse also the lemma, which the identity lemmatizer
makes the word itself) are looked up once and kept in a per-word cache (text is Zipfian), the
predicted UPOS/XPOS/FEATS are mapped to the depparse vocabulary once per distinct tag, and each
batch's padded tensors are gathered with numpy. The batches, their order, the sorting inside a batch,
the padding and the dtypes are stanza's (stanza's own ``LengthLimitedBatchSampler``, ``data_to_batches``
and ``sort_all`` order them), so the forward calls get equal tensors and give the same floats
(tests/test_stanza_inputs.py compares every tensor of every batch with stanza's loaders).

:func:`unsupported_reason` names what a model configuration uses that is not reproduced here (a
transformer, whose ``Dataset`` drops over-long sentences; reversed depparse input; other tag columns;
another model class; another stanza version): such a pipeline takes the Document path
(:meth:`synprep.parse.stanza_parser.StanzaParser.forward`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from synprep.parse.stanza_decode import stanza_reproduced

#: distinct words kept in a builder's cache before it is emptied (about 0.6 KB each; the values are pure
#: functions of the word, so emptying changes nothing but time)
CACHE_WORDS = 200_000
#: longer words are looked up every time, never cached: the cache then holds at most CACHE_WORDS × this many
#: characters (a long word is a URL, base64 or code, rarely seen twice; its entry costs ~16 bytes a character)
CACHE_WORD_CHARS = 64
#: stanza's tag columns that synprep's POS stage writes (and the only ones the fast inputs reproduce)
POS_COLUMNS = ("upos", "xpos", "feats")


def unsupported_reason(pos: Any, dp: Any) -> str | None:
    """Why the fast inputs cannot stand in for stanza's loaders for these processors (None: they can).

    Args:
        pos: the pipeline's POS processor.
        dp: its depparse processor.

    Returns:
        a short reason (logged by the caller) or None.
    """
    from stanza.models.depparse.model import GraphParser
    from stanza.models.pos.model import Tagger
    from stanza.models.pos.tag_columns import tag_columns_from_args

    if not stanza_reproduced():
        return "stanza is not 1.15.x"
    if type(pos.trainer.model) is not Tagger:
        return f"POS model {type(pos.trainer.model).__name__}"
    if type(dp.trainer.model) is not GraphParser:
        return f"depparse model {type(dp.trainer.model).__name__}"
    for name, proc in (("pos", pos), ("depparse", dp)):
        if proc.config.get("bert_model") or proc.trainer.args.get("bert_model"):
            return f"the {name} model uses a transformer ({proc.config.get('bert_model') or proc.trainer.args.get('bert_model')})"
    if dp.config.get("reversed", False) or dp.trainer.args.get("reversed", False):
        return "the depparse model reads sentences reversed"
    columns = tuple(tag_columns_from_args(pos.config))
    if any(c.misc_key for c in columns):
        return "a POS tag column read from MISC"
    out = tuple((c.name, c.field) for c in pos.trainer.model.tag_columns if c.output)
    if out != tuple((c, c) for c in POS_COLUMNS):
        return f"POS output columns {[c for c, _ in out]}"
    return None


@dataclass
class _Table:
    """One document's distinct words: ``rows[w]`` the table row of each flat word position."""

    rows: np.ndarray  # (N,) int64
    starts: np.ndarray  # (S+1,) word offsets of the sentences
    lengths: np.ndarray  # (S,) words per sentence
    pos_word: np.ndarray  # (U,) ids per distinct word
    pos_pretrain: np.ndarray
    pos_chars: np.ndarray  # (U, C) padded with PAD_ID
    pos_nchars: np.ndarray  # (U,)
    dp_word: np.ndarray  # (U+1,): row U is the ROOT pseudo-word
    dp_lemma: np.ndarray
    dp_pretrain: np.ndarray
    dp_chars: np.ndarray  # (U+1, C')
    dp_nchars: np.ndarray
    text: list[list[str]]  # per sentence, after stanza's simplify_punct
    blank: bool  # a word is empty or has white space (stanza's Document rejects or splits it)


def _pad_rows(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    lens = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    mat = np.zeros((len(rows), int(lens.max()) if len(rows) else 0), dtype=np.int64)
    if len(rows):
        mat[np.arange(mat.shape[1])[None, :] < lens[:, None]] = np.fromiter(
            (c for r in rows for c in r), dtype=np.int64, count=int(lens.sum()))
    return mat, lens


def _gather(table: np.ndarray, rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``table[rows]`` where ``mask``, PAD_ID (0) elsewhere (extra trailing axes of table kept)."""
    out = table[np.where(mask, rows, 0)]
    out[~mask] = 0
    return out


class InputBuilder:
    """Builds stanza 1.15's POS and depparse batches from word lists, with per-word caches.

    Args:
        pos: the pipeline's POS processor.
        dp: its depparse processor (see :func:`unsupported_reason`; call it first: the builder assumes a
            supported pair).
    """

    def __init__(self, pos: Any, dp: Any):
        self.pos, self.dp = pos, dp
        self.pos_pretrain = pos.pretrain.vocab if pos.pretrain is not None and pos.config["pretrain"] else None
        self.dp_pretrain = dp.pretrain.vocab if dp.pretrain is not None and dp.config["pretrain"] else None
        self.words: dict[str, tuple] = {}  # word -> (simplified text, pos ids, dp ids)
        self.tags: dict[tuple, tuple] = {}  # (column, POS id or id tuple) -> (label, depparse id(s))
        self.deprel_none = dp.vocab["deprel"].unit2id("_")
        self.ncols = len(_tag_names(pos.config))  # the POS Dataset's tag columns: all None for untagged words

    # --- the per-word part ------------------------------------------------------------------------

    def _word(self, word: str) -> tuple:
        from stanza.models.common.utils import simplify_punct
        from stanza.models.common.vocab import PAD_ID

        text = simplify_punct([[[word]]])[0][0][0]
        pv, dv = self.pos.vocab, self.dp.vocab
        pos = (pv["word"].unit2id(text), self.pos_pretrain.unit2id(text.lower()) if self.pos_pretrain else PAD_ID,
               pv["char"].map(list(text)))
        lemma = max([(len(word), word), (0, "_")])[1]  # the identity lemmatizer's lemma (stanza's lemma_processor)
        dep = (dv["word"].unit2id(text), dv["lemma"].unit2id(lemma),
               self.dp_pretrain.unit2id(text.lower()) if self.dp_pretrain else PAD_ID, dv["char"].map(list(text)))
        return text, pos, dep

    def table(self, sentences: list[list[str]]) -> _Table:
        """The document's distinct words and their ids (each new word looked up once per builder)."""
        from stanza.models.common.vocab import ROOT_ID

        index: dict[str, int] = {}
        rows = np.fromiter((index.setdefault(w, len(index)) for s in sentences for w in s), dtype=np.int64)
        if len(self.words) > CACHE_WORDS:
            self.words.clear()
        cache = self.words
        entries = []
        for w in index:
            e = cache.get(w)
            if e is None:
                e = self._word(w)
                if len(w) <= CACHE_WORD_CHARS:
                    cache[w] = e
            entries.append(e)
        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        pos_chars, pos_nchars = _pad_rows([e[1][2] for e in entries])
        dp_chars, dp_nchars = _pad_rows([e[2][3] for e in entries] + [[ROOT_ID]])
        if any(e[0] != w for e, w in zip(entries, index, strict=True)):  # simplify_punct changed some words
            simple = {w: e[0] for e, w in zip(entries, index, strict=True)}
            text = [[simple[w] for w in s] for s in sentences]
        else:
            text = [list(s) for s in sentences]
        return _Table(
            rows=rows, starts=np.concatenate([[0], np.cumsum(lengths)]), lengths=lengths,
            pos_word=np.array([e[1][0] for e in entries], dtype=np.int64),
            pos_pretrain=np.array([e[1][1] for e in entries], dtype=np.int64),
            pos_chars=pos_chars, pos_nchars=pos_nchars,
            dp_word=np.array([e[2][0] for e in entries] + [ROOT_ID], dtype=np.int64),
            dp_lemma=np.array([e[2][1] for e in entries] + [ROOT_ID], dtype=np.int64),
            dp_pretrain=np.array([e[2][2] for e in entries] + [ROOT_ID], dtype=np.int64),
            dp_chars=dp_chars, dp_nchars=dp_nchars, text=text,
            blank=any(len(w.split()) != 1 or w.strip() != w for w in index))

    # --- POS ----------------------------------------------------------------------------------------

    def pos_batches(self, t: _Table):
        """stanza's POS loader (``Dataset(..., evaluation=True).to_length_limited_loader``), batch by batch.

        Yields:
            ``(batch, sentences)``: a ``stanza.models.pos.data.DataBatch`` equal to stanza's (same
            tensors, dtypes, ``orig_idx``, ``word_orig_idx``, lengths, text; ``tags`` all None as for
            an untagged document) and the batch's sentence indices (stanza's ``idx``).
        """
        import torch
        from stanza.models.common.data import sort_all
        from stanza.models.pos.data import DataBatch, LengthLimitedBatchSampler

        cfg = self.pos.config
        proxy = [(_Words(int(n)), i) for i, n in enumerate(t.lengths)]
        sampler = LengthLimitedBatchSampler(proxy, cfg["batch_size"], cfg.get("batch_maximum_tokens", 5000))
        for idx in sampler:
            sel = np.asarray(idx, dtype=np.int64)
            n = t.lengths[sel]
            L = int(n.max())
            pos_in = t.starts[sel][:, None] + np.arange(L)[None, :]
            mask = np.arange(L)[None, :] < n[:, None]
            rows = np.where(mask, t.rows[np.minimum(pos_in, len(t.rows) - 1)], 0)
            word = _gather(t.pos_word, rows, mask)
            lens = (word != 0).sum(axis=1)  # stanza: torch.sum(words != PAD_ID)
            _, orig_idx = sort_all([list(range(len(idx)))], lens.tolist())
            order = np.asarray(orig_idx, dtype=np.int64)
            word, rows, mask = word[order], rows[order], mask[order]
            pretrained = _gather(t.pos_pretrain, rows, mask)
            wrows = rows[mask]  # the batch's words, sentence by sentence in sorted order
            wlens = t.pos_nchars[wrows]
            worder = np.lexsort((-np.arange(len(wrows)), -wlens))  # sort_all: length, then position, descending
            wlens = wlens[worder]
            wordchars = t.pos_chars[wrows[worder], : int(wlens.max())]
            words = torch.from_numpy(np.ascontiguousarray(word))
            chars = torch.from_numpy(np.ascontiguousarray(wordchars))
            yield DataBatch(words, torch.eq(words, 0), chars, torch.eq(chars, 0), [None] * self.ncols,
                            torch.from_numpy(np.ascontiguousarray(pretrained)), orig_idx, worder.tolist(),
                            list(torch.from_numpy(lens[order])), wlens.tolist(),
                            [t.text[int(i)] for i in sel[order]], tuple(idx)), idx

    def dp_tags(self, column: str, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """POS output ids of one column -> (labels, depparse ids), each distinct id (tuple) mapped once.

        Args:
            column: ``upos``, ``xpos`` or ``feats``.
            ids: ``(M,)`` or ``(M, K)`` POS argmax ids of M words.

        Returns:
            the M labels (an object array of ``vocab.id2unit`` strings, as stanza's POS trainer gives them) and ``(M,)`` or
            ``(M, K')`` int64 ids in the depparse vocabulary of that label (``vocab.unit2id``, as the
            depparse ``DataLoader`` reads them back from the document).
        """
        uniq, inverse = np.unique(ids, axis=0, return_inverse=True)
        names, dep = [], []
        pv, dv = self.pos.trainer.vocab[column], self.dp.vocab[column]
        for u in uniq.tolist():
            key = (column, tuple(u) if isinstance(u, list) else u)
            hit = self.tags.get(key)
            if hit is None:
                name = pv.id2unit(u)
                hit = self.tags[key] = (name, dv.unit2id(name))
            names.append(hit[0])
            dep.append(hit[1])
        inverse = inverse.reshape(-1)
        labels = np.empty(len(names), dtype=object)
        labels[:] = names
        return labels[inverse], np.asarray(dep, dtype=np.int64)[inverse]

    # --- depparse ----------------------------------------------------------------------------------

    def dp_batches(self, t: _Table, upos: np.ndarray, xpos: np.ndarray, feats: np.ndarray):
        """stanza's depparse ``DataLoader(doc, ..., evaluation=True)`` batches for a tagged document.

        Args:
            t: the document's table.
            upos: ``(N,)`` depparse-vocabulary ids of each word's predicted UPOS (:meth:`dp_tags`), flat
                document order.
            xpos: ``(N,)`` or ``(N, K)``, the same for XPOS.
            feats: ``(N, K)``, the same for the features.

        Returns:
            ``(data_orig_idx, batches)``: stanza's ``data_orig_idx`` (None when not sorted) and an iterator
            of the 16-tuples stanza's ``DataLoader.collate`` returns.
        """
        from stanza.models.common.vocab import ROOT_ID
        from stanza.models.depparse.data import data_to_batches
        from stanza.pipeline.depparse_processor import DEFAULT_SEPARATE_BATCH

        cfg = self.dp.config
        proxy = [(range(int(n) + 1), i) for i, n in enumerate(t.lengths)]
        chunks, data_orig_idx = data_to_batches(
            proxy, cfg["batch_size"], True, cfg.get("sort_during_eval", True),
            cfg.get("min_length_to_batch_separately", DEFAULT_SEPARATE_BATCH))
        # flat ROOT-prefixed token arrays: sentence s's tokens at dstarts[s] : dstarts[s] + n_s + 1
        S, N = len(t.lengths), len(t.rows)
        dstarts = t.starts[:-1] + np.arange(S)
        is_root = np.zeros(N + S, dtype=bool)
        is_root[dstarts] = True
        U = len(t.dp_word) - 1
        trow = np.full(N + S, U, dtype=np.int64)
        trow[~is_root] = t.rows

        def with_root(a: np.ndarray, root: Any) -> np.ndarray:
            out = np.empty((N + S,) + a.shape[1:], dtype=np.int64)
            out[is_root] = root
            out[~is_root] = a
            return out

        tags = (with_root(upos, ROOT_ID), with_root(xpos, ROOT_ID), with_root(feats, ROOT_ID))
        batches = (self._dp_batch(t, [x[1] for x in chunk], dstarts, trow, tags) for chunk in chunks)
        return data_orig_idx, batches

    def _dp_batch(self, t: _Table, sents: list[int], dstarts, trow, tags) -> tuple:
        import torch
        from stanza.models.common.data import sort_all

        lens = (t.lengths[sents] + 1).tolist()
        _, orig_idx = sort_all([list(range(len(sents)))], lens)
        sel = np.asarray(sents, dtype=np.int64)[np.asarray(orig_idx, dtype=np.int64)]
        m = t.lengths[sel] + 1
        L = int(m.max())
        ar = np.arange(L)[None, :]
        mask = ar < m[:, None]
        tok = np.where(mask, dstarts[sel][:, None] + ar, 0)
        rows = np.where(mask, trow[tok], 0)
        wrows = rows[mask]
        wlens = t.dp_nchars[wrows]
        worder = np.lexsort((-np.arange(len(wrows)), -wlens))
        wlens = wlens[worder]

        def tensor(a: np.ndarray):
            return torch.from_numpy(np.ascontiguousarray(a))

        words = tensor(_gather(t.dp_word, rows, mask))
        chars = tensor(t.dp_chars[wrows[worder], : int(wlens.max())])
        upos, xpos, feats = (tensor(_gather(a, tok, mask)) for a in tags)
        head_mask = np.arange(L - 1)[None, :] < (m - 1)[:, None]
        deprel = np.where(head_mask, self.deprel_none, 0).astype(np.int64)
        return (words, torch.eq(words, 0), chars, torch.eq(chars, 0), upos, xpos, feats,
                tensor(_gather(t.dp_pretrain, rows, mask)), tensor(_gather(t.dp_lemma, rows, mask)),
                torch.zeros((len(sel), L - 1), dtype=torch.int64), tensor(deprel), orig_idx, worder.tolist(),
                m.tolist(), wlens.tolist(), [t.text[int(i)] for i in sel])


class _Words:
    """A stand-in sample for stanza's ``LengthLimitedBatchSampler``: only ``len(item.word)`` is read."""

    __slots__ = ("word",)

    def __init__(self, n: int):
        self.word = range(n)


def _tag_names(cfg: dict) -> list[str]:
    from stanza.models.pos.tag_columns import tag_columns_from_args

    return [c.name for c in tag_columns_from_args(cfg)]
