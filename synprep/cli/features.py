"""``synprep align | distance | mask | parents | relations | ldd``: the click layer over
:mod:`synprep.features.lines` (formats: docs/features.md "Commands").
The functions from input lines to output lines live in the library; the names are re-exported here
for callers of earlier versions.
"""

from __future__ import annotations

import click
import numpy as np

from synprep.cli.common import input_option, lowercase_option, output_option
from synprep.constants import GAP_MODES
from synprep.features.lines import (  # noqa: F401  (re-exported: the line tools' functions lived here)
    RELATIONS,
    TREE_FORMATS,
    LineInput,
    Skipped,
    align_lines,
    detect_tree_format,
    distance_lines,
    format_floats,
    ldd_lines,
    line_heads,
    line_inputs,
    mask_lines,
    parents_lines,
    relations_lines,
)
from synprep.features.slr import DEFAULT_TAU, HARD_MODES
from synprep.signature import package_version, signature
from synprep.textio import display_name, iter_lines, open_output, write_lines

_Skipped = Skipped

# nltk (~0.6 s to import) and sacremoses (~0.2 s) are imported by the commands that need them


def _sig(feat: str, nltk: bool = True) -> None:
    click.echo(signature(nltk=package_version("nltk") if nltk else None, feat=feat), err=True)




# --- align -----------------------------------------------------------------------------------



@click.command("align")
@input_option(help="BPE'd text, subword-nmt '@@ ' markers (default: stdin).")
@output_option()
@click.option("--words", "words_path", default=None, metavar="FILE",
              help="Check against this word-level (Moses-tokenized) text: every line's pieces must "
                   "rebuild its words exactly (after Moses unescaping), else the line is named.")
def align_cmd(input_path: str, output_path: str, words_path: str | None) -> None:
    """Piece → word index: per line, the 0-based word of each BPE piece.

    \b
    echo "i sw@@ im across the ri@@ ver ." | synprep align
    0 1 1 2 3 4 4 5
    """
    with open_output(output_path) as out:
        n = write_lines(out, align_lines(input_path, words_path))
    click.echo(f"synprep: aligned {n} lines", err=True)
    _sig("align", nltk=False)


# --- distance --------------------------------------------------------------------------------









@click.command("distance")
@click.option("--mode", type=click.Choice(GAP_MODES), default="cnf", show_default=True,
              help="cnf: right-factored binarization, the reference data; nary: the papers' Algorithm 1.")
@click.option("--trees", "trees_path", default="-", metavar="FILE",
              help="Bracketed trees (default: stdin).")
@click.option("--format", "tree_format", type=click.Choice(TREE_FORMATS), default="auto", show_default=True,
              help="lines: one tree per line; mrg: Penn Treebank .mrg, trees over several lines "
                   "('( (S ...) )'); auto: mrg for *.mrg files or when the first tree spans lines.")
@output_option()
def distance_cmd(mode: str, trees_path: str, tree_format: str, output_path: str) -> None:
    """Word-level syntactic distances (SPEC.md §2): one line of gaps per tree.

    Trees are normalized first: function tags (NP-SBJ-1) and -NONE- empty elements are removed.

    \b
    echo "(ROOT (S (NP (PRP I)) (VP (VBP swim) (PP (IN across) (NP (DT the) (NN river)))) (. .)))" \\
      | synprep distance --mode cnf
    5 3 2 1 4
    """
    fmt = detect_tree_format(trees_path) if tree_format == "auto" else tree_format
    with open_output(output_path) as out:
        n = write_lines(out, distance_lines(trees_path, mode, fmt))
    click.echo(f"synprep: {n} trees ({fmt})", err=True)
    _sig(mode)


# --- mask ------------------------------------------------------------------------------------



@click.command("mask")
@click.option("--gaps", required=True, metavar='"D0 D1 ..."',
              help="The T-1 gaps of the tokens, </s> gap included (e.g. \"6 4 3 2 5 2000\").")
@click.option("--tau", type=float, default=None, help=f"Soft mask temperature (default {DEFAULT_TAU:g}).")
@click.option("--hard", type=click.Choice(HARD_MODES), default=None,
              help="Hard mask: strict (a tie blocks, the reference code) or nonstrict (a tie does not).")
