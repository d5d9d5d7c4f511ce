"""One shard's own invariants (sections 2 and 3 of :mod:`synprep.shards.check`): :func:`check_shard`.

Vectorised per shard (numpy over the CSR arrays), in stages that each look only at the pairs before
the first violation found so far; the first broken invariant is a :class:`Violation`. ``synprep check``
(:func:`~synprep.shards.check.check_dir`) and the verified readers
(:func:`~synprep.shards.reader.verify_values`) both run it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from synprep.constants import BOS_ID, EOS_ID, GAP_SENTENCE, PAD_ID
from synprep.errors import InputError
from synprep.shards.layout import check_declared_size, read_attrs
from synprep.shards.schema import (
    AXES,
    FIELDS,
    INT_ATTRS,
    LINE,
    OFFSETS_GROUP,
    OPTIONAL_ATTRS,
    REQUIRED_ATTRS,
    STR_ATTRS,
    TREE_SOURCES,
    WRITER_ATTRS,
)
from synprep.subword import SCHEMES

#: values (all axes together) whose checks run at once: a window of pairs is widened to int64 and checked, then
#: the next, so checking a shard costs its stored arrays and one window (~40 bytes a value), never ~40 bytes a
#: value of the whole shard (a shard of long lines of random strings holds millions; benchmarks/hostile_rss.py)
WINDOW_ELEMENTS = 1 << 18
#: tolerance on the sum of a word's LDD probabilities (float16 relative rounding is 2**-11)
LDD_SUM_TOLERANCE = 2e-3


@dataclass(frozen=True)
class Violation:
    """The first broken invariant.

    Attributes:
        file: the file, relative to the checked folder (``manifest.json``, ``train.00003.h5``…).
        what: the invariant and the offending values, in words.
        pair: 0-based pair index within the shard, or None.
        line: the pair's 1-based original line number, or None.
    """

    file: str
    what: str
    pair: int | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.pair is not None:
            where += f": pair {self.pair}"
            if self.line is not None:
                where += f" (line {self.line})"
        return f"{where}: {self.what}"



class _Fail(Exception):
    def __init__(self, violation: Violation):
        self.violation = violation


# --- one shard ---------------------------------------------------------------------------------
_DTYPE_RULES = {
    "ids": (lambda dt: dt in (np.dtype(np.uint16), np.dtype(np.int32)), "uint16 or int32"),
    "unsigned": (lambda dt: dt.kind == "u", "an unsigned integer type"),
    "uint8": (lambda dt: dt == np.dtype(np.uint8), "uint8"),
    "int16": (lambda dt: dt == np.dtype(np.int16), "int16"),
    "float16": (lambda dt: dt == np.dtype(np.float16), "float16"),
}


class _Pairs:
    """The first N pairs of a shard's CSR arrays, with element → pair maps per axis."""

    def __init__(self, data: dict[str, np.ndarray], offsets: dict[str, np.ndarray], lines: np.ndarray, n: int):
        self.n = n
        self.lines = lines[:n]
        self.off = {a: offsets[a][: n + 1] for a in AXES}
        self.lens = {a: np.diff(o) for a, o in self.off.items()}
        self.pair_of = {a: np.repeat(np.arange(n), self.lens[a]) for a in AXES}
        ends = {a: int(self.off[a][-1]) for a in AXES}
        self.d = {f.name: data[f.name][: ends[f.axis]] for f in FIELDS}

    def local(self, axis: str, e: int) -> tuple[int, int]:
        p = int(self.pair_of[axis][e])
        return p, e - int(self.off[axis][p])


class _First:
    """Keeps the violation with the smallest pair index (the first one added wins ties)."""

    def __init__(self) -> None:
        self.best: tuple[int, str] | None = None

    def pair(self, bad: np.ndarray, what) -> None:
        """``bad`` (N,) over pairs; ``what(p)`` describes pair p."""
        if bad.any():
            p = int(np.argmax(bad))
            if self.best is None or p < self.best[0]:
                self.best = (p, what(p))

    def elem(self, P: _Pairs, axis: str, bad: np.ndarray, what) -> None:
        """``bad`` over the elements of ``axis``; ``what(p, k, e)``: pair, index in pair, element."""
        if bad.any():
            e = int(np.argmax(bad))
            p, k = P.local(axis, e)
            if self.best is None or p < self.best[0]:
                self.best = (p, what(p, k, e))


