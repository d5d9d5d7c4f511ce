"""A package's public names imported on first use (PEP 562's module ``__getattr__``), so that importing one light
module of the package (its configuration section) does not import its heavy ones.

A package lists each public name with the module that defines it and sets ``__getattr__ = lazy_names(__name__,
TABLE, globals())``; a type checker reads the same names from an ``if TYPE_CHECKING:`` import block.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
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
