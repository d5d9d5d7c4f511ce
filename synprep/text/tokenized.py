"""Does text given as Moses-tokenized look tokenized? The share of tokens that end in ``, . : ; ? !``
glued to a letter.

Moses tokenization splits these marks off a word (``Morgen ,``), so in tokenized text only
abbreviations keep one (``z.B.``, ``Mr.``, ``usw.``); in raw text nearly every sentence ends in one and
most commas sit on a word. ``benchmarks/bench_tokenized_share.py`` measures the share on the raw and
the tokenized corpora of ``../shared/data`` (``benchmarks/results/tokenized-share-cpu.json``,
docs/benchmarks.md): in German, English and French, tokenized text stays at or below 0.33 % (German PUD's
gold tokens: ``z.B.``, ``Nr.``), raw text at or above 8.5 % (French UD Sequoia's sentences);
:data:`GLUED_SHARE_LIMIT` lies between them: under half the raw minimum, and ten times the tokenized
maximum, so that a short tokenized file with a few abbreviations passes. Languages
written without spaces are not judged (their marks are ``。、`` and their tokens are not words).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from synprep.text.langid import UNSPACED, base_code

#: a token that ends in one of ``, . : ; ? !`` right after a letter (``Morgen,``, ``zusammen.``)
GLUED = re.compile(r"[^\W\d_][,.:;?!]+$")

#: the share of glued tokens above which text given as Moses-tokenized is refused: measured by
#: benchmarks/bench_tokenized_share.py (tokenized corpora at most 0.33 %, raw ones at least 8.5 %)
GLUED_SHARE_LIMIT = 0.04

#: a Moses escape (``&quot;``, ``l&apos;``, ``&#124;``): its ``;`` is no punctuation
_ESCAPE = re.compile(r"&(?:amp|lt|gt|quot|apos|#\d+);")

#: fewer tokens than this in the sample: too few to tell, not checked
MIN_TOKENS = 40

#: lines read from the start of a file
SAMPLE_LINES = 2000


@dataclass(frozen=True)
class GluedShare:
    """The glued tokens of a sample of text.

    Attributes:
        tokens: the whitespace-separated tokens read.
        glued: those that end in punctuation glued to a letter.
        first_line: the 1-based number of the first line holding one (0: none).
        example: that token.
    """

    tokens: int
    glued: int
    first_line: int = 0
    example: str = ""

    @property
    def share(self) -> float:
        """``glued / tokens`` (0.0 without tokens)."""
        return self.glued / self.tokens if self.tokens else 0.0


def glued_share(lines: Iterable[str]) -> GluedShare:
    """Count the tokens of ``lines`` (split at whitespace) that end in punctuation glued to a letter (Moses
    escapes removed first).

    Args:
        lines: the text, one sentence or segment per line.

    Returns:
        The counts, and the first glued token with its 1-based line number.
    """
    tokens = glued = first = 0
    example = ""
    for lineno, line in enumerate(lines, 1):
        for tok in line.split():
            tokens += 1
            if GLUED.search(_ESCAPE.sub("", tok) if "&" in tok else tok):
                glued += 1
                if not first:
                    first, example = lineno, tok
    return GluedShare(tokens, glued, first, example)


def looks_untokenized(lines: Iterable[str], lang: str) -> GluedShare | None:
    """The sample's counts when it does not look Moses-tokenized (more than :data:`GLUED_SHARE_LIMIT` of
    at least :data:`MIN_TOKENS` tokens glued), else None. A language written without spaces
    (:data:`synprep.text.langid.UNSPACED`) is never judged: its tokens are not words.
    """
    if base_code(lang) in UNSPACED:
        return None
    counts = glued_share(line for i, line in enumerate(lines) if i < SAMPLE_LINES)
    if counts.tokens < MIN_TOKENS or counts.share <= GLUED_SHARE_LIMIT:
        return None
    return counts
