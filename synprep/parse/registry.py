"""The parser backend registry: name → ``"module:Class"`` of a :class:`~synprep.parse.base.ParserBackend`.

Like :data:`synprep.cli.COMMANDS`, entries are imported lazily (naming ``spacy`` loads neither spaCy nor
stanza). Adding a backend = one new module with a :class:`~synprep.parse.base.ParserBackend` subclass and
one line here; ``--parser`` choices, :class:`~synprep.parse.base.ParserSpec` validation, identities,
signatures and the worker loader all read this table. Nothing else in synprep branches on a parser name.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from synprep.errors import ConfigError

if TYPE_CHECKING:
    from synprep.parse.base import ParserBackend

#: parser name -> "module:Class" of its backend
PARSER_BACKENDS: dict[str, str] = {
    "stanza": "synprep.parse.stanza_parser:StanzaParser",
    "corenlp": "synprep.parse.corenlp:CoreNLPParser",
    "spacy": "synprep.parse.spacy_parser:SpacyParser",
}


def parser_names() -> tuple[str, ...]:
    """The registered parser names, in registry order (the ``--parser`` choices)."""
    return tuple(PARSER_BACKENDS)


def backend_class(name: str) -> type[ParserBackend]:
    """The backend class registered under ``name`` (its module imported on first use).

    Raises:
        ConfigError: no such parser.
    """
    target = PARSER_BACKENDS.get(name)
    if target is None:
        raise ConfigError(f"unknown parser {name!r}; choose one of {', '.join(PARSER_BACKENDS)}")
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def backend_for_identity(identity: str) -> type[ParserBackend] | None:
    """The backend whose identities start with ``NAME|`` (None for an identity no backend made)."""
    name = identity.split("|", 1)[0]
    return backend_class(name) if name in PARSER_BACKENDS else None
