"""The option types of the annotation stage's parse step: the pairs that enter it (:class:`Item`),
how the source side is parsed (:class:`ParseOptions`) and where the work runs (:class:`Parallel`).

They are read by :mod:`synprep.parse.source` and built by :mod:`synprep.annotate` and the CLI; this
module imports neither (only the parser registry, whose entries are loaded by name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from synprep.defaults import PARSE_DEFAULTS
from synprep.parse.registry import parse_source_class
from synprep.types import ParsedLine


@dataclass(frozen=True)
class Item:
    """One pair entering the annotation stage.

    Attributes:
        line: 1-based line number of the pair in the split's original input.
        words: the source words as the parser sees them (Moses tokens, unescaped).
        src: source BPE pieces (Moses-escaped, ``@@`` markers); ``src`` rebuilds ``words``.
        tgt: target BPE pieces.
        parse: an imported parse (CoNLL-U), or None to run the parser.
        trees: the user's constituency trees of the line (``--trees``; ``[]`` for a blank line), or None.
        word_index: the 0-based word of each source piece when a subword scheme aligned them by
            character offsets (:mod:`synprep.subword`); None for ``@@`` BPE pieces.
        alignment: that alignment's rule counts (``AlignStats.as_tuple()``), or None.
        compare: the words the pieces rebuild (unescaped) when the parser reads other words that are
            equal to them up to case (``annotate --parse-src``: cased words, lowercased pieces), or None.
        skipped: a pair of a shard this run does not make (another part's, ``--part``): only ``line`` is set.
    """

    line: int
    words: list[str]
    src: list[str]
    tgt: list[str]
    parse: ParsedLine | None = None
    trees: list[Any] | None = None
    word_index: list[int] | None = None
    alignment: tuple[int, ...] | None = None
    compare: list[str] | None = None
    skipped: bool = False


@dataclass
class ParseOptions:
    """How the source side is parsed (everything here is part of the shards' configuration).

    Attributes:
        parser: a registered parser (``stanza``, ``corenlp``, ``spacy``) or ``conllu`` (imported parses
            carried by the items).
        spec: the :class:`synprep.parse.base.ParserSpec` of the parser.
        ssplit: split a line into sentences on its words (SPEC.md §1); False = one sentence.
        batch_size: sentences per work item sent to a worker.
        cache: the parse cache file, or None for no cache.
        lowercase: the BPE side was lowercased after the parse (parsed words are compared
            lowercased with the pieces).
        trees: the user's bracketed trees file (``--trees``), carried by the items; the spec then has
            ``constituency=False`` (the parser's constituency model is not run).
        max_words: imported parses (``--parser conllu``): a line with a longer sentence is dropped
            (``parse:too_long``) before any feature is computed; None: the default
            (:data:`synprep.defaults.PARSE_DEFAULTS`). A parser run takes it from ``spec``.
    """

    parser: str = "stanza"
    spec: Any = None
    ssplit: bool = True
    batch_size: int = PARSE_DEFAULTS.batch_size
    cache: str | None = None
    lowercase: bool = False
    trees: str | None = None
    max_words: int | None = None

    def source(self) -> Any:
        """The :class:`synprep.parse.source.ParseSource` of :attr:`parser` (its registry,
        :func:`synprep.parse.registry.parse_source_class`)."""
        return parse_source_class(self.parser)(self)

    def identity(self) -> str:
        return str(self.source().identity())

    def config(self) -> dict[str, Any]:
        """The JSON-able part of the configuration that determines the parses."""
        return dict(self.source().config())


@dataclass
class Parallel:
    """Where the work runs (not part of the configuration: it never changes the output)."""

    jobs: int = 1
    backend: str = "loky"
    scheduler: str | None = None
