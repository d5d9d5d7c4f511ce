"""CoNLL-U reading (gold treebanks or any parser's output) and writing (``synprep parse``).

Reading, :func:`read_conllu` (the ``conllu`` library parses each field; this module adds line
numbers, validation and the grouping into source lines):

* **Multiword tokens** (``3-4 zum`` = ``3 zu`` + ``4 dem``): by default (``words="surface"``) the
  *surface token* is the unit, because it is what Moses tokens and BPE pieces align to. It is
  represented by one member word: the member **closest to the root** (smallest tree depth), the
  leftmost on a tie. That member's head always lies outside the range (a member whose head is
  inside the range is deeper than that head), so this is "the member whose head lies outside the
  range"; the depth rule settles the common case where several do (``zum``: ``zu``→``Haus`` and
  ``dem``→``Haus`` both leave the range; ``zu`` — ADP, ``case`` — represents ``zum``), and it keeps
  the contracted graph a tree (no other member can be an ancestor of the representative). The
  surface token takes the representative's UPOS, DEPREL and (remapped) HEAD; every head that
  pointed at any member points at the surface token. ``words="syntactic"`` ignores the range lines
  and keeps every word (what the parser evaluation on gold tokenization needs).
* **Empty nodes** (``8.1``) are ignored.
* **Validation** (each an :class:`~synprep.errors.InputError` naming the file and the line of the
  offending token): a token line without exactly 10 tab-separated columns; a bad ID, or word IDs
  not ``1, 2, 3, ...``; a multiword range that is malformed or overlaps; a HEAD that is missing,
  not an integer, out of range or the word itself; a missing DEPREL; no root; **more than one
  root** (UD v2 requires exactly one, and the features — one parent per word, one tree — assume
  it: such a file is rejected with the line of the second root rather than silently re-rooted);
  a cycle; a sentence without words (unless it is a ``# error`` block, below). Malformed input
  never gives a traceback.
* **Grouping into lines**: without ``# line = N`` comments every sentence is one line (numbered
  1, 2, ...). Sentences carrying ``# line = N`` (what :func:`write_conllu` writes) are grouped by
  it, so a multi-sentence line re-imports as one :class:`~synprep.types.ParsedLine`; N must not
  decrease, and either every sentence of a file carries it or none does.

Writing, :func:`write_conllu` — one block per sentence, in order, every block with ``# line = N``:

* ``# text = ...`` the words joined by spaces; ``# constituency = (ROOT ...)`` when there is a
  tree (plus ``# tree_source = dependency`` for a dependency-derived one); LDD as
  ``# ldd_threshold = 0.01`` and ``# ldd = DEP,HEAD,REL,PROB DEP,HEAD,REL,PROB ...`` (1-based
  sentence-relative dependent and head, head 0 = root, UD relation, probability printed as the
  shortest decimal that reads back to the same float32; relations never contain ``,`` or spaces).
* columns: ID, FORM (the unescaped word), LEMMA ``_``, UPOS, XPOS ``_``, FEATS ``_``, HEAD, DEPREL,
  DEPS ``_``, MISC ``_``.
* a line without a parse (empty input line, or a line the parser failed on) is a block of
  comments only: ``# line = N`` and ``# error = REASON``. The ``conllu`` library reads it as a
  sentence with no tokens, :func:`read_conllu` as ``ParsedLine(N, error=REASON)``. (It is not a
  valid UD sentence: tools that demand one, like the UD validator, need those blocks removed.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

import numpy as np
import orjson
from conllu.exceptions import ParseException
from conllu.models import Metadata, Token, TokenList
from conllu.parser import DEFAULT_FIELDS, parse_comment_line, parse_id_value, parse_int_value

from synprep.errors import InputError
from synprep.textio import PathLike, display_name, iter_lines
from synprep.types import ParsedLine, ParsedSentence, SparseLDD

WORD_MODES = ("surface", "syntactic")


# --- LDD comment --------------------------------------------------------------------------------


def format_prob(p: float) -> str:
    """Shortest decimal string that reads back to the same float32 (positional, no exponent, no trailing
    ``.0``): numpy's Dragon4, the definition :func:`format_probs` is tested against."""
    return np.format_float_positional(np.float32(p), unique=True, trim="-")


