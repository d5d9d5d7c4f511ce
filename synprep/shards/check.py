"""``synprep check DIR``: verify every invariant of an output folder and name the first violation.

What is verified (docs/shards.md lists it for users), in this order:

1. ``manifest.json``: parses, format and version known; the vocabulary entry matches ``dict.txt``
   (path, sha256, size); no stray temporary files (``.NAME.*.tmp``; one whose writer, named by
   the pid in it, still runs is work in progress, not stray); no shard file the manifest does not
   list; every listed shard exists with the listed size and sha256.
2. Each shard, split by split in shard order: it opens as HDF5; ``format``/``format_version``
   known; every root attribute present with its type, ``split``/``shard_index`` match the file
   name, ``n_pairs`` matches, ``signature`` and ``vocab_sha256`` match the manifest, ``subword``
   names a registered scheme (a shard without it means ``bpe``); every dataset
   present, 1-D, with its format's dtype; per axis the offsets have N+1 entries, start at 0, never
   decrease and end at the length of every dataset on that axis.
3. Each pair (the first violating pair is reported, with its original line):
   ``line`` >= 1 and strictly increasing within the shard and across the shards of a split;
   T, U, W, S >= 1; ``len(gap) == T-1``; ``word_index`` starts at 0, steps by 0 or 1 and ends at
   W-1 (every word has >= 1 piece); ``heads`` in [0, W]; ``sent_start`` starts at 0, strictly
   increases, < W; exactly one root (head 0) per sentence and every head inside its own
   sentence; the heads form a tree (no cycle); ``deprel``/``upos``/``ldd_rel`` < number of labels;
   ids < vocabulary size and never ``<s>``/``<pad>``/``</s>``; gaps: 1 inside a word, 999 exactly
   at sentence boundaries, 2..998 between two words of one sentence (d + 1, d >= 1), for both
   conventions; LDD ``dep`` in [1, W], ``head`` in [0, W] and inside the dependent's sentence,
   ``prob`` finite in (0, 1], every word has >= 1 entry, and a word's probabilities sum to <= 1
   (float16 rounding allowed).
4. Per split: the manifest's shard entries (pairs, first/last line) match the files, ``pairs`` is
   their sum, ``input_lines == pairs + sum(dropped)``, the dropped counts match ``dropped_lines``
   per reason, and every line is accounted for once: shard lines and dropped lines are disjoint
   and within [1, input_lines]; the subword alignment counts (``--subword spm|hf``) name listed
   shards only, each shard's split counts are consistent (``lines_with_split <= pieces_split <=
   parts_added``, ``lines_with_split <= pairs``) and they add up to their total.

A corrupt file (truncated HDF5, missing dataset, wrong dtype, unreadable chunk) is a reported
violation, never a traceback. Checks are vectorised per shard (numpy over the CSR arrays).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from synprep.constants import BOS_ID, EOS_ID, GAP_SENTENCE, MANIFEST_NAME, PAD_ID, SHARD_FORMAT
from synprep.errors import InputError, SynprepError
from synprep.lock import live_temp
from synprep.shards.layout import check_declared_size, read_attrs
from synprep.shards.manifest import Manifest
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
    parse_shard_name,
    shard_name,
)
from synprep.signature import file_sha256
from synprep.subword import SCHEMES
from synprep.vocab import Vocab

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


@dataclass
class CheckReport:
    """Result of :func:`check_dir`.

    Attributes:
        folder: the checked folder.
        pairs: split → pairs checked (every split of the manifest, in manifest order of names).
        shards: number of shard files checked.
        violation: the first violation, or None when everything holds.
    """

    folder: Path
    pairs: dict[str, int] = field(default_factory=dict)
    shards: int = 0
    violation: Violation | None = None

    @property
    def ok(self) -> bool:
        return self.violation is None

    def summary(self) -> str:
        """One line: ``OK FOLDER: train 1000 pairs, valid 50 pairs (3 shards)`` or the violation."""
        if self.violation is not None:
            return f"FAILED {self.folder}: {self.violation}"
        splits = ", ".join(f"{k} {v} pairs" for k, v in self.pairs.items()) or "no splits"
        return f"OK {self.folder}: {splits} ({self.shards} shards)"

    def raise_if_failed(self) -> CheckReport:
        """Raise :class:`CheckError` when there is a violation; return self otherwise."""
        if self.violation is not None:
            raise CheckError(self.violation)
        return self


class CheckError(SynprepError):
    """An output folder breaks an invariant (``.violation`` says which, where)."""

    def __init__(self, violation: Violation):
        self.violation = violation
        super().__init__(str(violation))


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


def _stage_lengths(P: _Pairs, after_line: int) -> _First:
    f = _First()
    L, lines = P.lens, P.lines
    prev = np.concatenate([[after_line], lines[:-1]])

    def line_what(p: int) -> str:
        if p:
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
        data[fl.name] = a.astype(np.float64) if fl.kind == "float16" else a.astype(np.int64)
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
    stages = [
        lambda P: _stage_lengths(P, after_line),
        lambda P: _stage_ranges(P, len(attrs["deprel_labels"]), len(attrs["upos_labels"]), vocab_size),
        _stage_structure,
        _stage_tree,
    ]
    # A stage may assume the earlier stages hold, so it only looks at the pairs before the first
    # violation found so far; any violation it finds there is an earlier one.
    best: tuple[int, str] | None = None
    limit = n
    for stage in stages:
        if limit == 0:
            break
        found = stage(_Pairs(data, offsets, lines, limit)).best
        if found is not None:
            best, limit = found, found[0]
    if best is not None:
        p, what = best
        raise _Fail(Violation(name, what, p, int(lines[p])))
    return attrs, lines


# --- the folder --------------------------------------------------------------------------------
def check_dir(path: str | os.PathLike, *, splits: Collection[str] | None = None) -> CheckReport:
    """Verify every invariant of an output folder (the module docstring lists them).

    Args:
        path: the folder.
        splits: verify only these splits' shards and counts (the folder-wide checks still run);
            None: every split. A writer checks its own split while others may still be written.

    Returns:
        CheckReport: ``.ok`` and ``.summary()``; ``.violation`` names the first violation (file,
        pair index, original line, what). ``.raise_if_failed()`` turns it into :class:`CheckError`.

    Raises:
        InputError: ``path`` is not a folder.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise InputError("no such output folder", str(folder))
    report = CheckReport(folder)
    try:
        _check_dir(folder, report, splits)
    except _Fail as e:
        report.violation = e.violation
    return report


