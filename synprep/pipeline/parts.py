"""Array parts: one split's shards made by ``N`` independent commands (``--part I/N``), e.g. the tasks of a
SLURM ``--array`` on machines that share the output folder, then made whole by one finishing command
(``--merge-parts``). docs/cluster.md is the recipe.

The steps that need the whole split (tokenize, clean, subwords, vocabulary, the split's manifest entry:
its input line count and the cleaning's drops) run once, with ``--prepare-only``; a part refuses to start
before them. Part ``I`` (1-based) of ``N`` makes the shards ``k`` (0-based) with ``k mod N == I - 1``: the
shards are the unit of work and shard ``k`` always holds the same pairs (:mod:`synprep.annotate`), so the
union of the ``N`` parts is exactly the split, and interleaving spreads a length-sorted corpus evenly.

Parts never write a shared file, so they need no lock that must work across machines (``flock`` on NFS
needs its lock service, and Lustre needs ``-o flock``): each part writes only its own shard files and its
own record ``OUT/.parts/SPLIT.part-I-of-N.json`` (the manifest entries of its shards and the drops of
their lines, and whether the part finished), rewritten atomically after each shard. A part re-run after a
kill reads its record back and skips the shards it lists whose files match (size and sha256). Each part
also takes ``OUT/.parts/SPLIT.part-I-of-N.lock`` where the filesystem has locks (two copies of one part
are refused), and goes on without it where it has none. ``--merge-parts`` adds every part's record to
``manifest.json``, writes the drop report, runs the split's check, and removes ``OUT/.parts``' files of the
split: the folder is then byte for byte the one a single run makes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synprep.constants import MANIFEST_NAME
from synprep.errors import ConfigError, InputError
from synprep.lock import (
    FolderBusy,
    _split_locks,
    claim,
    folder_lock,
    live_temp,
    lock_holder,
    split_writer,
)
from synprep.pipeline.part_records import check_record, refuse_other_split
from synprep.pipeline.part_records import (
    split_identity as split_identity,  # run.py and prepared.py call it here
)
from synprep.shards import Manifest
from synprep.shards.config import ShardConfig
from synprep.shards.manifest import SplitEntry
from synprep.shards.schema import parse_shard_name
from synprep.textio import atomic_write

log = logging.getLogger(__name__)

#: the folder of the parts' records (removed by ``--merge-parts`` once empty)
PARTS_DIR = ".parts"
#: the version of a part's record (``OUT/.parts/SPLIT.part-I-of-N.json``)
RECORD_VERSION = 2
_PART_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
_RECORD_RE = re.compile(r"^(?P<split>[A-Za-z0-9_-]+)\.part-(?P<i>\d+)-of-(?P<n>\d+)\.json$")


@dataclass(frozen=True)
class Part:
    """Part ``index`` (1-based) of ``count`` of a split: the shards ``k`` (0-based) with ``k mod count ==
    index - 1``."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Part:
        """``"2/3"`` → ``Part(2, 3)``.

        Raises:
            ConfigError: not ``I/N`` with integers ``1 <= I <= N``.
        """
        m = _PART_RE.match(str(text))
        if m is None or not 1 <= int(m[1]) <= int(m[2]):
            raise ConfigError(f"--part must be I/N with 1 <= I <= N (part I of N, e.g. 2/8), got {text!r}")
        return cls(int(m[1]), int(m[2]))

    def owns(self, k: int) -> bool:
        """Whether shard ``k`` (0-based) is this part's."""
        return k % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parts_dir(out: Path) -> Path:
    return Path(out) / PARTS_DIR


def record_path(out: Path, split: str, part: Part) -> Path:
    """``OUT/.parts/SPLIT.part-I-of-N.json``: what part ``I`` of ``N`` made so far."""
    return parts_dir(out) / f"{split}.part-{part.index}-of-{part.count}.json"


def lock_path(out: Path, split: str, part: Part) -> Path:
    """``OUT/.parts/SPLIT.part-I-of-N.lock``: held by the process that runs part ``I`` of ``N``."""
    return record_path(out, split, part).with_suffix(".lock")


def command_text(argv: list[str]) -> str:
    """``argv`` as a user types it (``synprep …``, the interpreter's path left out), shell-quoted."""
    if argv and (os.path.basename(argv[0]) == "synprep" or argv[0].endswith("__main__.py")):
        argv = ["synprep", *argv[1:]]
    return shlex.join(argv)


