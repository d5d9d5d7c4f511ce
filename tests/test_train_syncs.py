"""No host synchronisation inside a training update (issue 18 item 2): on the CPU a probe of every
``.item()``/``float()``/``int()``/``bool()``/``.tolist()`` on a tensor, on CUDA (when present)
``torch.cuda.set_sync_debug_mode("error")``; the device's sums are read at the log interval only,
and what is logged there is still the exact sum of the updates."""

from __future__ import annotations

import contextlib
import json
import math

import numpy as np
import pytest
import torch

from synprep.shards.synthetic import random_records
from synprep.train.config import load_preset, with_overrides
from synprep.train.data import RecordDataset
from synprep.train.loop import Trainer

READS = ("item", "tolist", "__float__", "__int__", "__bool__", "__index__")


@contextlib.contextmanager
def host_reads(log: list[str], when):
    """Record the name of every tensor → host read made while ``when()`` is true."""
    saved = {name: getattr(torch.Tensor, name) for name in READS}

    def wrap(name, fn):
        def probe(self, *a, **k):
            if when():
                log.append(name)
            return fn(self, *a, **k)
        return probe

    for name, fn in saved.items():
        setattr(torch.Tensor, name, wrap(name, fn))
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch.Tensor, name, fn)


def _trainer(tmp_path, source: str, device: str = "cpu", **over) -> Trainer:
    recs = list(random_records(120, np.random.default_rng(0), words=8, tgt_len=10, vocab_size=300))
    cfg = with_overrides(load_preset("tiny"), {"syntax_source": source, "max_tokens": 256, "max_steps": 7,
                                               "log_interval": 3, "gate_freeze_epochs": 0, "threads": 1, **over})
    return Trainer(cfg, RecordDataset(recs[:100]), RecordDataset(recs[100:]), [f"p{i}" for i in range(300)],
                   tmp_path, torch.device(device), progress=False)


@pytest.mark.parametrize("source", ["slr", "pascal"])
def test_no_host_read_inside_an_update_and_one_per_log_interval(tmp_path, source):
    tr = _trainer(tmp_path, source)
    inside = {"update": False, "log": False}
    reads: list[str] = []
    log_reads: list[str] = []
    step, log_interval = tr.train_step, tr._log_interval

    def probed_step(group):
        inside["update"] = True
        try:
            return step(group)
        finally:
            inside["update"] = False

    def probed_log(iv, bar):
        inside["log"] = True
        try:
            return log_interval(iv, bar)
        finally:
            inside["log"] = False

    tr.train_step, tr._log_interval = probed_step, probed_log  # type: ignore[method-assign]
    with host_reads(reads, lambda: inside["update"]), host_reads(log_reads, lambda: inside["log"]):
        tr.run()
    assert reads == []
    # a log interval reads the interval's sums and the epoch's in one transfer each
    assert log_reads.count("tolist") == 2 * (7 // 3)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "valid_loss" not in r]
    assert [r["step"] for r in steps] == [3, 6]
    assert all(math.isfinite(r["train_loss"]) and r["ntokens"] > 0 and r["gnorm"] > 0 for r in steps)


def test_device_sums_equal_the_updates(tmp_path):
    """What the log interval reads is the sum of what the updates returned (nothing lost on the device)."""
    tr = _trainer(tmp_path, "slr", max_steps=3)
    tr.train_sampler.set_epoch(0)
    outs = [tr.train_step([b]) for _, b in zip(range(3), tr.train_loader, strict=False)]
    for out in outs:
        tr._accumulate(out)
    tr._flush()
    assert tr.state.epoch_tokens == sum(int(o["ntokens"]) for o in outs)
    assert tr.state.epoch_loss == sum(float(o["loss"]) for o in outs)


def test_a_non_finite_gradient_skips_the_update_without_a_host_test(tmp_path, caplog):
    tr = _trainer(tmp_path, "slr")
    tr.train_sampler.set_epoch(0)
    batch = next(iter(tr.train_loader))
    with torch.no_grad():
        tr.model.embed.weight[int(batch.src_tokens[0, 0]), 0] = float("nan")  # every gradient becomes NaN
    before = {k: v.detach().clone() for k, v in tr.model.named_parameters()}
    out = tr.train_step([batch])
    assert not math.isfinite(float(out["gnorm"]))
    for k, v in tr.model.named_parameters():  # no weight moved (equal_nan: the poisoned entry)
        assert torch.allclose(v, before[k], rtol=0, atol=0, equal_nan=True), k
    assert all(float(s["step"]) == 0 for s in tr.optimizer.state.values())  # Adam's step count not advanced
    tr._flush()
    assert "1 update(s) up to step 0 skipped" in caplog.text


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_no_cuda_sync_inside_an_update(tmp_path):
    tr = _trainer(tmp_path, "slr", device="cuda", bf16=True)
    tr.train_sampler.set_epoch(0)
    batches = [b for _, b in zip(range(3), tr.train_loader, strict=False)]
    tr.train_step([batches[0]])  # warm-up (lazy initialisations may synchronise once)
    torch.cuda.set_sync_debug_mode("error")
    try:
        for b in batches[1:]:
            tr.train_step([b])
    finally:
        torch.cuda.set_sync_debug_mode("default")
