"""The GPU benchmarks' contract (benchmarks/gpu_suite.sh runs them on a GPU machine):
``--device DEV [--small]``, one JSON object per line per figure; ``--small --device cpu`` is a smoke run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(script: str) -> list[dict]:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--device", "cpu", "--small"],
                          capture_output=True, text=True, cwd=ROOT, check=True, timeout=900)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_bench_train_gpu_small_on_the_cpu():
    rows = _run("bench_train_gpu.py")
    figures = [r["figure"] for r in rows]
    assert figures == ["train_tokens_per_s", "update_profile"] * 2 + ["batch_split", "real_loop_tokens_per_s"]
    assert [r["preset"] for r in rows[:4:2]] == ["vanilla_iwslt14_de_en", "gated_iwslt14_de_en"]
    assert all(r["device"] == "cpu" and r["dtype"] == "fp32" for r in rows)
    assert all(r["tokens_per_s"] > 0 for r in rows if r["figure"] == "train_tokens_per_s")
    prof = [r for r in rows if r["figure"] == "update_profile"]
    assert all(0 < p["host_s_per_update"] and p["device_s_per_update"] is None for p in prof)
    assert set(rows[4]["tokens_per_s"]) == {"1024x1", "512x2"}
    assert rows[5]["tokens_per_s"] > 0 and rows[5]["ratio"] > 0
    # 300 synthetic pairs (seed 0) make 14 batches of 1024 tokens; --small runs 6 updates, before any capture
    assert (rows[5]["updates"], rows[5]["batches_per_epoch"], rows[5]["interval_after_captures"]) == (6, 14, False)


def test_the_real_loop_is_measured_after_the_captures():
    """The real loop's length: whole intervals, the last one after epochs 1 (eager) and 2 (captures)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_train_gpu import loop_updates
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert loop_updates(55, 100) == 300  # 200 updates of 55 batches an epoch: updates 101-200 hold captures to 110
    assert loop_updates(50, 100) == 200  # captures end with update 100: the interval 101-200 is all replays
    assert loop_updates(51, 100) == 300
    assert loop_updates(14, 3) == 33


def test_bench_train_gpu_graphs_say_they_need_cuda():
    """``--graphs`` on the CPU: the cuda_graphs figure says why it did not run (the trainer refuses the
    option there), and the real loops with and without graphs are not run."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_train_gpu.py"), "--device", "cpu", "--small",
                           "--graphs-only"], capture_output=True, text=True, cwd=ROOT, check=True, timeout=900)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["figure"], r["preset"], r["skipped"]) for r in rows] == [
        ("cuda_graphs", p, "CUDA graphs need CUDA") for p in ("vanilla_iwslt14_de_en", "gated_iwslt14_de_en")]


def test_bench_translate_small_on_the_cpu():
    rows = _run("bench_translate.py")
    assert [(r["figure"], r.get("decoder")) for r in rows] == [("translate", "reference"), ("translate", "batched"),
                                                                ("translate_speedup", None)]
    assert rows[2]["identical"] is True and rows[2]["sentences"] == 64 and rows[2]["beam"] == 5
    assert all(r["sentences_per_s"] > 0 for r in rows[:2])


def test_bench_translate_versions_small_against_this_checkout():
    """The cross-version translate benchmark's machinery (baseline = this checkout): the baseline's code
    trains the checkpoint, every run reads it and decodes the same sentences, -j included, and the
    comparison says the hypotheses are the same."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_translate_versions.py"), "--baseline",
                           str(ROOT), "--small", "--jobs", "2", "--threads", "1"],
                          capture_output=True, text=True, cwd=ROOT, check=True, timeout=900)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["figure"], r.get("run")) for r in rows] == [("translate_version", "baseline"),
                                                            ("translate_version", "now -j 1"),
                                                            ("translate_version", "now -j 2"),
                                                            ("translate_versions", None)]
    assert len({r["hypotheses_sha256"] for r in rows[:3]}) == 1 and rows[3]["identical"] is True
    assert all(r["sentences_per_s"] > 0 for r in rows[:3]) and rows[3]["sentences"] == 24
    assert set(rows[3]["vs_baseline"]) == {"now -j 1", "now -j 2"}