def format_probs(prob: np.ndarray) -> list[str]:
    """:func:`format_prob` of every value, in one C call: ``orjson`` writes a float32 array with the shortest
    digits that read back to the same float32 (as Dragon4), and this drops its ``.0`` on integral values.
    Entries orjson writes with an exponent (below about 1e-6 or above 1e16) or as ``null`` (NaN, inf) are
    made by :func:`format_prob` itself; the parity test (``tests/test_conllu_writer.py``) compares the two.

    Args:
        prob: (K,) probabilities, any float dtype (cast to float32).

    Returns:
        K strings.
    """
    a = np.ascontiguousarray(prob, dtype=np.float32).reshape(-1)
    if a.size == 0:
        return []
    raw = orjson.dumps(a, option=orjson.OPT_SERIALIZE_NUMPY)  # b"[0.5,1.0,...]"
    # shortest digits never end in 0 after the point, so ".0," only ends an integral value
    out = (raw[1:-1] + b",").replace(b".0,", b",").decode("ascii").split(",")
    out.pop()
    if b"e" in raw or b"n" in raw:  # exponent, null: the rare values numpy writes positionally
        for i, s in enumerate(out):
            if "e" in s or "n" in s:
                out[i] = format_prob(a[i])
    return out


def format_ldd(ldd: SparseLDD) -> str:
    """``DEP,HEAD,REL,PROB`` entries joined by spaces (the ``# ldd`` comment value)."""
    return " ".join(
        f"{d},{h},{r},{p}"
        for d, h, r, p in zip(np.asarray(ldd.dep).tolist(), np.asarray(ldd.head).tolist(), ldd.rel, format_probs(ldd.prob), strict=True)
    )


def parse_ldd(text: str, threshold: float, n_words: int, path: str | None = None, line: int | None = None) -> SparseLDD:
    """Read a ``# ldd`` comment value (see :func:`format_ldd`).

    Raises:
        InputError: a malformed entry, or a word index outside ``1..n_words`` (head ``0..n_words``).
    """
    dep, head, rel, prob = [], [], [], []
    for entry in text.split():
        parts = entry.split(",")
        try:
            if len(parts) != 4:
                raise ValueError
            d, h, p = int(parts[0]), int(parts[1]), float(parts[3])
        except ValueError:
            raise InputError(f"bad ldd entry {entry!r} (expected DEP,HEAD,REL,PROB)", path, line) from None
        if not (1 <= d <= n_words and 0 <= h <= n_words) or not 0.0 <= p <= 1.0:
            raise InputError(f"ldd entry {entry!r} out of range ({n_words} words)", path, line)
        dep.append(d)
        head.append(h)
        rel.append(parts[2])
        prob.append(p)
    return SparseLDD(
        dep=np.asarray(dep, dtype=np.int32),
        head=np.asarray(head, dtype=np.int32),
        rel=rel,
        prob=np.asarray(prob, dtype=np.float32),
        threshold=threshold,
    )


# --- reading ------------------------------------------------------------------------------------


@dataclass
class _Word:
    id: int
    form: str
    upos: str
    head: int
    deprel: str
    lineno: int


@dataclass
class _Block:
    """One sentence block: its comments, words, multiword ranges, and where it starts."""

    start: int
    meta: dict[str, str | None] = field(default_factory=dict)
    meta_line: dict[str, int] = field(default_factory=dict)
    words: list[_Word] = field(default_factory=list)
    ranges: list[tuple[int, int, str, int]] = field(default_factory=list)  # (first, last, form, lineno)


def _blocks(path: PathLike) -> Iterator[_Block]:
    name = display_name(path)
    block: _Block | None = None
    for lineno, text in enumerate(iter_lines(path), 1):
        if not text.strip():
            if block is not None:
                yield block
                block = None
            continue
        if block is None:
            block = _Block(start=lineno)
        if text.startswith("#"):
            for key, value in parse_comment_line(text):
                block.meta[key] = value
                block.meta_line[key] = lineno
            continue
        _token_line(block, text, name, lineno)
    if block is not None:
        yield block


