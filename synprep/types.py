"""The data that flows between stages.

``ParsedSentence`` / ``ParsedLine``: what a parser (stanza, CoreNLP) or an importer (CoNLL-U,
bracketed trees) produces for one source line, at the *word* level: the words are the Moses
tokens of the line, unescaped (SPEC.md §1), never re-tokenized.

``PairRecord``: one sentence pair ready for a shard (docs/FORMAT.md): subword ids and every
syntax feature, with line-level indices (sentence-relative indices already offset, SPEC.md §1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where arrays are made: the line tools and the options read this module
    import numpy as np

#: UD v2 universal POS tags; ``UPOS_TAGS.index(tag)`` is the stored id, unknown tags map to "X".
UPOS_TAGS = (
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART",
    "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
)  # fmt: skip

#: UD v2 universal dependency relations; a subtype (``nmod:poss``) is stored as its base
#: relation (``nmod``); an unknown label is stored as ``dep``.
DEPRELS = (
    "acl", "advcl", "advmod", "amod", "appos", "aux", "case", "cc", "ccomp", "clf",
    "compound", "conj", "cop", "csubj", "dep", "det", "discourse", "dislocated", "expl",
    "fixed", "flat", "goeswith", "iobj", "list", "mark", "nmod", "nsubj", "nummod", "obj",
    "obl", "orphan", "parataxis", "punct", "reparandum", "root", "vocative", "xcomp",
)  # fmt: skip

_UPOS_ID = {t: i for i, t in enumerate(UPOS_TAGS)}
_DEPREL_ID = {t: i for i, t in enumerate(DEPRELS)}


def upos_id(tag: str) -> int:
    """Id of a UPOS tag in :data:`UPOS_TAGS` (unknown → ``X``)."""
    return _UPOS_ID.get(tag, _UPOS_ID["X"])


def deprel_id(label: str) -> int:
    """Id of a UD relation in :data:`DEPRELS`; subtypes reduce to their base, unknown → ``dep``."""
    base = label.split(":", 1)[0].lower()
    return _DEPREL_ID.get(base, _DEPREL_ID["dep"])


def smallest_unsigned(max_value: int) -> np.dtype:
    """uint8, uint16 or uint32: the smallest unsigned dtype holding ``max_value`` (>= 0): the dtype of a line's
    word-indexed features (:mod:`synprep.features.line`) and of a shard's ``unsigned`` fields (the writer).

    Raises:
        ValueError: ``max_value`` >= 2**32.
    """
    import numpy as np

    for dt in (np.uint8, np.uint16, np.uint32):
        if max_value <= np.iinfo(dt).max:
            return np.dtype(dt)
    raise ValueError(f"value {max_value} does not fit uint32")


@dataclass
class SparseLDD:
    """Sparse labeled dependency distribution of one sentence (SPEC.md §4).

    Entry k says ``P(head(dep[k]) = head[k], rel(dep[k]) = rel[k]) = prob[k]``.

    Attributes:
        dep: (K,) int32, dependent word, 1-based, sentence-relative.
        head: (K,) int32, head word, 1-based sentence-relative, 0 = root.
        rel: (K,) UD relation labels (str).
        prob: (K,) float32 probabilities in (0, 1].
        threshold: entries with probability below this were dropped (0.0 for one-hot rows).
    """

    dep: np.ndarray
    head: np.ndarray
    rel: list[str]
    prob: np.ndarray
    threshold: float = 0.0


@dataclass
class ParsedSentence:
    """One parsed sentence at the word level.

    Attributes:
        words: (n,) surface tokens exactly as given to the parser (Moses tokens, unescaped).
            For CoNLL-U with multiword tokens, the surface token (``zum``), not its members.
        upos: (n,) UD POS tags.
        heads: (n,) 1-based sentence-relative head of each word, 0 = root (CoNLL-U).
        deprels: (n,) UD relation labels.
        tree: bracketed constituency tree whose leaves are ``words`` in order, or None.
        tree_source: ``"constituency"`` (a parser's or the user's tree) or ``"dependency"``
            (derived from heads, SPEC.md §4) or None when there is no tree.
        ldd: the parser's labeled dependency distribution, or None (one-hot from heads).
    """

    words: list[str]
    upos: list[str]
    heads: list[int]
    deprels: list[str]
    tree: str | None = None
    tree_source: str | None = None
    ldd: SparseLDD | None = None


@dataclass
class ParsedLine:
    """The parse of one source line: one or more sentences, or a recorded failure.

    Attributes:
        line: 1-based line number in the input the parser was given.
        sentences: the sentences in order (empty when ``error`` is set).
        error: None, or the reason the parser failed on this line.
    """

    line: int
    sentences: list[ParsedSentence] = field(default_factory=list)
    error: str | None = None

    @property
    def words(self) -> list[str]:
        return [w for s in self.sentences for w in s.words]


@dataclass
class PairRecord:
    """One sentence pair with its source-side syntax, as stored in a shard (docs/FORMAT.md).

    T = number of source pieces (no ``</s>``), U = target pieces, W = source words,
    S = sentences in the source line, K = LDD entries.

    Attributes:
        line: 1-based line number of the pair in the original (uncleaned) corpus.
        src_ids: (T,) source piece ids.
        tgt_ids: (U,) target piece ids.
        word_index: (T,) 0-based word of each source piece.
        heads: (W,) 1-based *line-level* head word, 0 = root.
        deprel: (W,) ids in :data:`DEPRELS`.
        upos: (W,) ids in :data:`UPOS_TAGS`.
        sent_start: (S,) 0-based first word of each sentence.
        gaps_cnf: (T-1,) piece-level syntactic distances (SPEC.md §2; 1 inside a word,
            d+1 between words, 999 between sentences; no </s> gap).
        gaps_nary: (T-1,) piece-level syntactic distances (SPEC.md §2; 1 inside a word,
            d+1 between words, 999 between sentences; no </s> gap).
        ldd_dep: (K,) 1-based line-level dependent word.
        ldd_head: (K,) 1-based line-level head, 0 = root.
        ldd_rel: (K,) ids in :data:`DEPRELS`.
        ldd_prob: (K,) float32.
    """

    line: int
    src_ids: np.ndarray
    tgt_ids: np.ndarray
    word_index: np.ndarray
    heads: np.ndarray
    deprel: np.ndarray
    upos: np.ndarray
    sent_start: np.ndarray
    gaps_cnf: np.ndarray
    gaps_nary: np.ndarray
    ldd_dep: np.ndarray
    ldd_head: np.ndarray
    ldd_rel: np.ndarray
    ldd_prob: np.ndarray
