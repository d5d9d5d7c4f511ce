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

log = logging.getLogger(__name__)

#: lines classified by default (spread over the input: :func:`sample_lines`)
DEFAULT_SAMPLE = 200
#: a line votes when it holds at least this many letters (shorter lines are too often misread)
MIN_LETTERS = 20
#: fewer voting lines than this decide nothing (:func:`check_language` lets the run go on)
MIN_VOTES = 10
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_BPE = re.compile(r"@@( |$)")


@dataclass(frozen=True)
class LanguageGuess:
    """The outcome of :func:`detect_language`.

    Attributes:
        lang: the ISO 639-1 code most lines of the sample are in (py3langid's codes), or None when
            no line could vote.
        share: the fraction (0..1) of the voting lines that are in ``lang``.
        sample: how many lines voted.
        counts: code → number of voting lines in it.
    """

    lang: str | None
    share: float
    sample: int
    counts: dict[str, int] = field(default_factory=dict)

    def share_of(self, code: str) -> float:
        """The fraction of the voting lines in language ``code`` (0 when none voted)."""
        return self.counts.get(base_code(code), 0) / self.sample if self.sample else 0.0


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=False)


def known_languages() -> frozenset[str]:
    """The ISO 639-1 codes the model can tell apart."""
    return frozenset(_identifier().nb_classes)


#: what a language code looks like (the tokenizer's rule, :mod:`synprep.text.tokenize`): ``de``, ``pt-br``
_CODE = re.compile(r"^[A-Za-z]{2,3}([_-][A-Za-z0-9]+)?$")


def check_language_code(lang: str, option: str) -> None:
    """Refuse a value of ``-s``/``-t`` that is no language code (``english``), before anything is written.

    Raises:
        ConfigError: naming the option and the value, and the code of a language named in English
            (``german`` → ``de``, :func:`synprep.parse.langcode.iso_code`).
    """
    if not _CODE.match(lang):
        from synprep.parse.langcode import iso_code

        code = iso_code(lang)
        if code is not None and _CODE.match(code):
            raise ConfigError(f"{option} {lang!r} is not a language code: {lang} is {code!r} (ISO 639-1); "
                              f"run with {option.split('/')[0]} {code}")
        raise ConfigError(f"{option} {lang!r} is not a language code: give its ISO 639-1 code (de, en, pt-br, ...)")


def base_code(code: str) -> str:
    """``de`` for ``de``, ``DE``, ``de-AT``, ``de_CH``, ``zh-hans`` → ``zh``: the part the model names."""
    return re.split(r"[-_]", code.strip().lower(), maxsplit=1)[0]


def detect_language(lines: Sequence[str], sample: int = DEFAULT_SAMPLE) -> LanguageGuess:
    """The majority language of (a sample of) ``lines``: one vote per line with at least
    :data:`MIN_LETTERS` letters, classified by py3langid.

    Args:
        lines: text lines (raw, tokenized, or BPE'd: ``@@`` markers are removed first).
        sample: classify at most this many lines, spread evenly over ``lines`` (:func:`spread`).

    Returns:
        :class:`LanguageGuess` (``lang`` None when no line had enough letters).
    """
    ident = _identifier()
    counts: Counter[str] = Counter()
    for text in spread(lines, sample):
        text = _BPE.sub("", text)
        if len(_LETTER.findall(text)) < MIN_LETTERS:
            continue
        counts[str(ident.classify(text)[0])] += 1
    n = sum(counts.values())
    if not n:
        return LanguageGuess(None, 0.0, 0, {})
    lang, k = max(sorted(counts.items()), key=lambda kv: kv[1])
    return LanguageGuess(lang, k / n, n, dict(counts))


def spread(lines: Sequence[str], sample: int) -> list[str]:
    """At most ``sample`` of ``lines``, evenly spaced (all of them when there are fewer)."""
    n = len(lines)
    if n <= sample:
        return list(lines)
    return [lines[i * n // sample] for i in range(sample)]


def sample_lines(lines: Iterable[str], n_lines: int, sample: int = DEFAULT_SAMPLE) -> list[str]:
    """The lines of a stream of ``n_lines`` lines that :func:`spread` would pick, read in one pass."""
    want = {i * n_lines // sample for i in range(sample)} if n_lines > sample else None
    out = []
    for i, text in enumerate(lines):
        if i >= n_lines:
            break
        if want is None or i in want:
            out.append(text)
    return out


def check_language(lines: Sequence[str], lang: str, option: str, name: str) -> LanguageGuess | None:
    """Refuse a side whose sample is mostly in another language than ``lang``: most voting lines are in
    one other language, and fewer than half in ``lang`` (text the model cannot place, whose votes scatter
    over many languages, is not refused).

    Nothing is decided when ``lang`` is not a language the model knows (logged), or fewer than
    :data:`MIN_VOTES` lines vote.

    Args:
        lines: the side's sample (:func:`sample_lines`). lang: the code given with ``option``
            (``-s`` / ``-t``). name: the file, for the message.

    Raises:
        InputError: most of the sample is in another language (named), with the fix
            (``--no-language-check``).
    """
    code = base_code(lang)
    if code not in known_languages():
        log.info("language check: %s is not one of the %d languages py3langid knows: %s not checked",
                 lang, len(known_languages()), name)
        return None
    guess = detect_language(lines, sample=len(lines) or 1)
    if guess.lang is None or guess.sample < MIN_VOTES:
        log.info("language check: %s: too few long lines to tell its language (%d)", name, guess.sample)
        return guess
    if guess.lang != code and guess.share_of(code) < 0.5 <= guess.share:
        raise InputError(
            f"this text looks {language_name(guess.lang)} ('{guess.lang}': {guess.share:.0%} of {guess.sample} "
            f"sampled lines), not '{lang}' as {option} says ({guess.share_of(code):.0%}): give {option} "
            f"{guess.lang}, swap the sides, or add --no-language-check", name)
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
