"""What every parser backend shares: its picklable specification, its interface, failure isolation."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from synprep.config import DEFAULTS
from synprep.errors import ConfigError
from synprep.types import ParsedSentence

log = logging.getLogger(__name__)

PARSERS = ("stanza", "corenlp")
DEVICES = ("cpu", "cuda")

#: stanza is known to hang or run out of memory on sentences of 400+ words (synprep.config.DataConfig)
DEFAULT_MAX_WORDS = DEFAULTS.max_words
#: LDD entries with P(head, rel) below this are dropped (SPEC.md §4; synprep.config.DataConfig)
DEFAULT_LDD_THRESHOLD = DEFAULTS.ldd_threshold
#: part of every parser identity (so of every cache key): bump it whenever synprep's conversion
#: of a parser's output changes, so that no cache entry made the old way is reused
PARSE_SCHEMA = 2


@dataclass(frozen=True)
class ParserSpec:
    """Everything needed to build a parser, small and picklable (sent to every worker).

    Attributes:
        name: ``"stanza"`` or ``"corenlp"``.
        lang: language code (``en``, ``de``).
        dir: stanza resource directory; None = stanza's own default (``~/stanza_resources`` or
            ``$STANZA_RESOURCES_DIR``).
        package: stanza package; None = stanza's default package for the language.
        device: ``"cpu"`` or ``"cuda"`` (each worker then takes one visible GPU).
        constituency: run the constituency model where the language has one (False when the
            user supplies trees with ``--trees``).
        max_words: sentences longer than this are recorded as failures, never parsed.
        ldd_threshold: LDD entries below this probability are dropped (0 keeps every entry).
        corenlp_endpoint: URL of the CoreNLP server (``corenlp`` only).
        timeout: seconds one CoreNLP request may take before it fails (``corenlp`` only).
    """

    name: str = "stanza"
    lang: str = "en"
    dir: str | None = None
    package: str | None = None
    device: str = "cpu"
    constituency: bool = True
    max_words: int = DEFAULT_MAX_WORDS
    ldd_threshold: float = DEFAULT_LDD_THRESHOLD
    corenlp_endpoint: str = "http://localhost:9000"
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if self.name not in PARSERS:
            raise ConfigError(f"unknown parser {self.name!r}; choose one of {', '.join(PARSERS)}")
        if self.device not in DEVICES:
            raise ConfigError(f"unknown device {self.device!r}; choose one of {', '.join(DEVICES)}")
        if self.max_words < 1:
            raise ConfigError(f"max_words must be >= 1, got {self.max_words}")
        if not 0.0 <= self.ldd_threshold <= 1.0:
            raise ConfigError(f"ldd_threshold must be in [0, 1], got {self.ldd_threshold}")


class Parser(Protocol):
    """A loaded parser (lives in one worker process).

    ``parse`` takes sentences as word lists (Moses tokens, unescaped) and returns one
    :class:`ParsedSentence` per sentence whose ``words`` are exactly the given words; it raises
    on failure (the caller isolates the failing sentence, :func:`parse_isolated`).
    """

    spec: ParserSpec

    def parse(self, sentences: list[list[str]]) -> list[ParsedSentence]: ...


def parse_isolated(parser: Parser, sentences: list[list[str]]) -> list[ParsedSentence | str]:
    """Parse a batch; if it raises, retry its sentences one at a time to isolate the bad ones.

    Returns:
        one item per sentence: its parse, or the reason (str) the parser failed on it.
    """
    if not sentences:
        return []
    try:
        return list(parser.parse(sentences))
    except Exception as e:  # any parser failure is recorded, never fatal
        if len(sentences) == 1:
            return [_reason(e)]
        log.info("parser failed on a batch of %d sentences (%s); retrying one at a time", len(sentences), _reason(e))
    out: list[ParsedSentence | str] = []
    for s in sentences:
        try:
            out.extend(parser.parse([s]))
        except Exception as e:
            out.append(_reason(e))
    return out


#: what :func:`error_kind` returns
ERROR_KINDS = ("empty", "too_long", "failed")


def error_kind(reason: str) -> str:
    """Classify a line's parse error message: ``"empty"``, ``"too_long"`` or ``"failed"``.

    The messages are synprep's own (:func:`~synprep.parse.run.parse_block`: ``empty line``,
    ``sentence 2 has 300 words (more than max_words=250)``, ``parser failed: ...``) or any
    ``# error`` text of an imported CoNLL-U file; anything else is a failure.
    """
    if reason == "empty line":
        return "empty"
    if not reason.startswith("parser failed") and "max_words" in reason:
        return "too_long"
    return "failed"


def _reason(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


@dataclass
class ParseStats:
    """Counts of one :func:`~synprep.parse.run.parse_lines` run (filled in as lines are yielded).

    Attributes:
        lines: lines yielded. sentences: sentences in successfully parsed lines.
        cache_hits: sentences found in the cache. parsed: sentences sent to the parser.
        failed_lines: lines yielded with an error. reasons: error kind → count of lines.
    """

    lines: int = 0
    sentences: int = 0
    cache_hits: int = 0
    parsed: int = 0
    failed_lines: int = 0
    reasons: Counter = field(default_factory=Counter)
