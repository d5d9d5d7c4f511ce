"""All source-side syntax features of one line: what the pipeline computes for every pair.

Source: SPEC.md §1–4, docs/FORMAT.md (fields and dtypes), :class:`synprep.types.PairRecord`.

:func:`line_features` takes the parse of a source line (:class:`~synprep.types.ParsedLine`, word
level) and its BPE pieces, checks that they agree (:func:`synprep.align.align`), and returns
exactly the source-side fields of :class:`~synprep.types.PairRecord`. Every sentence-relative
index is offset by its sentence's start. Trees: ``ParsedSentence.tree`` when present, else the
tree derived from the dependencies (:mod:`synprep.features.deptree`), whose gaps come straight from
the heads (:func:`~synprep.features.deptree.dependency_gaps`: no tree object, no nltk).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from synprep.align import align
from synprep.errors import InputError
from synprep.features.deptree import dependency_gaps
from synprep.features.distance import both_gaps, leaf_mismatch, line_word_gaps, parse_tree, spread_gaps
from synprep.features.ldd import line_ldd
from synprep.features.parents import check_heads
from synprep.features.relations import ancestor_mask
from synprep.subword.offsets import check_stored_word_index
from synprep.types import ParsedLine, ParsedSentence, deprel_id, smallest_unsigned, upos_id


@dataclass
class LineFeatures:
    """The source-side fields of :class:`~synprep.types.PairRecord` for one line.

    T = pieces (no ``</s>``), W = words, S = sentences, K = LDD entries. ``U`` below is the
    smallest unsigned type holding W (uint8 up to 255 words, else uint16, …), the same for every
    word-indexed array of the line.

    Attributes:
        word_index: ``(T,) U`` 0-based word of each piece.
        heads: ``(W,) U`` 1-based line-level head, 0 = root.
        deprel: ``(W,) uint8`` ids in :data:`~synprep.types.DEPRELS`.
        upos: ``(W,) uint8`` ids in :data:`~synprep.types.UPOS_TAGS`.
        sent_start: ``(S,) U`` 0-based first word of each sentence.
        gaps_cnf: ``(T-1,) int16`` piece-level gaps (1 inside a word, d+1 between
            words, 999 between sentences; no ``</s>`` gap).
        gaps_nary: ``(T-1,) int16`` piece-level gaps (1 inside a word, d+1 between
            words, 999 between sentences; no ``</s>`` gap).
        ldd_dep: ``(K,) U`` 1-based line-level dependent.
        ldd_head: ``(K,) U`` 1-based line-level head, 0 = root.
        ldd_rel: ``(K,) uint8``.
        ldd_prob: ``(K,) float32`` (the PairRecord dtype; shards store float16).
    """

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

    def as_dict(self) -> dict[str, np.ndarray]:
        """The fields by name, ready for ``PairRecord(line=..., src_ids=..., tgt_ids=..., **d)``."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def tree_source(parsed: ParsedLine) -> str:
    """Where the line's trees come from: ``constituency``, ``dependency`` (derived) or ``mixed``."""
    kinds = {"dependency" if s.tree is None else (s.tree_source or "constituency") for s in parsed.sentences}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def _sentence_heads(heads: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """``(heads as int64, their ancestor_mask)`` of one sentence: one tree, as ``synprep check`` wants.

    Raises:
        ValueError: a head out of range, a self-loop, a cycle, or more than one root.
    """
    h = check_heads(np.asarray(heads))
    anc = ancestor_mask(h)  # raises on a cycle; acyclic heads have >= 1 root
    roots = np.flatnonzero(h == 0)
    if roots.size > 1:
        words = ", ".join(str(r + 1) for r in roots)
        raise ValueError(f"{roots.size} roots (words {words} have head 0); exactly 1 expected")
    return h, anc


def _sentence_gaps(s: ParsedSentence, h: np.ndarray, anc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cnf, nary)`` word gaps of one sentence with checked heads ``h`` (ancestor mask ``anc``);
    ValueError with a reason on bad input."""
    if s.tree is None:  # the tree derived from the dependencies: its gaps straight from the heads
        return dependency_gaps(h, ancestors=anc)
    tree = parse_tree(s.tree, normalize=False)
    bad = leaf_mismatch(tree, s.words)
    if bad is not None:
        i, leaf, word = bad
        raise ValueError(f"tree leaves differ from the words at word {i + 1}: leaf {leaf!r} vs word {word!r}")
    return both_gaps(tree, inplace=True)


def line_features(parsed: ParsedLine, pieces: Sequence[str], line: int, *, path: str | None = None,
                  ldd_threshold: float = 0.0, compare_words: Sequence[str] | None = None,
                  word_index: Sequence[int] | None = None) -> LineFeatures:
    """Source-side syntax features of one line (SPEC.md §1–4, docs/FORMAT.md).

    Args:
        parsed: the parse of the line (its words must be the pieces' words, unescaped).
        pieces: ``(T,)`` the line's BPE pieces (``line.split()``; Moses-escaped, ``@@`` markers).
        line: 1-based line number, for error messages.
        path: the source file, for error messages.
        ldd_threshold: drop LDD entries below this probability (each word keeps its best entry).
        compare_words: the words the pieces must rebuild, when they are not ``parsed.words``
            themselves (a corpus lowercased after parsing: the lowercased parsed words).
        word_index: ``(T,)`` 0-based word of each piece when a subword scheme already aligned the
            pieces to ``parsed.words`` (:mod:`synprep.subword`); then ``pieces`` are not read
            as BPE and the index is only checked to cover the words in order. None: BPE pieces,
            aligned by their ``@@`` markers (:func:`synprep.align.align`).

    Returns:
        :class:`LineFeatures`.

    Raises:
        InputError: the parse failed or is empty, the pieces do not rebuild the parsed words, a
            sentence's annotations disagree in length, heads are out of range or cyclic or give a
            sentence more than one root, a tree is malformed or its leaves are not the words. The
            message names the sentence.
    """
    if parsed.error is not None:
        raise InputError(f"the parser failed on this line: {parsed.error}", path, line)
    if not parsed.sentences:
        raise InputError("the parse has no sentences", path, line)
    words = parsed.words if compare_words is None else list(compare_words)
    if word_index is None:
        index = align(pieces, words, line=line, path=path)
    else:
        index = check_stored_word_index(word_index, len(pieces), len(words), line=line, path=path)

    cnf: list[np.ndarray] = []
    nary: list[np.ndarray] = []
    heads: list[np.ndarray] = []
    starts: list[int] = []
    start = 0
    for k, s in enumerate(parsed.sentences):
        n = len(s.words)
        try:
            if n == 0:
                raise ValueError("no words")
            if not (len(s.upos) == len(s.heads) == len(s.deprels) == n):
                raise ValueError(f"{n} words but {len(s.upos)} UPOS, {len(s.heads)} heads, "
                                 f"{len(s.deprels)} deprels")
            h, anc = _sentence_heads(s.heads)
            c, a = _sentence_gaps(s, h, anc)
        except ValueError as e:
            raise InputError(f"sentence {k + 1}: {e}", path, line) from None
        cnf.append(c)
        nary.append(a)
        heads.append(np.where(h > 0, h + start, 0))
        starts.append(start)
        start += n

    n_words = start
    try:
        ldd_dep, ldd_head, ldd_rel, ldd_prob = line_ldd(parsed.sentences, ldd_threshold)
    except ValueError as e:
        raise InputError(f"LDD: {e}", path, line) from None
    u = smallest_unsigned(n_words)
    return LineFeatures(
        word_index=index.astype(u),
        heads=np.concatenate(heads).astype(u),
        deprel=np.array([deprel_id(r) for s in parsed.sentences for r in s.deprels], dtype=np.uint8),
        upos=np.array([upos_id(t) for s in parsed.sentences for t in s.upos], dtype=np.uint8),
        sent_start=np.asarray(starts).astype(u),
        gaps_cnf=spread_gaps(line_word_gaps(cnf), index),
        gaps_nary=spread_gaps(line_word_gaps(nary), index),
        ldd_dep=ldd_dep.astype(u),
        ldd_head=ldd_head.astype(u),
        ldd_rel=ldd_rel.astype(np.uint8),
        ldd_prob=ldd_prob.astype(np.float32),
    )
