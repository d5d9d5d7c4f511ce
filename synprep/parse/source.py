"""Where a split's parses come from: a parser run, or parses the user already has.

The annotation stage (:mod:`synprep.annotate`) asks a :class:`ParseSource` for the parses of each
block of pairs and never branches on where they come from. A new kind is one class here (or in
its own module) and one line in :data:`SOURCES`:

* :class:`RunParser` (``stanza``, ``corenlp``): parses the items' words with
  :func:`synprep.parse.run.parse_block` (cache, workers, the user's ``--trees``);
* :class:`ImportConllu` (``conllu``): the parses the items carry, read from the user's CoNLL-U
  file (:func:`synprep.parse.conllu_io.read_numbered`), checked to belong to their line.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING, Any, ClassVar

from synprep.errors import ConfigError, InputError
from synprep.types import ParsedLine

if TYPE_CHECKING:
    from synprep.annotate import Item, Parallel, ParseOptions

#: ``--parser`` name → ``"module:Class"`` of its :class:`ParseSource` (imported when used)
SOURCES: dict[str, str] = {
    "stanza": "synprep.parse.source:RunParser",
    "corenlp": "synprep.parse.source:RunParser",
    "conllu": "synprep.parse.source:ImportConllu",
}


class ParseSource:
    """The parses of a split's source side.

    Attributes:
        runs_parser: whether a parser runs (then the parse cache and the parser's options apply).
    """

    runs_parser: ClassVar[bool] = False

    def __init__(self, opts: ParseOptions):
        self.opts = opts

    def identity(self) -> str:
        """What determines the parses, as one string (the cache key prefix)."""
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        """The JSON-able part of the configuration that determines the parses (stored in every shard)."""
        raise NotImplementedError

    def signature(self) -> str:
        """The ``parser:`` field of the signature line."""
        return self.opts.parser

    def parse(self, items: list[Item], par: Parallel, cache: Any, identity: str | None) -> list[ParsedLine]:
        """One :class:`ParsedLine` per item, in order (``error`` set for a line without a parse).

        Raises:
            InputError: a parse that does not belong to its line, or trees that do not match.
        """
        raise NotImplementedError


class RunParser(ParseSource):
    """Run stanza or CoreNLP (:class:`synprep.parse.base.ParserSpec`) on the items' words."""

    runs_parser = True

    def identity(self) -> str:
        from synprep.parse.run import parser_identity

        return parser_identity(self.opts.spec)

    def config(self) -> dict[str, Any]:
        spec = dataclasses.asdict(self.opts.spec)
        for runtime in ("device", "timeout", "corenlp_endpoint", "dir"):  # never change the output
            spec.pop(runtime, None)
        return {"name": self.opts.parser, "ssplit": self.opts.ssplit, **spec, "identity": self.identity(),
                "batch_size": self.opts.batch_size}

    def signature(self) -> str:
        from synprep.signature import package_version

        spec = self.opts.spec
        version = package_version("stanza") if spec.name == "stanza" else "corenlp"
        return f"{spec.name}-{version}/{spec.lang}/{spec.package or 'default'}"

    def parse(self, items: list[Item], par: Parallel, cache: Any, identity: str | None) -> list[ParsedLine]:
        from synprep.parse.run import parse_block

        opts = self.opts
        trees = [it.trees if it.trees is not None else [] for it in items] if opts.trees is not None else None
        try:
            return parse_block([it.words for it in items], opts.spec, cache=cache, jobs=par.jobs,
                               backend=par.backend, scheduler=par.scheduler, ssplit=opts.ssplit,
                               batch_size=opts.batch_size, identity=identity, trees=trees, trees_name=opts.trees)
        except InputError as e:  # parse_block numbers the block's lines 1..n: name the input line
            if e.line is not None and 1 <= e.line <= len(items):
                raise InputError(e.reason, e.path, items[e.line - 1].line) from None
            raise


class ImportConllu(ParseSource):
    """The user's CoNLL-U parses, carried by the items (gold treebanks, any parser's output)."""

    def identity(self) -> str:
        return "conllu-import"

    def config(self) -> dict[str, Any]:
        return {"name": self.opts.parser, "ssplit": self.opts.ssplit}

    def parse(self, items: list[Item], par: Parallel, cache: Any, identity: str | None) -> list[ParsedLine]:
        out = []
        for it in items:
            if it.parse is None:
                raise InputError("no CoNLL-U parse for this line", None, it.line)
            if it.parse.line != it.line:
                raise InputError(f"the CoNLL-U parse of line {it.parse.line} was given for line {it.line}",
                                 None, it.line)
            out.append(it.parse)
        return out


def source_for(opts: ParseOptions) -> ParseSource:
    """The :class:`ParseSource` of ``opts.parser`` (:data:`SOURCES`).

    Raises:
        ConfigError: an unknown parser name.
    """
    target = SOURCES.get(opts.parser)
    if target is None:
        raise ConfigError(f"unknown parser {opts.parser!r}; choose one of {', '.join(SOURCES)}")
    module, name = target.split(":")
    cls: type[ParseSource] = getattr(importlib.import_module(module), name)
    return cls(opts)
