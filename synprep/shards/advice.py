"""What ``synprep check`` tells a user to do about a folder or split that is not whole yet: wait for the run
that writes it, run its parts and merge them, or run the stopped command again (which resumes it)."""

from __future__ import annotations

from pathlib import Path

from synprep.lock import SPLIT_RE, split_writer

#: the advice when nothing else is known (a reader's check, without the folder's state)
RESUME = "running the same command again resumes it"


def _writers(folder: Path, split: str | None) -> list[tuple[str, str]]:
    """``(split, who)`` of the live commands that write ``split`` (every split: None) into ``folder``."""
    names = [split] if split else sorted(p.name[1:-len(".lock")] for p in folder.glob(".*.lock"))
    return [(s, w) for s in names if SPLIT_RE.match(s) and (w := split_writer(folder, s))]


def incomplete_advice(folder: Path | None, split: str | None = None, *, shards: int | None = None) -> str:
    """The next step for an incomplete ``split`` of ``folder`` (or a folder without a manifest: ``split``
    None) that has ``shards`` shards listed.

    Returns:
        ``the train split is being written by pid …: wait for it to finish``; for a split made in parts
        (``OUT/.parts`` holds its records or locks), to merge them once every part has finished; for a
        split without a shard, the parts after ``--prepare-only`` or the stopped command; else
        :data:`RESUME`.
    """
    if folder is None:
        return RESUME
    busy = _writers(folder, split)
    if busy:
        return f"the {busy[0][0]} split is being written by {busy[0][1]}: wait for it to finish, then check again"
    if split is None:
        return RESUME
    parts = folder / ".parts"
    if any(parts.glob(f"{split}.part-*-of-*.*")):
        return (f"the {split} split is being made in parts ({parts}): once every part has finished, run the command "
                "with --merge-parts (docs/cluster.md)")
    if shards == 0:
        return ("after --prepare-only, run the parts (the same command with --part I/N for I = 1..N, then with "
                "--merge-parts); a run that stopped before its first shard resumes with the same command")
    return RESUME
