"""torchrun DDP on the CPU (gloo, 2 processes): one update over 2 ranks equals one update over
the same 2 batches accumulated in one process (``update_freq=2``), and both ranks stay in sync."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import torch
from builders import toy_shards
from helpers import ROOT, run_cli

from synprep.train.checkpoint import LAST, load_checkpoint
from synprep.train.config import config_from_dict
from synprep.train.model import Seq2Seq

# no randomness inside a step (dropout, syntax dropout), gates learning from step 1
DETERMINISTIC = ["--max-steps", "2", "--set", "dropout=0", "--set", "syntax_dropout=0", "--set", "log_interval=1",
                 "--set", "gate_freeze_epochs=0", "--no-progress"]


def test_torchrun_two_cpu_processes_equal_gradient_accumulation(shared_data, tmp_path):
    toy_shards(shared_data, tmp_path / "shards", {"train": 60, "valid": 10}, split_len=7)
    common = ["--shards", str(tmp_path / "shards"), "--preset", "tiny", "--set", "max_tokens=256", *DETERMINISTIC]

    ddp = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          "-m", "synprep", "train", "--out", str(tmp_path / "ddp"), *common],
                         capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ddp.returncode == 0, ddp.stderr
    assert "|world:2|" in ddp.stderr.strip().splitlines()[-1]
    run_cli("train", "--out", str(tmp_path / "one"), *common, "--set", "update_freq=2")

    def losses(run):
        recs = [json.loads(x) for x in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
        return [r["train_loss"] for r in recs if "valid_loss" not in r]

    a, b = losses("ddp"), losses("one")
    assert len(a) == 2 and np.allclose(a, b, rtol=0, atol=1e-6)  # all-reduced loss over both ranks
    ca, cb = load_checkpoint(tmp_path / "ddp" / LAST), load_checkpoint(tmp_path / "one" / LAST)
    assert len(ca["rng"]) == 2  # every rank's RNG state is kept for an exact resume
    model = Seq2Seq(config_from_dict(ca["config"]), len(ca["symbols"]))
    for name, _ in model.named_parameters():
        torch.testing.assert_close(ca["model"][name], cb["model"][name], rtol=0, atol=1e-6)