def _token_line(block: _Block, text: str, name: str, lineno: int) -> None:
    cols = text.split("\t")
    if len(cols) != 10:
        raise InputError(f"expected 10 tab-separated columns, found {len(cols)}", name, lineno)
    try:
        tid = parse_id_value(cols[0])
    except ParseException:
        raise InputError(f"bad ID {cols[0]!r}", name, lineno) from None
    if tid is None:
        raise InputError("missing ID", name, lineno)
    if isinstance(tid, tuple):
        if tid[1] == ".":  # empty node: ignored
            return
        first, _, last = tid
        expected = len(block.words) + 1
        if first != expected or last <= first:
            raise InputError(f"bad multiword token range {cols[0]} (expected it to start at word {expected})", name, lineno)
        if block.ranges and block.ranges[-1][1] >= first:
            raise InputError(f"multiword token range {cols[0]} overlaps the previous one", name, lineno)
        block.ranges.append((first, last, cols[1], lineno))
        return
    expected = len(block.words) + 1
    if tid != expected:
        raise InputError(f"word ID {tid} out of order (expected {expected})", name, lineno)
    if cols[6] == "_":
        raise InputError(f"word {tid} has no HEAD", name, lineno)
    try:
        head = parse_int_value(cols[6])
    except ParseException:
        raise InputError(f"HEAD {cols[6]!r} of word {tid} is not an integer", name, lineno) from None
    assert head is not None
    if not cols[7] or cols[7] == "_":
        raise InputError(f"word {tid} has no DEPREL", name, lineno)
    block.words.append(_Word(tid, cols[1], cols[3], head, cols[7], lineno))


def _validate_tree(block: _Block, name: str) -> list[int]:
    """Check heads, roots and cycles; return the depth of each word (root = 0)."""
    words = block.words
    n = len(words)
    for w in words:
        if not 0 <= w.head <= n:
            raise InputError(f"HEAD {w.head} of word {w.id} is out of range (the sentence has {n} words)", name, w.lineno)
        if w.head == w.id:
            raise InputError(f"word {w.id} is its own head", name, w.lineno)
    roots = [w for w in words if w.head == 0]
    if not roots:
        raise InputError("no root: no word has HEAD 0", name, words[0].lineno)
    if len(roots) > 1:
        ids = ", ".join(str(w.id) for w in roots)
        raise InputError(
            f"{len(roots)} roots (words {ids} have HEAD 0); UD requires exactly one", name, roots[1].lineno
        )
    depth = [-1] * (n + 1)
    depth[0] = -1
    for w in words:
        path: list[int] = []
        k = w.id
        while k != 0 and depth[k] < 0:
            if k in path:
                cyc = path[path.index(k) :] + [k]
                raise InputError(
                    "cycle through words " + " -> ".join(map(str, cyc)), name, words[cyc[0] - 1].lineno
                )
            path.append(k)
            k = words[k - 1].head
        base = -1 if k == 0 else depth[k]
        for j, m in enumerate(reversed(path), 1):
            depth[m] = base + j
    return depth[1:]


def _to_sentence(block: _Block, name: str, words_mode: str) -> ParsedSentence:
    if block.ranges and block.ranges[-1][1] > len(block.words):
        first, last, _, lineno = block.ranges[-1]
        raise InputError(f"multiword token range {first}-{last} goes past the last word", name, lineno)
    depth = _validate_tree(block, name)
    words = block.words
    if words_mode == "syntactic" or not block.ranges:
        forms = [w.form for w in words]
        upos = [w.upos for w in words]
        heads = [w.head for w in words]
        deprels = [w.deprel for w in words]
    else:
        if "ldd" in block.meta:
            raise InputError(
                "an '# ldd' comment together with multiword tokens is not supported",
                name,
                block.meta_line["ldd"],
            )
        # surface index (1-based) of every word; the representative of each range
        surface = [0] * (len(words) + 1)
        units: list[tuple[str, _Word]] = []
        ranges = {first: (last, form) for first, last, form, _ in block.ranges}
        i = 1
        while i <= len(words):
            if i in ranges:
                last, form = ranges[i]
                members = range(i, last + 1)
                rep = min(members, key=lambda m: (depth[m - 1], m))
                for m in members:
                    surface[m] = len(units) + 1
                units.append((form, words[rep - 1]))
                i = last + 1
            else:
                surface[i] = len(units) + 1
                units.append((words[i - 1].form, words[i - 1]))
                i += 1
        forms = [f for f, _ in units]
        upos = [w.upos for _, w in units]
        heads = [surface[w.head] for _, w in units]
        deprels = [w.deprel for _, w in units]
    sent = ParsedSentence(words=forms, upos=upos, heads=heads, deprels=deprels)
    tree = block.meta.get("constituency")
    if tree:
        sent.tree = tree
        sent.tree_source = block.meta.get("tree_source") or "constituency"
    if "ldd" in block.meta or "ldd_threshold" in block.meta:  # "# ldd" without entries is dropped by conllu
        ldd_line = block.meta_line.get("ldd", block.meta_line.get("ldd_threshold"))
        try:
            threshold = float(block.meta.get("ldd_threshold") or 0.0)
        except ValueError:
            raise InputError("bad ldd_threshold", name, block.meta_line.get("ldd_threshold")) from None
        sent.ldd = parse_ldd(block.meta.get("ldd") or "", threshold, len(forms), name, ldd_line)
    return sent