def with_part(argv: list[str], part: Part | None, *, prepare: bool = False) -> list[str]:
    """``argv`` with its ``--part``/``--prepare-only``/``--merge-parts`` replaced by ``--part I/N`` (``part``),
    ``--prepare-only`` (``prepare``) or nothing."""
    rest, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--part":
            skip = True
            continue
        if a.startswith("--part=") or a in ("--prepare-only", "--merge-parts"):
            continue
        rest.append(a)
    if part is not None:
        rest += ["--part", str(part)]
    if prepare:
        rest.append("--prepare-only")
    return rest


def require_prepared(out: Path, split: str, part: Part | None = None, shards: ShardConfig | None = None) -> None:
    """Refuse ``--part``/``--merge-parts`` before the split's whole-split steps ran (``--prepare-only``):
    ``manifest.json`` lists the split once they ran (a run saves the manifest only after its vocabulary); and
    a part of more parts than the split has shards of ``shards``' size (:func:`shard_count`).

    Raises:
        ConfigError: the split is not in ``OUT/manifest.json``; names the command to run first. ``N`` above
            the split's shard count.
    """
    path = Path(out) / MANIFEST_NAME
    prepared = False
    if path.is_file():
        prepared = split in Manifest.load(path).splits
    if not prepared:
        first = command_text(with_part(sys.argv, None, prepare=True))
        raise ConfigError(f"the {split} split of {out} is not prepared: run `{first}` once first (it tokenizes, "
                          "cleans and learns the subwords and the vocabulary of the whole split), then the parts")
    if part is not None and shards is not None:
        _refuse_more_parts_than_shards(out, split, part.count, shards.shard_size)


