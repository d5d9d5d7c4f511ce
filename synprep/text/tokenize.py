"""Moses tokenization with sacremoses, plus the one rule that makes it match fairseq's perl tokenizer.

Source: SPEC.md §1 (Moses tokenization, ``escape=True``, optional lowercasing); fairseq's
``examples/translation/prepare-iwslt14.sh`` (``tokenizer.perl -l L | lowercase.perl``).

``fairseq_compat=True`` reproduces the old ``tokenizer.perl`` that fairseq's IWSLT14 data was
made with. Two differences to sacremoses matter:

* the old perl split a final ``.`` off the *last* token whenever it matched ``^(\\S+)\\.$``,
  even after an abbreviation or a number (``usw.`` → ``usw .``, ``70.`` → ``70 .``); sacremoses
  (like today's perl) keeps known abbreviations whole. We apply the rule ``^(.*[^.])\\.$`` to the
  last token (``...`` stays whole, as the perl's multi-dot protection does);
* the perl printed a line that is empty or only whitespace unchanged.

With both rules, sacremoses + Perl ``lc`` reproduces all 13500 lines of fairseq's
``tmp/IWSLT14.*`` files (tests/test_iwslt14.py asserts it).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache, partial

from sacremoses import MosesTokenizer
from sacremoses.corpus import NonbreakingPrefixes

from synprep.errors import ConfigError
from synprep.parallel import chunk_map
from synprep.signature import package_version
from synprep.text.case import moses_lowercase  # defined there (no sacremoses), imported from here too

log = logging.getLogger(__name__)

#: lines per work item for ``--jobs`` (like tokenizer.perl's ``-lines 2000``)
CHUNK_LINES = 2000

#: Perl's ``\\s`` under Unicode rules (perlrecharclass), which differs from Python's ``\\s``
#: (Python also counts U+001C..U+001F as space).
PERL_SPACE_CHARS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_BLANK_LINE = re.compile(f"[{PERL_SPACE_CHARS}]*")
_FINAL_DOT = re.compile(r"^(.*[^.])\.$", re.DOTALL)
_LANG = re.compile(r"^[A-Za-z]{2,3}([_-][A-Za-z0-9]+)?$")


@cache
def _charset(chars: str) -> frozenset[str]:
    return frozenset(chars)


class _MosesTokenizer(MosesTokenizer):
    """sacremoses' tokenizer, its two character-class tests reading sets made once.

    ``islower`` and ``isanyalpha`` (asked of the token after, and of each token with, a final ``.``) make a
    set of the whole Unicode class at every call (IsLower: 2,253 characters, IsAlpha: 10,862), about a
    seventh of the CPU time of tokenizing English text. The same expressions here read the class's set,
    made once per class string (a language's own IsAlpha too): the same answers.
    """

    def islower(self, text: str) -> bool:
        return not set(text).difference(_charset(self.IsLower))

    def isanyalpha(self, text: str) -> bool:
        return any(set(text).intersection(_charset(self.IsAlpha)))


@cache
def _tokenizer(lang: str) -> MosesTokenizer:
    if not _LANG.match(lang):
        raise ConfigError(f"bad language code {lang!r} (expected e.g. de, en, pt-br)")
    return _MosesTokenizer(lang=lang)


@cache
def _tell_prefixes(lang: str) -> None:
    """Say once per process (the one that reads the input, not each worker) that ``lang`` has no Moses
    nonbreaking prefixes: sacremoses, like Moses's ``tokenizer.perl``, then uses the English list."""
    if lang not in NonbreakingPrefixes().available_langs:
        log.warning("no Moses nonbreaking prefixes for language %r: the English list is used, as Moses's "
                    "tokenizer.perl does (a word ending in '.' keeps its dot when it is an English abbreviation); "
                    "--tokenizer parser tokenizes with the parser's own tokenizer instead", lang)


def fairseq_split_final_dot(tokens: list[str]) -> list[str]:
    """Split a final ``.`` off the last token when it matches ``^(.*[^.])\\.$`` (old tokenizer.perl).

    Returns a new list; ``["usw."]`` → ``["usw", "."]``, ``["..."]`` and ``["."]`` are unchanged.
    """
    if tokens:
        m = _FINAL_DOT.match(tokens[-1])
        if m:
            return [*tokens[:-1], m.group(1), "."]
    return tokens


def tokenize_line(text: str, lang: str, *, lowercase: bool = False, escape: bool = True,
                  fairseq_compat: bool = False) -> str:
    """Moses-tokenize one line (sacremoses ``MosesTokenizer(lang).tokenize``).

    Args:
        text: one line of raw text, without its line end.
        lang: ISO 639-1 code selecting the nonbreaking prefixes and apostrophe rules (``de``, ``en``…).
        lowercase: lowercase after tokenizing (:func:`moses_lowercase`, Perl ``lc`` semantics), as
            fairseq does (``tokenizer.perl | lowercase.perl``).
        escape: Moses-escape ``& | < > ' " [ ]`` (``&amp;`` …), SPEC.md §1.
        fairseq_compat: apply the old perl tokenizer's rules (module docstring).

    Returns:
        The tokens joined by single spaces (``""`` for an empty line; with ``fairseq_compat`` an
        all-whitespace line comes back unchanged, as the perl printed it).

    Raises:
        ConfigError: a malformed language code.
    """
    tok = _tokenizer(lang)
    if fairseq_compat and _BLANK_LINE.fullmatch(text):
        out = text
    else:
        tokens = tok.tokenize(text, escape=escape)
        if fairseq_compat:
            tokens = fairseq_split_final_dot(tokens)
        out = " ".join(tokens)
    return moses_lowercase(out) if lowercase else out


def tokenize_lines(lines: list[str], lang: str, *, lowercase: bool = False, escape: bool = True,
                   fairseq_compat: bool = False) -> list[str]:
    """:func:`tokenize_line` over a chunk of lines (the unit of work for ``--jobs``); same length out."""
    return [tokenize_line(t, lang, lowercase=lowercase, escape=escape, fairseq_compat=fairseq_compat)
            for t in lines]


@dataclass(frozen=True)
class MosesRules:
    """How a line is Moses-tokenized besides its language: :func:`tokenize_line`'s switches, as
    :func:`tokenizer_signature` records them (``synprep tokenize``'s ``--lowercase``, ``--no-escape``,
    ``--fairseq-compat``).

    Attributes:
        lowercase: lowercase after tokenizing (Perl ``lc``, :func:`moses_lowercase`).
        escape: Moses-escape ``& | < > ' " [ ]``.
        fairseq_compat: the old tokenizer.perl's final-period rule (module docstring).
    """

    lowercase: bool = False
    escape: bool = True
    fairseq_compat: bool = False


def tokenize_stream(lines: Iterable[str], lang: str, rules: MosesRules = MosesRules(), *, jobs: int = 1,
                    backend: str = "loky", scheduler: str | None = None,
                    chunk_lines: int = CHUNK_LINES) -> Iterator[str]:
    """Tokenize a stream of lines by ``rules`` in chunks of ``chunk_lines``, in order, with ``jobs`` workers (one
    chunk: here, :func:`~synprep.parallel.chunk_map`).

    Memory holds at most ``2 * jobs`` chunks; one line out for every line in.
    Raises what :func:`tokenize_line` raises, and :class:`~synprep.errors.ConfigError` for bad jobs.
    """
    _tokenizer(lang)  # fail early on a bad language, in this process
    _tell_prefixes(lang)
    func = partial(tokenize_lines, lang=lang, lowercase=rules.lowercase, escape=rules.escape,
                   fairseq_compat=rules.fairseq_compat)
    yield from chunk_map(func, lines, chunk_lines, jobs=jobs, backend=backend, scheduler=scheduler)


def tokenizer_signature(lang: str, *, lowercase: bool, escape: bool, fairseq_compat: bool) -> dict[str, object]:
    """Signature fields (:func:`synprep.signature.signature`) describing a tokenization."""
    tok = f"sacremoses-{package_version('sacremoses')}" + ("+fairseq" if fairseq_compat else "")
    return {"tok": tok, "lang": lang, "lc": lowercase, "esc": escape}
