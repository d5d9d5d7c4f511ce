"""One name → class table for every extension point (parsers, parse sources, subword schemes, syntax
sources, export formats, commands), in the manner of spaCy's ``catalogue`` and sacrebleu's lazy
``_TOKENIZERS``: an entry is a ``"module:attribute"`` string, imported on first lookup (naming
``spacy`` loads neither spaCy nor stanza), so a table costs nothing to import.

A :class:`Registry` is a ``dict`` of name → target (``tuple(REG)`` are the names in registration order,
``name in REG`` asks whether one exists); :meth:`Registry.load` is the one lookup and its
:class:`~synprep.errors.ConfigError` the one error text (``unknown parser 'x'; choose one of stanza,
corenlp, spacy``). A plugin adds itself with :meth:`Registry.register` (a line in the table's module,
or at run time before the command that uses it is built).
"""

from __future__ import annotations

import importlib
from typing import Any, Generic, TypeVar

from synprep.errors import ConfigError

T = TypeVar("T")


class Registry(dict[str, str], Generic[T]):
    """Names → ``"module:attribute"`` of the registered objects of one kind.

    Args:
        kind: what an entry is, as the error message names it (``parser``, ``export format``).
        entries: the initial table (name → ``"module:attribute"``), in the order of the choices.
    """

    def __init__(self, kind: str, entries: dict[str, str] | None = None):
        super().__init__(entries or {})
        self.kind = kind

    def register(self, name: str, target: str) -> None:
        """Add (or replace) ``name`` → ``target`` (``"module:attribute"``, imported when looked up).

        Raises:
            ValueError: ``target`` is not of the form ``module:attribute``.
        """
        module, _, attr = target.partition(":")
        if not module or not attr:
            raise ValueError(f"a {self.kind} entry is 'module:attribute', got {target!r}")
        self[name] = target

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order (a command's choices)."""
        return tuple(self)

    def load(self, name: Any) -> T:
        """The object registered as ``name``, its module imported on first use.

        Raises:
            ConfigError: ``name`` is not registered (``unknown KIND 'NAME'; choose one of A, B``).
        """
        target = self.get(name) if isinstance(name, str) else None
        if target is None:
            raise ConfigError(self.unknown(name))
        module, attr = target.split(":")
        obj: T = getattr(importlib.import_module(module), attr)
        return obj

    def unknown(self, name: Any, extra: tuple[str, ...] = ()) -> str:
        """The error text for a name that is not registered (``extra``: further valid names)."""
        return f"unknown {self.kind} {name!r}; choose one of {', '.join([*self, *extra])}"