def read_conllu(path: PathLike, words: str = "surface") -> Iterator[ParsedLine]:
    """Read a CoNLL-U file as parsed source lines (see the module docstring for every rule).

    Args:
        path: a CoNLL-U file, or ``"-"`` for standard input.
        words: ``"surface"`` (multiword tokens are the units) or ``"syntactic"`` (their words are).

    Yields:
        :class:`ParsedLine` in file order; ``line`` is the ``# line = N`` value or the 1-based
        sentence number; a ``# error`` block gives ``ParsedLine(N, error=REASON)``.

    Raises:
        InputError: malformed or invalid input, naming the file and line.
    """
    if words not in WORD_MODES:
        raise ValueError(f"words must be one of {WORD_MODES}, got {words!r}")
    name = display_name(path)
    current: ParsedLine | None = None
    numbered: bool | None = None
    count = 0
    for block in _blocks(path):
        count += 1
        has_line = "line" in block.meta
        if numbered is None:
            numbered = has_line
        elif numbered != has_line:
            raise InputError(
                "some sentences carry '# line = N' and others do not" if has_line else "sentence without '# line = N'",
                name,
                block.start,
            )
        if numbered:
            raw = block.meta["line"]
            try:
                lineno = int(raw or "")
                if lineno < 1:
                    raise ValueError
            except ValueError:
                raise InputError(f"bad '# line' value {raw!r}", name, block.meta_line["line"]) from None
        else:
            lineno = count
        if not block.words:
            if "error" not in block.meta:
                raise InputError("sentence has no words", name, block.start)
            rec = ParsedLine(line=lineno, error=block.meta["error"] or "unknown error")
            sent = None
        else:
            if "error" in block.meta:
                raise InputError("a sentence with words carries '# error'", name, block.meta_line["error"])
            sent = _to_sentence(block, name, words)
            rec = None
        if current is not None and current.line == lineno:
            if sent is None or current.error is not None:
                raise InputError(f"line {lineno} has both an error block and sentences", name, block.start)
            current.sentences.append(sent)
            continue
        if current is not None:
            if lineno < current.line:
                raise InputError(f"'# line = {lineno}' after line {current.line}: lines must not decrease", name, block.start)
            yield current
        current = rec if rec is not None else ParsedLine(line=lineno, sentences=[sent])  # type: ignore[list-item]
    if current is not None:
        yield current


# --- writing ------------------------------------------------------------------------------------


