"""What every stage's configuration section shares: its fields' command-line schema (:func:`option`) and the
check of their bounds.

A section (:class:`synprep.text.config.TextConfig`, :class:`synprep.subword.config.SubwordConfig`,
:class:`synprep.parse.config.ParseConfig`, :class:`synprep.shards.config.ShardConfig`) lives in its stage's
package and is composed by :class:`synprep.pipeline.config.DataConfig`; this module imports nothing of
synprep but the errors, so every floor may read it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from synprep.errors import ConfigError

#: the rarely set keys of :func:`option` (its ``extra``), each a field's metadata key
OPTION_EXTRAS = ("low_open", "param", "negated", "optional", "saved", "spec", "alias")


def option(help: str, *, low: float | None = None, high: float | None = None, metavar: str | None = None,
           choices: Collection[str] | None = None, flag: str | None = None, short: str | None = None,
           **extra: Any) -> dict[str, Any]:
    """A section field's command-line schema, in the field's metadata (``field(default=...,
    metadata=option(...))``): the one place its option's help, bounds and name are declared. The
    command line's option is generated from it (:func:`synprep.cli.fields.field_options`) and the
    section checks the same bounds (:func:`check_bounds`), so they cannot disagree.

    Args:
        help: the option's help text (``--help`` and the generated reference).
        low: the smallest allowed value (inclusive unless ``low_open``); None: no lower bound.
        high: the largest allowed value, inclusive; None: no upper bound.
        metavar: the value's name in ``--help``; None: click's (the type's name).
        choices: the allowed values of a string field (a registry stays live: a name registered later is
            allowed); None: any string.
        flag: the option's name without ``--`` when it is not the field's (``source-lang`` for ``src_lang``).
        short: the option's one-letter name too (``s`` for ``-s``); None: none.
        extra: the rarely set keys (:data:`OPTION_EXTRAS`): ``low_open=True``, ``low`` itself is refused (a
            float strictly above it); ``param``, the click parameter's name when it is not the field's;
            ``negated=True``, a bool field set to False by its ``--NAME`` flag (``--no-language-check``);
            ``alias``, an older spelling of the option that keeps working (``--label-map``); ``optional``,
            ``saved``, ``spec``: what :mod:`synprep.pipeline.config` and :mod:`synprep.parse.base` read.

    Returns:
        The field's metadata dictionary.

    Raises:
        TypeError: a key of ``extra`` that is not one of :data:`OPTION_EXTRAS`.
    """
    unknown = sorted(set(extra) - set(OPTION_EXTRAS))
    if unknown:
        raise TypeError(f"option(): unknown keyword {', '.join(unknown)}")
    return {"help": help, "low": low, "high": high, "low_open": False, "metavar": metavar, "choices": choices,
            "flag": flag, "short": short, **extra}


def check_bounds(section: Any) -> None:
    """Check each field of ``section`` declared with :func:`option` bounds against them.

    Args:
        section: a configuration section (a dataclass instance).

    Raises:
        ConfigError: ``NAME must be in [LOW, HIGH], got VALUE`` (``>= LOW``, ``> LOW`` when open, ``<= HIGH``
            when one bound is declared) for the first field out of its bounds (NAME: the field's saved name,
            metadata ``saved``, else its own), or ``NAME must be one of A, B, got 'X'`` for a value outside its choices.
    """
    for f in dataclasses.fields(section):
        value, meta = getattr(section, f.name), f.metadata
        name = meta.get("saved", f.name)  # as the user sees it (pipeline.json, the command line)
        low, high = meta.get("low"), meta.get("high")
        if low is not None and high is not None and not meta.get("low_open") and not low <= value <= high:
            raise ConfigError(f"{name} must be in [{_num(low)}, {_num(high)}], got {value}")
        if low is not None and (value <= low if meta.get("low_open") else value < low):
            raise ConfigError(f"{name} must be {'>' if meta.get('low_open') else '>='} {low}, got {value}")
        if high is not None and value > high:
            raise ConfigError(f"{name} must be <= {high}, got {value}")
        if meta.get("choices") is not None and value not in meta["choices"]:
            raise ConfigError(f"{name} must be one of {', '.join(meta['choices'])}, got {value!r}")


def _num(bound: float) -> str:
    """A bound as the error text writes it: a float shortest (``0``, ``1.5``), an integer whole."""
    return f"{bound:g}" if isinstance(bound, float) else str(bound)
