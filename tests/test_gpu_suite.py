"""benchmarks/gpu_suite.sh runs every figure end to end, here on the CPU at tiny sizes.

On the CPU the "device" is the CPU, so the GPU/CPU difference figure must be exactly zero: the same
lines in the same batches parse to the same bytes on one device kind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT

pytestmark = pytest.mark.slow


def test_gpu_suite_on_the_cpu_prints_every_figure(shared_data, stanza_dir):
    env = {**os.environ, "PY": sys.executable, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_suite.sh"), "--device", "cpu", "--small",
                           "--shared", str(shared_data.parent)], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = {}
    for line in proc.stdout.splitlines():
        obj = json.loads(line)  # every stdout line is one JSON object
        figures.setdefault(obj["figure"], obj)
    errors = {k: v["error"] for k, v in figures.items() if "error" in v}
    assert errors == {}
    speed = figures["parse_speed"]
    assert speed["device"] == "cpu" and speed["decoder"] == "compiled"
    assert speed["lines"] == 12 and speed["sentences"] >= 12 and speed["words"] > speed["sentences"]
    assert speed["cpu_one_core"]["lines"] == 6 and speed["speedup_vs_one_core"] > 0
    # the device side ran pipelined (forward here, decode in the pool), the one-core side did not
    assert speed["pipelined"] is True and speed["cpu_one_core"]["pipelined"] is False
    assert speed["forward_seconds"] > 0 and speed["decode_seconds"] > 0 and speed["gpu_busy_fraction"] is None
    assert figures["gpu_utilization"] == {"figure": "gpu_utilization", "skipped": "device cpu"}
    diff = figures["gpu_cpu_difference"]
    assert diff["same_words"] and diff["sentences"] >= 6
    assert (diff["heads"], diff["deprels"], diff["upos"]) == (0, 0, 0)
    assert diff["ldd_entries_device"] == diff["ldd_entries_cpu"] > diff["words"]
    ann = figures["annotate"]
    assert ann["lines"] == 10 and ann["device_seconds"] > 0 and ann["cpu_seconds"] > 0
    assert ann["device_pipelined"] is True and ann["gpu_busy_fraction"] is None
    assert ann["device_stages"]["decode_seconds"] > 0 and ann["cpu_stages"]["forward_seconds"] > 0
    for name, tl in ann["timelines"].items():  # each variant's milestones, within its wall seconds
        warm = {k: tl.pop(k) for k in list(tl) if k.startswith("warm")}  # the warm-up's: whenever they happen
        assert warm.get("warm-up done", 0) <= tl["workers ready"]
        assert all(t <= warm.get("warm-up done", 0) for t in warm.values())
        assert list(tl)[:2] == ["command", "inputs checked"] and list(tl)[-2:] == ["check", "workers released"]
        assert 0 < tl["workers ready"] < tl["parsed 1-10"] <= tl["shard test.00000.h5"] <= ann["seconds"][name] + 1
    for script in ("bench_train_gpu.py", "bench_translate.py"):  # the trainer's figures, once they exist
        if not (ROOT / "benchmarks" / script).exists():
            assert figures[script] == {"figure": script, "skipped": "not in this checkout"}
    comp = figures["compile"]  # torch.compile against eager, same seed and batches, dropout off
    assert comp["preset"] == "vanilla_iwslt14_de_en" and comp["compiled"]["tokens_per_s"] > 0
    assert comp["max_relative_loss_difference"] < 1e-5
    order = figures["batch_order"]  # bench_train_gpu.py --batch-order: fairseq's order leaves sources unpadded
    assert order["source"]["unpadded_source_fraction"] > order["target"]["unpadded_source_fraction"]
    assert order["source"]["encoder_positions_per_token"] < order["target"]["encoder_positions_per_token"]
    assert order["source_vs_target"] > 0 and order["cuda_graphs"] is False
    lookup = figures["set_lookup"]  # bench_train_gpu.py --set-lookup: SET's lookup two ways, one gradient
    micro = lookup["lookup_fwd_bwd_per_layer"]
    assert micro["relations"] == 83 and micro["pairs"] > 0 and 0 < micro["none_fraction"] < 1
    assert all(micro[k]["ms"] > 0 and micro[k]["max_error"] < 1e-2 for k in ("embedding", "sorted"))
    assert micro["sort_ms"] > 0 and lookup["sorted_vs_embedding"] > 0 and lookup["cuda_graphs"] is False
    trained = figures["translate_trained"]  # a model trained here on IWSLT14 valid, decoding IWSLT14 test
    assert trained["trained_on"] == "valid" and trained["train_pairs"] == 400 and trained["updates"] == 10
    assert trained["sentences"] == 16 and trained["max_tokens 16384"]["sentences_per_s"] > 0
    assert trained["identical_on_subset"] is True and trained["mean_reference_tokens"] > 10
    e2e = trained["translate_dataset"]  # translate's own path: the pairs as shards, read ahead in a worker or not
    assert e2e["identical"] is True and e2e["same_as_16384_fraction"] == 1.0 and e2e["max_tokens"] == 4096
    assert e2e["read_ahead true"]["sentences_per_s"] > 0 and e2e["read_ahead false"]["sentences_per_s"] > 0
    assert figures["suite"]["small"] is True


def test_gpu_suite_keeps_to_its_time_budget(shared_data):
    """--budget: a benchmark still running when it is spent is stopped and says so; a figure that would start
    after it is skipped with the reason (one run under 9 minutes, whatever the machine)."""
    env = {**os.environ, "PY": sys.executable, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_suite.sh"), "--device", "cpu", "--small",
                           "--shared", str(shared_data.parent), "--budget", "1", "--only", "trainer", "compile"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = [json.loads(line) for line in proc.stdout.splitlines()]
    by_name = {f["figure"]: f for f in figures}
    assert by_name["bench_train_gpu.py"]["error"].startswith("not finished within the suite's budget")
    assert "train_tokens_per_s" not in by_name  # stopped before its first figure
    assert by_name["compile"] == {"figure": "compile", "skipped": "the suite's --budget of 1 s is spent"}