def _stage_lengths(P: _Pairs, after_line: int, first: bool = True) -> _First:
    f = _First()
    L, lines = P.lens, P.lines
    prev = np.concatenate([[after_line], lines[:-1]])

    def line_what(p: int) -> str:
        if p or not first:
            return f"line {lines[p]} is not greater than the previous pair's line {prev[p]}"
        if after_line:
            return f"line {lines[p]} is not greater than the previous shard's last line {after_line}"
        return f"line {lines[p]} is not >= 1"

    f.pair(lines <= prev, line_what)
    for axis, name in (("src", "source pieces T"), ("tgt", "target pieces U"), ("word", "words W"),
                       ("sent", "sentences S")):
        f.pair(L[axis] == 0, lambda p, name=name: f"no {name} (empty)")
    f.pair(L["gap"] != np.maximum(L["src"] - 1, 0),
           lambda p: f"{L['gap'][p]} gaps for T = {L['src'][p]} pieces, expected T-1 = {max(L['src'][p] - 1, 0)}")
    return f


def _stage_ranges(P: _Pairs, n_deprel: int, n_upos: int, vocab_size: int | None) -> _First:
    f = _First()
    d, L, off = P.d, P.lens, P.off
    W_of = {a: L["word"][P.pair_of[a]] for a in ("word", "sent", "ldd")}
    wi = d["word_index"]
    starts = off["src"][:-1]
    f.pair(wi[starts] != 0, lambda p: f"word_index starts at {wi[starts[p]]}, not 0")
    same = P.pair_of["src"][1:] == P.pair_of["src"][:-1]
    step = wi[1:] - wi[:-1]
    f.elem(P, "src", np.concatenate([same & ((step < 0) | (step > 1)), [False]]),
           lambda p, k, e: f"word_index steps from {wi[e]} to {wi[e + 1]} at pieces {k}-{k + 1} (steps must be 0 or 1)")
    ends = off["src"][1:] - 1
    f.pair(wi[ends] != L["word"] - 1,
           lambda p: f"word_index ends at {wi[ends[p]]} but the line has W = {L['word'][p]} words "
                     "(every word needs >= 1 piece)")
    h = d["heads"]
    f.elem(P, "word", h > W_of["word"], lambda p, k, e: f"heads[{k}] = {h[e]} is outside [0, W = {L['word'][p]}]")
    ss = d["sent_start"]
    f.pair(ss[off["sent"][:-1]] != 0, lambda p: f"sent_start starts at {ss[off['sent'][p]]}, not 0")
    same = P.pair_of["sent"][1:] == P.pair_of["sent"][:-1]
    f.elem(P, "sent", np.concatenate([[False], same & (ss[1:] <= ss[:-1])]),
           lambda p, k, e: f"sent_start is not strictly increasing: sent_start[{k - 1}] = {ss[e - 1]}, "
                           f"sent_start[{k}] = {ss[e]}")
    f.elem(P, "sent", ss >= W_of["sent"], lambda p, k, e: f"sent_start[{k}] = {ss[e]} is not < W = {L['word'][p]}")
    for name, limit, what in (("deprel", n_deprel, "deprel_labels"), ("upos", n_upos, "upos_labels"),
                              ("ldd_rel", n_deprel, "deprel_labels")):
        a, axis = d[name], ("ldd" if name == "ldd_rel" else "word")
        f.elem(P, axis, a >= limit,
               lambda p, k, e, a=a, name=name, limit=limit, what=what:
               f"{name}[{k}] = {a[e]} is not a valid id ({limit} {what})")
    for name, axis in (("src_ids", "src"), ("tgt_ids", "tgt")):
        ids = d[name]
        f.elem(P, axis, (ids == BOS_ID) | (ids == PAD_ID) | (ids == EOS_ID),
               lambda p, k, e, ids=ids, name=name: f"{name}[{k}] = {ids[e]} is a special symbol "
                                                   "(<s>, <pad> or </s> are never stored)")
        if vocab_size is not None:
            f.elem(P, axis, (ids < 0) | (ids >= vocab_size),
                   lambda p, k, e, ids=ids, name=name: f"{name}[{k}] = {ids[e]} is outside the vocabulary "
                                                       f"(size {vocab_size})")
    for name in ("gaps_cnf", "gaps_nary"):
        g = d[name]
        f.elem(P, "gap", g < 1, lambda p, k, e, g=g, name=name: f"{name}[{k}] = {g[e]} is not >= 1")
    dep, head, prob = d["ldd_dep"], d["ldd_head"], d["ldd_prob"]
    f.elem(P, "ldd", (dep < 1) | (dep > W_of["ldd"]),
           lambda p, k, e: f"ldd_dep[{k}] = {dep[e]} is outside [1, W = {L['word'][p]}]")
    f.elem(P, "ldd", head > W_of["ldd"], lambda p, k, e: f"ldd_head[{k}] = {head[e]} is outside [0, W = {L['word'][p]}]")
    f.elem(P, "ldd", ~np.isfinite(prob) | (prob <= 0) | (prob > 1),
           lambda p, k, e: f"ldd_prob[{k}] = {prob[e]} is not a probability in (0, 1]")
    return f


