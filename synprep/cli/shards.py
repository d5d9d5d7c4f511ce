"""Shard commands: ``synprep check`` (``shard`` and ``show`` belong to the pipeline)."""

from __future__ import annotations

import sys

import click

from synprep.signature import signature


@click.command("check")
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False, path_type=str))
def check_cmd(folder: str) -> None:
    """Verify every invariant of an output folder DIR (shards, manifest, vocabulary).

    Prints one OK line (pairs per split) on stdout and exits 0, or names the first violation
    (file, pair index, original line, what) on stderr and exits 1. A missing DIR exits 2.
    docs/shards.md lists what is verified.
    """
    from synprep.constants import SHARD_FORMAT_VERSION
    from synprep.shards.check import check_dir
    from synprep.shards.manifest import Manifest

    report = check_dir(folder)
    if report.ok:
        click.echo(f"synprep check: {report.summary()}")
        try:
            sig = Manifest.load(folder).signature
        except Exception:
            sig = ""
        click.echo(sig or signature(shard=f"v{SHARD_FORMAT_VERSION}"), err=True)
        return
    click.echo(f"synprep check: {report.summary()}", err=True)
    click.echo(signature(shard=f"v{SHARD_FORMAT_VERSION}"), err=True)
    sys.exit(1)
