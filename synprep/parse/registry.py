"""The parser registries: ``--parser`` name → ``"module:Class"`` (a :class:`synprep.registry.Registry`).

:data:`PARSER_BACKENDS` holds the parser backends (each a :class:`~synprep.parse.base.ParserBackend`),
:data:`PARSE_SOURCES` the ``--parser`` names that bring parses instead of running a parser (``conllu``,
a :class:`~synprep.parse.source.ParseSource`). Entries are imported lazily (naming ``spacy`` loads
neither spaCy nor stanza). Adding a backend = one new module with a
:class:`~synprep.parse.base.ParserBackend` subclass (its options a dataclass on the class,
:attr:`~synprep.parse.base.ParserBackend.Options`) and one line here (or
``PARSER_BACKENDS.register(name, "module:Class")`` before the command is built); ``--parser``
choices, the backends' command-line options, :class:`~synprep.parse.base.ParserSpec` validation,
identities, signatures and the worker loader all read this table. Nothing else in synprep branches
on a parser name.

This module is the leaf of the parser stage: it imports no other synprep.parse module; the class
lookups are :func:`synprep.parse.base.backend_class` and :func:`parse_source_class`.
"""

from __future__ import annotations

from typing import Any

from synprep.errors import ConfigError
from synprep.registry import Registry

#: parser name -> "module:Class" of its backend
PARSER_BACKENDS: Registry[Any] = Registry("parser", {
    "stanza": "synprep.parse.stanza_parser:StanzaParser",
    "corenlp": "synprep.parse.corenlp:CoreNLPParser",
    "spacy": "synprep.parse.spacy_parser:SpacyParser",
})

#: ``--parser`` names whose parses are imported → "module:Class" of their ParseSource; every name of
#: :data:`PARSER_BACKENDS` is a :data:`RUN_PARSER` besides
PARSE_SOURCES: Registry[Any] = Registry("parser", {
    "conllu": "synprep.parse.source:ImportConllu",
})
#: the ParseSource of every parser backend
RUN_PARSER = "synprep.parse.source:RunParser"


def parser_names() -> tuple[str, ...]:
    """The registered parser names, in registry order (the ``--parser`` choices)."""
    return PARSER_BACKENDS.names()


def parse_source_class(parser: str) -> Any:
    """The :class:`~synprep.parse.source.ParseSource` class of a ``--parser`` name (:data:`PARSE_SOURCES`, imported
    when used).

    Raises:
        ConfigError: an unknown parser name (the message lists every ``--parser`` choice).
    """
    if parser in PARSE_SOURCES:
        return PARSE_SOURCES.load(parser)
    if parser not in PARSER_BACKENDS:
        raise ConfigError(PARSER_BACKENDS.unknown(parser, PARSE_SOURCES.names()))
    return Registry("parse source", {parser: RUN_PARSER}).load(parser)

