"""Options shared by several commands."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from synprep.parallel import BACKENDS


def jobs_options(f):
    """``-j/--jobs``, ``--backend``, ``--scheduler`` (see :mod:`synprep.parallel`)."""

    @click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Worker processes.")
    @click.option("--backend", type=click.Choice(BACKENDS), default="loky", show_default=True,
                  help="joblib backend: loky (one machine) or dask (a dask.distributed cluster).")
    @click.option("--scheduler", default=None, metavar="ADDRESS",
                  help="dask scheduler address for --backend dask (tcp://host:8786).")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


def input_option(name: str = "--input", help: str = "Input file (default: stdin).") -> Callable[[Any], Any]:
    return click.option("-i", name, "input_path", default="-", show_default=False, metavar="FILE", help=help)


def output_option(name: str = "--output", help: str = "Output file (default: stdout).") -> Callable[[Any], Any]:
    return click.option("-o", name, "output_path", default="-", show_default=False, metavar="FILE", help=help)
