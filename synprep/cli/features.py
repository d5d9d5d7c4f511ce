"""``synprep align | distance | mask | parents | relations | ldd``: thin line tools over
:mod:`synprep.features` and :mod:`synprep.align` (formats: docs/features.md "Commands").

``distance`` reads bracketed trees through :mod:`synprep.parse.trees`; ``parents``, ``relations``
and ``ldd`` read CoNLL-U through :func:`synprep.parse.conllu_io.read_conllu`, paired with the BPE'd
source by :func:`line_inputs` (the pieces must rebuild the parsed words: a mismatch names the line).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import click
import numpy as np

from synprep.cli.common import input_option, lowercase_option, output_option
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

TREE_FORMATS = ("auto", "lines", "mrg")


def detect_tree_format(trees_path: str) -> str:
    """``mrg`` for a ``*.mrg`` file or one whose first tree spans several lines, else ``lines``.

    Only the first non-blank line is looked at (for standard input, in the bytes already
    buffered: nothing is consumed). A first line holding complete, balanced tree(s) means one
    tree per line.
    """
    import sys

    from synprep.parse.trees import split_brackets

    if trees_path.endswith(".mrg"):
        return "mrg"
    if trees_path == "-":
        head = sys.stdin.buffer.peek(1 << 16) if hasattr(sys.stdin.buffer, "peek") else b""
        complete = head.split(b"\n")[:-1]  # the last piece may be cut off by the pipe
        if head and not complete:
            return "mrg"  # cannot tell: mrg reads one-tree-per-line input too
        first_lines = [raw.decode("utf-8", "replace") for raw in complete]
    else:
        try:
            with open(trees_path, "rb") as f:
                first_lines = [raw.decode("utf-8", "replace") for raw, _ in zip(f, range(1000), strict=False)]
        except OSError:
            return "lines"  # iter_lines names the missing file
    if first_lines:
        first_lines[0] = first_lines[0].removeprefix("\ufeff")  # a byte-order mark (iter_lines removes it too)
    for text in first_lines:
        if text.strip():
            try:
                return "lines" if split_brackets(text) else "mrg"
            except ValueError:
                return "mrg"
    return "lines"


def _hint_mrg(items: Iterator[tuple[int, list]]) -> Iterator[tuple[int, list]]:
    """Pass trees through; an unclosed bracket on a line gets a hint at ``--format mrg``."""
    try:
        yield from items
    except InputError as e:
        if "unclosed" not in e.reason:
            raise
        raise InputError(f"{e.reason} (a tree spread over lines? use --format mrg)", e.path, e.line) from None


def distance_lines(trees_path: str, mode: str, tree_format: str = "lines") -> Iterator[str]:
    """Word gaps of every tree, one line each (a one-word tree → blank line).

    Trees are read and normalized by :mod:`synprep.parse.trees` (``ROOT`` on top, PTB function
    tags and ``-NONE-`` empty elements removed): ``lines`` = one tree per line
    (:func:`~synprep.parse.trees.read_tree_lines`; a blank line or a line with two trees is an
    error), ``mrg`` = Penn Treebank files, trees over several lines (:func:`~synprep.parse.trees.read_mrg`).

    Raises:
        InputError: a malformed tree, a blank line or several trees on a line (``lines``).
    """
    from synprep.features.distance import tree_gaps
    from synprep.parse.trees import read_mrg, read_tree_lines

    name = display_name(trees_path)
    if tree_format == "mrg":
        items: Iterator[tuple[int, list]] = ((n, [t]) for n, t in read_mrg(trees_path))
    else:
        items = _hint_mrg(read_tree_lines(trees_path))
    for lineno, trees in items:
        if len(trees) != 1:
            what = "blank line" if not trees else f"{len(trees)} trees on one line"
            raise InputError(f"{what}: expected one bracketed tree per line (--format mrg reads trees "
                             "spread over lines)", name, lineno)
        try:
            gaps = tree_gaps(trees[0], mode)
        except ValueError as e:
            raise InputError(str(e), name, lineno) from None
        yield " ".join(map(str, gaps.tolist()))


@click.command("distance")
@click.option("--mode", type=click.Choice(MODES), default="cnf", show_default=True,
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


# --- CoNLL-U based commands: parents, relations, ldd -------------------------------------------

@dataclass
class LineInput:
    """One parsed line, and its BPE pieces when a BPE file is given.

    Attributes:
        number: 1-based line number (the same in the CoNLL-U ``# line`` numbering and the BPE file).
        parsed: the parse; ``parsed.error`` set for a line without one (empty or failed).
        pieces: the line's BPE pieces, or None without a BPE file.
        word_index: ``(T,) int64`` 0-based word of each piece (None without pieces or parse).
    """

    number: int
    parsed: ParsedLine
    pieces: list[str] | None = None
    word_index: np.ndarray | None = None


def line_inputs(parsed: Iterable[ParsedLine], bpe_lines: Iterable[str] | None = None, *,
                path: str | None = None, conllu_name: str | None = None,
                lowercase: bool = False) -> Iterator[LineInput]:
    """Pair parsed lines with BPE lines, checking numbering, counts and words.

    Args:
        parsed: :func:`synprep.parse.conllu_io.read_conllu` output; its lines must be numbered
            1, 2, 3, ... (``# line = N``, as ``synprep parse`` writes, or one sentence per line).
        bpe_lines: the BPE'd source, one line per parsed line (``@@`` pieces, Moses-escaped), or None.
        path: the BPE file's name, conllu_name: the CoNLL-U file's name (for messages).
        lowercase: the BPE text was lowercased after parsing: compare lowercased parsed words.

    Raises:
        InputError: a gap in the line numbering, different line counts, or a line whose pieces do
            not rebuild its parsed words (names the line: :func:`synprep.align.align`).
    """
    from synprep.align import align

    if lowercase:
        from synprep.text.tokenize import moses_lowercase
    bpe_it = iter(bpe_lines) if bpe_lines is not None else None
    k = 0
    for k, pl in enumerate(parsed, 1):
        if pl.line != k:
            raise InputError(f"expected the parse of line {k}, found '# line = {pl.line}' (every line needs a "
                             "block, as `synprep parse` writes)", conllu_name)
        if bpe_it is None:
            yield LineInput(k, pl)
            continue
        text = next(bpe_it, None)
        if text is None:
            raise InputError(f"the BPE input ends before parsed line {k}", path, k)
        pieces = text.split()
        index = None
        if pl.error is None:
            words = [moses_lowercase(w) for w in pl.words] if lowercase else pl.words
            try:
                index = align(pieces, words, line=k, path=path)
            except InputError as e:
                if not lowercase and _aligns_lowercased(pieces, pl.words):
                    raise InputError(f"{e.reason} (the BPE text looks lowercased: add --lowercase)", path, k) from None
                raise
        yield LineInput(k, pl, pieces, index)
    if bpe_it is not None and next(bpe_it, None) is not None:
        raise InputError(f"the BPE input has more lines than the parse ({k})", path)


def _aligns_lowercased(pieces: list[str], words: list[str]) -> bool:
    from synprep.align import align
    from synprep.text.tokenize import moses_lowercase

    try:
        align(pieces, [moses_lowercase(w) for w in words])
    except InputError:
        return False
    return True


def _json_matrix(m: np.ndarray, decimals: int) -> str:
    """A float matrix as a compact JSON array: ``decimals`` places, trailing zeros dropped (``0``, ``0.25``)."""
    def num(v: float) -> str:
        text = f"{v:.{decimals}f}".rstrip("0").rstrip(".")
        return "0" if text in ("", "-0") else text

    return "[" + ",".join("[" + ",".join(num(v) for v in row) + "]" for row in np.asarray(m, np.float64)) + "]"


def line_heads(parsed: ParsedLine) -> np.ndarray:
    """``(W,) int64`` line-level heads: 1-based, 0 = root, each sentence offset by its start (SPEC.md §1)."""
    heads: list[int] = []
    start = 0
    for s in parsed.sentences:
        heads.extend(h + start if h > 0 else 0 for h in s.heads)
        start += len(s.words)
    return np.asarray(heads, dtype=np.int64)


class _Skipped:
    """Lines without a parse: written as blank lines, counted and named on stderr."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, str]] = []

    def add(self, item: LineInput) -> str:
        self.lines.append((item.number, item.parsed.error or "no parse"))
        return ""

    def report(self, n: int) -> None:
        msg = f"synprep: {n} lines"
        if self.lines:
            shown = ", ".join(f"{k} ({why})" for k, why in self.lines[:5])
            more = f" and {len(self.lines) - 5} more" if len(self.lines) > 5 else ""
            msg += f"; {len(self.lines)} without a parse, written as blank lines: {shown}{more}"
        click.echo(msg, err=True)


def parents_lines(parsed: Iterable[ParsedLine], bpe_lines: Iterable[str], *, mode: str = "mean",
                  path: str | None = None, eos: bool = False, lowercase: bool = False,
                  conllu_name: str | None = None, skipped: _Skipped | None = None) -> Iterator[str]:
    """Per parsed line and its BPE line, the parent position of each piece (1 decimal), space-separated.

    Positions are 0-based piece positions (SPEC.md §4; PASCAL ``mean`` or LISA ``first``), from
    line-level heads. With ``eos`` a ``</s>`` position T is appended (pointing at itself). A line
    without a parse (``# error`` block) gives a blank line.

    Raises:
        InputError: see :func:`line_inputs`; bad heads (names the line).
    """
    from synprep.features.parents import parent_positions

    for item in line_inputs(parsed, bpe_lines, path=path, conllu_name=conllu_name, lowercase=lowercase):
        if item.word_index is None:
            yield skipped.add(item) if skipped is not None else ""
            continue
        try:
            pos = parent_positions(line_heads(item.parsed), item.word_index, mode=mode, eos=eos)
        except ValueError as e:
            raise InputError(str(e), path, item.number) from None
        yield format_floats(pos, 1)


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
    skipped.report(n)
    _sig(f"parents-{mode}{'+eos' if eos else ''}", nltk=False)


RELATIONS = ("depth", "distance", "up", "down", "subtree")


def _format_ints(a: np.ndarray, as_json: bool) -> str:
    values = np.asarray(a).astype(np.int64).tolist()
    if as_json:
        return json.dumps(values, separators=(",", ":"))
    if np.ndim(a) == 1:
        return " ".join(map(str, values))
    return " | ".join(" ".join(map(str, row)) for row in values)


def relations_lines(items: Iterable[LineInput], what: str, *, as_json: bool = False, path: str | None = None,
                    skipped: _Skipped | None = None) -> Iterator[str]:
    """Per line, one tree relation (:func:`synprep.features.relations.tree_relations`), word or piece level.

    ``depth`` gives one number per word (piece, when the items carry pieces); ``distance``
    (shortest-path length in arcs), ``up``, ``down`` and ``subtree`` (0/1) give a matrix whose
    rows are joined by `` | `` (or one JSON array per line with ``as_json``).

    Raises:
        InputError: bad heads (names the line).
    """
    from synprep.features.relations import expand_to_pieces, tree_relations

    for item in items:
        if item.parsed.error is not None:
            yield skipped.add(item) if skipped is not None else ""
            continue
        try:
            rel = tree_relations(line_heads(item.parsed))
        except ValueError as e:
            raise InputError(str(e), path, item.number) from None
        value = {"depth": rel.depth, "distance": rel.path, "up": rel.up, "down": rel.down,
                 "subtree": rel.subtree}[what]
        if item.word_index is not None:
            value = expand_to_pieces(value, item.word_index)
        yield _format_ints(value, as_json)


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
    skipped.report(n)
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


def ldd_lines(items: Iterable[LineInput], *, threshold: float = 0.0, labels: list[str] | None = None,
              root: str = "self", as_json: bool = False, decimals: int = 4, path: str | None = None,
              skipped: _Skipped | None = None) -> Iterator[str]:
    """Per line, the labeled dependency distribution (SPEC.md §4): sparse entries, or dense per label.

    Sparse (``labels`` None): :func:`~synprep.features.ldd.line_ldd` entries ``DEP,HEAD,REL,PROB``
    separated by spaces (1-based line-level word indices, head 0 = root, base UD relation,
    shortest float32 decimal), or a JSON array of ``[dep, head, rel, prob]`` with ``as_json``.
    Dense (``labels`` given): a JSON object ``{label: matrix}`` with each ``(n, n)`` matrix
    ``P(head(row) = column, rel = label)`` over words, or over pieces when the items carry them
    (:func:`~synprep.features.ldd.ldd_piece_matrix`, ``root`` as there), ``decimals`` places.

    Raises:
        InputError: malformed LDD entries (names the line).
    """
    from synprep.features.ldd import ldd_piece_matrix, line_ldd
    from synprep.parse.conllu_io import format_prob
    from synprep.types import DEPRELS

    for item in items:
        pl = item.parsed
        if pl.error is not None:
            yield skipped.add(item) if skipped is not None else ""
            continue
        try:
            dep, head, rel, prob = line_ldd(pl.sentences, threshold)
            if labels is None:
                entries = [(int(d), int(h), DEPRELS[int(r)], float(p)) for d, h, r, p in zip(dep, head, rel, prob,
                                                                                          strict=True)]
                if as_json:
                    yield json.dumps([[d, h, r, float(format_prob(p))] for d, h, r, p in entries],
                                     separators=(",", ":"))
                else:
                    yield " ".join(f"{d},{h},{r},{format_prob(p)}" for d, h, r, p in entries)
                continue
            wi = item.word_index if item.word_index is not None else np.arange(len(pl.words))
            dense = ldd_piece_matrix(dep, head, rel, prob, wi, labels, root=root)
        except ValueError as e:
            raise InputError(f"LDD: {e}", path, item.number) from None
        yield "{" + ",".join(f"{json.dumps(lab)}:{_json_matrix(m, decimals)}" for lab, m in zip(labels, dense,
                                                                                                 strict=True)) + "}"


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
    skipped.report(n)
    _sig("ldd" + (f"-dense-{root}" if label_list else "") + ("-pieces" if bpe_path else ""), nltk=False)