def _manifest(folder: Path) -> tuple[dict[str, Any], Manifest]:
    path = folder / MANIFEST_NAME
    if not path.is_file():
        if (folder / "pipeline.json").is_file():  # a pipeline/annotate run stopped before its first shard
            raise _Fail(Violation(MANIFEST_NAME, f"missing: {folder} is incomplete (its run stopped before the "
                                                 "first shard); running the same command again resumes it"))
        raise _Fail(Violation(MANIFEST_NAME, "missing"))
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _Fail(Violation(MANIFEST_NAME, f"not JSON: {e}")) from None
    if not isinstance(raw, dict):
        raise _Fail(Violation(MANIFEST_NAME, "not a JSON object"))
    if raw.get("format") != SHARD_FORMAT:
        raise _Fail(Violation(MANIFEST_NAME, f"format is {raw.get('format')!r}, expected {SHARD_FORMAT!r}"))
    try:
        m = Manifest.from_dict(raw)
    except (InputError, TypeError, ValueError) as e:
        raise _Fail(Violation(MANIFEST_NAME, getattr(e, "reason", str(e)))) from None
    return raw, m


def _check_vocab(folder: Path, m: Manifest) -> tuple[int, dict[str, Any]]:
    """``(size, the manifest's vocab entry)`` once the entry and ``dict.txt`` agree."""
    v = m.vocab
    if not isinstance(v, dict) or not {"path", "sha256", "size"} <= set(v):
        raise _Fail(Violation(MANIFEST_NAME, "vocab entry {path, sha256, size} is missing"))
    vpath = folder / str(v["path"])
    if not vpath.is_file():
        raise _Fail(Violation(str(v["path"]), "vocabulary file listed in the manifest is missing"))
    sha = file_sha256(vpath)
    if sha != v["sha256"]:
        raise _Fail(Violation(str(v["path"]), f"sha256 {sha} does not match the manifest's {v['sha256']}"))
    try:
        size = len(Vocab.load(vpath))
    except InputError as e:
        raise _Fail(Violation(str(v["path"]), str(e))) from None
    if size != v["size"]:
        raise _Fail(Violation(str(v["path"]), f"{size} symbols but the manifest says {v['size']}"))
    return size, v


