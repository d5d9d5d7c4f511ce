"""Subword ↔ word alignment: BPE pieces (subword-nmt ``@@ `` markers) to Moses words and back.

Source: SPEC.md §1. The parser saw the Moses words, unescaped (``&apos;`` → ``'``), with BPE
removed; the word ↔ parser-leaf alignment is then the identity, and any disagreement is an error
that names the line, never a silent fallback (the reference code fell back to distance 1).

Pieces: a piece ending in ``@@`` continues into the next piece (subword-nmt's convention, the
same as fairseq's ``--remove-bpe`` / ``sed -r 's/(@@ )|(@@ ?$)//g'``); the marker is removed and
the pieces are joined. A line whose last piece ends in ``@@`` is malformed (its word would run
off the end of the line) and is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from synprep.constants import BPE_SEPARATOR
from synprep.errors import InputError
from synprep.escape import unescape

if TYPE_CHECKING:
    import numpy as np

_SEP_LEN = len(BPE_SEPARATOR)


def remove_bpe(line: str) -> str:
    """Undo subword-nmt's segmentation: ``"ri@@ ver"`` → ``"river"`` (also a trailing ``@@``)."""
    sep = BPE_SEPARATOR + " "
    out = (line + " ").replace(sep, "").rstrip()
    return out[: -len(BPE_SEPARATOR)] if out.endswith(BPE_SEPARATOR) else out


def bpe_words(pieces: Sequence[str], *, line: int | None = None, path: str | None = None
              ) -> tuple[list[str], np.ndarray]:
    """Join BPE pieces into words.

    Args:
        pieces: the line's pieces (``line.split()``), Moses-escaped, with ``@@`` markers.
        line: where the line comes from, for the error message.
        path: where the line comes from, for the error message.

    Returns:
        ``(words, word_index)``: the words (still Moses-escaped) and ``(T,) int64`` 0-based word
        of each piece.

    Raises:
        InputError: the last piece ends in ``@@`` (malformed), or a piece is empty.

    Example: ``["i", "sw@@", "im", "."]`` → ``(["i", "swim", "."], [0, 1, 1, 2])``.
    """
    import numpy as np  # here, not at the top: the parse trees read first_difference, the line tools need no numpy

    words: list[str] = []
    index = np.empty(len(pieces), dtype=np.int64)
    current: list[str] = []
    for t, piece in enumerate(pieces):
        if not piece:
            raise InputError(f"empty piece at position {t + 1}", path, line)
        index[t] = len(words)
        if piece.endswith(BPE_SEPARATOR):
            current.append(piece[:-_SEP_LEN])
        else:
            current.append(piece)
            words.append("".join(current))
            current = []
    if current:
        raise InputError(
            f"the line ends with a continuation marker: last piece {pieces[-1]!r} ends in "
            f"{BPE_SEPARATOR!r} (malformed BPE)", path, line)
    return words, index


def first_difference(a: Sequence[str], b: Sequence[str], *,
                     same: Callable[[str, str], bool] | None = None) -> tuple[int, str, str] | None:
    """First 0-based position where two token lists differ, with both tokens (``"<end>"`` past an end).

    ``same(x, y)`` says when token ``x`` of ``a`` matches token ``y`` of ``b`` (default ``x == y``).
    """
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "<end>"
        y = b[i] if i < len(b) else "<end>"
        if (x != y) if same is None else not same(x, y):
            return i, x, y
    return None


def align(pieces: Sequence[str], words: Sequence[str], *, line: int | None = None,
          path: str | None = None) -> np.ndarray:
    """Word index of every piece, checked against the parser's words (SPEC.md §1).

    Args:
        pieces: ``(T,)`` BPE pieces of the line (Moses-escaped, ``@@`` markers).
        words: ``(W,)`` the words the parser saw (unescaped), e.g. ``ParsedLine.words``.
        line: where the line comes from, for the error message.
        path: where the line comes from, for the error message.

    Returns:
        ``(T,) int64``, 0-based, non-decreasing, covering ``0 .. W-1``.

    Raises:
        InputError: malformed BPE (see :func:`bpe_words`), or the pieces' words, unescaped, differ
            from ``words``; the message gives the first differing 1-based word position and both
            tokens.
    """
    bpe, index = bpe_words(pieces, line=line, path=path)
    diff = first_difference([unescape(w) for w in bpe], list(words))
    if diff is not None:
        i, x, y = diff
        raise InputError(
            f"BPE words differ from the parsed words at word {i + 1}: BPE {x!r} vs parser {y!r} "
            f"({len(bpe)} vs {len(words)} words)", path, line)
    return index