def _stage_structure(P: _Pairs) -> _First:
    f = _First()
    d, off, L = P.d, P.off, P.lens
    n_words = int(off["word"][-1])
    woff = off["word"][:-1]
    # global first word of every sentence; strictly increasing once the ranges hold
    gstart = woff[P.pair_of["sent"]] + d["sent_start"]
    sent_of = np.searchsorted(gstart, np.arange(n_words), side="right") - 1  # (total W,) global sentence
    pair_of_sent = P.pair_of["sent"]

    def sent_words(s: int) -> str:
        p = int(pair_of_sent[s])
        lo = int(gstart[s] - woff[p])
        hi = int((gstart[s + 1] if s + 1 < len(gstart) and pair_of_sent[s + 1] == p else woff[p] + L["word"][p])
                 - woff[p]) - 1
        return f"words {lo}..{hi}"

    h = d["heads"]
    roots = np.bincount(sent_of[h == 0], minlength=len(gstart))
    bad_sent = roots != 1

    def roots_what(p: int) -> str:
        s = int(np.flatnonzero(bad_sent & (pair_of_sent == p))[0])
        return f"sentence {s - off['sent'][p]} ({sent_words(s)}) has {roots[s]} roots (head 0); exactly 1 expected"

    f.pair(np.bincount(pair_of_sent, weights=bad_sent.astype(np.float64), minlength=P.n) > 0, roots_what)
    word_pair = P.pair_of["word"]
    hg = np.where(h > 0, woff[word_pair] + h - 1, np.arange(n_words))
    outside = sent_of[hg] != sent_of
    f.elem(P, "word", outside, lambda p, k, e: f"heads[{k}] = {h[e]} points outside its sentence "
                                               f"({sent_words(int(sent_of[e]))})")
    # gaps: piece k and k+1 of a pair (T-1 gaps per pair holds from the length stage)
    gpair = P.pair_of["gap"]
    left = off["src"][:-1][gpair] + (np.arange(len(gpair)) - off["gap"][:-1][gpair])
    wg = woff[P.pair_of["src"]] + d["word_index"]  # global word of every piece
    lw, rw = wg[left], wg[left + 1]
    same_word = lw == rw
    boundary = sent_of[lw] != sent_of[rw]
    for name in ("gaps_cnf", "gaps_nary"):
        g = d[name]
        f.elem(P, "gap", same_word & (g != 1),
               lambda p, k, e, g=g, name=name: f"{name}[{k}] = {g[e]} inside a word (pieces {k}-{k + 1}); expected 1")
        f.elem(P, "gap", boundary & (g != GAP_SENTENCE),
               lambda p, k, e, g=g, name=name: f"{name}[{k}] = {g[e]} at a sentence boundary (pieces {k}-{k + 1}); "
                                               f"expected {GAP_SENTENCE}")
        f.elem(P, "gap", ~same_word & ~boundary & ((g < 2) | (g >= GAP_SENTENCE)),
               lambda p, k, e, g=g, name=name: f"{name}[{k}] = {g[e]} between two words of one sentence "
                                               f"(pieces {k}-{k + 1}); expected d + 1 in [2, {GAP_SENTENCE - 1}]")
    dep, head, prob = d["ldd_dep"], d["ldd_head"], d["ldd_prob"]
    lpair = P.pair_of["ldd"]
    dg = woff[lpair] + dep - 1
    hg_l = np.where(head > 0, woff[lpair] + head - 1, dg)
    f.elem(P, "ldd", sent_of[hg_l] != sent_of[dg],
           lambda p, k, e: f"ldd_head[{k}] = {head[e]} is outside the sentence of ldd_dep[{k}] = {dep[e]}")
    covered = np.bincount(dg, minlength=n_words)
    f.elem(P, "word", covered == 0, lambda p, k, e: f"word {k + 1} has no LDD entry (every word needs >= 1)")
    sums = np.bincount(dg, weights=prob, minlength=n_words)
    f.elem(P, "word", sums > 1 + LDD_SUM_TOLERANCE,
           lambda p, k, e: f"the LDD probabilities of word {k + 1} sum to {sums[e]:.4f} > 1")
    return f


