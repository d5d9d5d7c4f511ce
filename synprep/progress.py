"""Progress of a long step: a tqdm bar with ETA on a terminal, a periodic log line otherwise.

The parse is the longest step of ``pipeline``/``annotate`` (hours on a large corpus). On a
terminal, :class:`Progress` draws a tqdm bar on stderr; into a log file (stderr not a terminal),
where a bar would write thousands of carriage returns, it logs one line every
:data:`LOG_EVERY_S` seconds instead::

    synprep: parse train: 12000/160239 lines (7%), 41.3 lines/s, ETA 59m46s

With ``-q`` (log level above INFO) it shows nothing. The position is a line number of the input
(1-based, counting every input line, kept or dropped), so the total is known before the work
starts and a resumed run starts where the finished shards end; the rate and the ETA count only
the work done in this run (:meth:`Progress.skip_to` moves without counting).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import IO, Any

log = logging.getLogger("synprep")

#: seconds between two log lines when stderr is not a terminal
LOG_EVERY_S = 30.0


def format_duration(seconds: float) -> str:
    """``3h02m``, ``4m05s``, ``12s`` (seconds rounded down)."""
    s = int(max(seconds, 0))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    """Progress over ``total`` units (input lines).

    Args:
        total: the number of units (``>= 0``).
        desc: what is being done (``"parse train"``).
        unit: the unit's name, plural (``"lines"``).
        file: where the bar goes (default: ``sys.stderr``); a bar is drawn only when it is a terminal.
        every: seconds between two log lines when no bar is drawn (default :data:`LOG_EVERY_S`).
        clock: a monotonic clock in seconds (tests pass their own).

    Use as a context manager; :meth:`update_to` and :meth:`skip_to` take absolute positions.
    """

    def __init__(self, total: int, desc: str, unit: str = "lines", *, file: IO[str] | None = None,
                 every: float | None = None, clock: Callable[[], float] = time.monotonic):
        self.total = max(int(total), 0)
        self.desc = desc
        self.unit = unit
        self.file = file if file is not None else sys.stderr
        self.every = LOG_EVERY_S if every is None else every
        self.clock = clock
        self.n = 0.0
        self._base: float | None = None  # position and time where this run's work began
        self._t0 = 0.0
        self._last_log = 0.0
        self._bar: Any = None
        self.enabled = log.isEnabledFor(logging.INFO)
        isatty = getattr(self.file, "isatty", None)
        self.tty = bool(isatty and isatty())

    def skip_to(self, n: float) -> None:
        """Move to ``n`` without counting it as work done (finished shards of a resumed run)."""
        self.n = min(max(n, self.n), self.total)

    def update_to(self, n: float) -> None:
        """Work done up to position ``n`` (clipped to ``[current, total]``)."""
        if self._base is None:
            self._base, self._t0 = self.n, self.clock()
            self._last_log = self._t0
            if self.enabled and self.tty:
                from tqdm import tqdm

                self._bar = tqdm(total=self.total, initial=int(self.n), desc=self.desc, unit=f" {self.unit}",
                                 file=self.file, leave=False, dynamic_ncols=True)
        self.n = min(max(n, self.n), self.total)
        if self._bar is not None:
            self._bar.update(int(self.n) - self._bar.n)
        elif self.enabled:
            now = self.clock()
            if now - self._last_log >= self.every:
                self._last_log = now
                log.info("%s", self.line(now))

    def block(self, start: float, end: float) -> Callable[[int, int], None]:
        """A ``(done, total)`` callback that moves from ``start`` to ``end`` as ``done`` grows to ``total``
        (the sentences of one parse block over its input lines)."""

        def report(done: int, total: int) -> None:
            self.update_to(start + (end - start) * (done / total if total else 1.0))

        return report

    def line(self, now: float | None = None) -> str:
        """``parse train: 12000/160239 lines (7%), 41.3 lines/s, ETA 59m46s``."""
        now = self.clock() if now is None else now
        pct = 100.0 * self.n / self.total if self.total else 100.0
        text = f"{self.desc}: {int(self.n)}/{self.total} {self.unit} ({pct:.0f}%)"
        if self._base is not None and now > self._t0 and self.n > self._base:
            rate = (self.n - self._base) / (now - self._t0)
            text += f", {rate:.1f} {self.unit}/s, ETA {format_duration((self.total - self.n) / rate)}"
        return text

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
