"""``synprep report``: one self-contained HTML page about a shard folder (synprep/report/)."""

from __future__ import annotations

from pathlib import Path

import click

from synprep.cli.common import split_name


def _splits(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(str(split_name(ctx, param, v)) for v in value)


@click.command("report")
@click.argument("folder", metavar="OUT", type=click.Path(file_okay=False, path_type=str))
@click.option("-o", "--output", default="report.html", show_default=True, metavar="FILE",
              help="The HTML page to write (self-contained: figures embedded, no network).")
@click.option("--split", "splits", multiple=True, callback=_splits, metavar="S",
              help="Report this split (repeatable; default: every split of the manifest).")
@click.option("--against", default=None, metavar="OTHER", type=click.Path(file_okay=False, path_type=str),
              help="Another folder made from the same lines (another parser, the other device, gold CoNLL-U "
                   "imported with --parser conllu): UAS/LAS/UPOS agreement per split (CoNLL 2018 scorer).")
@click.option("--ud", default=None, metavar="FILE", type=click.Path(path_type=str),
              help="UD CoNLL-U file (or folder of LANG_*.conllu) for the reference UPOS/relation distributions "
                   "(default: ../shared/data/ud when it has the source language).")
@click.option("--json", "as_json", is_flag=True,
              help="Also write the numbers behind the page as JSON, beside it (FILE with the suffix .json).")
def report_cmd(folder: str, output: str, splits: tuple[str, ...], against: str | None, ud: str | None,
               as_json: bool) -> None:
    """Look at a shard folder OUT as a whole before training on it: one HTML page with lengths, drops,
    vocabulary coverage, syntax distributions (against UD), flags with their fix, example pairs and,
    with --against, parse agreement with another folder (docs/report.md).

    Reads OUT through the verified reader, shard by shard: a damaged folder is a one-line error (exit 2).
    Figures need matplotlib (pip install 'synprep[plot]'); without it the page has the tables.
    """
    from synprep.errors import ConfigError
    from synprep.report import build_report, write_report

    json_path = Path(output).with_suffix(".json") if as_json else None
    if json_path is not None and json_path == Path(output):
        raise ConfigError(f"-o {output} ends in .json: with --json the numbers go to FILE.json beside the page; "
                          "name the page FILE.html")
    report = build_report(folder, splits=list(splits) or None, against=against, ud=ud)
    info = write_report(report, output, json_path)
    pairs = sum(s["pairs"] for s in report["splits"].values())
    click.echo(f"synprep report: {output} ({info['bytes'] // 1024} KiB{'' if info['figures'] else ', no figures'}; "
               f"{len(report['splits'])} split(s), {pairs} pairs, {len(report['flags'])} flag(s))"
               + (f"; numbers in {json_path}" if json_path else ""), err=True)
