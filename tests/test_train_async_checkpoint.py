"""Checkpoints written in the background (``async_checkpoint``): the loop takes a host
copy of the state and a thread writes it. The file is byte for byte the one the loop would have
written itself, whatever the training does to the weights after the copy; a failed background write
stops the run with the synchronous save's error (never lost); the run waits for the write in flight
when it ends, fails or is terminated; a resumed run continues exactly. (The kill-at-every-write
tests, both ways: tests/test_train_kill.py.)"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from builders import metrics_rows

from synprep.cli import Terminated
from synprep.shards.synthetic import random_records
from synprep.train import checkpoint as ckpt
from synprep.train.checkpoint import BEST, LAST, CheckpointWriter, load_checkpoint, snapshot
from synprep.train.config import load_preset, with_overrides
from synprep.train.data import RecordDataset
from synprep.train.loop import Trainer
from synprep.train.metrics import MetricsLog

SYMBOLS = [f"p{i}" for i in range(300)]


@pytest.fixture(scope="module")
def records():
    return list(random_records(60, np.random.default_rng(0), words=8, tgt_len=10, vocab_size=300))


def _trainer(records, out, resume=False, **over) -> Trainer:
    cfg = with_overrides(load_preset("tiny"), {"max_tokens": 256, "max_steps": 8, "log_interval": 2,
                                               "gate_freeze_epochs": 0, "threads": 1, **over})
    return Trainer(None if resume else cfg, RecordDataset(records[:50]), RecordDataset(records[50:]), SYMBOLS, out,
                   torch.device("cpu"), resume=resume, overrides=over if resume else None, progress=False)


def _step(tr: Trainer, n: int = 2) -> None:
    """``n`` updates (so Adam has state to save)."""
    tr.train_sampler.set_epoch(0)
    for _, b in zip(range(n), tr.train_loader, strict=False):
        tr.train_step([b])
        tr.state.step += 1


def test_the_background_file_is_the_loops_file_and_misses_the_later_updates(records, tmp_path, monkeypatch):
    tr = _trainer(records, tmp_path, async_checkpoint=False)
    _step(tr)
    tr.save(False)  # in the loop: the reference file
    reference = (tmp_path / LAST).read_bytes()
    (tmp_path / LAST).unlink()
    before = {k: v.clone() for k, v in tr.model.state_dict().items()}

    release = threading.Event()
    real_save = ckpt.save_checkpoint

    def held_save(path, payload):  # the write starts only after the training has changed everything
        assert release.wait(60)
        real_save(path, payload)

    monkeypatch.setattr(ckpt, "save_checkpoint", held_save)
    tr.writer = CheckpointWriter(background=True)
    tr.save(False)
    assert not (tmp_path / LAST).exists()  # still held: save() returned before writing
    with torch.no_grad():  # what the next updates do: weights and Adam's moments change in place
        for p in tr.model.parameters():
            p.add_(1.0)
        for s in tr.optimizer.state.values():
            s["exp_avg"].add_(1.0)
            s["exp_avg_sq"].mul_(2.0)
    release.set()
    tr.finish_writes()
    assert (tmp_path / LAST).read_bytes() == reference
    saved = load_checkpoint(tmp_path / LAST)["model"]
    assert all(torch.equal(saved[k], v) for k, v in before.items())
    assert all(not torch.equal(saved[k], p) for k, p in tr.model.named_parameters())  # (they did change)


def test_a_snapshot_keeps_shared_storages_shared_and_its_buffers_are_reused():
    base = torch.arange(12.0)
    obj = {"w": base.view(3, 4), "tail": base[4:], "t": (torch.ones(2), [1, "x"]), "n": None}
    buffers: dict = {}
    snap = snapshot(obj, buffers)
    assert snap["w"].untyped_storage().data_ptr() == snap["tail"].untyped_storage().data_ptr()
    assert snap["w"].untyped_storage().data_ptr() != base.untyped_storage().data_ptr()
    assert torch.equal(snap["tail"], base[4:]) and snap["t"][1] == [1, "x"] and snap["n"] is None
    ptr = snap["w"].untyped_storage().data_ptr()
    base.add_(1.0)
    assert torch.equal(snap["w"].flatten(), torch.arange(12.0))  # a copy, not a view of the live tensor
    again = snapshot(obj, buffers)  # the previous write is done: its buffers take the new copy
    assert again["w"].untyped_storage().data_ptr() == ptr and torch.equal(again["tail"], base[4:])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_snapshot_is_a_pinned_host_copy():
    live = {"w": torch.randn(64, 64, device="cuda"), "step": torch.tensor(3.0, device="cuda")}
    ref = {k: v.cpu() for k, v in live.items()}
    snap = snapshot(live, {})
    live["w"].add_(1.0)
    assert all(v.device.type == "cpu" and v.is_pinned() and torch.equal(v, ref[k]) for k, v in snap.items())


@pytest.mark.parametrize("background", [True, False], ids=["async", "sync"])
def test_a_failed_write_stops_the_run_with_the_synchronous_error(records, tmp_path, background):
    out = tmp_path / "run"
    (out / LAST / "blocked").mkdir(parents=True)  # a directory where the checkpoint goes: no write can succeed
    tr = _trainer(records, out, max_steps=40, save_interval_updates=2, async_checkpoint=background)
    with pytest.raises(IsADirectoryError) as e:
        tr.run()
    assert str(e.value.filename) == str(out / LAST)
    assert tr.state.step <= 4  # at the update or save after the failed write, not at the end of the run
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))


def test_a_failed_final_write_is_not_lost(records, tmp_path):
    out = tmp_path / "run"
    (out / BEST / "blocked").mkdir(parents=True)  # the run's only save (the end) writes checkpoint_best.pt first
    tr = _trainer(records, out, max_steps=2)
    with pytest.raises(IsADirectoryError, match="checkpoint_best.pt"):
        tr.run()
    assert tr.state.step == 2 and tr.writer._pending is None


def test_an_interrupted_run_waits_for_the_write_in_flight(records, tmp_path, monkeypatch):
    """SIGTERM (``Terminated``, raised in the loop) while a checkpoint is being written: the run ends
    only once the write is complete (a whole checkpoint_last.pt to resume from)."""
    release = threading.Event()
    real_save = ckpt.save_checkpoint

    def held_save(path, payload):
        assert release.wait(60)
        real_save(path, payload)

    monkeypatch.setattr(ckpt, "save_checkpoint", held_save)
    tr = _trainer(records, tmp_path, save_interval_updates=2)
    assert len(tr.train_sampler.rank_batches(0)) > 3  # no epoch end (and its save) before the interruption
    step = tr.train_step

    def terminated_at_3(group):
        if tr.state.step == 2:  # the save of step 2 is held in the background
            release.set()
            raise Terminated()
        return step(group)

    tr.train_step = terminated_at_3  # type: ignore[method-assign]
    with pytest.raises(Terminated):
        tr.run()
    assert load_checkpoint(tmp_path / LAST)["state"]["step"] == 2
    assert tr.writer._pending is None


def test_a_resumed_run_gives_the_losses_and_files_of_a_straight_one(records, tmp_path):
    for name, background in (("sync", False), ("async", True)):
        _trainer(records, tmp_path / name, save_interval_updates=3, async_checkpoint=background).run()
    _trainer(records, tmp_path / "cut", max_steps=5, save_interval_updates=3).run()
    _trainer(records, tmp_path / "cut", resume=True, max_steps=8).run()
    rows = metrics_rows(tmp_path / "sync")
    assert rows and metrics_rows(tmp_path / "async") == rows
    # the cut run validated at step 5 too (a run's end): its training rows are the straight run's
    assert [r for r in metrics_rows(tmp_path / "cut") if "valid_loss" not in r] == \
        [r for r in rows if "valid_loss" not in r]
    for name in (LAST, BEST):  # the same checkpoints (but for the config field that says how they were written)
        a, s = load_checkpoint(tmp_path / "async" / name), load_checkpoint(tmp_path / "sync" / name)
        assert a["config"] == {**s["config"], "async_checkpoint": True}
        a["config"] = s["config"]
        assert _flat(a) == _flat(s)
    cut, straight = load_checkpoint(tmp_path / "cut" / LAST), load_checkpoint(tmp_path / "sync" / LAST)
    assert cut["state"]["step"] == straight["state"]["step"] == 8
    assert all(torch.equal(v, straight["model"][k]) for k, v in cut["model"].items())


def _flat(obj, prefix=""):
    """``{path: value}`` of a nested checkpoint, tensors as (dtype, shape, values)."""
    if isinstance(obj, dict):
        return {k2: v2 for k, v in obj.items() for k2, v2 in _flat(v, f"{prefix}/{k}").items()}
    if isinstance(obj, list | tuple):
        return {k2: v2 for i, v in enumerate(obj) for k2, v2 in _flat(v, f"{prefix}/{i}").items()}
    if isinstance(obj, torch.Tensor):
        return {prefix: (obj.dtype, tuple(obj.shape), obj.flatten().tolist())}
    return {prefix: obj}


def test_interval_rows_report_the_background_write_time(records, tmp_path):
    _trainer(records, tmp_path, save_interval_updates=1).run()
    rows = [r for r in MetricsLog.read(tmp_path / "metrics.jsonl") if "tokens_per_s" in r]
    assert rows and all(r["checkpoint_write_s"] >= 0 for r in rows)
    assert sum(r["checkpoint_write_s"] for r in rows) > 0  # a save per update: writes end in the rows

