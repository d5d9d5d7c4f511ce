"""A resumed run's intermediate text (``OUT/text/SPLIT.*``) checked for what each stage reading it relies on, before
any stage reads it: a damaged file (cut, extended, a line number that is not one) is one line naming it and the fix,
never a traceback from deep inside a later stage, nor an error blamed on the user's input.

What holds for every file a finished stage wrote (atomically, so a file is there only whole): ``SPLIT.tok.*`` has
one line per input line; ``SPLIT.lines`` holds the input line numbers of the pairs the cleaning kept, increasing,
in ``1..N``; every other file of the split (cleaned, lowercased, subword pieces and their word index, the kept raw
text) has one line per kept pair; ``SPLIT.dropped.tsv`` is its header then ``line<TAB>reason<TAB>…`` rows of input
line numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from synprep.errors import InputError
from synprep.pipeline.folder import TextFiles
from synprep.textio import count_lines, iter_lines

Refuse = Callable[[Path, str, int | None], NoReturn]


def check_intermediates(files: TextFiles, n_input: int) -> None:
    """Refuse a damaged intermediate file of the split (those that exist; a missing one is made again).

    Args:
        files: the split's intermediate files.
        n_input: the split's input lines (both sides have as many: checked before).

    Raises:
        InputError: ``FILE[:LINE]: what is wrong: delete OUT/text/SPLIT.* (or the folder) and run the command
            again``.
    """
    fix = f"delete {files.work}/{files.split}.* (or the folder {files.work.parent}) and run the command again"

    def refuse(path: Path, what: str, line: int | None = None) -> NoReturn:
        raise InputError(f"{what}: a damaged intermediate file of the {files.split} split; {fix}", str(path), line)

    kept = _check_lines(files.lines, n_input, refuse) if files.lines.is_file() else None
    for p in sorted(files.work.glob(f"{files.split}.*")):
        if p in (files.lines, files.dropped) or p.name.startswith(".") or not p.is_file():
            continue
        stage = p.name[len(files.split) + 1:].split(".")[0]
        want, per = (n_input, "input line") if stage == "tok" else (kept, f"pair {files.lines.name} keeps")
        try:
            n = count_lines(p)
        except InputError as e:
            refuse(p, e.reason)
        if want is not None and n != want:
            refuse(p, f"has {n} lines, expected {want} (one per {per})")
    if files.dropped.is_file():
        _check_report(files.dropped, n_input, refuse)


def _check_lines(path: Path, n_input: int, refuse: Refuse) -> int:
    """The number of kept pairs ``SPLIT.lines`` lists, its numbers checked."""
    last, n = 0, 0
    for n, text in enumerate(iter_lines(path), 1):
        if not text.strip().isdigit() or not last < int(text) <= n_input:
            refuse(path, f"{text[:20]!r} is not an input line number above {last} and at most {n_input}", n)
        last = int(text)
    return n


def _check_report(path: Path, n_input: int, refuse: Refuse) -> None:
    """``SPLIT.dropped.tsv``: its rows hold an input line number and a reason."""
    for i, row in enumerate(iter_lines(path), 1):
        if i == 1:
            continue  # the header
        cols = row.split("\t")
        if len(cols) < 4 or not cols[0].isdigit() or not 1 <= int(cols[0]) <= n_input or not cols[1]:
            refuse(path, f"row {row[:40]!r} is not line<TAB>reason<TAB>source tokens<TAB>target tokens", i)
