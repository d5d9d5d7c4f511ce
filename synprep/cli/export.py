"""``synprep export``: shards → Parquet/HF datasets, fairseq binaries + plugin, factor text (docs/export.md)."""

from __future__ import annotations

import click

from synprep.export import EXPORTERS


@click.command("export")
@click.argument("folder", metavar="OUT", type=click.Path(file_okay=False, path_type=str))
@click.option("--format", "fmt", required=True, type=click.Choice(sorted(EXPORTERS)),
              help="parquet/hf: Parquet + dataset card; fairseq: binarized pair + syntax fields + plugin; "
                   "factors: token-parallel factor text.")
@click.option("--to", "dest", required=True, metavar="DEST", help="Output folder (created; resumable).")
@click.option("--split", "splits", multiple=True, metavar="SPLIT",
              help="Split to export (repeatable; default: every split with shards).")
@click.option("--factors-style", type=click.Choice(["files", "onmt3"]), default=None,
              help="--format factors only. files (default): one file per factor (sockeye --source-factors, "
                   "OpenNMT-py 2.x src_feats); onmt3: the factors inline, piece\uffe8deprel\uffe8upos… (OpenNMT-py "
                   "3.x n_src_feats), with DEST/onmt3.yaml, the data config that trains on them.")
def export_cmd(folder: str, fmt: str, dest: str, splits: tuple[str, ...], factors_style: str | None) -> None:
    """Export the shards of the output folder OUT into DEST in another trainer's format.

    Streaming (one shard in memory), atomic (files appear complete or not at all) and resumable
    (running it again skips what is done). DEST/export.json records the signature line, the shard
    config and checksums. Prints the pairs per split on stdout and the signature on stderr.

    \b
    synprep export data/de-en --format hf --to data/de-en.hf
    synprep export data/de-en --format fairseq --to data/de-en.fairseq
    synprep export data/de-en --format factors --factors-style onmt3 --to data/de-en.onmt3
    fairseq-train data/de-en.fairseq --user-dir data/de-en.fairseq/synprep_fairseq --task syntax_translation ...
    """
    from synprep.export import export

    record = export(folder, fmt, dest, list(splits) or None, {"factors_style": factors_style})
    for split in record.splits():
        click.echo(f"synprep export: {fmt} {split}: {record.pairs(split)} pairs -> {dest}")
    hint = record.usage
    if hint:
        click.echo(f"synprep: {hint}", err=True)
    click.echo(record.signature, err=True)
