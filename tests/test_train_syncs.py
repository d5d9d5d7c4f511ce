"""No host synchronisation inside a training update: on the CPU a probe of every
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


PAPER_PRESETS = ["vanilla_iwslt14_de_en", "gated_iwslt14_de_en", "pascal_iwslt14_de_en", "ldd_iwslt14_de_en",
                 "ldd_parent_iwslt14_de_en", "sla_iwslt14_de_en", "slr_iwslt14_de_en", "lisa_iwslt14_de_en",
                 "set_iwslt14_de_en"]


def cuda_sync_sites(fn) -> list[str]:
    """Run ``fn`` under ``torch.cuda.set_sync_debug_mode("warn")``; the innermost synprep frame (else the
    warning's own location) of every synchronising CUDA call it made, in order: all of them, where the
    ``"error"`` mode would stop at the first."""
    import traceback
    import warnings

    sites: list[str] = []

    def hook(message, category, filename, lineno, file=None, line=None):
        if "called a synchronizing" not in str(message):  # not the one-time "prototype feature" notice
            return
        ours = [f for f in traceback.extract_stack()[:-1] if "/synprep/" in f.filename]
        sites.append(f"{ours[-1].filename.split('/synprep/')[-1]}:{ours[-1].lineno} ({ours[-1].name})" if ours
                     else f"{filename}:{lineno}")

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = hook
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sites


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("preset", PAPER_PRESETS)
def test_no_cuda_sync_inside_an_update(tmp_path, preset):
    """Every paper preset's update (its source, placement and gate; a small model), bf16 on CUDA."""
    small = {"d_model": 64, "ffn_dim": 128, "encoder_layers": 2, "decoder_layers": 2, "gate_hidden": 32}
    recs = list(random_records(120, np.random.default_rng(0), words=8, tgt_len=10, vocab_size=300))
    base = load_preset(preset)
    over = {k: v for k, v in small.items() if k != "gate_hidden" or base.syntax == "gated"}
    cfg = with_overrides(base, {**over, "max_tokens": 256, "max_steps": 7, "log_interval": 3, "gate_freeze_epochs": 0,
                                "bf16": True})
    tr = Trainer(cfg, RecordDataset(recs[:100]), RecordDataset(recs[100:]), [f"p{i}" for i in range(300)],
                 tmp_path, torch.device("cuda"), progress=False)
    tr.train_sampler.set_epoch(0)
    batches = [b for _, b in zip(range(3), tr.train_loader, strict=False)]
    tr.train_step([batches[0]])  # warm-up (lazy initialisations may synchronise once)
    sites = cuda_sync_sites(lambda: [tr.train_step([b]) for b in batches[1:]])
    assert sites == [], f"{preset}: {len(sites)} synchronising calls: {sorted(set(sites))}"


def test_heads_taken_by_a_cached_device_index_equal_list_indexing():
    from synprep.train.attention import _take
    from synprep.train.masks import device_index

    t = torch.randn(2, 5, 3, 4)
    for idx in ([1, 3], [4, 0, 2], [0, 1], [2]):
        assert torch.equal(_take(t, idx, 5), t[:, idx])
    assert device_index([1, 3], t.device) is device_index([1, 3], t.device)  # made once, kept
