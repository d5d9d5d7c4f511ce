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

from typing import Any

from synprep.registry import Registry

#: source name (the value of ``syntax_source``) -> "module:Class" of its
#: :class:`~synprep.train.sources.base.SyntaxSource` (this module imports no source: the classes import
#: torch, a configuration does not)
SOURCES: Registry[Any] = Registry("syntax_source", {
    "slr": "synprep.train.sources.slr:SLR",
    "pascal": "synprep.train.sources.pascal:Pascal",
    "ldd": "synprep.train.sources.ldd:LDD",
    "ldd_parent": "synprep.train.sources.ldd_parent:LDDParent",
    "lisa": "synprep.train.sources.lisa:LISA",
    "sla": "synprep.train.sources.sla:SLA",
    "set": "synprep.train.sources.set:SET",
})


def source_class(name: str) -> Any:
    """The :class:`~synprep.train.sources.base.SyntaxSource` subclass registered as ``name`` (imported on
    first use).

    Raises:
        ConfigError: ``name`` is not in :data:`SOURCES` (the message lists them).
    """
    return SOURCES.load(name)


__all__ = ["SOURCES", "source_class"]
