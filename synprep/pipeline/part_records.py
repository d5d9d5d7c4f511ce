"""What a part's record (``OUT/.parts/SPLIT.part-I-of-N.json``, :mod:`synprep.pipeline.parts`) may hold: only its
own part's shards, drops that the drop report can hold (a reason ``stage:name``, a line number of the split,
a detail on one line), and the identity of the split it was made of (:func:`split_identity`). A record is a file any process on a cluster may have written, so ``--merge-parts`` checks
each before it adds anything to ``manifest.json``."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from synprep.errors import InputError
from synprep.shards.schema import parse_shard_name
from synprep.signature import file_sha256

#: a drop reason as the stages name them (``clean:ratio``, ``parse:too_long``)
REASON_RE = re.compile(r"^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$")


class Part(Protocol):
    """What this module reads of :class:`synprep.pipeline.parts.Part` (a protocol: parts.py imports this module)."""

    @property
    def index(self) -> int: ...

    @property
    def count(self) -> int: ...

    def owns(self, k: int) -> bool: ...


def check_record(path: Path, record: dict[str, Any], part: Part, split: str) -> None:
    """Refuse a record that is not its part's: another split or part named inside, a shard another part makes
    (or of another split), a drop reason that is not ``stage:name``, a dropped line outside ``1..input_lines``,
    a detail that breaks the drop report's row (a tab or a line break).

    Args:
        path: the record's file (named in the message).
        record: its parsed JSON (``entry`` already a :class:`~synprep.shards.manifest.SplitEntry`).
        part: the part its file name gives.
        split: the split being merged.

    Raises:
        InputError: names the record, what is wrong, and the fix (run that part again).
    """
    problem = _problem(record, part, split)
    if problem is not None:
        raise InputError(f"not a record of part {part.index}/{part.count} of the {split} split ({problem}): delete "
                         "it and run that part again", str(path))


def _problem(record: dict[str, Any], part: Part, split: str) -> str | None:
    if (record.get("split"), record.get("part"), record.get("parts")) != (split, part.index, part.count):
        return (f"it names split {record.get('split')!r}, part {record.get('part')!r} of "
                f"{record.get('parts')!r}")
    entry = record["entry"]
    for file in [s.file for s in entry.shards] + list(entry.alignment):
        parsed = parse_shard_name(file)
        if parsed is None or parsed[0] != split or not part.owns(parsed[1]):
            return f"it lists {file}, which this part does not make"
    for reason in entry.dropped:
        if not isinstance(reason, str) or not REASON_RE.match(reason):
            return f"a drop reason {reason!r} is not stage:name"
    for row in entry.dropped_lines:
        bad = _bad_drop(row, entry.input_lines)
        if bad is not None:
            return f"a dropped line {row!r:.80} {bad}"
    return None


def _bad_drop(row: list[Any], input_lines: int) -> str | None:
    if len(row) != 3 or not all(isinstance(x, str) for x in row[1:]):
        return "is not [line, reason, detail]"
    if not isinstance(row[0], int) or isinstance(row[0], bool) or not 1 <= row[0] <= input_lines:
        return f"is not a line of the split (1..{input_lines})"
    if not REASON_RE.match(row[1]):
        return "has a reason that is not stage:name"
    if any(c in row[2] for c in "\t\n\r"):
        return "has a detail with a tab or line break"
    return None


def split_identity(input_sha: dict[str, str], text: Iterable[Path] = ()) -> dict[str, Any]:
    """What ties a part to the split it was made of: the sha256 of the split's inputs (as ``OUT/inputs.json``
    records them, by role) and of the prepared text the parts read (``text/SPLIT.*``: the pieces and the kept
    lines' numbers; none for ``annotate``, whose inputs are that text), by file name."""
    return {"inputs": dict(sorted(input_sha.items())), "text": {p.name: file_sha256(p) for p in text}}


def refuse_other_split(path: Path, record: dict[str, Any], identity: dict[str, Any]) -> None:
    """Refuse a record made of other inputs or other prepared text than the split's now (a part of another corpus
    copied in, or a task pointed at another folder's inputs).

    Raises:
        InputError: names the record, the files that differ, and the fix.
    """
    got = record.get("identity")
    if got == identity:
        return
    if not isinstance(got, dict):
        what = "records no split identity"
    else:
        differ = sorted({f"--{k}" for k in set(got.get("inputs") or {}) | set(identity["inputs"])
                         if (got.get("inputs") or {}).get(k) != identity["inputs"].get(k)}
                        | {f"text/{k}" for k in set(got.get("text") or {}) | set(identity["text"])
                           if (got.get("text") or {}).get(k) != identity["text"].get(k)})
        what = f"was made of other data than this split's ({', '.join(differ) or 'its identity'} differ)"
    raise InputError(f"this part {what}: delete it (and its shards) and run that part again with this "
                     "folder's inputs", str(path))
