"""benchmarks/bench_translate.py ``--timing batch`` (batches timed alone, the decoders alternating, per-batch
bests summed) produces the same figures as whole rounds, and both decoders' hypotheses over every batch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_translate_timing_batch_small_on_the_cpu():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_translate.py"), "--device", "cpu", "--small",
                           "--timing", "batch", "--clock", "cpu", "--max-tokens", "512"],
                          capture_output=True, text=True, cwd=ROOT, check=True, timeout=900)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["figure"], r.get("decoder")) for r in rows] == [("translate", "reference"), ("translate", "batched"),
                                                                ("translate_speedup", None)]
    assert all(r["timing"] == "batch" and r["clock"] == "cpu" and r["sentences"] == 64 for r in rows)
    assert rows[2]["identical"] is True  # the hypotheses of every batch, reassembled in batch order
    assert all(r["sentences_per_s"] > 0 for r in rows[:2])
