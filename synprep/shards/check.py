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
5. Where the folder holds ``arrays/`` (the shards' decoded arrays ``synprep train`` writes,
   :mod:`synprep.shards.mapped`): each shard's maps there, of its current version and the current
   layout, pass every check a reader makes before it maps them (their index, the shard's sha256,
   sizes, the header equal to the shard's, the sha256 over index and arrays, every value as in 2 and
   3). A damaged map is never read (``train`` decodes the shard again); it is reported so that it
   is noticed, with the fix: delete ``arrays/``.

A corrupt file (truncated HDF5, missing dataset, wrong dtype, unreadable chunk) is a reported
violation, never a traceback. Checks are vectorised per shard (numpy over the CSR arrays).
Sections 2 and 3 (one shard, :func:`check_shard`) live in :mod:`synprep.shards.invariants`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from synprep.constants import MANIFEST_NAME, SHARD_FORMAT
from synprep.errors import InputError, SynprepError
from synprep.lock import live_temp
from synprep.shards.advice import incomplete_advice
from synprep.shards.invariants import (  # noqa: F401 - re-exported: check's public names
    LDD_SUM_TOLERANCE,
    Violation,
    _Fail,
    check_shard,
)
from synprep.shards.manifest import Manifest
from synprep.shards.map_truth import map_problem
from synprep.shards.mapped import ARRAYS
from synprep.shards.schema import (
    parse_shard_name,
    shard_name,
)
from synprep.shards.shard_reader import ShardReader
from synprep.signature import file_sha256
from synprep.vocab import Vocab


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
            raise _Fail(Violation(MANIFEST_NAME, f"missing: {folder} is incomplete (no shard yet): "
                                                 f"{incomplete_advice(folder)}"))
        raise _Fail(Violation(MANIFEST_NAME, "missing"))
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _Fail(Violation(MANIFEST_NAME, f"not JSON ({e}): {Manifest.RECOVERY}")) from None
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
            _check_maps(folder, folder / info.file, info.sha256, vocab_size)
            all_lines.append(lines)
            report.shards += 1
        _check_split_counts(split, raw_split, np.concatenate(all_lines) if all_lines else np.zeros(0, np.int64),
                            folder)
        report.pairs[split] = entry.pairs


def _check_maps(folder: Path, shard: Path, sha256: str, vocab_size: int) -> None:
    """Section 5 for one shard (verified): its maps in ``folder/arrays/``, where there are any."""
    if not (folder / ARRAYS).is_dir():
        return
    problem = map_problem(ShardReader(shard, sha256=sha256, vocab_size=vocab_size), folder / ARRAYS)
    if problem is not None:
        file, what = problem
        raise _Fail(Violation(f"{ARRAYS}/{file}", f"{what} (the decoded arrays `synprep train` maps: never read "
                                                  f"damaged, train decodes the shard again; delete {ARRAYS}/ to "
                                                  "remove them)"))


def split_counts_violation(split: str, raw: dict[str, Any], lines: np.ndarray) -> Violation | None:
    """Section 4 of the module docstring for one split: its manifest entry ``raw`` (the JSON form,
    :meth:`~synprep.shards.manifest.SplitEntry.to_dict`) against the ``(N,)`` lines its shards hold.
    The one verification ``check`` and the readers (:func:`synprep.shards.reader.open_split`) run."""
    try:
        _check_split_counts(split, raw, lines)
    except _Fail as e:
        return e.violation
    return None


def _check_split_counts(split: str, raw: dict[str, Any], lines: np.ndarray, folder: Path | None = None) -> None:
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
                   f"({inp - pairs - sum(dropped.values())} input lines neither stored nor dropped yet): "
                   f"{incomplete_advice(folder, split, shards=len(raw.get('shards') or []))}")
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
