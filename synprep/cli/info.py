"""``synprep info``: versions, parse cache, GPUs, installed parsers (synprep/info.py)."""

from __future__ import annotations

import json

import click


@click.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def info_cmd(as_json: bool) -> None:
    """What this installation produces output with: versions of synprep and of every library that
    determines output, the parse cache (path, size), the visible GPUs, the installed parsers and models."""
    from synprep.info import collect, format_info

    info = collect()
    click.echo(json.dumps(info, indent=2, sort_keys=True) if as_json else format_info(info), nl=as_json)
