"""Exact resume: N updates straight == N/2 updates + resume + N/2 updates (losses and weights equal)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from builders import toy_records
from helpers import run_cli

from synprep.errors import ConfigError
from synprep.train.checkpoint import LAST, load_checkpoint
from synprep.train.config import TrainConfig, load_preset, with_overrides
from synprep.train.data import RecordDataset
from synprep.train.loop import Trainer


@pytest.fixture(scope="module")
def data(shared_data):
    vocab, recs = toy_records(shared_data, 48)
    return RecordDataset(recs[:40]), RecordDataset(recs[40:]), vocab.symbols


def _losses(out):
    recs = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["train_loss"]) for r in recs if "valid_loss" not in r]


@pytest.mark.parametrize("source", ["slr", "pascal"])
def test_resume_continues_exactly(tmp_path, data, source):
    train, valid, symbols = data
    # dropout, syntax dropout / parent ignoring and the gate unfreezing after epoch 1 all draw
    # from RNG or change with the epoch: the resumed run must reproduce every one of them
    cfg = with_overrides(load_preset("tiny"), {
        "syntax_source": source, "max_tokens": 256, "max_steps": 8, "log_interval": 1, "gate_freeze_epochs": 1,
        "parent_ignore": 0.3 if source == "pascal" else 0.0, "threads": 1})
    n_batches = len(Trainer(cfg, train, valid, symbols, tmp_path / "probe", torch.device("cpu"),
                            progress=False).train_sampler.rank_batches(0))
    assert 2 < n_batches < 8  # the split point (4) is inside epoch 1 or 2, and the run crosses an epoch end

    straight = Trainer(cfg, train, valid, symbols, tmp_path / "a", torch.device("cpu"), progress=False)
    straight.run()
    first = Trainer(with_overrides(cfg, {"max_steps": 4}), train, valid, symbols, tmp_path / "b",
                    torch.device("cpu"), progress=False)
    first.run()
    resumed = Trainer(None, train, valid, symbols, tmp_path / "b", torch.device("cpu"), resume=True,
                      overrides={"max_steps": 8}, progress=False)
    assert resumed.state.step == 4
    resumed.run()

    a, b = _losses(tmp_path / "a"), _losses(tmp_path / "b")
    assert [s for s, _ in a] == list(range(1, 9)) and a == b  # exactly equal, step by step
    wa = load_checkpoint(tmp_path / "a" / LAST)["model"]
    wb = load_checkpoint(tmp_path / "b" / LAST)["model"]
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k
    # the gates were frozen in epoch 1 and learned afterwards
    frozen = [json.loads(x)["gates_frozen"] for x in (tmp_path / "b/metrics.jsonl").read_text().splitlines()
              if "valid_loss" in x]
    assert frozen[0] is True and frozen[-1] is False


def test_resume_refuses_model_changes(tmp_path, data):
    train, valid, symbols = data
    cfg = with_overrides(load_preset("tiny"), {"max_steps": 1, "max_tokens": 256, "threads": 1})
    Trainer(cfg, train, valid, symbols, tmp_path, torch.device("cpu"), progress=False).run()
    with pytest.raises(ConfigError, match="d_model"):
        Trainer(None, train, valid, symbols, tmp_path, torch.device("cpu"), resume=True, overrides={"d_model": 32})


def test_resume_overrides_are_one_merge_for_the_cli_and_the_trainer(tmp_path, data):
    """``--resume --print-config`` shows what ``--resume`` runs (resume_config): an
    override of a fixed field is refused by both with one message (print-config dropped it silently
    before), an allowed one is applied by both, an unchanged fixed field passes both."""
    train, valid, symbols = data
    cfg = with_overrides(load_preset("tiny"), {"max_steps": 1, "max_tokens": 256, "threads": 1})
    Trainer(cfg, train, valid, symbols, tmp_path, torch.device("cpu"), progress=False).run()

    def trainer_error(overrides):
        with pytest.raises(ConfigError) as e:
            Trainer(None, train, valid, symbols, tmp_path, torch.device("cpu"), resume=True, overrides=overrides)
        return str(e.value)

    proc = run_cli("train", "--out", str(tmp_path), "--resume", "--print-config", "--set", "d_model=32",
                   "--set", "lr=0.5", check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    msg = trainer_error({"d_model": 32, "lr": 0.5})
    assert msg.startswith("cannot change d_model, lr when resuming (only ")
    assert proc.stderr.strip() == f"synprep: error: {msg}"

    proc = run_cli("train", "--out", str(tmp_path), "--resume", "--print-config", "--max-steps", "7",
                   "--set", "beam=3", "--seed", str(cfg.seed))
    shown = json.loads(proc.stdout)
    resumed = Trainer(None, train, valid, symbols, tmp_path, torch.device("cpu"), resume=True,
                      overrides={"max_steps": 7, "beam": 3, "seed": cfg.seed}, progress=False)
    assert shown == resumed.cfg.to_dict()
    assert (shown["max_steps"], shown["beam"], shown["d_model"]) == (7, 3, cfg.d_model)


@pytest.mark.parametrize(("variant", "expected"), [
    ({"syntax": "vanilla"}, [[0.0] * 4] * 2),
    ({"syntax": "avg"}, [[0.5] * 4] * 2),
    ({"syntax": "pure", "syntax_source": "ldd"}, [[1.0] * 4] * 2),
    ({"syntax": "hard", "syntax_heads": [0, 1], "syntax_source": "pascal"}, [[1.0, 1.0, 0.0, 0.0], [0.0] * 4]),
    ({"syntax": "gated", "syntax_layers": [1], "bf16": True}, None),
])
def test_variants_train_and_log_their_gates(tmp_path, data, variant, expected, caplog):
    import logging

    train, valid, symbols = data
    cfg = with_overrides(load_preset("tiny"), {"max_steps": 2, "max_tokens": 256, "threads": 1, **variant})
    caplog.set_level(logging.INFO, logger="synprep")
    Trainer(cfg, train, valid, symbols, tmp_path, torch.device("cpu"), progress=False).run()
    last = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    assert np.isfinite(last["valid_loss"]) and np.isfinite(last["train_loss"])
    if expected is not None:
        assert last["gates"] == expected
    else:  # learned gates in layer 2 only, means over the validation set strictly inside (0, 1)
        assert last["gates"][0] == [0.0] * 4 and all(0 < g < 1 for g in last["gates"][1])
    said = [r.getMessage() for r in caplog.records if "gates" in r.getMessage()]
    if variant["syntax"] == "vanilla":  # no gates, said once, no heatmap of zeros
        assert said == ["no gates: a vanilla model has no syntax heads (no gates.png)"]
        assert not (tmp_path / "gates.png").exists()
    else:
        assert (tmp_path / "gates.png").is_file() and not said


def test_metrics_log_drops_records_written_after_the_checkpoint(tmp_path):
    from synprep.train.metrics import MetricsLog

    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "train_loss": 1.0}) + "\n" for s in (1, 2, 3, 4, 5)))
    log = MetricsLog(path, resume_step=3)
    log.write({"step": 4, "train_loss": 0.5})
    assert [(r["step"], r["train_loss"]) for r in MetricsLog.read(path)] == [(1, 1.0), (2, 1.0), (3, 1.0), (4, 0.5)]
    MetricsLog(path)  # a new run starts an empty log
    assert MetricsLog.read(path) == []


def test_gates_png_is_titled_with_the_epoch_of_its_log_line_and_metrics_row(tmp_path, data, monkeypatch, caplog):
    """The epoch in gates.png's title is the one the log line and the metrics row of
    the same validation name (1-based), also when the run ends inside an epoch."""
    import logging
    import re

    import synprep.train.loop as loop

    titles: list[str] = []
    monkeypatch.setattr(loop, "draw_gate_heatmap", lambda gates, path, title: titles.append(title))
    train, valid, symbols = data
    cfg = with_overrides(load_preset("tiny"), {"max_tokens": 256, "max_steps": 5, "log_interval": 1, "threads": 1})
    caplog.set_level(logging.INFO, logger="synprep")
    Trainer(cfg, train, valid, symbols, tmp_path / "run", torch.device("cpu"), progress=False).run()
    logged = [m for r in caplog.records if (m := re.match(r"epoch (\d+) step (\d+) \| valid", r.getMessage()))]
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    last_valid = [r for r in rows if "valid_loss" in r][-1]
    assert titles, "gates.png was not drawn at the end of the run"
    epoch, step = re.search(r"epoch (\d+), step (\d+)", titles[-1]).groups()
    assert (int(epoch), int(step)) == (int(logged[-1].group(1)), int(logged[-1].group(2)))
    assert int(epoch) == last_valid["epoch"] >= 1 and int(step) == last_valid["step"] == 5


def test_interval_rows_say_where_the_wall_time_went(tmp_path, data):
    """An interval row splits its wall time into waiting for batches, validation and
    checkpoint writes; the interval that holds an epoch's end holds its validation and checkpoint."""
    train, valid, symbols = data
    cfg = with_overrides(load_preset("tiny"), {"max_tokens": 256, "max_steps": 8, "log_interval": 4,
                                               "save_interval_updates": 3, "threads": 1})
    tr = Trainer(cfg, train, valid, symbols, tmp_path, torch.device("cpu"), progress=False)
    n_batches = len(tr.train_sampler.rank_batches(0))
    assert n_batches < 8  # an epoch ends inside the run
    tr.run()
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "valid_loss" not in r]
    assert [r["step"] for r in steps] == [4, 8]
    for r in steps:
        assert 0 < r["data_wait_s"] < r["seconds"]
        assert r["data_wait_s"] + r["valid_s"] + r["checkpoint_s"] < r["seconds"]
        assert r["checkpoint_s"] > 0  # save_interval_updates 3: steps 3 and 6, one in each interval
    # an epoch that ends with update e validates before update e + 1, in the row of the interval holding it
    ends = range(n_batches, 8, n_batches)
    assert [r["valid_s"] > 0 for r in steps] == [any(r["step"] - 4 <= e < r["step"] for e in ends) for r in steps]
    assert any(r["valid_s"] > 0 for r in steps)


