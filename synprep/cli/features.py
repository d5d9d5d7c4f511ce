"""``synprep align | distance | mask``: thin line tools over :mod:`synprep.features` and :mod:`synprep.align`.

``parents``, ``relations`` and ``ldd`` read CoNLL-U (the parse stage's reader); their line
formatting lives here (:func:`parents_lines`, :func:`format_floats`) so the command only has to
feed parsed lines in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import click
import numpy as np

from synprep.cli.common import input_option, output_option
from synprep.errors import InputError
from synprep.features.slr import DEFAULT_TAU, HARD_MODES, hard_slr_mask, soft_slr_mask
from synprep.signature import package_version, signature
from synprep.textio import display_name, iter_lines, open_output, write_lines
from synprep.types import ParsedLine

# nltk (~0.6 s to import) and sacremoses (~0.2 s) are imported by the commands that need them
MODES = ("cnf", "nary")  # synprep.features.distance.MODES


def _sig(feat: str, nltk: bool = True) -> None:
    click.echo(signature(nltk=package_version("nltk") if nltk else None, feat=feat), err=True)


def format_floats(values: np.ndarray, decimals: int = 4) -> str:
    """Space-separated fixed-point numbers (``-0.0000`` printed as ``0.0000``)."""
    return " ".join(f"{v + 0.0:.{decimals}f}" for v in np.asarray(values, dtype=np.float64))


# --- align -----------------------------------------------------------------------------------

def align_lines(bpe_path: str, words_path: str | None = None) -> Iterator[str]:
    """Per BPE line, the 0-based word index of each piece, space-separated (blank line → blank line).

    With ``words_path`` (the Moses-tokenized text the pieces were made from, one line per line),
    the pieces' words must rebuild each line's words exactly (both unescaped), else InputError.
    """
    from synprep.align import align, bpe_words
    from synprep.text.escape import unescape_tokens

    name = display_name(bpe_path)
    words_name = display_name(words_path) if words_path is not None else ""
    words_it = iter(iter_lines(words_path)) if words_path is not None else None
    for lineno, text in enumerate(iter_lines(bpe_path), 1):
        pieces = text.split()
        if words_it is not None:
            words = next(words_it, None)
            if words is None:
                raise InputError(f"the words file {words_name} ends before line {lineno}", name, lineno)
            index = align(pieces, unescape_tokens(words.split()), line=lineno, path=name)
        else:
            index = bpe_words(pieces, line=lineno, path=name)[1]
        yield " ".join(map(str, index.tolist()))
    if words_it is not None and next(words_it, None) is not None:
        raise InputError(f"the words file {words_name} has more lines than the BPE input", name)


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

def distance_lines(trees_path: str, mode: str) -> Iterator[str]:
    """Per line holding one bracketed tree, its word gaps space-separated (a one-word tree → blank)."""
    from synprep.features.distance import tree_gaps

    name = display_name(trees_path)
    for lineno, text in enumerate(iter_lines(trees_path), 1):
        if not text.strip():
            raise InputError("blank line: expected one bracketed tree per line", name, lineno)
        try:
            gaps = tree_gaps(text, mode)
        except ValueError as e:
            raise InputError(str(e), name, lineno) from None
        yield " ".join(map(str, gaps.tolist()))


@click.command("distance")
@click.option("--mode", type=click.Choice(MODES), default="cnf", show_default=True,
              help="cnf: right-factored binarization, the reference data; nary: the papers' Algorithm 1.")
@click.option("--trees", "trees_path", default="-", metavar="FILE",
              help="Bracketed trees, one per line (default: stdin).")
@output_option()
def distance_cmd(mode: str, trees_path: str, output_path: str) -> None:
    """Word-level syntactic distances (SPEC.md §2): one line of gaps per tree.

    \b
    echo "(ROOT (S (NP (PRP I)) (VP (VBP swim) (PP (IN across) (NP (DT the) (NN river)))) (. .)))" \\
      | synprep distance --mode cnf
    5 3 2 1 4
    """
    with open_output(output_path) as out:
        n = write_lines(out, distance_lines(trees_path, mode))
    click.echo(f"synprep: {n} trees", err=True)
    _sig(mode)


# --- mask ------------------------------------------------------------------------------------

def mask_lines(gaps: np.ndarray, tau: float | None, hard: str | None) -> list[str]:
    """The T×T mask as text rows: hard ``0``/``1`` separated by spaces, soft with 4 decimals."""
    if hard is not None:
        m = hard_slr_mask(gaps, strict=hard == "strict")
        return [" ".join("1" if x else "0" for x in row) for row in m]
    m = soft_slr_mask(gaps, DEFAULT_TAU if tau is None else tau)
    return [format_floats(row) for row in m]


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


# --- helpers for the CoNLL-U based commands (wired by the parse stage's reader) -----------------

def parents_lines(parsed: Iterable[ParsedLine], bpe_lines: Iterable[str], *, mode: str = "mean",
                  path: str | None = None) -> Iterator[str]:
    """Per parsed line and its BPE line, the parent position of each piece (1 decimal), space-separated.

    Heads are made line-level (each sentence offset by its start) before
    :func:`~synprep.features.parents.parent_positions`; the pieces are checked against the parsed
    words (:func:`~synprep.align.align`).

    Raises:
        InputError: the two inputs differ in length, or a line's pieces do not rebuild its words.
    """
    from synprep.align import align
    from synprep.features.parents import parent_positions

    bpe_it = iter(bpe_lines)
    for k, pl in enumerate(parsed, 1):
        text = next(bpe_it, None)
        if text is None:
            raise InputError(f"the BPE input ends before parsed line {k}", path, k)
        index = align(text.split(), pl.words, line=k, path=path)
        heads: list[int] = []
        start = 0
        for s in pl.sentences:
            heads.extend(h + start if h > 0 else 0 for h in s.heads)
            start += len(s.words)
        try:
            pos = parent_positions(np.asarray(heads, dtype=np.int64), index, mode=mode)
        except ValueError as e:
            raise InputError(str(e), path, k) from None
        yield format_floats(pos, 1)
    if next(bpe_it, None) is not None:
        raise InputError("the BPE input has more lines than the parse", path)