def shard_count(out: Path, split: str, shard_size: int) -> int:
    """How many shards the prepared split makes: its pairs kept by the cleaning (its input lines less the
    cleaning's drops, ``manifest.json``) in shards of ``shard_size``; at least 1."""
    entry = Manifest.load(Path(out) / MANIFEST_NAME).split(split)
    kept = entry.input_lines - sum(n for r, n in entry.dropped.items() if str(r).startswith("clean:"))
    return max(1, -(-kept // max(1, shard_size)))


def _refuse_more_parts_than_shards(out: Path, split: str, count: int, shard_size: int) -> None:
    """A shard is the unit of work: N above the split's shard count makes parts with nothing to do.

    Raises:
        ConfigError: names the bound.
    """
    k = shard_count(out, split, shard_size)
    if count > k:
        raise ConfigError(f"--part I/{count}: the {split} split of {out} has {k} shard(s) of {shard_size} pairs, "
                          f"so it is made in at most {k} parts: use N <= {k}")


def hold_part(out: Path, split: str, part: Part) -> None:
    """Take ``OUT/.parts/SPLIT.part-I-of-N.lock`` for the rest of the current :func:`synprep.lock.writer` call.

    On a filesystem without file locks the part runs without it (the parts share no file; only two copies
    of the same part at once would collide, as two copies of one array task).

    Raises:
        FolderBusy: another live process runs this part (named in the message).
    """
    path = lock_path(out, split, part)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = claim(path, f"part {part} of the {split} split of {out} is being run by {{owner}}: wait for it to finish "
                     "(running the same command afterwards resumes)", without_locks=True, split=split, part=str(part))
    held = _split_locks.get()
    if fd is not None and held is not None:
        held.fds.append(fd)  # released when the writer call returns; else when the process ends


def sweep_part_temps(out: Path, split: str, part: Part) -> None:
    """Remove the temporary files a killed run of this part left: those of its own shards and record whose
    writer is gone from this host (another part's, maybe on another machine, are never touched)."""
    for p in Path(out).glob(f".{split}.*.h5.pid*.tmp"):
        name = p.name[1:p.name.index(".pid")]
        parsed = parse_shard_name(name)
        if parsed is not None and parsed[0] == split and part.owns(parsed[1]) and not live_temp(p):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
    own = record_path(out, split, part).name
    for p in parts_dir(out).glob(f".{own}.pid*.tmp"):
        if not live_temp(p):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()


def _read_record(path: Path) -> dict[str, Any]:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(d, dict) or d.get("version") != RECORD_VERSION:
            raise ValueError(f"not a part record of version {RECORD_VERSION}")
        d["entry"] = SplitEntry.from_dict(d["entry"])
        return d
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"not a readable part record ({e}): delete it to run that part again", str(path)) from None


def _add(manifest: Manifest, split: str, entry: SplitEntry) -> None:
    """A part's shards, their alignment counts and drops (with its declared reasons) added to ``manifest``."""
    manifest.declare_reasons(split, list(entry.dropped))
    for info in entry.shards:
        manifest.add_shard(split, info)
    for file, counts in entry.alignment.items():
        manifest.set_alignment(split, file, counts)
    manifest.record_drops(split, [(int(x[0]), str(x[1]), str(x[2])) for x in entry.dropped_lines])


def resume_part(out: Path, split: str, part: Part, manifest: Manifest, identity: dict[str, Any]) -> None:
    """What an earlier run of this part recorded, added to ``manifest`` (its shards are then skipped when their
    files match).

    Raises:
        InputError: the record is unreadable, or was made of other data (:func:`split_identity`).
    """
    path = record_path(out, split, part)
    if path.is_file():
        record = _read_record(path)
        check_record(path, record, part, split)
        refuse_other_split(path, record, identity)
        _add(manifest, split, record["entry"])


def save_part(out: Path, split: str, part: Part, manifest: Manifest, complete: bool,
              identity: dict[str, Any]) -> None:
    """Write this part's record: the split's entry as this part knows it, its shards and the drops of its lines
    (the cleaning's drops are left out: they are the prepared entry's, in ``manifest.json``; a large corpus's
    would be rewritten after every shard of every part), and whether every shard of the part is done. Atomic; no
    lock (no other process writes it)."""
    entry = manifest.split(split).to_dict()
    entry["dropped_lines"] = [x for x in entry["dropped_lines"] if not str(x[1]).startswith("clean:")]
    d = {"version": RECORD_VERSION, "split": split, "part": part.index, "parts": part.count, "complete": complete,
         "command": command_text(sys.argv), "identity": identity, "entry": entry}
    path = record_path(out, split, part)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as f:
        f.write(json.dumps(d, sort_keys=True, indent=2, ensure_ascii=False) + "\n")


@dataclass(frozen=True)
class Finished:
    """Every part of a split, finished (:func:`finished_parts`): their records' entries, and the parts' files
    that ``--merge-parts`` removes once the merged split passed its check (records and lock files)."""

    entries: list[SplitEntry]
    files: list[Path]
    records: list[dict[str, Any]]


def _running(out: Path, split: str, part: Part) -> str | None:
    """Who runs ``part`` now (its lock held: ``pid 123 on host h (...)``), or None (or no file locks here)."""
    return lock_holder(lock_path(out, split, part))


def _part_records(out: Path, split: str) -> tuple[dict[int, dict[str, Any]], set[int]]:
    """The split's part records by part number, and the ``N`` s they name."""
    records: dict[int, dict[str, Any]] = {}
    counts: set[int] = set()
    for p in sorted(parts_dir(out).glob(f"{split}.part-*-of-*.json")):
        m = _RECORD_RE.match(p.name)
        if m is None or m["split"] != split:
            continue
        counts.add(int(m["n"]))
        records[int(m["i"])] = {**_read_record(p), "path": p}
    return records, counts


#: how many parts that are missing a refused merge names, with their commands (the rest are counted)
NAMED_MISSING = 5


def _missing_text(out: Path, split: str, records: dict[int, dict[str, Any]], n: int) -> str | None:
    """What a merge says of the parts that have not finished (None: all have): the first few named with the
    command that runs them, the rest counted. Never lists every part number (``N`` may be large)."""
    done = sum(1 for i, r in records.items() if 1 <= i <= n and r["complete"])
    if done == n:
        return None
    unfinished = sorted(i for i, r in records.items() if not r["complete"])
    named = unfinished[:NAMED_MISSING]
    for i in range(1, n + 1):  # the first parts never run, without building the list of every part
        if len(named) >= NAMED_MISSING:
            break
        if i not in records:
            named.append(i)
    named.sort()
    some = next(iter(records.values()), {"command": command_text(with_part(sys.argv, None))})
    runs = []
    for i in named:
        who = _running(out, split, Part(i, n)) if i in records else None
        if who is not None:
            runs.append(f"part {i} of {n} is still running ({who}): wait for it")
        elif i in records:
            runs.append(f"part {i} of {n} has not finished (running it again resumes it): "
                        f"`{command_text(with_part(shlex.split(records[i]['command']), Part(i, n)))}`")
        else:
            runs.append(f"part {i} of {n} has not run: "
                        f"`{command_text(with_part(shlex.split(some['command']), Part(i, n)))}`")
    more = n - done - len(named)
    if more > 0:
        runs.append(f"and {more} more part(s) of {n} have not finished")
    return f"the {split} split of {out} is not whole: " + "; ".join(runs) + "; then run this command again"


def finished_parts(out: Path, split: str, shards: ShardConfig | None = None) -> Finished:
    """The records of every part of ``split``, checked to be all there and finished: before the merge touches
    anything (it then removes the temporary files of no live process here, which a running part's would be).

    Raises:
        ConfigError: no part ran; records of different ``N``, or of more parts than the split has shards; a part
            that has not finished (the first few named by number, with the command that runs it: its own recorded
            command when it started, resuming it; or the process that runs it now; the rest counted).
        InputError: a record that is unreadable or does not hold what its part makes (named).
    """
    records, counts = _part_records(out, split)
    here = with_part(sys.argv, None)
    if not records:
        raise ConfigError(f"no part of the {split} split of {out} has run (nothing in {parts_dir(out)}): run "
                          f"`{command_text(here)} --part I/N` for I = 1..N first")
    if len(counts) > 1:
        raise ConfigError(f"{parts_dir(out)} holds parts of the {split} split for different N ("
                          f"{', '.join(map(str, sorted(counts)))}): keep the records of one N")
    n = counts.pop()
    records = {i: r for i, r in records.items() if 1 <= i <= n}  # a stray part-5-of-3 is none of them
    if shards is not None:
        _refuse_more_parts_than_shards(out, split, n, shards.shard_size)
    missing = _missing_text(out, split, records, n)
    if missing:
        raise ConfigError(missing)
    for i, r in records.items():
        check_record(r["path"], r, Part(i, n), split)
    ordered = [records[i] for i in range(1, n + 1)]
    locks = sorted(parts_dir(out).glob(f"{split}.part-*-of-*.lock"))
    for p in locks:  # removed after the merge: refused now rather than failing then, with the split merged
        if p.is_symlink() or not p.is_file():
            raise ConfigError(f"{p} is not a part's lock file: remove it, then run this command again")
    return Finished([r["entry"] for r in ordered], [r["path"] for r in ordered] + locks, ordered)


def parts_note(out: Path) -> str | None:
    """What ``synprep check`` adds to a failure where splits are being made in parts (``OUT/.parts`` holds their
    records): per split, how many of its N parts have finished, and that ``--merge-parts`` adds their shards to the
    manifest (until then a part's shard is "not listed in the manifest"); None without part records."""
    splits: dict[str, tuple[int, set[int]]] = {}
    for p in sorted(parts_dir(out).glob("*.part-*-of-*.json")):
        m = _RECORD_RE.match(p.name)
        if m is None:
            continue
        n, done = splits.get(m["split"], (int(m["n"]), set()))
        try:
            if _read_record(p)["complete"]:
                done.add(int(m["i"]))
        except InputError:
            pass
        splits[m["split"]] = (max(n, int(m["n"])), done)
    if not splits:
        return None
    said = "; ".join(f"the {split} split is being made in {n} parts ({len(done)} finished)"
                     for split, (n, done) in splits.items())
    return (f"{said} ({parts_dir(out)}): its shards join manifest.json when the command runs with --merge-parts "
            "once every part has finished (docs/cluster.md)")


def merge_parts_into(manifest: Manifest, split: str, parts: Finished, identity: dict[str, Any]) -> list[Path]:
    """Every finished part's shards, alignment counts and drops added to ``manifest``; returns the parts' files
    to remove once the merged split passed its check.

    Raises:
        InputError: a part made of other data than the split's now (:func:`split_identity`), named.
    """
    for record in parts.records:
        refuse_other_split(record["path"], record, identity)
    for entry in parts.entries:
        _add(manifest, split, entry)
    return parts.files


def remove_records(out: Path, files: list[Path]) -> None:
    """Remove the merged parts' files, and ``OUT/.parts`` once it is empty."""
    for p in files:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
    with contextlib.suppress(OSError):
        parts_dir(out).rmdir()  # not empty: another split's parts


def refuse_split_writer(out: Path, split: str) -> None:
    """A part does not start while a command without ``--part`` writes the split (it would make the same shards).

    Raises:
        FolderBusy: names that command.
    """
    who = split_writer(out, split)
    if who is not None:
        raise FolderBusy(f"the {split} split of {out} is being written by {who}: a part starts once it has ended")


def refuse_beside_parts(out: Path, split: str) -> None:
    """A command without ``--part`` (a whole run, ``--prepare-only``, ``--merge-parts``) does not write a split
    while a part of it runs: it would write the same shards, or the text and vocabulary the part reads. Called
    once the split lock is held, so no part starts meanwhile (:func:`refuse_split_writer`).

    Raises:
        FolderBusy: names the running part and its process.
    """
    for path in sorted(parts_dir(out).glob(f"{split}.part-*-of-*.lock")):
        m = _RECORD_RE.match(path.with_suffix(".json").name)  # the lock is named as the part's record
        if m is None or m["split"] != split:
            continue
        who = lock_holder(path)
        if who is not None:
            raise FolderBusy(f"part {m['i']}/{m['n']} of the {split} split of {out} is being run by {who}: a command "
                             "without --part writes the split once every part has ended (--merge-parts joins them)")


def save_prepared(out: Path, split: str, manifest: Manifest, reasons: list[str]) -> Manifest:
    """``--prepare-only``'s end: the split's manifest entry (its input lines, the cleaning's drops, the drop
    ``reasons`` of the later stages declared as a run declares them) saved, which is what
    :func:`require_prepared` looks for."""
    manifest.declare_reasons(split, reasons)
    with folder_lock(out):
        manifest.save(out)
    return manifest


def skip_others(part: Part | None, shards: ShardConfig) -> Callable[[int], bool] | None:
    """:func:`synprep.annotate.items_from_files`' ``skip`` for a part: True for the pairs of the shards other parts
    make (pair ``i`` belongs to shard ``i // shards.shard_size``), which it then never builds; None without a part."""
    if part is None:
        return None
    size = shards.shard_size
    return lambda i: not part.owns(i // size)


def annotate_hooks(out: Path, split: str, part: Part | None, identity: dict[str, Any]) -> dict[str, Any]:
    """The arguments of :func:`synprep.annotate.annotate_split` that make one part (none without a part): the
    shards it owns, and its record (with the split's ``identity``) saved after each instead of
    ``manifest.json``."""
    if part is None:
        return {}
    return {"shards": part.owns,
            "save": lambda manifest, complete: save_part(out, split, part, manifest, complete, identity)}


def refuse_other_count(out: Path, split: str, part: Part) -> None:
    """A part does not run beside the records of another ``N`` (an array job of another size): the merge would
    refuse them all after the parts' work.

    Raises:
        ConfigError: naming the other ``N``, its record files and how to remove them.
    """
    other = sorted(p for p in parts_dir(out).glob(f"{split}.part-*-of-*.*")
                   if (m := _RECORD_RE.match(p.with_suffix(".json").name)) and m["split"] == split
                   and int(m["n"]) != part.count)
    if other:
        n = _RECORD_RE.match(other[0].with_suffix(".json").name)["n"]  # type: ignore[index]
        raise ConfigError(f"part {part}: {parts_dir(out)} holds part(s) of the {split} split in {n} parts "
                          f"({', '.join(p.name for p in other)}): run --part I/{n}, or remove them "
                          f"(rm {parts_dir(out)}/{split}.part-*-of-{n}.*) to make the split in {part.count} parts")


def already_merged(out: Path, split: str) -> bool:
    """Whether ``split`` is whole in ``OUT/manifest.json`` with no part record left: its parts were merged
    (a part run again, as a re-queued array task, has nothing to do)."""
    path = Path(out) / MANIFEST_NAME
    if not path.is_file() or any(parts_dir(out).glob(f"{split}.part-*-of-*.json")):
        return False
    try:
        entry = Manifest.load(path).splits.get(split)
    except (InputError, ValueError, OSError):
        return False
    return bool(entry is not None and entry.shards
                and entry.input_lines == entry.pairs + sum(entry.dropped.values()))