def test_loader_workers_kept_across_epochs_feed_the_same_batches(tmp_path, data):
    """The train loader's worker processes persist from epoch to epoch; each epoch's batches are still the
    sampler's (set_epoch before iter): the losses equal those of a run without workers, over 3 epochs."""
    train, valid, symbols = data
    runs = {}
    for workers in (0, 2):
        cfg = with_overrides(load_preset("tiny"), {"max_tokens": 256, "max_steps": 14, "log_interval": 1,
                                                   "threads": 1, "num_workers": workers})
        tr = Trainer(cfg, train, valid, symbols, tmp_path / f"w{workers}", torch.device("cpu"), progress=False)
        assert len(tr.train_sampler.rank_batches(0)) < 7  # 14 updates cross at least two epoch ends
        tr.run()
        runs[workers] = _losses(tmp_path / f"w{workers}")
    assert runs[0] == runs[2] and len(runs[0]) == 14


def test_loader_workers_default_to_two_on_cuda_and_none_on_the_cpu(tmp_path, data, monkeypatch):
    """``num_workers`` -1 (the default): 2 DataLoader workers on CUDA (reads and collation beside the updates;
    no more than the CPUs), none on the CPU; an explicit count is kept on both. A CPU run with the default
    starts no worker."""
    from synprep.train import data as data_module
    from synprep.train.data import loader_workers

    assert TrainConfig().num_workers == -1
    monkeypatch.setattr(data_module, "usable_cpus", lambda: 16)
    assert [loader_workers(-1, torch.device(d)) for d in ("cuda", "cuda:1", "cpu")] == [2, 2, 0]
    monkeypatch.setattr(data_module, "usable_cpus", lambda: 1)
    assert loader_workers(-1, torch.device("cuda")) == 1
    assert [loader_workers(n, torch.device(d)) for n, d in ((0, "cuda"), (3, "cuda"), (3, "cpu"))] == [0, 3, 3]
    train, valid, symbols = data
    tr = Trainer(with_overrides(load_preset("tiny"), {"max_steps": 1}), train, valid, symbols, tmp_path / "run",
                 torch.device("cpu"), progress=False)
    assert tr.cfg.num_workers == -1 and tr.train_loader.num_workers == tr.valid_loader.num_workers == 0


def test_validation_keeps_its_loader_workers_and_its_values(tmp_path, data):
    """The validation loader's worker processes are started once, not at every validation
    (0.13 s of a 0.18 s validation on the CPU); every validation still gives what one without workers gives."""
    train, valid, symbols = data
    results, pids = {}, []
    for workers in (0, 2):
        cfg = with_overrides(load_preset("tiny"), {"max_tokens": 256, "max_steps": 1, "threads": 1,
                                                   "num_workers": workers})
        tr = Trainer(cfg, train, valid, symbols, tmp_path / f"w{workers}", torch.device("cpu"), progress=False)
        results[workers] = []
        for _ in range(3):
            results[workers].append(tr.validate())
            if workers:  # the DataLoader's worker processes (private: what persistent_workers keeps)
                pids.append([w.pid for w in tr.valid_loader._iterator._workers])  # type: ignore[union-attr]
    assert results[2] == results[0] and results[0][0]["valid_tokens"] > 0
    assert len(pids[0]) == 2 and pids[1] == pids[0] and pids[2] == pids[0]
