"""Option types whose bounds the generated command reference states as click enforces them."""

from __future__ import annotations

from typing import Any

import click


class AboveFloat(click.ParamType):
    """A float strictly above ``low``: :class:`click.FloatRange` with ``min_open``, named ``float > LOW`` so that
    the reference (mkdocs-click, which writes any lower bound as "and above") says the bound is excluded.

    Args:
        low: the excluded lower bound.
    """

    def __init__(self, low: float) -> None:
        self.inner = click.FloatRange(min=low, min_open=True)
        self.name = f"float > {low:g}"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return self.inner.convert(value, param, ctx)

    def __repr__(self) -> str:
        return f"AboveFloat({self.inner.min!r})"
