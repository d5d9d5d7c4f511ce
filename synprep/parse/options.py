"""The option types of the annotation stage's parse step: the pairs that enter it (:class:`Item`),
how the source side is parsed (:class:`ParseOptions`) and where the work runs (:class:`Parallel`,
:class:`Runtime`).

They are read by :mod:`synprep.parse.source` and built by :mod:`synprep.annotate` and the CLI; this
module imports neither (only the parser registry, whose entries are loaded by name).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from synprep.errors import ConfigError
from synprep.parse.config import ParseConfig
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
    """How a run parses a split's source side: the folder's parse section whole (:class:`ParseConfig`:
    the parser, sentence splitting, batch size, longest sentence, the backend's options) and what the
    run adds to it (:meth:`of`).

    Attributes:
        config: the folder's parse section (``config.parser``: a registered parser or ``conllu``,
            imported parses carried by the items).
        spec: the :class:`synprep.parse.base.ParserSpec` of the parser (None for imported parses).
        cache: the parse cache file, or None for no cache.
        lowercase: the BPE side was lowercased after the parse (parsed words are compared
            lowercased with the pieces).
        trees: the user's bracketed trees file (``--trees``), carried by the items; the spec then has
            ``constituency=False`` (the parser's constituency model is not run).
    """

    config: ParseConfig = field(default_factory=ParseConfig)
    spec: Any = None
    cache: str | None = None
    lowercase: bool = False
    trees: str | None = None

    @classmethod
    def of(cls, config: ParseConfig, lang: str, runtime: Runtime, *, trees: str | None = None,
           lowercase: bool = False) -> ParseOptions:
        """The parse of a run: ``config``'s parser specification (its folder settings from ``config``, its
        runtime ones from ``runtime``), or none for imported parses (``--parser conllu``).

        Args:
            config: the folder's parse section.
            lang: the source language (the parser's).
            runtime: where the work runs (the cache, the parser's runtime options).
            trees: the user's trees file (``--trees``): the parser's constituency model is then not run.
            lowercase: the pieces were lowercased after the parse.

        Raises:
            ConfigError: an option the chosen backend does not read (:class:`~synprep.parse.base.ParserSpec`).
        """
        spec = None
        if parse_source_class(config.parser).runs_parser:
            from synprep.parse.base import (
                ParserSpec,  # the backends' registry: not for `import synprep.parse.options`
            )

            spec = ParserSpec(config, lang=lang, constituency=trees is None, **runtime.parser)
        return cls(config=config, spec=spec, cache=runtime.cache, lowercase=lowercase, trees=trees)

    def source(self) -> Any:
        """The :class:`synprep.parse.source.ParseSource` of the parser (its registry,
        :func:`synprep.parse.registry.parse_source_class`)."""
        return parse_source_class(self.config.parser)(self)

    def identity(self) -> str:
        return str(self.source().identity())

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able part of the configuration that determines the parses (the manifest's ``parser``)."""
        return dict(self.source().config())


@dataclass
class Parallel:
    """Where the work runs (not part of the configuration: it never changes the output)."""

    jobs: int = 1
    backend: str = "loky"
    scheduler: str | None = None


@dataclass
class Runtime:
    """Where and how the work runs: never part of the output, so not in the configuration.

    Attributes:
        par: the workers (``-j``, ``--backend``, ``--scheduler``).
        cache: the parse cache file, or None for no cache (``--cache``, ``--no-cache``).
        parser: the parser backend's runtime options, by :class:`~synprep.parse.base.ParserSpec` field
            (those declared ``runtime``: ``dir`` (``--stanza-dir``), ``corenlp_endpoint``, ``timeout``).

    Raises:
        ConfigError: a ``parser`` key that is not a runtime field of the parser specification.
    """

    par: Parallel = field(default_factory=Parallel)
    cache: str | None = None
    parser: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from synprep.parse.base import (
            ParserSpec,  # the backends' registry: not for `import synprep.parse.options`
        )

        runtime = {f.name for f in dataclasses.fields(ParserSpec) if f.metadata.get("runtime")}
        unknown = sorted(set(self.parser) - runtime)
        if unknown:
            raise ConfigError(f"Runtime.parser: {', '.join(unknown)} (not a runtime setting of the parser; "
                              f"known: {', '.join(sorted(runtime))}; the others are DataConfig fields)")


@dataclass(frozen=True)
class ParseRun:
    """How lines are parsed, beside the lines themselves (:func:`synprep.parse.run.parse_lines`): the parser
    with its parse section (sentence splitting and the batch size too), the cache and the workers, which with
    the lines decide every byte of the parses.

    Attributes:
        spec: the parser (:class:`~synprep.parse.base.ParserSpec`); its ``config`` says whether lines are split
            into sentences (``ssplit``, SPEC.md §1) and how many sentences make a work item (``batch_size``).
        cache: a :class:`~synprep.parse.cache.ParseCache`, or None to parse everything.
        par: where the work runs (``device="cuda"``: each worker takes one visible GPU).
        identity: the parser identity if already computed (:func:`synprep.parse.run.parser_identity`).
        stats: a :class:`~synprep.parse.run.ParseStats` to fill, or None.
        pipeline: run the forward and decode stages apart (None: :func:`synprep.parse.pipelining.pipelined`
            decides); the same bytes either way.
    """

    spec: Any
    cache: Any = None
    par: Parallel = field(default_factory=Parallel)
    identity: str | None = None
    stats: Any = None
    pipeline: bool | None = None
