"""A package's public names imported on first use (PEP 562's module ``__getattr__``), so that importing one light
module of the package (its configuration section) does not import its heavy ones.

A package lists each public name with the module that defines it and sets ``__getattr__ = lazy_names(__name__,
TABLE, globals())``; a type checker reads the same names from an ``if TYPE_CHECKING:`` import block. A module that
only some functions of another use is bound at that module's top by :func:`lazy_module` and loaded on first use.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
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


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, executed on its first attribute access (:class:`importlib.util.LazyLoader`): a module
    bound at the top of another that only some of its functions use (a numpy helper of a parser backend whose
    options every command builds) costs nothing until one of them runs. Already imported: that module.

    Touch an attribute once before threads share it (Python 3.11's lazy loading takes no lock).

    Args:
        name: the module's full name (``"synprep.parse.stanza_decode"``).

    Raises:
        ModuleNotFoundError: no module of that name.
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:  # as an import binds a submodule on its package (``import a.b`` then ``a.b.x``)
        setattr(sys.modules[parent], child, module)
    return module