@output_option()
def mask_cmd(gaps: str, tau: float | None, hard: str | None, output_path: str) -> None:
    """The syntactic local range mask (SPEC.md §3), one row per line.

    \b
    synprep mask --gaps "6 4 3 2 5 2000" --hard strict     # rows of 0/1
    synprep mask --gaps "6 4 3 2 5 2000" --tau 10          # 4 decimals
    """
    if tau is not None and hard is not None:
        raise click.UsageError("--tau and --hard exclude each other (--tau is the soft mask)")
    if tau is not None and not tau > 0:
        raise click.BadParameter(f"must be > 0, got {tau}", param_hint="--tau")
    try:
        values = np.array([float(x) for x in gaps.replace(",", " ").split()], dtype=np.float64)
    except ValueError:
        raise click.BadParameter(f"expected numbers separated by spaces, got {gaps!r}", param_hint="--gaps") from None
    if not np.all(np.isfinite(values)):
        raise click.BadParameter("gaps must be finite numbers", param_hint="--gaps")
    with open_output(output_path) as out:
        write_lines(out, mask_lines(values, tau, hard))
    _sig(f"slr-{hard}" if hard else f"slr-soft-tau{DEFAULT_TAU if tau is None else tau:g}", nltk=False)


# --- CoNLL-U based commands: parents, relations, ldd -------------------------------------------















def _conllu_option(f):
    return click.option("--conllu", "conllu_path", default="-", metavar="FILE",
                        help="CoNLL-U parses, as `synprep parse` writes them ('# line = N' groups) or one "
                             "sentence per line (default: stdin).")(f)


def _bpe_option(required: bool, what: str):
    return click.option("--bpe", "bpe_path", required=required, default=None, metavar="FILE",
                        help=f"BPE'd source text, one line per parsed line (@@ pieces, Moses escapes): {what}.")



def _read(conllu_path: str):
    from synprep.parse.conllu_io import read_numbered

    return read_numbered(conllu_path)


def _line_items(conllu_path: str, bpe_path: str | None, lowercase: bool):
    """The name errors should cite and the :func:`line_inputs` of a CoNLL-U file (+ its BPE file)."""
    name = display_name(bpe_path) if bpe_path else display_name(conllu_path)
    items = line_inputs(_read(conllu_path), iter_lines(bpe_path) if bpe_path else None,
                        path=display_name(bpe_path) if bpe_path else None, conllu_name=display_name(conllu_path),
                        lowercase=lowercase)
    return name, items


@click.command("parents")
@_conllu_option
@_bpe_option(True, "the pieces whose parents are wanted; its words must be the CoNLL-U surface tokens")
@click.option("--mode", type=click.Choice(("mean", "first")), default="mean", show_default=True,
              help="mean: PASCAL, the mean position of the head word's pieces; first: LISA, its first piece.")
@click.option("--eos", is_flag=True, help="Append the </s> position T (pointing at itself), as the trainer sees it.")
@lowercase_option
@output_option()
def parents_cmd(conllu_path: str, bpe_path: str, mode: str, eos: bool, lowercase: bool, output_path: str) -> None:
    """Dependency-parent position of every BPE piece (SPEC.md §4), one line per source line.

    Positions are 0-based piece positions within the line, with one decimal; a root word points
    at itself; heads of a multi-sentence line are offset by their sentence's start. No </s>
    unless --eos. A line without a parse ('# error') gives a blank line.

    \b
    synprep parents --conllu parsed.conllu --bpe train.bpe.en
    1.5 3.0 3.0 3.0 5.5 3.0 3.0          # The mon@@ key eats a ban@@ ana
    """
    skipped = _Skipped()
    lines = parents_lines(_read(conllu_path), iter_lines(bpe_path), mode=mode, path=display_name(bpe_path),
                          eos=eos, lowercase=lowercase, conllu_name=display_name(conllu_path), skipped=skipped)
    with open_output(output_path) as out:
        n = write_lines(out, lines)
    click.echo(skipped.report(n), err=True)
    _sig(f"parents-{mode}{'+eos' if eos else ''}", nltk=False)








@click.command("relations")
@_conllu_option
@_bpe_option(False, "give the relations per piece (a piece takes its word's row and column)")
@click.option("--what", type=click.Choice(RELATIONS), default="depth", show_default=True,
              help="depth: arcs up to the sentence's root word (root 0); distance: shortest-path length in arcs "
                   "(tree distance); up/down: arcs from i up to LCA(i,j) / from there down to j; subtree: 1 "
                   "where j is in the subtree of i (i included).")
