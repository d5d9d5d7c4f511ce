"""Sentence splitting on given Moses tokens (SPEC.md §1: a source line may hold several sentences).

The tokens are never re-tokenized: a split point is a position *between* tokens. A sentence ends
after a sentence-final punctuation token (``.``, ``!``, ``?``, ``...``, ``…``, ``?!``, the CJK full
stops ...), together with any further final punctuation, closing brackets and closing quotes that
follow it, *when more tokens follow*. A quote after the sentence end closes the sentence only when
the sentence holds an odd number of quotes of its kind (one is open); otherwise it opens the next
sentence. A "sentence" made only of punctuation (a line starting with ``...``) is not cut off.
Capitalisation is never consulted (IWSLT text is lowercased).
Abbreviations are no problem: Moses keeps ``Dr.`` / ``u.s.`` as one token, which is not a
punctuation-only token. Escaped tokens (``&quot;``, ``&apos;``, ``&#93;``) are recognised too, so
the function works on escaped or unescaped tokens alike.
"""

from __future__ import annotations

import re

#: a token made only of these characters ends a sentence (".", "!", "?", "...", "?!", "…", "。")
_FINAL = re.compile(r"[.!?\u2026\u3002\uff01\uff1f\u203c\u2047-\u2049]+")

#: closing brackets: always stay with the sentence before them when they follow a sentence end
CLOSING_BRACKETS = frozenset({")", "]", "}", "&#93;", "-RRB-", "-RSB-", "-RCB-", "\uff09", "\u300d", "\u300f"})

#: quote families: a quote that follows a sentence end stays with it only when the sentence so far
#: holds an odd number of quotes of its family (an open quote is pending); otherwise it opens the
#: next sentence. Directional quotes are counted with the plain ones because their direction
#: differs between languages (German „...“ and »...«).
_DOUBLE_QUOTES = frozenset({'"', "&quot;", "''", "``", "\u201c", "\u201d", "\u201e", "\u00bb", "\u00ab"})
_SINGLE_QUOTES = frozenset({"'", "&apos;", "`", "\u2018", "\u2019", "\u201a", "\u203a", "\u2039"})


def is_final(token: str) -> bool:
    """True when ``token`` is sentence-final punctuation (only ``.!?…`` characters)."""
    return _FINAL.fullmatch(token) is not None


def _is_punct(tok: str) -> bool:
    return is_final(tok) or tok in CLOSING_BRACKETS or tok in _DOUBLE_QUOTES or tok in _SINGLE_QUOTES


def _closes(words: list[str], start: int, j: int) -> bool:
    tok = words[j]
    if tok in CLOSING_BRACKETS:
        return True
    for family in (_DOUBLE_QUOTES, _SINGLE_QUOTES):
        if tok in family:
            return sum(w in family for w in words[start:j]) % 2 == 1
    return False


def split_sentences(words: list[str], enabled: bool = True) -> list[tuple[int, int]]:
    """Cut one line of tokens into sentences.

    Args:
        words: (n,) the line's tokens (escaped or unescaped Moses tokens).
        enabled: False treats the whole line as one sentence.

    Returns:
        ``[(start, end), ...]``: 0-based, end-exclusive token spans covering ``0..n`` in order,
        without gaps; ``[]`` for an empty line, ``[(0, n)]`` when nothing splits.
    """
    n = len(words)
    if n == 0:
        return []
    if not enabled:
        return [(0, n)]
    spans = []
    start = 0
    i = 0
    while i < n:
        if is_final(words[i]):
            j = i + 1
            # absorb further final punctuation ("! !") and closing brackets / pending quotes
            while j < n and (is_final(words[j]) or _closes(words, start, j)):
                j += 1
            if j < n and any(not _is_punct(w) for w in words[start:i]):
                spans.append((start, j))
                start = j
            i = j
        else:
            i += 1
    spans.append((start, n))
    return spans
