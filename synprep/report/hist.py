"""Fixed-size counters for the report: memory does not grow with the corpus.

:class:`IntHist` counts non-negative integers in bins ``0, 1, …, cap-1`` plus one overflow bin
``>= cap``; :class:`FloatHist` counts floats in ``bins`` equal bins over ``[lo, hi]`` (values
outside are clipped into the end bins). Both keep the exact count, sum and maximum as well, so a
mean is exact whatever the bins.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class IntHist:
    """Counts of non-negative integers, exact below ``cap``, the rest in one overflow bin.

    Attributes:
        cap: first value counted in the overflow bin.
        counts: ``(cap + 1,) int64``.
        n: how many values (overflow included).
        total: their exact sum (overflow included).
        max: the largest value (exact, overflow included).
    """

    def __init__(self, cap: int):
        self.cap = int(cap)
        self.counts = np.zeros(self.cap + 1, dtype=np.int64)
        self.n = 0
        self.total = 0
        self.max = 0

    def add(self, values: np.ndarray) -> None:
        """Count ``values`` (any integer array; negative values are a ValueError)."""
        v = np.asarray(values, dtype=np.int64).ravel()
        if not v.size:
            return
        if int(v.min()) < 0:
            raise ValueError("IntHist counts non-negative integers")
        self.counts += np.bincount(np.minimum(v, self.cap), minlength=self.cap + 1)
        self.n += int(v.size)
        self.total += int(v.sum())
        self.max = max(self.max, int(v.max()))

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else 0.0

    def quantile(self, q: float) -> int:
        """The smallest value with at least ``q`` of the counts at or below it (``cap`` for the overflow)."""
        if not self.n:
            return 0
        return int(np.searchsorted(np.cumsum(self.counts), q * self.n))

    def to_json(self) -> dict[str, Any]:
        """``{n, mean, max, median, p95, counts}``: ``counts[k]`` = how many values equal ``k``; the last
        entry counts the values ``>= cap`` (trailing zero bins trimmed, the overflow bin always kept)."""
        body = self.counts[:-1]
        nz = np.flatnonzero(body)
        last = int(nz[-1]) + 1 if nz.size else 0
        return {"n": self.n, "mean": round(self.mean, 4), "max": self.max, "median": self.quantile(0.5),
                "p95": self.quantile(0.95), "cap": self.cap,
                "counts": body[:last].tolist(), "overflow": int(self.counts[-1])}


class FloatHist:
    """Counts of floats in ``bins`` equal bins over ``[lo, hi]`` (out-of-range values clipped in).

    Attributes:
        edges: ``(bins + 1,)`` float64.
        counts: ``(bins,) int64``.
        n: how many values.
        total: their exact sum.
    """

    def __init__(self, lo: float, hi: float, bins: int):
        self.edges = np.linspace(lo, hi, bins + 1)
        self.counts = np.zeros(bins, dtype=np.int64)
        self.n = 0
        self.total = 0.0

    def add(self, values: np.ndarray) -> None:
        v = np.asarray(values, dtype=np.float64).ravel()
        if not v.size:
            return
        k = np.clip(np.searchsorted(self.edges, v, side="right") - 1, 0, len(self.counts) - 1)
        self.counts += np.bincount(k, minlength=len(self.counts))
        self.n += int(v.size)
        self.total += float(v.sum())

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "mean": round(self.mean, 6), "edges": [round(float(e), 6) for e in self.edges],
                "counts": self.counts.tolist()}
