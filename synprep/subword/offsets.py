"""Subword pieces ↔ parser words by character offsets: exact, every rule counted (docs/subwords.md).

A segmenter that reads raw text (SentencePiece, a HuggingFace tokenizer) gives each piece a
character span ``[start, end)`` in the line it segmented. The parser's words are found in the
same line (:func:`locate_words`), and every piece goes to the word(s) its characters lie in
(:func:`align_offsets`). Three rules cover what the spans alone do not decide; each is counted
in :class:`AlignStats` (and so in the manifest):

``split``  a piece whose characters lie in two or more words (SentencePiece on raw text gives
           ``,"`` ``."`` ``).`` ``2,`` in about 12 % of English lines) is split where each word
           ends (a space before the next word goes with it, as its ``▁`` does); the parts are stored as pieces of their own
           (:meth:`synprep.subword.base.SubwordScheme.split_piece` names them), so every stored
           piece lies in exactly one word and every word keeps >= 1 piece.
``next``   a piece with no word character (a lone ``▁``, whitespace, an empty surface:
           SentencePiece gives the surface of a normalized or byte-fallback group to its last
           piece) belongs to the word of the next piece that has one, or to the previous word
           when none follows.
``overlap`` a piece whose span overlaps the previous piece's (HuggingFace byte-level BPE gives
           every byte token of one character that character's span) is clipped to start where
           the previous one ended; when nothing is left it belongs to the previous piece's word.

Anything else is an :class:`~synprep.errors.InputError` naming the line: a word not found in
the line, a word without a piece, pieces out of order.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from synprep.errors import InputError

#: split_piece(piece, surface, cuts) -> parts: cuts are 0-based offsets inside ``surface``
SplitFn = Callable[[str, str, Sequence[int]], list[str]]


@dataclass
class AlignStats:
    """How often each rule applied (module docstring); added up over lines with ``+=``.

    Attributes:
        pieces_split: segmenter pieces that spanned >= 2 words and were split (rule ``split``).
        parts_added: stored pieces the splits added (a piece split into k parts adds k - 1).
        lines_with_split: lines with >= 1 split piece.
        pieces_to_next_word: pieces without a word character given to the next word (rule ``next``;
            at the end of a line, to the previous word).
        pieces_overlapping: pieces that overlapped the previous piece's span (rule ``overlap``).
    """

    pieces_split: int = 0
    parts_added: int = 0
    lines_with_split: int = 0
    pieces_to_next_word: int = 0
    pieces_overlapping: int = 0

    def __iadd__(self, other: AlignStats) -> AlignStats:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def as_dict(self) -> dict[str, int]:
        return {f.name: int(getattr(self, f.name)) for f in fields(self)}

    def as_tuple(self) -> tuple[int, ...]:
        return tuple(int(getattr(self, f.name)) for f in fields(self))

    @classmethod
    def from_tuple(cls, values: Sequence[int]) -> AlignStats:
        return cls(*(int(v) for v in values))


@dataclass
class AlignedLine:
    """One line's stored pieces and their words.

    Attributes:
        pieces: ``(T,)`` the pieces as stored (after rule ``split``).
        word_index: ``(T,) int64`` 0-based word of each piece; non-decreasing, covers ``0 .. W-1``.
        spans: ``(T, 2) int64`` each stored piece's character span in the segmented line after the
            rules (disjoint, increasing; ``text[s:e]`` is its surface), or None (BPE: no offsets).
        stats: the rules applied on this line.
    """

    pieces: list[str]
    word_index: np.ndarray
    spans: np.ndarray | None = None
    stats: AlignStats = field(default_factory=AlignStats)


def _ignorable(c: str) -> bool:
    """Characters a tokenizer may drop between or inside words: whitespace and control characters."""
    return c.isspace() or unicodedata.category(c) == "Cc"


def locate_words(text: str, words: Sequence[str], *, line: int | None = None,
                 path: str | None = None) -> list[tuple[int, int]]:
    """Character span ``[start, end)`` of each word in ``text``, in order.

    Words must appear in ``text`` in order, separated by nothing or by ignorable characters
    (whitespace, control characters, which Moses drops); inside a word only control
    characters may be skipped (they then lie inside the word's span).

    Args:
        text: the line as the segmenter read it.
        words: ``(W,)`` the parser's words, spelt as in ``text`` (lowercased when ``text`` is).
        line: for the error message.
        path: for the error message.

    Returns:
        ``W`` spans, strictly increasing, non-empty.

    Raises:
        InputError: a word does not occur where the previous one ended (names the word, its
            1-based position and the character offset), or a word is empty.
    """
    spans: list[tuple[int, int]] = []
    pos, n = 0, len(text)
    for k, w in enumerate(words):
        if not w:
            raise InputError(f"word {k + 1} is empty", path, line)
        j = text.find(w, pos)
        if j >= 0 and (j == pos or text[pos:j].isspace() or all(_ignorable(c) for c in text[pos:j])):
            spans.append((j, j + len(w)))  # the usual case: only whitespace before the word
            pos = j + len(w)
            continue
        while pos < n and _ignorable(text[pos]) and not text.startswith(w, pos):
            pos += 1
        if text.startswith(w, pos):
            spans.append((pos, pos + len(w)))
            pos += len(w)
            continue
        start, i = pos, 0  # slow path: control characters inside the word
        while i < len(w) and pos < n:
            if text[pos] == w[i]:
                i += 1
            elif unicodedata.category(text[pos]) != "Cc" or i == 0:
                break
            pos += 1
        if i < len(w):
            found = text[start:start + len(w) + 10]
            raise InputError(f"word {k + 1} {w!r} is not in the line at character {start}: the line has {found!r} "
                             "there (the words must be the line's characters, in order)", path, line)
        spans.append((start, pos))
    return spans


def _span_arrays(pieces: Sequence[str], spans: Sequence[tuple[int, int]], word_spans: Sequence[tuple[int, int]], *,
                 line: int | None, path: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`align_offsets`' inputs checked and as int64 arrays: the words' starts and ends ``(W,)``, the
    pieces' starts and ends ``(P,)``.

    Raises:
        ValueError: as many spans as pieces not given.
        InputError: no word, no piece, or a piece starting before the previous piece's start (names the line).
    """
    if len(pieces) != len(spans):
        raise ValueError(f"{len(pieces)} pieces but {len(spans)} spans")
    if not word_spans:
        raise InputError("the line has no words", path, line)
    if not len(pieces):
        raise InputError("the segmenter gave no piece", path, line)
    ws = np.fromiter((s for s, _ in word_spans), dtype=np.int64, count=len(word_spans))
    we = np.fromiter((e for _, e in word_spans), dtype=np.int64, count=len(word_spans))
    sp = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    a0, b = sp[:, 0], sp[:, 1]
    back = np.flatnonzero(a0[1:] < a0[:-1])
    if len(back):
        i = int(back[0]) + 1
        raise InputError(f"piece {i + 1} {pieces[i]!r} starts at character {a0[i]}, before the previous piece "
                         f"({a0[i - 1]}): offsets out of order", path, line)
    return ws, we, a0, b


def align_offsets(pieces: Sequence[str], spans: Sequence[tuple[int, int]], word_spans: Sequence[tuple[int, int]],
                  text: str, split_piece: SplitFn, *, line: int | None = None,
                  path: str | None = None) -> AlignedLine:
    """Give every piece its word by character offsets, applying the module's three rules.

    Args:
        pieces: ``(P,)`` the segmenter's pieces of ``text``.
        spans: ``(P,)`` their ``[start, end)`` character spans in ``text`` (non-decreasing starts).
        word_spans: ``(W,)`` the words' spans (:func:`locate_words`), W >= 1.
        text: the segmented line (for the surfaces given to ``split_piece``).
        split_piece: how the scheme names the parts of a split piece.
        line: for error messages.
        path: for error messages.

    Returns:
        :class:`AlignedLine` (T >= P pieces).

    Raises:
        InputError: a piece starts before the previous piece's start, a word gets no piece, or no
            piece has a word character (names the line).
    """
    ws, we, a0, b = _span_arrays(pieces, spans, word_spans, line=line, path=path)
    stats = AlignStats()
    prev_end = np.concatenate([[0], np.maximum.accumulate(b)[:-1]])  # the furthest end before each piece
    overlap = (a0 < prev_end) & (b > a0)
    a = np.where(overlap, np.minimum(prev_end, b), a0)  # rule "overlap": clipped
    stats.pieces_overlapping = int(overlap.sum())
    lo = np.searchsorted(we, a, side="right")  # the words with start < b and end > a: lo .. hi-1
    hi = np.searchsorted(ws, b, side="left")
    has = (a < b) & (lo < hi)
    index = np.where(has, lo, np.where(overlap & (a >= b), -2, -1))  # -1: rule "next", -2: rule "overlap"
    out_spans = np.stack([a, np.maximum(a, b)], axis=1)
    out_pieces = list(pieces)
    multi = np.flatnonzero(has & (hi - lo > 1))
    if len(multi):  # rule "split": rare, so piece by piece
        new_pieces: list[str] = []
        new_index: list[np.ndarray] = []
        new_spans: list[np.ndarray] = []
        done = 0
        for i in multi.tolist():
            new_pieces += out_pieces[done:i]
            new_index.append(index[done:i])
            new_spans.append(out_spans[done:i])
            l0, h0, ai, bi = int(lo[i]), int(hi[i]), int(a[i]), int(b[i])
            cuts = we[l0:h0 - 1].tolist()  # each word's end: a space before the next word goes with it, like its ▁
            parts = split_piece(pieces[i], text[ai:bi], [c - ai for c in cuts])
            if len(parts) != h0 - l0 or not all(parts):
                raise ValueError(f"split_piece gave {parts!r} for {h0 - l0} words")
            bounds = [ai, *cuts, bi]
            new_pieces += parts
            new_index.append(np.arange(l0, h0, dtype=np.int64))
            new_spans.append(np.array([bounds[:-1], bounds[1:]], dtype=np.int64).T)
            stats.pieces_split += 1
            stats.parts_added += h0 - l0 - 1
            done = i + 1
        out_pieces = new_pieces + out_pieces[done:]
        index = np.concatenate([*new_index, index[done:]])
        out_spans = np.concatenate([*new_spans, out_spans[done:]])
        stats.lines_with_split = 1

    t = np.arange(len(index))
    # rule "overlap": the word of the last piece before that is not itself an overlap remainder
    ov = index == -2
    if ov.any():
        src = np.maximum.accumulate(np.where(ov, -1, t))
        index = np.where(ov, np.where(src >= 0, index[np.maximum(src, 0)], -1), index)
    # rule "next": the word of the next piece that has one, else (end of line) the previous one
    pending = index == -1
    stats.pieces_to_next_word = int(pending.sum())
    if pending.any():
        n = len(index)
        nxt = np.minimum.accumulate(np.where(pending, n, t)[::-1])[::-1]
        if nxt[0] == n and pending.all():
            raise InputError("no piece holds a character of a word", path, line)
        valid = np.flatnonzero(~pending)
        fill = np.where(nxt < n, index[np.minimum(nxt, n - 1)], index[valid[-1]])
        index = np.where(pending, fill, index)
    _check_index(index, len(word_spans), pieces=out_pieces, line=line, path=path)
    return AlignedLine(pieces=out_pieces, word_index=index, spans=out_spans, stats=stats)


def _check_index(index: np.ndarray, n_words: int, *, pieces: Sequence[str], line: int | None,
                 path: str | None) -> None:
    """Every word has >= 1 piece and the pieces' words never decrease (InputError otherwise)."""
    steps = np.diff(index)
    if len(index) and (index[0] != 0 or (steps < 0).any() or (steps > 1).any() or index[-1] != n_words - 1):
        covered = np.zeros(n_words, dtype=bool)
        covered[index] = True
        missing = np.flatnonzero(~covered)
        if len(missing):
            raise InputError(f"word {int(missing[0]) + 1} gets no piece (its characters are in no piece's span)",
                             path, line)
        t = int(np.flatnonzero(steps < 0)[0]) + 1
        raise InputError(f"piece {t + 1} {pieces[t]!r} belongs to word {int(index[t]) + 1}, before the previous "
                         f"piece's word {int(index[t - 1]) + 1}", path, line)
    if not len(index):
        raise InputError("the segmenter gave no piece", path, line)


def check_stored_word_index(word_index: Sequence[int], n_pieces: int, n_words: int, *, line: int | None = None,
                            path: str | None = None) -> np.ndarray:
    """A stored word index as ``(T,) int64`` once it fits ``n_pieces`` pieces and ``n_words`` words.

    Raises:
        InputError: a length other than ``n_pieces``, or not starting at 0 with steps of 0 or 1
            and ending at ``n_words - 1``.
    """
    index = np.asarray(word_index, dtype=np.int64)
    if len(index) != n_pieces:
        raise InputError(f"{len(index)} word indices for {n_pieces} pieces", path, line)
    if n_pieces == 0:
        raise InputError("no pieces", path, line)
    steps = np.diff(index)
    if index[0] != 0 or (steps < 0).any() or (steps > 1).any() or index[-1] != n_words - 1:
        raise InputError(f"the pieces' word indices {index.tolist()} do not cover the {n_words} parsed words "
                         "in order (each word >= 1 piece)", path, line)
    return index