def _stage_tree(P: _Pairs) -> _First:
    f = _First()
    h, woff = P.d["heads"], P.off["word"][:-1]
    n_words = len(h)
    parent = np.where(h > 0, woff[P.pair_of["word"]] + h - 1, np.arange(n_words))
    anc = parent
    steps = 1
    max_w = int(P.lens["word"].max(initial=1))
    while steps < max_w:  # pointer doubling: anc = the 2**i-th ancestor
        anc = anc[anc]
        steps *= 2
    f.elem(P, "word", h[anc] != 0,
           lambda p, k, e: f"heads[{k}] = {h[e]}: word {k + 1} does not reach the root (the heads form a cycle)")
    return f


def _read_shard(f: h5py.File, name: str) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, np.ndarray],
                                                   np.ndarray]:
    try:
        attrs = read_attrs(f, name)
    except InputError as e:
        raise _Fail(Violation(name, e.reason)) from None
    for key in (*REQUIRED_ATTRS, *OPTIONAL_ATTRS, *WRITER_ATTRS):
        if key not in attrs:
            raise _Fail(Violation(name, f"root attribute {key} is missing"))
    for key in (*STR_ATTRS, "format"):
        if not isinstance(attrs[key], str):
            raise _Fail(Violation(name, f"root attribute {key} is not a string"))
    for key in INT_ATTRS:
        if not isinstance(attrs[key], int):
            raise _Fail(Violation(name, f"root attribute {key} is not an integer"))
    if not isinstance(attrs["ldd_threshold"], float | int):
        raise _Fail(Violation(name, "root attribute ldd_threshold is not a number"))
    if not isinstance(attrs["config"], dict):
        raise _Fail(Violation(name, "root attribute config is not a JSON object"))
    for key in ("deprel_labels", "upos_labels"):
        if not isinstance(attrs[key], list) or not all(isinstance(x, str) for x in attrs[key]):
            raise _Fail(Violation(name, f"root attribute {key} is not a JSON list of strings"))
    if attrs["tree_source"] not in TREE_SOURCES:
        raise _Fail(Violation(name, f"tree_source {attrs['tree_source']!r} is not one of {', '.join(TREE_SOURCES)}"))
    if attrs["subword"] not in SCHEMES:
        raise _Fail(Violation(name, f"subword {attrs['subword']!r} is not one of {', '.join(SCHEMES)}"))

    def dataset(path: str) -> np.ndarray:
        obj = f.get(path)
        if not isinstance(obj, h5py.Dataset):
            raise _Fail(Violation(name, f"dataset /{path} is missing"))
        if obj.ndim != 1:
            raise _Fail(Violation(name, f"dataset /{path} has shape {obj.shape}, expected 1-D"))
        try:
            return obj[()]
        except Exception as e:  # a corrupt chunk, a failing filter
            raise _Fail(Violation(name, f"dataset /{path} cannot be read: {e}")) from None

    lines = dataset(LINE)
    if lines.dtype != np.uint32:
        raise _Fail(Violation(name, f"dataset /{LINE} has dtype {lines.dtype}, expected uint32"))
    offsets = {}
    for axis in AXES:
        o = dataset(f"{OFFSETS_GROUP}/{axis}")
        if o.dtype != np.int64:
            raise _Fail(Violation(name, f"dataset /{OFFSETS_GROUP}/{axis} has dtype {o.dtype}, expected int64"))
        offsets[axis] = o
    data = {}
    for fl in FIELDS:
        a = dataset(fl.name)
        ok, expected = _DTYPE_RULES[fl.kind]
        if not ok(a.dtype):
            raise _Fail(Violation(name, f"dataset /{fl.name} has dtype {a.dtype}, expected {expected}"))
        data[fl.name] = a
    return attrs, data, offsets, lines.astype(np.int64)