def _check_dir(folder: Path, report: CheckReport, only: Collection[str] | None = None) -> None:
    raw, m = _manifest(folder)
    vocab_size, vocab = _check_vocab(folder, m)
    listed = {s.file: split for split, e in m.splits.items() for s in e.shards}
    for p in sorted(folder.iterdir()):
        if p.name.endswith(".tmp") and not live_temp(p):  # a live writer's temp: work in progress
            raise _Fail(Violation(p.name, "stray temporary file (an interrupted write?)"))
        if parse_shard_name(p.name) and p.name not in listed:
            raise _Fail(Violation(p.name, "shard file not listed in the manifest"))
    for split in sorted(m.splits):
        if only is not None and split not in only:
            continue
        entry, raw_split = m.splits[split], raw["splits"][split]
        for i, info in enumerate(entry.shards):
            if info.file != shard_name(split, i):
                raise _Fail(Violation(MANIFEST_NAME, f"shard {i} of split {split!r} is {info.file!r}, "
                                                     f"expected {shard_name(split, i)!r}"))
            path = folder / info.file
            if not path.is_file():
                raise _Fail(Violation(info.file, "listed in the manifest but missing"))
            if path.stat().st_size != info.bytes:
                raise _Fail(Violation(info.file, f"{path.stat().st_size} bytes, the manifest says {info.bytes}"))
            sha = file_sha256(path)
            if sha != info.sha256:
                raise _Fail(Violation(info.file, f"sha256 {sha} does not match the manifest's {info.sha256}"))
        all_lines = []
        after = 0
        for i, info in enumerate(entry.shards):
            violation, attrs, lines = check_shard(folder / info.file, vocab_size=vocab_size, after_line=after,
                                                  name=info.file)
            if violation is not None:
                raise _Fail(violation)
            assert attrs is not None and lines is not None
            for key, want in (("split", split), ("shard_index", i), ("signature", entry.signature or m.signature),
                              ("vocab_sha256", vocab["sha256"])):
                if attrs[key] != want:
                    raise _Fail(Violation(info.file, f"attribute {key} is {attrs[key]!r}, expected {want!r}"))
            if os.path.normpath(attrs["vocab_path"]) != os.path.normpath(str(vocab["path"])):
                raise _Fail(Violation(info.file, f"vocab_path {attrs['vocab_path']!r} is not the manifest's "
                                                 "vocabulary"))
            got = (len(lines), int(lines[0]), int(lines[-1]))
            if got != (info.pairs, info.first_line, info.last_line):
                raise _Fail(Violation(MANIFEST_NAME, f"entry of {info.file} says pairs/first_line/last_line = "
                                                     f"{info.pairs}/{info.first_line}/{info.last_line}, the file has "
                                                     f"{got[0]}/{got[1]}/{got[2]}"))
            after = got[2]
            all_lines.append(lines)
            report.shards += 1
        _check_split_counts(split, raw_split, np.concatenate(all_lines) if all_lines else np.zeros(0, np.int64))
        report.pairs[split] = entry.pairs


def split_counts_violation(split: str, raw: dict[str, Any], lines: np.ndarray) -> Violation | None:
    """Section 4 of the module docstring for one split: its manifest entry ``raw`` (the JSON form,
    :meth:`~synprep.shards.manifest.SplitEntry.to_dict`) against the ``(N,)`` lines its shards hold.
    The one verification ``check`` and the readers (:func:`synprep.shards.reader.open_split`) run."""
    try:
        _check_split_counts(split, raw, lines)
    except _Fail as e:
        return e.violation
    return None


