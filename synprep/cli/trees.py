"""``synprep trees convert``: discontinuous treebanks (TIGER-XML, NEGRA export) and Penn Treebank ``.mrg``
files → bracketed trees, one per line."""

from __future__ import annotations

import logging

import click

from synprep.cli.common import output_option
from synprep.signature import package_version, signature
from synprep.textio import display_name, open_output

log = logging.getLogger("synprep")


@click.group("trees")
def trees_group() -> None:
    """Constituency treebank files (your own trees for ``--trees``)."""


@trees_group.command("convert")
@click.argument("treebank", type=click.Path(dir_okay=True, allow_dash=False))
@click.option("--from", "fmt", type=click.Choice(["tigerxml", "export", "ptb"]), default=None,
              help="Input format (default: from the file ending: .xml → tigerxml, .export/.negra → export, "
                   ".mrg or a folder of .mrg files → ptb).")
@output_option(help="Bracketed trees, one sentence per line (default: stdout).")
@click.option("--encoding", default=None, metavar="NAME",
              help="Encoding of a NEGRA export file (default: utf-8; often latin-1). Not for TIGER-XML.")
@click.option("--text", "text_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the sentences' words, one line per tree, as the source text for --trees.")
def convert_cmd(treebank: str, fmt: str | None, output_path: str | None, encoding: str | None,
                text_path: str | None) -> None:
    """Convert TIGER-XML / NEGRA export (discontinuous) or PTB .mrg files to one bracketed tree per line.

    Crossing branches are removed with the treetools library (root_attach, negra_mark_heads,
    boyd_split, raising; see docs/parse.md). PTB .mrg files (a file, or a folder read in sorted path
    order) lose their -NONE- empty elements; their labels are kept. Output files are written atomically.
    """
    from synprep.cli.text import check_outputs
    from synprep.parse.convert import convert_lines, guess_format

    check_outputs(output_path, text_path)
    fmt = fmt or guess_format(treebank)
    rows = list(convert_lines(treebank, fmt, encoding))  # a bad sentence stops before any file is written
    with open_output(output_path) as out:
        for _, tree, _ in rows:
            out.write(tree + "\n")
    if text_path:
        with open_output(text_path) as out:
            for _, _, words in rows:
                out.write(words + "\n")
    log.info("%d trees from %s (%s)", len(rows), display_name(treebank), fmt)
    tool = "nltk" if fmt == "ptb" else "treetools"
    click.echo(signature(trees=f"{tool}-{package_version(tool)}", src=fmt), err=True)