def check_shard(path: str | os.PathLike, *, vocab_size: int | None = None, after_line: int = 0,
                name: str | None = None) -> tuple[Violation | None, dict[str, Any] | None, np.ndarray | None]:
    """Verify one shard's own invariants (sections 2 and 3 of the module docstring).

    Args:
        path: the shard file.
        vocab_size: ids must be below it (not checked when None).
        after_line: every line must be greater (the previous shard's last line; 0 for the first).
        name: the file's name in messages (default: the path as given).

    Returns:
        (the first violation or None, the root attributes or None, the (N,) line numbers or None).
    """
    name = name or str(path)
    try:
        return None, *_check_shard(Path(path), name, vocab_size, after_line)
    except _Fail as e:
        return e.violation, None, None
    except Exception as e:  # never a traceback on a corrupt file
        return Violation(name, f"cannot read: {type(e).__name__}: {e}"), None, None


def _check_shard(path: Path, name: str, vocab_size: int | None, after_line: int) -> tuple[dict[str, Any], np.ndarray]:
    try:
        f = h5py.File(path, "r")
    except Exception as e:
        raise _Fail(Violation(name, f"not a readable HDF5 file (truncated or corrupt?): {e}")) from None
    with f:
        try:
            check_declared_size(f, name, path.stat().st_size)
        except InputError as e:
            raise _Fail(Violation(name, e.reason)) from None
        attrs, data, offsets, lines = _read_shard(f, name)
    n = len(lines)
    if attrs["n_pairs"] != n:
        raise _Fail(Violation(name, f"n_pairs attribute is {attrs['n_pairs']} but /line has {n} entries"))
    _check_values(data, offsets, lines, len(attrs["deprel_labels"]), len(attrs["upos_labels"]), vocab_size,
                  after_line, name)
    return attrs, lines


def check_arrays(data: dict[str, np.ndarray], offsets: dict[str, np.ndarray], lines: np.ndarray, *, n_deprel: int,
                 n_upos: int, vocab_size: int | None = None, after_line: int = 0, name: str) -> Violation | None:
    """The per-shard checks of :func:`check_shard` (its offsets, then every pair's values) on arrays already in
    memory or mapped: a shard's decoded arrays (:mod:`synprep.shards.mapped`) get the checks its file gets.

    Args:
        data: field name (:data:`~synprep.shards.schema.FIELDS`) → (L,) values of the field's axis.
        offsets: axis → (N+1,) CSR offsets.
        lines: (N,) 1-based line numbers.
        n_deprel: the number of dependency labels (``deprel_labels``).
        n_upos: the number of UPOS labels (``upos_labels``).
        vocab_size: ids must be below it (not checked when None).
        after_line: every line must be greater (the previous shard's last line; 0 for the first).
        name: the file's name in the violation.

    Returns:
        The first violation, or None.
    """
    try:
        _check_values({fl.name: np.asarray(data[fl.name]) for fl in FIELDS},
                      {a: np.asarray(offsets[a]).astype(np.int64, copy=False) for a in AXES},
                      np.asarray(lines).astype(np.int64, copy=False), n_deprel, n_upos, vocab_size, after_line, name)
    except _Fail as e:
        return e.violation
    except Exception as e:  # noqa: BLE001 - never a traceback on damaged arrays
        return Violation(name, f"cannot be checked: {type(e).__name__}: {e}")
    return None