def read_numbered(path: PathLike, n_lines: int | None = None, words: str = "surface") -> Iterator[ParsedLine]:
    """The parses of source lines ``1, 2, 3, ...`` in order: the one reader of numbered CoNLL-U.

    Lines are numbered by ``# line = N`` (as ``synprep parse`` writes them, a failed line as an
    ``# error`` block) or, without those comments, one sentence per line (:func:`read_conllu`).
    Every source line needs a block.

    Args:
        path: the CoNLL-U file.
        n_lines: the source's line count, when known: exactly that many lines must be parsed.
        words: as :func:`read_conllu`.

    Raises:
        InputError: a line without a parse (a gap in the numbering), fewer or more parsed lines
            than ``n_lines`` (naming the CoNLL-U file), or malformed CoNLL-U.
    """
    name = display_name(path)
    k = 0
    for p in read_conllu(path, words=words):
        k += 1
        if p.line != k:
            raise InputError(f"expected the parse of line {k}, found '# line = {p.line}' (every source line "
                             "needs a block, as `synprep parse` writes)", name)
        if n_lines is not None and k > n_lines:
            if n_lines == 0:
                raise InputError("the source is empty but the CoNLL-U file holds parses", name)
            raise InputError(f"more parses than source lines: the source has {n_lines} lines, the parses "
                             f"go on with line {p.line}", name)
        yield p
    if n_lines is not None and k < n_lines:
        raise InputError(f"the parses end after line {k}, the source has {n_lines} lines", name)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _comment(key: str, value: str) -> str:
    return f"# {key} = {value}" if value else f"# {key}"  # conllu's serializer: an empty value gives "# key"


def sentence_block(sent: ParsedSentence, line: int) -> str:
    """The CoNLL-U block of one sentence (comments, token lines, the blank line), as a string.

    Byte-identical to ``sentence_tokenlist(sent, line).serialize()`` (the ``conllu`` library's serializer:
    ``None`` as ``_``, values with ``str.format``, an empty comment value as ``# key``), without building a
    ``Token`` per word; ``tests/test_conllu_writer.py`` checks the two agree on real parses.
    """
    out = [f"# line = {line}", _comment("text", " ".join(sent.words))]
    if sent.tree:
        out.append(_comment("constituency", _one_line(sent.tree)))
        if sent.tree_source and sent.tree_source != "constituency":
            out.append(_comment("tree_source", sent.tree_source))
    if sent.ldd is not None:
        out.append(_comment("ldd_threshold", format_prob(sent.ldd.threshold)))
        out.append(_comment("ldd", format_ldd(sent.ldd)))
    out += [
        f"{i}\t{w}\t_\t{u or '_'}\t_\t_\t{int(h)}\t{'_' if d is None else d}\t_\t_"
        for i, (w, u, h, d) in enumerate(zip(sent.words, sent.upos, sent.heads, sent.deprels, strict=True), 1)
    ]
    return "\n".join(out) + "\n\n"


def error_block(line: int, reason: str) -> str:
    """The comment-only block of a line without a parse (``error_tokenlist(line, reason).serialize()``)."""
    return f"# line = {line}\n# error = {_one_line(reason) or 'unknown error'}\n\n"


def sentence_tokenlist(sent: ParsedSentence, line: int) -> TokenList:
    """The ``conllu.TokenList`` of one sentence, with the comments described in the module docstring
    (:func:`write_conllu` writes the same bytes with :func:`sentence_block`)."""
    meta = Metadata()
    meta["line"] = str(line)
    meta["text"] = " ".join(sent.words)
    if sent.tree:
        meta["constituency"] = _one_line(sent.tree)
        if sent.tree_source and sent.tree_source != "constituency":
            meta["tree_source"] = sent.tree_source
    if sent.ldd is not None:
        meta["ldd_threshold"] = format_prob(sent.ldd.threshold)
        meta["ldd"] = format_ldd(sent.ldd)
    tokens = []
    for i, (w, u, h, d) in enumerate(zip(sent.words, sent.upos, sent.heads, sent.deprels, strict=True), 1):
        tok = Token(dict.fromkeys(DEFAULT_FIELDS))
        tok.update(id=i, form=w, upos=u or None, head=int(h), deprel=d)
        tokens.append(tok)
    return TokenList(tokens, meta)


def error_tokenlist(line: int, reason: str) -> TokenList:
    """The comment-only block of a line without a parse."""
    meta = Metadata()
    meta["line"] = str(line)
    meta["error"] = _one_line(reason) or "unknown error"
    return TokenList([], meta)


def write_conllu(lines: Iterable[ParsedLine], out: IO[str]) -> int:
    """Write parsed lines as CoNLL-U, one block per sentence (error blocks for failed lines).

    Returns:
        the number of lines written.
    """
    n = 0
    for pl in lines:
        if pl.error is not None or not pl.sentences:
            out.write(error_block(pl.line, pl.error or "empty line"))
        else:
            out.write("".join([sentence_block(sent, pl.line) for sent in pl.sentences]))
        n += 1
    return n