@click.option("--json", "as_json", is_flag=True, help="One JSON array per line instead of text.")
@lowercase_option
@output_option()
def relations_cmd(conllu_path: str, bpe_path: str | None, what: str, as_json: bool, lowercase: bool,
                  output_path: str) -> None:
    """Dependency-tree relations per line (SPEC.md §4, for SET/SLA-style attention), from the heads.

    One output line per source line: depth as one number per word; the matrices (distance, up,
    down, subtree) as rows separated by ' | '. Words of different sentences of a line meet at the
    virtual root (docs/features.md). A line without a parse gives a blank line.

    \b
    synprep relations --conllu parsed.conllu --what distance
    0 1 2 3 2 | 1 0 1 2 1 | 2 1 0 1 2 | 3 2 1 0 1 | 2 1 2 1 0
    """
    skipped = _Skipped()
    name, items = _line_items(conllu_path, bpe_path, lowercase)
    with open_output(output_path) as out:
        n = write_lines(out, relations_lines(items, what, as_json=as_json, path=name, skipped=skipped))
    click.echo(skipped.report(n), err=True)
    _sig(f"relations-{what}{'-pieces' if bpe_path else ''}", nltk=False)


def parse_labels(text: str) -> list[str]:
    """Relation names from ``nsubj,obj`` (subtypes reduce to their base; duplicates dropped).

    Raises:
        click.BadParameter: a name that is not a UD relation.
    """
    from synprep.types import DEPRELS

    out: list[str] = []
    for raw in text.replace(" ", ",").split(","):
        if not raw:
            continue
        base = raw.split(":", 1)[0].lower()
        if base not in DEPRELS:
            raise click.BadParameter(f"{raw!r} is not a UD relation ({', '.join(DEPRELS)})", param_hint="--labels")
        if base not in out:
            out.append(base)
    if not out:
        raise click.BadParameter("no relation given", param_hint="--labels")
    return out




@click.command("ldd")
@_conllu_option
@_bpe_option(False, "with --labels, the matrices are over pieces (a piece inherits its word's row, a head "
                    "word's probability applies to each of its pieces)")
@click.option("--labels", default=None, metavar="REL,REL",
              help="Dense matrices for these UD relations (e.g. nsubj,obj), one JSON object per line.")
@click.option("--threshold", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              help="Drop entries below this probability (each word keeps its best entry).")
@click.option("--root", type=click.Choice(("self", "drop")), default="self", show_default=True,
              help="Dense: the probability of 'head = root' goes to the word's own pieces (self) or is left out.")
@click.option("--json", "as_json", is_flag=True, help="Sparse entries as one JSON array per line.")
@lowercase_option
@output_option()
def ldd_cmd(conllu_path: str, bpe_path: str | None, labels: str | None, threshold: float, root: str,
            as_json: bool, lowercase: bool, output_path: str) -> None:
    """Labeled dependency distributions (SPEC.md §4) per source line.

    From the '# ldd' comments `synprep parse` writes (the parser's own scores); a parse without
    them (a gold CoNLL-U file) gives one-hot entries. Relation subtypes are summed into their base
    relation. A line without a parse gives a blank line.

    \b
    synprep ldd --conllu parsed.conllu                # DEP,HEAD,REL,PROB ... (1-based, head 0 = root)
    2,3,nsubj,0.97 2,3,obj,0.02 3,0,root,1 ...
    synprep ldd --conllu parsed.conllu --bpe train.bpe.en --labels nsubj,obj   # JSON per line
    """
    if bpe_path is not None and labels is None:
        raise click.UsageError("--bpe needs --labels: the piece-level LDD is a dense matrix per relation")
    label_list = parse_labels(labels) if labels is not None else None
    if as_json and label_list is not None:
        raise click.UsageError("--json is for the sparse entries; with --labels the output is JSON already")
    skipped = _Skipped()
    name, items = _line_items(conllu_path, bpe_path, lowercase)
    with open_output(output_path) as out:
        n = write_lines(out, ldd_lines(items, threshold=threshold, labels=label_list, root=root, as_json=as_json,
                                       path=name, skipped=skipped))
    click.echo(skipped.report(n), err=True)
    _sig("ldd" + (f"-dense-{root}" if label_list else "") + ("-pieces" if bpe_path else ""), nltk=False)
