"""The benchmarks' command line: an argument parser described by the script's docstring,
and its result printed as JSON on stdout. Run a benchmark as a script (``python benchmarks/NAME.py``):
this folder is then on ``sys.path``, as for :mod:`_rss`."""

from __future__ import annotations

import argparse
import json
from typing import Any


def arg_parser(doc: str | None, *, whole: bool = False) -> argparse.ArgumentParser:
    """The script's argument parser: described by the first line of ``doc`` (its module docstring), or
    with ``whole`` by all of it, laid out as written."""
    if whole:
        return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    return argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)


def emit(result: Any, *, indent: int | None = 2, ensure_ascii: bool = True) -> None:
    """Print ``result`` as JSON on stdout (``indent=None``: one line, as a row of a stream), flushed."""
    print(json.dumps(result, indent=indent, ensure_ascii=ensure_ascii), flush=True)
