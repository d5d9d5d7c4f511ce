"""A package's public names imported on first use (PEP 562's module ``__getattr__``), so that importing one light
module of the package (its configuration section) does not import its heavy ones.

A package lists each public name with the module that defines it and sets ``__getattr__ = lazy_names(__name__,
TABLE, globals())``; a type checker reads the same names from an ``if TYPE_CHECKING:`` import block. A module that
only some functions of another use is bound at that module's top by :func:`lazy_module` and loaded on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


def lazy_names(package: str, table: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: a name of ``table`` is imported from its module on first use
    and kept in ``namespace`` (the package's ``globals()``), so the next use does not come back here.

    Args:
        package: the package's ``__name__`` (as the error names it).
        table: public name → the module that defines it (``"synprep.shards.reader"``).
        namespace: the package's ``globals()``.

    Returns:
        The function to bind as the package's ``__getattr__``; it raises AttributeError
        (``module 'P' has no attribute 'X'``) for a name not in ``table``.
    """

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(table[name]), name)
        namespace[name] = value
        return value

    return __getattr__


class LazyModule:
    """A module's stand-in that imports it on first attribute access (:func:`importlib.import_module`, so
    thread-safe), then reads from it. Not placed in ``sys.modules``: a walk of the loaded modules
    (``inspect.getmodule``, which torch and spaCy run) does not load it, unlike
    :class:`importlib.util.LazyLoader`'s modules.

    Args:
        name: the module's full name (``"synprep.parse.stanza_decode"``).
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # copy, pickle and the like probe dunders: never load for them
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{'' if self._module is None else ' (loaded)'}>"


def lazy_module(name: str) -> Any:
    """A module bound at the top of another that only some of its functions use (a parser backend's numpy
    helpers, whose options every command builds): it costs nothing until one of them reads from it
    (:class:`LazyModule`).

    Args:
        name: the module's full name (``"synprep.parse.stanza_decode"``).

    Returns:
        The stand-in; ``lazy_module(name).x`` is ``importlib.import_module(name).x``.
    """
    return LazyModule(name)
