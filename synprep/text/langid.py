"""What language a text is in, and whether it was lowercased: decided from a sample of its lines.

Language identification is py3langid's (a maintained fork of langid.py: a naive Bayes model over
byte n-grams of 97 languages, shipped inside the package, offline, numpy only; Lui & Baldwin 2012).
It was chosen over lingua-language-detector, which is more accurate on very short texts but ships
models of several hundred MB and loads them per language; the check here votes over a sample of
whole lines, where py3langid is accurate, and loads in about a second.

:func:`detect_language` is what ``pipeline`` and ``annotate`` use to refuse a side whose text is
not in the language given with ``-s``/``-t`` (:func:`check_language`), and what a report can reuse.
:func:`looks_lowercased` is how ``annotate`` notices lowercased source text (the parser loses
16 UAS points on lowercased German: docs/parse.md).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from synprep.errors import ConfigError, InputError
from synprep.langcode import iso_code

log = logging.getLogger(__name__)

#: lines classified by default (spread over the input: :func:`sample_lines`)
DEFAULT_SAMPLE = 200
#: a line votes when it holds at least this many letters (shorter lines are too often misread)
MIN_LETTERS = 20
#: fewer voting lines than this decide nothing (:func:`check_language` warns and lets the run go on)
MIN_VOTES = 10
#: a line is confidently in a language when py3langid's calibrated probability of it is at least this (more
#: likely than every other language together); of 20,000 sampled lines of real de/en corpora (Multi30k,
#: TED, IWSLT14 raw, tokenized and BPE'd) at most 1 in 1,900 was confidently in the other side's language
CONFIDENT = 0.5
#: share of a side's voting lines confidently in the other side's language from which the check warns
#: (swapped pairs, lines half in each language: 30-50 % in the probe's corpora)
MINORITY_SHARE = 0.10
#: line numbers named in the warning
EXAMPLE_LINES = 5
#: codes py3langid tells apart that a corpus labels as one language (the model calls word-segmented or
#: traditional-script Chinese ``yue``, Maghrebi Arabic ``ary``): each maps to the code a corpus uses
RELATED = {"yue": "zh", "wuu": "zh", "cmn": "zh", "arz": "ar", "ary": "ar", "nb": "no", "nn": "no",
           "uzs": "uz", "hbo": "he", "grc": "el", "sdh": "ku", "ltg": "lv", "gug": "gn", "fuv": "ff"}
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_BPE = re.compile(r"@@( |$)")


@dataclass(frozen=True)
class LanguageGuess:
    """The outcome of :func:`detect_language`.

    Attributes:
        lang: the code most lines of the sample are in (py3langid's codes, related codes merged by
            :func:`language_key`: ``yue`` counts as ``zh``), or None when no line could vote.
        share: the fraction (0..1) of the voting lines that are in ``lang``.
        sample: how many lines voted.
        counts: code → number of voting lines in it.
        confident: code → 0-based positions (in the ``lines`` given) of the voting lines in it with a
            probability of at least :data:`CONFIDENT`.
    """

    lang: str | None
    share: float
    sample: int
    counts: dict[str, int] = field(default_factory=dict)
    confident: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def share_of(self, code: str) -> float:
        """The fraction of the voting lines in language ``code`` (0 when none voted)."""
        return self.counts.get(language_key(code), 0) / self.sample if self.sample else 0.0

    def confident_in(self, code: str) -> tuple[int, ...]:
        """The 0-based positions of the lines confidently in language ``code``."""
        return self.confident.get(language_key(code), ())


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def known_languages() -> frozenset[str]:
    """The ISO 639-1 codes the model can tell apart."""
    return frozenset(_identifier().nb_classes)


#: what a language code looks like (the tokenizer's rule, :mod:`synprep.text.tokenize`): ``de``, ``pt-br``
_CODE = re.compile(r"^[A-Za-z]{2,3}([_-][A-Za-z0-9]+)?$")


def check_language_code(lang: str, option: str) -> None:
    """Refuse a value of ``-s``/``-t`` that is no language code (``english``), before anything is written.

    Raises:
        ConfigError: naming the option and the value, and the code of a language named in English
            (``german`` → ``de``, :func:`synprep.langcode.iso_code`).
    """
    if not _CODE.match(lang):
        code = iso_code(lang)
        if code is not None and _CODE.match(code):
            raise ConfigError(f"{option} {lang!r} is not a language code: {lang} is {code!r} (ISO 639-1); "
                              f"run with {option.split('/')[0]} {code}")
        raise ConfigError(f"{option} {lang!r} is not a language code: give its ISO 639-1 code (de, en, pt-br, ...)")


def base_code(code: str) -> str:
    """``de`` for ``de``, ``DE``, ``de-AT``, ``de_CH``, ``zh-hans`` → ``zh``: the part the model names."""
    return re.split(r"[-_]", code.strip().lower(), maxsplit=1)[0]


def language_key(code: str) -> str:
    """The code a language is compared by: :func:`base_code`, then :data:`RELATED` (``yue`` → ``zh``)."""
    base = base_code(code)
    return RELATED.get(base, base)


#: languages written without spaces between words (their word-segmented text is joined back to classify it)
UNSPACED = frozenset({"ja", "zh", "th", "lo", "km", "my", "bo", "dz"})
#: a space between two characters outside the Latin, Greek and Cyrillic blocks (and not digits)
_INNER_SPACE = re.compile(r"(?<=[^\u0000-\u052f\d]) +(?=[^\u0000-\u052f\d])")


def as_written(text: str, lang: str) -> str:
    """``text`` as language ``lang`` is written: for a language of :data:`UNSPACED` (``zh``, ``ja``, ...),
    the spaces a word segmentation put between its characters are removed (``美國 的`` → ``美國的``; a
    space beside a Latin word or a digit stays); any other language's text is returned as given.

    py3langid reads byte n-grams: word-segmented Chinese is classified as Cantonese (``yue``) for 78 %
    of the lines of UD Chinese PUD, the same lines joined as written as Chinese for 97 %.
    """
    if language_key(lang) not in UNSPACED:
        return text
    return _INNER_SPACE.sub("", text)


def detect_language(lines: Sequence[str], sample: int = DEFAULT_SAMPLE, lang: str | None = None) -> LanguageGuess:
    """The majority language of (a sample of) ``lines``: one vote per line with at least
    :data:`MIN_LETTERS` letters, classified by py3langid, related codes merged (:func:`language_key`).

    Args:
        lines: text lines (raw, tokenized, or BPE'd: ``@@`` markers are removed first).
        sample: classify at most this many lines, spread evenly over ``lines`` (:func:`spread`).
        lang: the language the lines should be in: its word-segmented text is read as written
            (:func:`as_written`).

    Returns:
        :class:`LanguageGuess` (``lang`` None when no line had enough letters).
    """
    ident = _identifier()
    counts: Counter[str] = Counter()
    confident: dict[str, list[int]] = {}
    for i in spread_index(len(lines), sample):
        text = _BPE.sub("", lines[i])
        if lang:
            text = as_written(text, lang)
        if len(_LETTER.findall(text)) < MIN_LETTERS:
            continue
        code, prob = ident.classify(text)
        key = language_key(str(code))
        counts[key] += 1
        if prob >= CONFIDENT:
            confident.setdefault(key, []).append(i)
    n = sum(counts.values())
    if not n:
        return LanguageGuess(None, 0.0, 0, {})
    top, k = max(sorted(counts.items()), key=lambda kv: kv[1])
    return LanguageGuess(top, k / n, n, dict(counts), {c: tuple(v) for c, v in confident.items()})


def spread_index(n: int, sample: int) -> list[int]:
    """The 0-based positions :func:`spread` picks from ``n`` lines."""
    if n <= sample:
        return list(range(n))
    return [i * n // sample for i in range(sample)]


def spread(lines: Sequence[str], sample: int) -> list[str]:
    """At most ``sample`` of ``lines``, evenly spaced (all of them when there are fewer)."""
    return [lines[i] for i in spread_index(len(lines), sample)]


def sample_lines(lines: Iterable[str], n_lines: int, sample: int = DEFAULT_SAMPLE) -> list[str]:
    """The lines of a stream of ``n_lines`` lines that :func:`spread` would pick, read in one pass."""
    return [text for _, text in sample_numbered(lines, n_lines, sample)]


def sample_numbered(lines: Iterable[str], n_lines: int, sample: int = DEFAULT_SAMPLE) -> list[tuple[int, str]]:
    """``(1-based line number, text)`` of the lines :func:`sample_lines` picks."""
    want = set(spread_index(n_lines, sample))
    out = []
    for i, text in enumerate(lines):
        if i >= n_lines:
            break
        if i in want:
            out.append((i + 1, text))
    return out


def check_language(lines: Sequence[str], lang: str, option: str, name: str, *, other: str | None = None,
                   numbers: Sequence[int] | None = None) -> LanguageGuess | None:
    """Refuse a side whose sample is mostly in another language than ``lang``: most voting lines are in
    one other language, and fewer than half in ``lang`` (text the model cannot place, whose votes scatter
    over many languages, is not refused). Warn when at least :data:`MINORITY_SHARE` of the voting lines
    are confidently (:data:`CONFIDENT`) in ``other``, the other side's language: swapped pairs, or lines
    half in each language, naming up to :data:`EXAMPLE_LINES` of them.

    A side that cannot be checked is a warning: ``lang`` is not a language the model knows, or fewer
    than :data:`MIN_VOTES` lines vote (lines of fewer than :data:`MIN_LETTERS` letters do not).

    Args:
        lines: the side's sample (:func:`sample_lines`).
        lang: the code given with ``option`` (``-s`` / ``-t``).
        option: the option, for the message.
        name: the file, for the message.
        other: the other side's language (no minority check when None or the same language).
        numbers: the 1-based line number of each of ``lines`` in the file (default: 1, 2, ...).

    Returns:
        The :class:`LanguageGuess`, or None when ``lang`` is not a language the model knows.

    Raises:
        InputError: most of the sample is in another language (named), with the fix
            (``--no-language-check``).
    """
    code = language_key(lang)
    if code not in known_languages():
        log.warning("warning: %s: not checked for its language: %s is not one of the %d languages py3langid "
                    "knows (check by eye that the file is in %s)", name, lang, len(known_languages()), lang)
        return None
    guess = detect_language(lines, sample=len(lines) or 1, lang=lang)
    if guess.lang is None or guess.sample < MIN_VOTES:
        log.warning("warning: %s: not checked for its language: %d of the %d sampled lines have %d letters or "
                    "more, the check needs %d (check by eye that the file is in %s as %s says)", name, guess.sample,
                    len(lines), MIN_LETTERS, MIN_VOTES, lang, option)
        return guess
    if guess.lang != code and guess.share_of(code) < 0.5 <= guess.share:
        raise InputError(
            f"this text looks {language_name(guess.lang)} ('{guess.lang}': {guess.share:.0%} of {guess.sample} "
            f"sampled lines), not '{lang}' as {option} says ({guess.share_of(code):.0%}): give {option} "
            f"{guess.lang}, swap the sides, or add --no-language-check", name)
    if other and language_key(other) != code:
        found = guess.confident_in(other)
        if len(found) >= MINORITY_SHARE * guess.sample:
            at = [numbers[i] if numbers is not None else i + 1 for i in found]
            log.warning("warning: %s: %d of %d sampled lines (%.0f%%) are %s ('%s', the other side's language), not "
                        "'%s' as %s says: lines %s%s; swapped pairs or lines in both languages: check how the "
                        "corpus was aligned and remove those pairs", name, len(found), guess.sample,
                        100 * len(found) / guess.sample, language_name(language_key(other)), language_key(other),
                        lang, option, ", ".join(map(str, at[:EXAMPLE_LINES])), ", ..." if len(at) > EXAMPLE_LINES
                        else "")
    log.debug("language check: %s is '%s' (%.0f%% of %d lines)", name, guess.lang, 100 * guess.share, guess.sample)
    return guess


#: English names of the codes most MT corpora use (others are named by their code)
_NAMES = {"de": "German", "en": "English", "fr": "French", "es": "Spanish", "it": "Italian", "nl": "Dutch",
          "pt": "Portuguese", "ru": "Russian", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "ar": "Arabic",
          "tr": "Turkish", "cs": "Czech", "pl": "Polish", "ro": "Romanian", "fi": "Finnish", "sv": "Swedish",
          "da": "Danish", "et": "Estonian", "lv": "Latvian", "lt": "Lithuanian", "hi": "Hindi", "vi": "Vietnamese"}


def language_name(code: str) -> str:
    """``German`` for ``de``; the code itself for a language not in the short table."""
    return _NAMES.get(code, code)


def looks_lowercased(lines: Iterable[str], *, min_cased: int = 50) -> bool:
    """Whether a sample of text was lowercased: it holds at least ``min_cased`` tokens with a letter
    that has case (so its script capitalises: Latin, Greek, Cyrillic, …; never Chinese or Japanese)
    and not one of them has an uppercase letter.

    ``@@`` markers and Moses escapes (``&apos;``) are lowercase anyway and do not count.
    """
    cased = 0
    for text in lines:
        for token in _BPE.sub("", text).split():
            if token.startswith("&") and token.endswith(";"):
                continue
            if any(c.isupper() for c in token):
                return False
            if any(c.islower() for c in token):
                cased += 1
    return cased >= min_cased