def _check_split_counts(split: str, raw: dict[str, Any], lines: np.ndarray) -> None:
    def fail(what: str) -> _Fail:
        return _Fail(Violation(MANIFEST_NAME, f"split {split!r}: {what}"))

    pairs, inp, dropped, dl = raw.get("pairs"), raw.get("input_lines"), raw.get("dropped"), raw.get("dropped_lines")
    if pairs != len(lines):
        raise fail(f"pairs is {pairs} but its shards hold {len(lines)}")
    if not isinstance(inp, int) or not isinstance(dropped, dict) or not isinstance(dl, list):
        raise fail("input_lines, dropped or dropped_lines is missing or of the wrong type")
    if not all(isinstance(v, int) and v >= 0 for v in dropped.values()):
        raise fail("dropped counts must be integers >= 0")
    if isinstance(pairs, int) and inp > pairs + sum(dropped.values()):
        raise fail(f"input_lines {inp} != pairs {pairs} + dropped {sum(dropped.values())}: the split is incomplete "
                   f"({inp - pairs - sum(dropped.values())} input lines neither stored nor dropped yet), its run was "
                   "interrupted (or is still running): running the same command again resumes it")
    if inp != pairs + sum(dropped.values()):
        raise fail(f"input_lines {inp} != pairs {pairs} + dropped {sum(dropped.values())}")
    if not all(isinstance(x, list) and len(x) == 3 and isinstance(x[0], int) and isinstance(x[1], str) for x in dl):
        raise fail("dropped_lines entries must be [line, reason, detail]")
    tally = Counter(x[1] for x in dl)
    for reason in sorted(set(tally) | set(dropped)):
        if tally.get(reason, 0) != dropped.get(reason, 0):
            raise fail(f"dropped[{reason!r}] is {dropped.get(reason, 0)} but dropped_lines lists "
                       f"{tally.get(reason, 0)} such lines")
    if any(not 1 <= x[0] <= inp for x in dl):  # before numpy: a JSON integer may not fit int64
        raise fail(f"dropped_lines must be strictly increasing line numbers in [1, input_lines = {inp}]")
    dlines = np.array([x[0] for x in dl], dtype=np.int64)
    if len(dlines) and np.any(np.diff(dlines) <= 0):
        raise fail(f"dropped_lines must be strictly increasing line numbers in [1, input_lines = {inp}]")
    if len(lines) and lines[-1] > inp:
        raise fail(f"a shard holds line {lines[-1]} but input_lines is {inp}")
    both = np.intersect1d(lines, dlines)
    if len(both):
        raise fail(f"line {both[0]} is both stored in a shard and listed as dropped")
    _check_alignment_counts(raw.get("subword_alignment"), {s["file"]: s.get("pairs") for s in raw.get("shards", [])},
                            fail)


def _check_alignment_counts(counts: Any, files: dict[str, Any], fail) -> None:
    """``subword_alignment`` (when present): counts for listed shards only, each shard's split counts
    consistent with each other and with its pairs, and a total that is their sum.

    The split counts cannot be recounted from a shard: a split piece's parts are stored as pieces of
    their own, with the ids and word indices a piece the segmenter gave whole would have (``),`` split
    gives ``,``, the same id as the ``,`` of ``word,``). What holds whatever the data:
    ``lines_with_split <= pieces_split <= parts_added`` (every split adds >= 1 part, every line
    with a split has >= 1), ``lines_with_split <= pairs``, and no split piece without a line holding it.
    """
    if counts is None:
        return
    if not isinstance(counts, dict) or not isinstance(counts.get("shards"), dict) \
            or not isinstance(counts.get("total"), dict):
        raise fail("subword_alignment must be {total: {...}, shards: {FILE: {...}}}")
    total: Counter = Counter()
    for file, c in counts["shards"].items():
        if file not in files:
            raise fail(f"subword_alignment counts shard {file!r}, which the split does not list")
        if not isinstance(c, dict) or not all(isinstance(v, int) and v >= 0 for v in c.values()):
            raise fail(f"subword_alignment counts of {file} must be integers >= 0")
        lines, split, parts = c.get("lines_with_split", 0), c.get("pieces_split", 0), c.get("parts_added", 0)
        pairs = files[file]
        if not lines <= split <= parts or (split > 0) != (lines > 0) \
                or (isinstance(pairs, int) and lines > pairs):
            raise fail(f"subword_alignment counts of {file} are inconsistent: lines_with_split {lines}, "
                       f"pieces_split {split}, parts_added {parts} (need lines_with_split <= pieces_split <= "
                       f"parts_added, a split piece only in a line with a split, and at most {pairs} lines)")
        total.update(c)
    if {k: v for k, v in counts["total"].items() if v} != {k: v for k, v in total.items() if v}:
        raise fail(f"subword_alignment total {counts['total']} is not the sum of its shards' counts")
