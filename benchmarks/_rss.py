"""Peak resident memory of a process tree, for the benchmarks (psutil, sampled in a thread)."""

from __future__ import annotations

import os
import threading
import time

import psutil


class PeakRSS:
    """Peak summed RSS of a process and all its descendants (worker pools included).

    Use as a context manager; ``peak`` is in bytes. ``pid`` defaults to this process.
    """

    def __init__(self, pid: int | None = None, interval: float = 0.05):
        self.pid = pid or os.getpid()
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self._stop.is_set():
            total = 0
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                break
            for p in procs:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            time.sleep(self.interval)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
