"""The line tools' library: ``synprep align | distance | mask | parents | relations | ldd`` as
functions from input lines to output lines (the click layer is :mod:`synprep.cli.features`).

``distance`` reads bracketed trees through :mod:`synprep.parse.trees`; ``parents``, ``relations``
and ``ldd`` read numbered CoNLL-U (:func:`synprep.parse.conllu_io.read_numbered`), paired with the
BPE'd source by :func:`line_inputs` (the pieces must rebuild the parsed words: a mismatch names
the line). Formats: docs/features.md "Commands".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from synprep.align import align, bpe_words
from synprep.errors import InputError
from synprep.escape import unescape_tokens
from synprep.features.distance import tree_gaps
from synprep.features.ldd import ldd_piece_matrix, line_ldd
from synprep.features.parents import parent_positions
from synprep.features.relations import expand_to_pieces, tree_relations
from synprep.features.slr import DEFAULT_TAU, hard_slr_mask, soft_slr_mask
from synprep.text.case import moses_lowercase
from synprep.textio import display_name, iter_lines
from synprep.types import DEPRELS, ParsedLine


def format_floats(values: np.ndarray, decimals: int = 4) -> str:
    """Space-separated fixed-point numbers (``-0.0000`` printed as ``0.0000``)."""
    return " ".join(f"{v + 0.0:.{decimals}f}" for v in np.asarray(values, dtype=np.float64))


def align_lines(bpe_path: str, words_path: str | None = None) -> Iterator[str]:
    """Per BPE line, the 0-based word index of each piece, space-separated (blank line → blank line).

    With ``words_path`` (the Moses-tokenized text the pieces were made from, one line per line),
    the pieces' words must rebuild each line's words exactly (both unescaped), else InputError.
    """
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


TREE_FORMATS = ("auto", "lines", "mrg")


def detect_tree_format(trees_path: str) -> str:
    """``mrg`` for a ``*.mrg`` file or one whose first tree spans several lines, else ``lines``.

    Only the first non-blank line is looked at (for standard input, in the bytes already
    buffered: nothing is consumed). A first line holding complete, balanced tree(s) means one
    tree per line.
    """
    import sys

    # imported here: loads conllu and orjson, not needed to import this module
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
    # imported here: loads conllu and orjson, not needed to import this module
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


def mask_lines(gaps: np.ndarray, tau: float | None, hard: str | None) -> list[str]:
    """The T×T mask as text rows: hard ``0``/``1`` separated by spaces, soft with 4 decimals."""
    if hard is not None:
        m = hard_slr_mask(gaps, strict=hard == "strict")
        return [" ".join("1" if x else "0" for x in row) for row in m]
    m = soft_slr_mask(gaps, DEFAULT_TAU if tau is None else tau)
    return [format_floats(row) for row in m]


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


class Skipped:
    """Lines without a parse: written as blank lines, counted and named (:meth:`report`)."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, str]] = []

    def add(self, item: LineInput) -> str:
        self.lines.append((item.number, item.parsed.error or "no parse"))
        return ""

    def report(self, n: int) -> str:
        """The summary line for ``n`` lines written: ``synprep: 9 lines; 2 without a parse, ...``."""
        msg = f"synprep: {n} lines"
        if self.lines:
            shown = ", ".join(f"{k} ({why})" for k, why in self.lines[:5])
            more = f" and {len(self.lines) - 5} more" if len(self.lines) > 5 else ""
            msg += f"; {len(self.lines)} without a parse, written as blank lines: {shown}{more}"
        return msg


def parents_lines(parsed: Iterable[ParsedLine], bpe_lines: Iterable[str], *, mode: str = "mean",
                  path: str | None = None, eos: bool = False, lowercase: bool = False,
                  conllu_name: str | None = None, skipped: Skipped | None = None) -> Iterator[str]:
    """Per parsed line and its BPE line, the parent position of each piece (1 decimal), space-separated.

    Positions are 0-based piece positions (SPEC.md §4; PASCAL ``mean`` or LISA ``first``), from
    line-level heads. With ``eos`` a ``</s>`` position T is appended (pointing at itself). A line
    without a parse (``# error`` block) gives a blank line.

    Raises:
        InputError: see :func:`line_inputs`; bad heads (names the line).
    """
    for item in line_inputs(parsed, bpe_lines, path=path, conllu_name=conllu_name, lowercase=lowercase):
        if item.word_index is None:
            yield skipped.add(item) if skipped is not None else ""
            continue
        try:
            pos = parent_positions(line_heads(item.parsed), item.word_index, mode=mode, eos=eos)
        except ValueError as e:
            raise InputError(str(e), path, item.number) from None
        yield format_floats(pos, 1)


RELATIONS = ("depth", "distance", "up", "down", "subtree")


def _format_ints(a: np.ndarray, as_json: bool) -> str:
    values = np.asarray(a).astype(np.int64).tolist()
    if as_json:
        return json.dumps(values, separators=(",", ":"))
    if np.ndim(a) == 1:
        return " ".join(map(str, values))
    return " | ".join(" ".join(map(str, row)) for row in values)


def relations_lines(items: Iterable[LineInput], what: str, *, as_json: bool = False, path: str | None = None,
                    skipped: Skipped | None = None) -> Iterator[str]:
    """Per line, one tree relation (:func:`synprep.features.relations.tree_relations`), word or piece level.

    ``depth`` gives one number per word (piece, when the items carry pieces); ``distance``
    (shortest-path length in arcs), ``up``, ``down`` and ``subtree`` (0/1) give a matrix whose
    rows are joined by `` | `` (or one JSON array per line with ``as_json``).

    Raises:
        InputError: bad heads (names the line).
    """
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


def ldd_lines(items: Iterable[LineInput], *, threshold: float = 0.0, labels: list[str] | None = None,
              root: str = "self", as_json: bool = False, decimals: int = 4, path: str | None = None,
              skipped: Skipped | None = None) -> Iterator[str]:
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
    # imported here: loads conllu and orjson, not needed to import this module
    from synprep.parse.conllu_io import format_probs

    for item in items:
        pl = item.parsed
        if pl.error is not None:
            yield skipped.add(item) if skipped is not None else ""
            continue
        try:
            dep, head, rel, prob = line_ldd(pl.sentences, threshold)
            if labels is None:  # the probabilities formatted in one call (format_probs), as parse's CoNLL-U
                entries = list(zip(np.asarray(dep).tolist(), np.asarray(head).tolist(),
                                   [DEPRELS[r] for r in np.asarray(rel).tolist()], format_probs(prob), strict=True))
                if as_json:
                    yield json.dumps([[d, h, r, float(p)] for d, h, r, p in entries], separators=(",", ":"))
                else:
                    yield " ".join(f"{d},{h},{r},{p}" for d, h, r, p in entries)
                continue
            wi = item.word_index if item.word_index is not None else np.arange(len(pl.words))
            dense = ldd_piece_matrix(dep, head, rel, prob, wi, labels, root=root)
        except ValueError as e:
            raise InputError(f"LDD: {e}", path, item.number) from None
        yield "{" + ",".join(f"{json.dumps(lab)}:{_json_matrix(m, decimals)}" for lab, m in zip(labels, dense,
                                                                                                 strict=True)) + "}"
