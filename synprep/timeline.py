"""Milestones of one command's run, in seconds since its process started: where the wall time goes.

``annotate`` on IWSLT14 test (6750 pairs) spent 19-24 s outside its parse on a 16-core GPU machine and about
10 s on a 2-core one (docs/parse.md), with no record of where. ``annotate`` and ``pipeline`` mark
their milestones (:func:`mark`) and print them in one line at their end (:func:`line`)::

    timeline: command 1.34 · inputs checked 2.37 · parser identity 5.21 · vocabulary 5.39 · warm-up done 5.75
    · workers ready 5.76 · parsed 1-6750 63.78 · records test.00000.h5 67.58 · shard test.00000.h5 67.83
    · check 67.99 · workers released 68.09 (s since the process started)

The start is the process's creation time as the kernel records it (``psutil``), so the first mark includes
the interpreter's start-up and the imports; psutil adds it to the boot time, which ``/proc/stat`` gives in
whole seconds, so every mark of a line may be off by the same fraction of a second (the differences are exact). The line gives the marks in time order; a
name may repeat (one per split, block or shard). Marks come from the main thread and from the parse's
helper threads (the warm-up's ``warm-up done``, a streamed parse's ``parsed``): ``list.append`` is atomic.
The warm-up also marks its workers' phases, at the times the workers report (``warm: processes started``,
``warm: calls begun``, ``warm: imports done``, ``warm: parsers loaded``: each its last worker's) and
``warm: records pool ready`` (:mod:`synprep.parse.warming`).
The CLI commands :func:`reset` the marks when they start; the Python API only adds to them.
"""

from __future__ import annotations

import time

_start: float | None = None
_marks: list[tuple[str, float]] = []


def process_start() -> float:
    """This process's creation time (seconds since the epoch, ``time.time()``'s clock; its base, the boot time, in
    whole seconds)."""
    global _start
    if _start is None:
        import psutil

        _start = psutil.Process().create_time()
    return _start


def mark(name: str, at: float | None = None) -> float:
    """Record milestone ``name`` now, or at ``at`` (``time.time()``'s clock: a worker process's time, which the
    warm-up reports); returns its time in seconds since the process started."""
    t = (time.time() if at is None else at) - process_start()
    _marks.append((name, t))
    return t


def marks() -> list[tuple[str, float]]:
    """The milestones so far: (name, seconds since the process started), in the order made."""
    return list(_marks)


def reset() -> None:
    """Forget the milestones (a command run in process more than once, as the tests do)."""
    _marks.clear()


def line() -> str | None:
    """``timeline: command 1.31 · inputs checked 1.52 · … (s since the process started)``, in time order (marks
    of equal times in the order made); None without marks."""
    if not _marks:
        return None
    ordered = sorted(_marks, key=lambda m: m[1])
    return "timeline: " + " · ".join(f"{n} {t:.2f}" for n, t in ordered) + " (s since the process started)"


def parse_line(text: str) -> dict[str, float] | None:
    """The milestones of the last ``timeline:`` line in ``text`` (a command's stderr): name → seconds; a repeated
    name keeps its last time. None when there is no such line (benchmarks/gpu_suite.py reads it)."""
    found = [ln for ln in text.splitlines() if "timeline: " in ln]
    if not found:
        return None
    body = found[-1].split("timeline: ", 1)[1].rsplit(" (s since", 1)[0]
    out: dict[str, float] = {}
    for part in body.split(" · "):
        name, _, t = part.rpartition(" ")
        out[name] = float(t)
    return out
