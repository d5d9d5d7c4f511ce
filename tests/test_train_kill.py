"""A run killed right after *any* checkpoint write resumes into exactly the run
that was never killed — the same metrics rows (the last validation included), the same
checkpoint_best.pt / checkpoint_last.pt / epoch copies, and gates.png. The kill is simulated in
process at each write (``checkpoint._written``), and once for real (SIGKILL through
``SYNPREP_KILL_AFTER_WRITE``) at the interval save of the final step, the case that lost the best
checkpoint. Both with checkpoints written in the background (``async_checkpoint``: the
kill then lands while the loop has already gone on) and in the loop."""

from __future__ import annotations

import pytest
import torch
from builders import metrics_rows, toy_records
from helpers import run_cli, run_cli_process

from synprep.train import checkpoint as ckpt
from synprep.train.checkpoint import BEST, LAST, load_checkpoint
from synprep.train.config import load_preset, with_overrides
from synprep.train.data import RecordDataset
from synprep.train.loop import Trainer
from synprep.train.toydata import write_toy_shards


class Killed(BaseException):
    """Stands for SIGKILL: nothing after the write runs (not caught by ``except Exception``)."""


@pytest.fixture(scope="module")
def data(shared_data):
    vocab, recs = toy_records(shared_data, 30)
    return recs, vocab


def _cfg(max_steps=6, async_checkpoint=True):
    # 24 pairs of ≤ 256 tokens: a few batches per epoch, so 6 steps cross an epoch end; interval
    # saves every 3 steps land on the final step; epoch copies are kept too
    return with_overrides(load_preset("tiny"), {"max_tokens": 256, "max_steps": max_steps, "log_interval": 1,
                                                "save_interval_updates": 3, "keep_last_epochs": 1,
                                                "gate_freeze_epochs": 1, "threads": 1,
                                                "async_checkpoint": async_checkpoint})


def _run(cfg, data, out, resume=False):
    recs, vocab = data
    t = Trainer(None if resume else cfg, RecordDataset(recs[:24]), RecordDataset(recs[24:]), vocab.symbols, out,
                torch.device("cpu"), resume=resume, progress=False)
    t.run()


def _same_checkpoint(a, b):
    ca, cb = load_checkpoint(a), load_checkpoint(b)
    assert ca["state"] == cb["state"]
    for k in ca["model"]:
        assert torch.equal(ca["model"][k], cb["model"][k]), k


@pytest.mark.parametrize("background", [True, False], ids=["async", "sync"])
def test_kill_after_every_checkpoint_write_resumes_exactly(tmp_path, data, monkeypatch, background):
    writes: list[str] = []
    monkeypatch.setattr(ckpt, "_written", lambda path: writes.append(str(path)))
    cfg = _cfg(async_checkpoint=background)
    _run(cfg, data, tmp_path / "straight")
    n_writes = len(writes)
    final_interval = [i for i, w in enumerate(writes) if w.endswith(LAST)]
    assert n_writes >= 5 and final_interval  # several save points, among them the interval save at step 6
    expected = metrics_rows(tmp_path / "straight")
    assert expected[-1]["step"] == 6 and "valid_loss" in expected[-1]

    for k in range(1, n_writes + 1):
        out = tmp_path / f"kill{k}"
        count = [0]

        def kill_at_k(path, k=k, count=count):
            count[0] += 1
            if count[0] == k:
                raise Killed(path)

        monkeypatch.setattr(ckpt, "_written", kill_at_k)
        with pytest.raises(Killed):  # (async: raised in the background thread, re-raised by the loop)
            _run(cfg, data, out)
        monkeypatch.setattr(ckpt, "_written", lambda path: None)
        # killed after the very first write (checkpoint_best.pt, written before checkpoint_last.pt):
        # there is nothing to resume (the CLI says so) and a fresh run is allowed and redoes it all
        _run(cfg, data, out, resume=(out / LAST).is_file())
        assert metrics_rows(out) == expected, f"killed after write {k} ({writes[k - 1]})"
        for name in (LAST, BEST):
            _same_checkpoint(tmp_path / "straight" / name, out / name)
        assert sorted(p.name for p in out.glob("checkpoint*.pt")) == \
            sorted(p.name for p in (tmp_path / "straight").glob("checkpoint*.pt"))
        assert (out / "gates.png").is_file()


@pytest.mark.parametrize("background", [True, False], ids=["async", "sync"])
def test_sigkill_after_the_final_interval_save(tmp_path, data, background):
    recs, vocab = data
    write_toy_shards(tmp_path / "shards", {"train": recs[:24], "valid": recs[24:]}, vocab)
    (tmp_path / "c.json").write_text(_cfg(async_checkpoint=background).to_json())
    args = ["train", "--shards", str(tmp_path / "shards"), "--out", str(tmp_path / "run"), "--no-progress"]
    straight = ["train", "--shards", str(tmp_path / "shards"), "--out", str(tmp_path / "ref"), "--no-progress",
                "--config", str(tmp_path / "c.json")]
    run_cli(*straight)
    ref_rows = metrics_rows(tmp_path / "ref")
    # count the writes up to the interval save at step 6: every LAST/BEST/epoch write before it, +1
    # killed by its own signal: a process of its own (in this one the kill would end the test run)
    proc = run_cli_process(*args, "--config", str(tmp_path / "c.json"), check=False,
                           env={ckpt.KILL_ENV: str(_writes_until_final_interval(tmp_path))})
    assert proc.returncode == -9  # SIGKILL
    state = load_checkpoint(tmp_path / "run" / LAST)["state"]
    assert state["step"] == 6 and state["validated"] is False  # killed between the save and the validation
    if not background:  # in the background, the loop may have validated (and logged it) before the kill
        assert "valid_loss" not in metrics_rows(tmp_path / "run")[-1]
    run_cli(*args, "--resume")
    assert metrics_rows(tmp_path / "run") == ref_rows
    _same_checkpoint(tmp_path / "ref" / BEST, tmp_path / "run" / BEST)
    assert (tmp_path / "run" / "gates.png").is_file()


def _writes_until_final_interval(tmp_path):
    """The 1-based index of the write of checkpoint_last.pt by the interval save at step 6 (from
    the reference run's rows: every epoch end before step 6 writes LAST (+BEST if best, +epoch copy),
    interval saves at steps 3 and 6 write LAST)."""
    rows = metrics_rows(tmp_path / "ref")
    n = 0
    best = float("inf")
    for r in rows:
        if "valid_loss" in r and r["step"] < 6:
            n += 1 + (r["valid_loss"] < best) + bool(r["epoch_done"])
            best = min(best, r["valid_loss"])
        elif "valid_loss" not in r and r["step"] == 3:
            n += 1
    return n + 1
