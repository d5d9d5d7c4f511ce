"""Command-line options generated from the configuration sections' fields: each field declared with
:func:`synprep.settings.option` metadata becomes one click option (its name, type, bounds, default and help
read from the field), so ``--help``, the generated reference and the section's own bound check
(:func:`synprep.settings.check_bounds`) say the same thing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable
from typing import Any

import click

from synprep.cli.bounds import AboveFloat


def _type(default: Any, meta: dict[str, Any]) -> click.ParamType | type | None:
    """The click type of a field: its bounds' range, its choices, or its default's type."""
    low, high = meta.get("low"), meta.get("high")
    if meta.get("choices") is not None:
        return click.Choice(list(meta["choices"]))
    if isinstance(default, float):
        if meta.get("low_open") and low is not None:
            return AboveFloat(low)
        return click.FloatRange(min=low, max=high) if low is not None or high is not None else float
    if isinstance(default, int):
        return click.IntRange(min=low, max=high) if low is not None or high is not None else int
    return None


def field_option(f: dataclasses.Field, callback: Callable[..., Any] | None = None,
                 aliases: tuple[str, ...] = (), choices: Collection[str] | None = None) -> click.Option:
    """The click option of one section field (its metadata: :func:`synprep.settings.option`).

    A bool field is a ``--NAME/--no-NAME`` flag (``--no-NAME/--NAME`` when ``negated``: its parameter is
    then True when the field is False); any other field takes a value, its default shown (an older spelling,
    metadata ``alias``, keeps working).

    Args:
        f: a dataclass field with ``help`` in its metadata.
        callback: click's callback of the option (a check that needs the command line's usage error), if any.
        aliases: further names of a value option on this command (``-s``, ``--symbols``: a line tool keeps the
            names of the tool it stands for), accepted beside the field's own.
        choices: the values this command takes (``--parser``: the registered backends, and ``conllu`` where
            parses may be imported), for a field whose section takes any name; None: the field's own type.

    Returns:
        The option; its parameter is the metadata's ``param``, else its ``saved`` name, else the field's name
        (what :func:`synprep.pipeline.config.option_fields` reads into the configuration).
    """
    meta = dict(f.metadata)
    name = (meta.get("flag") or f.name).replace("_", "-")
    param = meta.get("param") or meta.get("saved") or f.name  # as option_fields reads it back
    default = f.default
    if isinstance(default, bool):
        decl = f"--no-{name}/--{name}" if meta.get("negated") else f"--{name}/--no-{name}"
        return click.Option([decl, param], default=(not default) if meta.get("negated") else default,
                            help=meta["help"])
    short = [f"-{meta['short']}"] if meta.get("short") else []
    alias = [meta["alias"]] if meta.get("alias") else []  # the field's older spelling, on every command
    kind = click.Choice(list(choices)) if choices is not None else _type(default, meta)
    return click.Option([*short, f"--{name}", *alias, *aliases, param], type=kind, default=default, show_default=default != "",
                        metavar=meta.get("metavar"), help=meta["help"], callback=callback)


def field_options(section: type, only: Iterable[str] | None = None,
                  callbacks: dict[str, Callable[..., Any]] | None = None,
                  aliases: dict[str, tuple[str, ...]] | None = None,
                  choices: dict[str, Collection[str]] | None = None) -> list[click.Option]:
    """The click options of a section's declared fields, in the section's field order.

    Args:
        section: a configuration section class (a dataclass).
        only: the field names to make options of; None: every field with ``help`` in its metadata.
        callbacks: field name → its option's click callback (:func:`field_option`).
        aliases: field name → its option's further names on this command (:func:`field_option`).
        choices: field name → the values this command takes (:func:`field_option`).

    Returns:
        One option per field.
    """
    chosen = None if only is None else set(only)
    return [field_option(f, (callbacks or {}).get(f.name), (aliases or {}).get(f.name, ()), (choices or {}).get(f.name))
            for f in dataclasses.fields(section) if "help" in f.metadata and (chosen is None or f.name in chosen)]


def section_values(section: type, params: dict[str, Any]) -> dict[str, Any]:
    """The values the command's parameters hold for ``section``'s fields, taken out of ``params``: each field by
    its parameter (metadata ``param``, else ``saved``, else the field's name: as :func:`field_option` names it),
    a ``negated`` flag's value inverted.

    Args:
        section: a configuration section class (a dataclass).
        params: the command's keyword arguments; the section's are removed from it.

    Returns:
        Field name → value, for the fields whose parameter the command has.
    """
    out = {}
    for f in dataclasses.fields(section):
        param = f.metadata.get("param", f.metadata.get("saved", f.name))
        if param is not None and param in params:
            value = params.pop(param)
            out[f.name] = (not value) if f.metadata.get("negated") else value
    return out


def with_field_options(section: type, only: Iterable[str] | None = None,
                       callbacks: dict[str, Callable[..., Any]] | None = None,
                       aliases: dict[str, tuple[str, ...]] | None = None,
                       choices: dict[str, Collection[str]] | None = None) -> Callable[[Any], Any]:
    """A decorator that adds :func:`field_options` to a click command, as ``@click.option`` lines would
    at its place (the options listed in the section's field order)."""

    def decorate(f: Any) -> Any:
        params = getattr(f, "__click_params__", None)
        if params is None:
            params = f.__click_params__ = []
        params.extend(reversed(field_options(section, only, callbacks, aliases, choices)))  # click reverses the decorators' list
        return f

    return decorate
