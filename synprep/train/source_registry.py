"""The syntax-source registry (:data:`SOURCES`: name → ``"module:Class"`` of the source's configuration side) and
its lookups, torch-free. It sits below both what reads it (:mod:`synprep.train.config`, :mod:`synprep.train.schema`,
:mod:`synprep.train.attention`) and the sources themselves (:mod:`synprep.train.sources`, which re-exports these
names and whose modules read the configuration): the registry imports neither, its entries are loaded by name.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, NamedTuple

from synprep.registry import Registry

#: source name (the value of ``syntax_source``) -> "module:Class" of its configuration side, a torch-free
#: :class:`~synprep.train.sources.specs.SourceSpec` that names its ``nn.Module`` (:attr:`~synprep.train.sources.specs.SourceSpec.runtime`)
SOURCES: Registry[Any] = Registry("syntax_source", {
    "slr": "synprep.train.sources.specs:SLRSpec",
    "pascal": "synprep.train.sources.specs:PascalSpec",
    "ldd": "synprep.train.sources.specs:LDDSpec",
    "ldd_parent": "synprep.train.sources.specs:LDDParentSpec",
    "lisa": "synprep.train.sources.specs:LISASpec",
    "sla": "synprep.train.sources.specs:SLASpec",
    "set": "synprep.train.sources.specs:SETSpec",
})


def spec_class(name: str) -> Any:
    """The configuration side of the source ``name`` (a :class:`~synprep.train.sources.specs.SourceSpec`:
    defaults, modes, checks, signature text, parameter count), imported without torch.

    Raises:
        ConfigError: ``name`` is not in :data:`SOURCES` (the message lists them).
    """
    return SOURCES.load(name)


def source_class(name: str) -> Any:
    """The :class:`~synprep.train.sources.base.SyntaxSource` subclass registered as ``name`` (its module,
    and torch, imported on first use): its spec's ``runtime``, or the registered class itself.

    Raises:
        ConfigError: ``name`` is not in :data:`SOURCES` (the message lists them).
    """
    spec = spec_class(name)
    return Registry("syntax_source", {name: spec.runtime}).load(name) if spec.runtime else spec


class SourceOption(NamedTuple):
    """One option of a syntax source (a field of its spec's ``Options`` dataclass), as a config key."""

    source: str  # the registry name (``sla``)
    name: str  # the field of its Options (``threshold``)
    key: str  # the TrainConfig key: ``SOURCE_FIELD`` (``sla_threshold``), or the field's older ``key``
    type: Any  # the field's resolved annotation
    field: dataclasses.Field  # the Options field (default / default_factory, ``help`` in its metadata)


def source_options(names: tuple[str, ...] | None = None) -> list[SourceOption]:
    """The options of the registered sources (each spec's ``Options``), in registry and field order.
    Imports the specs only (no torch). :class:`~synprep.train.config.TrainConfig` has one field per entry.

    Raises:
        ValueError: two sources declare the same key.
    """
    out: list[SourceOption] = []
    for name in tuple(SOURCES) if names is None else names:
        spec = spec_class(name)
        if spec.Options is None:
            continue
        hints = typing.get_type_hints(spec.Options)
        out.extend(SourceOption(name, f.name, spec.option_key(f), hints[f.name], f)
                   for f in dataclasses.fields(spec.Options))
    keys = [o.key for o in out]
    twice = [k for i, k in enumerate(keys) if k in keys[:i]]  # not set(): this package's ``set`` is a module
    if twice:
        raise ValueError(f"syntax sources declare the same option key twice: {', '.join(twice)}")
    return out


__all__ = ["SOURCES", "SourceOption", "source_class", "source_options", "spec_class"]
