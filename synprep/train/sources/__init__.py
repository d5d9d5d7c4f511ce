"""Syntax sources of the encoder's syntactic heads: a registry of name → ``"module:Class"``.

A *syntax source* turns the source-side syntax stored in the shards into what a syntactic head
attends with: an additive bias (SLR, SLA), a multiplier of the scores (PASCAL, LDD, the LDD
paper's 1-best parent matrix), relation scores and a gate (SET), or an auxiliary loss on the
head's own attention (LISA/SISA). Each is one module with one :class:`~synprep.train.sources.base.SyntaxSource`
subclass that declares the shard fields it reads, how it collates, how it enters attention and its
paper's defaults. The modules are imported only when a configuration names them.

Adding a source = one module under ``synprep/train/sources/`` and one line in :data:`SOURCES`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from synprep.errors import ConfigError

if TYPE_CHECKING:
    from synprep.train.sources.base import SyntaxSource

#: source name (the value of ``syntax_source``) -> "module:Class"
SOURCES: dict[str, str] = {
    "slr": "synprep.train.sources.slr:SLR",
    "pascal": "synprep.train.sources.pascal:Pascal",
    "ldd": "synprep.train.sources.ldd:LDD",
    "ldd_parent": "synprep.train.sources.ldd_parent:LDDParent",
    "lisa": "synprep.train.sources.lisa:LISA",
    "sla": "synprep.train.sources.sla:SLA",
    "set": "synprep.train.sources.set:SET",
}


def source_class(name: str) -> type[SyntaxSource]:
    """The class registered as ``name`` (imported on first use).

    Raises:
        ConfigError: ``name`` is not in :data:`SOURCES` (the message lists them).
    """
    target = SOURCES.get(name) if isinstance(name, str) else None
    if target is None:
        raise ConfigError(f"syntax_source: {name!r} is not one of {', '.join(SOURCES)}")
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


__all__ = ["SOURCES", "source_class"]
