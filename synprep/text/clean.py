"""Corpus cleaning with the semantics of Moses' ``clean-corpus-n.perl``.

Source: mosesdecoder ``scripts/training/clean-corpus-n.perl``, as fairseq's prepare-iwslt14.sh
calls it (``-ratio 1.5 CORPUS de en CLEAN 1 175``). For every pair, in this order:

1. normalize both sides: unless the corpus is *factored*, remove every ``|``; collapse runs of
   whitespace (Perl ``\\s``) to one space; strip one leading and one trailing space;
2. drop the pair when a side is empty (reason ``empty``);
3. count tokens (split on single spaces); drop when a side has more than ``max_len`` tokens
   (``too_long``), else fewer than ``min_len`` (``too_short``), else when
   ``len(tgt) / len(src) > ratio`` or ``len(src) / len(tgt) > ratio`` (``ratio``), else when a
   token (factor) is longer than ``max_word_length`` characters (``word_too_long``);
4. keep the normalized pair.

The corpus is *factored* when its first line (either side) contains ``|`` — the perl's own rule;
Moses-escaped text never is (``|`` is written ``&#124;``). In a factored corpus an empty factor
(`` |`` or ``||``) in a kept pair is an error, as in the perl.

``keep_pipes=True`` (``synprep pipeline``, whose shards hold no factors) leaves the perl's ``|`` rule
out: a ``|`` is a character like any other, never removed and never a factor separator. The
pipeline's own tokens are Moses-escaped, so a ``|`` there is a token of ``--tokenized`` text (a
treebank's, ``trees convert --text``), which the perl's rule would delete without a word.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from synprep.defaults import CLEAN_DEFAULTS as DEFAULTS
from synprep.errors import InputError
from synprep.text.tokenize import PERL_SPACE_CHARS as _PERL_SPACE

#: drop reasons, in the order clean-corpus-n.perl tests them
EMPTY, TOO_LONG, TOO_SHORT, RATIO, WORD_TOO_LONG = "empty", "too_long", "too_short", "ratio", "word_too_long"
REASONS = (EMPTY, TOO_LONG, TOO_SHORT, RATIO, WORD_TOO_LONG)

_SPACES = re.compile(f"[{_PERL_SPACE}]+")
_BLANK_FACTOR = re.compile(r"[ |]\|")


@dataclass(frozen=True)
class CleanResult:
    """The verdict on one pair.

    Attributes:
        line: 1-based line number of the pair in the input.
        src: the normalized sides (what is written for a kept pair).
        tgt: the normalized sides (what is written for a kept pair).
        src_len: token counts of the normalized sides (0 for an empty side).
        tgt_len: token counts of the normalized sides (0 for an empty side).
        reason: None when the pair is kept, else one of :data:`REASONS`.
    """

    line: int
    src: str
    tgt: str
    src_len: int
    tgt_len: int
    reason: str | None = None

    @property
    def kept(self) -> bool:
        return self.reason is None


@dataclass
class CleanStats:
    """Counts over a cleaning run: ``input == kept + sum(dropped.values())``.

    Attributes:
        input: pairs read.
        kept: pairs kept.
        dropped: reason → pairs dropped for it.
    """

    input: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)

    def add(self, result: CleanResult) -> None:
        self.input += 1
        if result.kept:
            self.kept += 1
        else:
            self.dropped[result.reason] += 1

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())

    def as_dict(self) -> dict:
        """``{"input", "kept", "dropped": {reason: count for every reason}}`` (JSON-ready)."""
        return {"input": self.input, "kept": self.kept,
                "dropped": {r: self.dropped.get(r, 0) for r in REASONS}}

    def summary(self) -> str:
        """One line: ``input 1000, kept 990, dropped 10 (empty 2, ratio 8)``."""
        parts = ", ".join(f"{r} {self.dropped[r]}" for r in REASONS if self.dropped.get(r))
        return (f"input {self.input}, kept {self.kept}, dropped {self.n_dropped}"
                + (f" ({parts})" if parts else ""))


def _normalize(text: str, factored: bool) -> str:
    if not factored:
        text = text.replace("|", "")
    text = _SPACES.sub(" ", text)
    if text.startswith(" "):
        text = text[1:]
    if text.endswith(" "):
        text = text[:-1]
    return text


def _count(text: str) -> int:
    return text.count(" ") + 1 if text else 0


def clean_pairs(pairs: Iterable[tuple[str, str]], *, ratio: float = DEFAULTS.ratio, min_len: int = DEFAULTS.min_len,
                max_len: int = DEFAULTS.max_len,
                max_word_length: int = 1000, factored: bool | None = None,
                names: tuple[str, str] | None = None, keep_pipes: bool = False) -> Iterator[CleanResult]:
    """Judge every pair like clean-corpus-n.perl (module docstring); one result per input pair.

    Args:
        pairs: (source line, target line) without line ends, in corpus order.
        ratio: maximum token-count ratio either way (perl ``-ratio``; fairseq uses 1.5).
        min_len: the smallest token count of each side, inclusive (fairseq: 1).
        max_len: the largest token count of each side, inclusive (fairseq: 175).
        max_word_length: longest allowed token, in characters (perl ``-max-word-length``, 1000).
        factored: force the factored mode on/off; None detects it from the first pair, as the perl.
        names: (source file, target file) for error messages.
        keep_pipes: keep every ``|`` as a character of its token, with no factored mode (module
            docstring); ``factored`` must then be None or False.

    Yields:
        CleanResult: ``line`` is 1-based; ``reason`` is None for a kept pair.

    Raises:
        InputError: an empty factor in a factored corpus.
        ValueError: ``keep_pipes`` with ``factored=True``.
    """
    if keep_pipes:
        if factored:
            raise ValueError("keep_pipes reads no factors: factored must be None or False")
        factored = False
    # a factored token's length is its longest factor's; a kept "|" is part of its token
    long_token = re.compile(f"[^{_PERL_SPACE}{'' if keep_pipes else '|'}]{{{max_word_length + 1}}}")
    for lineno, (src, tgt) in enumerate(pairs, 1):
        if factored is None:
            factored = "|" in src or "|" in tgt
        f, e = _normalize(src, factored or keep_pipes), _normalize(tgt, factored or keep_pipes)
        fc, ec = _count(f), _count(e)
        reason = None
        if not f or not e:
            reason = EMPTY
        elif ec > max_len or fc > max_len:
            reason = TOO_LONG
        elif ec < min_len or fc < min_len:
            reason = TOO_SHORT
        elif ec / fc > ratio or fc / ec > ratio:
            reason = RATIO
        elif long_token.search(e) or long_token.search(f):
            reason = WORD_TOO_LONG
        elif factored:
            for side, text in ((0, f), (1, e)):
                if _BLANK_FACTOR.search(text):
                    raise InputError("empty factor in a factored corpus (a '|' after a space or a '|')",
                                     names[side] if names else None, lineno)
        yield CleanResult(lineno, f, e, fc, ec, reason)


#: ISO 639 codes of languages written without spaces between words: a line of them is one or a few
#: space-separated tokens, so clean-corpus-n.perl's token ratio against a spaced language drops it
UNSPACED_LANGUAGES = frozenset({"ja", "zh", "yue", "wuu", "th", "lo", "km", "my", "bo", "dz"})
#: the option that sets the bound behind each drop reason
_REASON_OPTION = {TOO_LONG: "--max-len", TOO_SHORT: "--min-len", RATIO: "--ratio"}


def nothing_kept_error(stats: CleanStats, *, src_lang: str, tgt_lang: str, ratio: float, min_len: int,
                       max_len: int, path: str | None = None) -> InputError | None:
    """The error for a cleaning that kept no pair of a non-empty input (None otherwise): one line naming
    the drop counts, the reason most pairs were dropped for, and the fix.

    A ``ratio`` drop with a language of :data:`UNSPACED_LANGUAGES` on one side (en→ja) says that the
    ratio counts space-separated words, which that language does not have, and names the fixes
    (segment that side into words first, or ``--no-clean``).
    """
    if stats.kept or not stats.input:
        return None
    counts = ", ".join(f"{r} {stats.dropped[r]}" for r in REASONS if stats.dropped.get(r))
    top = max(REASONS, key=lambda r: stats.dropped.get(r, 0))
    head = f"cleaning dropped all {stats.input} pairs ({counts})"
    unspaced = [lang for lang in (src_lang, tgt_lang) if lang.split("-")[0].split("_")[0].lower() in UNSPACED_LANGUAGES]
    if top == RATIO and unspaced and len(unspaced) == 1:
        lang = unspaced[0]
        why = (f"the length ratio (--ratio {ratio:g}) compares space-separated tokens, and {lang} is written "
               f"without spaces between words, so a {lang} line is one or a few tokens: segment the {lang} side "
               f"into words before synprep (e.g. with MeCab or a parser's tokenizer), or run with --no-clean "
               f"(only pairs with an empty side are dropped)")
    elif top == EMPTY:
        why = "every pair has an empty side: check that --src and --tgt are the two sides of one corpus"
    elif top == WORD_TOO_LONG:
        why = "every pair has a token over 1000 characters: is the text tokenized? (--no-clean keeps them)"
    else:
        bound = {TOO_LONG: f"at most {max_len} tokens per side", TOO_SHORT: f"at least {min_len} tokens per side",
                 RATIO: f"a token-count ratio of at most {ratio:g}"}[top]
        why = f"the bound behind most drops is {bound} ({_REASON_OPTION[top]}): change it, or run with --no-clean"
    return InputError(f"{head}: {why}", path)


def clean_signature(ratio: float, min_len: int, max_len: int) -> str:
    """The ``clean`` field of a signature line: ``ratio1.5-len1-175``."""
    return f"ratio{ratio:g}-len{min_len}-{max_len}"


def report_header() -> str:
    """Header line of the TSV drop report: ``line  reason  src_tokens  tgt_tokens``."""
    return "line\treason\tsrc_tokens\ttgt_tokens"


def report_row(result: CleanResult) -> str:
    """TSV row for a dropped pair: 1-based line, reason, token counts of the normalized sides."""
    return f"{result.line}\t{result.reason}\t{result.src_len}\t{result.tgt_len}"