def _check_values(data: dict[str, np.ndarray], offsets: dict[str, np.ndarray], lines: np.ndarray, n_deprel: int,
                  n_upos: int, vocab_size: int | None, after_line: int, name: str) -> None:
    """The offsets' and every pair's invariants, a window of pairs at a time (:func:`_windows`); raises
    :class:`_Fail`. ``data``: the stored values (any integer dtype, float16 probabilities)."""
    n = len(lines)
    for axis in AXES:
        o = offsets[axis]
        where = f"/{OFFSETS_GROUP}/{axis}"
        if len(o) != n + 1:
            raise _Fail(Violation(name, f"{where} has {len(o)} entries, expected N+1 = {n + 1}"))
        if o[0] != 0:
            raise _Fail(Violation(name, f"{where}[0] = {o[0]}, expected 0"))
        dec = np.flatnonzero(np.diff(o) < 0)
        if len(dec):
            p = int(dec[0])
            raise _Fail(Violation(name, f"{where} decreases from {o[p]} to {o[p + 1]}", p, int(lines[p])))
        for fl in FIELDS:
            if fl.axis == axis and o[-1] != len(data[fl.name]):
                raise _Fail(Violation(name, f"{where} ends at {o[-1]} but /{fl.name} has {len(data[fl.name])} values"))
    for a, b in _windows(offsets, n):
        found = _first_violation(_window(data, offsets, a, b),
                                 {axis: offsets[axis][a: b + 1] - offsets[axis][a] for axis in AXES}, lines[a:b],
                                 int(lines[a - 1]) if a else after_line, a == 0, n_deprel, n_upos, vocab_size)
        if found is not None:
            p, what = found
            raise _Fail(Violation(name, what, a + p, int(lines[a + p])))


def _windows(offsets: dict[str, np.ndarray], n: int) -> list[tuple[int, int]]:
    """Pair ranges ``[a, b)`` in order, each of at most :data:`WINDOW_ELEMENTS` values on all axes together
    (at least one pair): the checks widen a window's values to int64, never a whole shard's."""
    if n == 0:
        return []
    sizes = sum(np.diff(offsets[axis]) for axis in AXES)
    ends = np.cumsum(sizes)
    out, a = [], 0
    while a < n:
        base = int(ends[a - 1]) if a else 0
        b = max(a + 1, int(np.searchsorted(ends, base + WINDOW_ELEMENTS, side="right")))
        out.append((a, min(b, n)))
        a = b
    return out


def _window(data: dict[str, np.ndarray], offsets: dict[str, np.ndarray], a: int, b: int) -> dict[str, np.ndarray]:
    """The values of pairs ``[a, b)``, widened (int64, float64 probabilities)."""
    out = {}
    for fl in FIELDS:
        o = offsets[fl.axis]
        part = np.asarray(data[fl.name][int(o[a]): int(o[b])])
        out[fl.name] = part.astype(np.float64 if fl.kind == "float16" else np.int64)
    return out


def _first_violation(data: dict[str, np.ndarray], offsets: dict[str, np.ndarray], lines: np.ndarray,
                     after_line: int, first: bool, n_deprel: int, n_upos: int,
                     vocab_size: int | None) -> tuple[int, str] | None:
    """The first violation (pair index in the window, what) of a window's pairs, or None.

    Args:
        data: the window's values (:func:`_window`).
        offsets: the window's (N+1,) offsets per axis, from 0.
        lines: the window's (N,) line numbers.
        after_line: the line the window's first line must pass (the previous pair's, or the previous shard's).
        first: the window starts the shard (the message for its first pair names the previous shard).
        n_deprel: see :func:`check_arrays`.
        n_upos: see :func:`check_arrays`.
        vocab_size: see :func:`check_arrays`.
    """
    stages = [
        lambda P: _stage_lengths(P, after_line, first),
        lambda P: _stage_ranges(P, n_deprel, n_upos, vocab_size),
        _stage_structure,
        _stage_tree,
    ]
    # A stage may assume the earlier stages hold, so it only looks at the pairs before the first
    # violation found so far; any violation it finds there is an earlier one.
    best: tuple[int, str] | None = None
    limit = len(lines)
    for stage in stages:
        if limit == 0:
            break
        found = stage(_Pairs(data, offsets, lines, limit)).best
        if found is not None:
            best, limit = found, found[0]
    return best
