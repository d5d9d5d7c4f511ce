"""A checkpoint's resume state and a config's optimisation values are range-checked (synprep/train/checkpoint.py
``check_resume_state``, synprep/train/config.py ``LIMITS``): one line naming the file and the field."""

from __future__ import annotations

import math

import pytest
import torch
from builders import toy_shards

from synprep.errors import ConfigError, InputError
from synprep.train.checkpoint import LAST, load_checkpoint, save_checkpoint
from synprep.train.config import config_from_dict, load_preset, with_overrides
from synprep.train.data import RecordDataset
from synprep.train.loop import Trainer


@pytest.fixture(scope="module")
def last(shared_data, tmp_path_factory):
    """checkpoint_last.pt of a tiny model trained one epoch on 16 pairs."""
    root = tmp_path_factory.mktemp("resume")
    vocab, recs = toy_shards(shared_data, root / "shards", {"train": 16, "test": 4})
    cfg = with_overrides(load_preset("tiny"), {"max_tokens": 512, "max_epochs": 1, "threads": 1})
    Trainer(cfg, RecordDataset(recs[:16]), RecordDataset(recs[16:]), vocab.symbols, root / "run",
            torch.device("cpu"), progress=False).run()
    return root / "run" / LAST


def _set(ck, where: str, value) -> None:
    *path, key = where.split(".")
    d = ck
    for k in path:
        d = d[int(k)] if isinstance(d, list) else d[k]
    if isinstance(d, list):
        d[int(key)] = value
    else:
        d[key] = value


@pytest.mark.parametrize(("where", "value", "message"), [
    ("state.step", -5, "state.step is -5, not an integer in [0, 2^40]"),
    ("state.step", 1 << 62, f"state.step is {1 << 62}, not an integer in [0, 2^40]"),
    ("state.epoch", 1.5, "state.epoch is 1.5, not an integer in [0, 2^40]"),
    # NaN < x is never true: checkpoint_best.pt would never be written again
    ("state.best_valid", math.nan, "state.best_valid is nan, not a loss >= 0 (inf before the first validation)"),
    ("state.epoch_loss", math.inf, "state.epoch_loss is inf, not a finite sum >= 0"),
    ("scheduler.base_lrs.0", math.inf, "scheduler.base_lrs[0] is inf, not a learning rate in [0, 10]"),
    ("scheduler.last_epoch", -3, "scheduler.last_epoch is -3, not an integer in [0, 2^40]"),
    ("optimizer.param_groups.0.lr", math.inf, "optimizer.param_groups[0].lr is inf, not a number in [0, 10]"),
    ("optimizer.param_groups.0.betas", (math.nan, 0.9), "optimizer.param_groups[0].betas is (nan, 0.9), not two "
                                                        "numbers in [0, 1)"),
])
def test_a_resume_state_out_of_range_is_a_one_line_error(last, tmp_path, where, value, message):
    ck = load_checkpoint(last)
    _set(ck, where, value)
    (tmp_path / "r").mkdir()
    path = tmp_path / "r" / LAST
    save_checkpoint(path, {k: v for k, v in ck.items() if k not in ("format", "version")})
    with pytest.raises(InputError) as e:
        Trainer(None, RecordDataset([]), RecordDataset([]), ck["symbols"], tmp_path / "r", torch.device("cpu"),
                resume=True)
    assert str(e.value) == f"{path}: damaged resume state: {message}"


def test_the_checkpoint_of_a_real_run_passes(last):
    from synprep.train.resume_state import check_resume_state

    check_resume_state(load_checkpoint(last), str(last))


@pytest.mark.parametrize(("data", "message"), [
    ({"lr": 1e308}, "c.json: lr = 1e+308 is above the limit 10.0"),
    ({"warmup_init_lr": 11.0}, "c.json: warmup_init_lr = 11.0 is above the limit 10.0"),
    ({"weight_decay": 1e308}, "c.json: weight_decay = 1e+308 is above the limit 10.0"),
    ({"adam_betas": [math.nan, 0.9]}, "c.json: adam_betas must be list[float], got [nan, 0.9] (list): item 0 is nan, "
                                      "not a finite number"),
    ({"lr": math.inf}, "c.json: lr must be float, got inf (float): not a finite number"),
])
def test_optimisation_values_are_bounded_and_the_message_says_what_is_wrong(data, message):
    with pytest.raises(ConfigError) as e:
        config_from_dict(data, "c.json")
    assert str(e.value) == message


def _first_moment(ck) -> tuple[int, dict]:
    """The optimizer state of the first parameter that has one, and its index."""
    i = min(ck["optimizer"]["state"])
    return i, ck["optimizer"]["state"][i]


@pytest.mark.parametrize(("damage", "message"), [
    (lambda s: s.update(exp_avg=s["exp_avg"][..., :1].clone()), r"\.exp_avg has shape \(.*\), not \(.*\) \(parameter "),
    (lambda s: s.update(exp_avg_sq=torch.full_like(s["exp_avg_sq"], math.nan)), r"\.exp_avg_sq holds NaN or inf"),
    (lambda s: s.update(exp_avg_sq=-torch.ones_like(s["exp_avg_sq"])),
     r"\.exp_avg_sq holds a negative value, not a second moment >= 0"),
    (lambda s: s.update(step=torch.tensor(-1.0)), r"\.step is -1\.0, not a whole number in \[0, 2\^40\]"),
    (lambda s: s.update(exp_avg=s["exp_avg"].to(torch.int32)), r"\.exp_avg is not a floating-point tensor"),
    (lambda s: s.update(extra=torch.zeros(1)), r"\.extra is not an entry of AdamW's state"),
], ids=["shape", "nan", "negative", "step", "dtype", "extra"])
def test_the_optimizer_state_is_checked_tensor_by_tensor(last, tmp_path, damage, message):
    """A moment of the wrong shape (the fused AdamW crashed with a segmentation fault), a NaN or negative second
    moment, a step of -1 (both trained to NaN and exited 0): one line naming the file and the tensor."""
    ck = load_checkpoint(last)
    i, state = _first_moment(ck)
    damage(state)
    (tmp_path / "r").mkdir()
    path = tmp_path / "r" / LAST
    save_checkpoint(path, {k: v for k, v in ck.items() if k not in ("format", "version")})
    with pytest.raises(InputError, match=rf"^{path}: damaged resume state: optimizer\.state\[{i}\]{message}"):
        Trainer(None, RecordDataset([]), RecordDataset([]), ck["symbols"], tmp_path / "r", torch.device("cpu"),
                resume=True)


def test_optimizer_groups_that_do_not_list_every_parameter_once_are_refused(last, tmp_path):
    ck = load_checkpoint(last)
    ck["optimizer"]["param_groups"][0]["params"] = ck["optimizer"]["param_groups"][0]["params"][:-1]
    (tmp_path / "r").mkdir()
    save_checkpoint(tmp_path / "r" / LAST, {k: v for k, v in ck.items() if k not in ("format", "version")})
    with pytest.raises(InputError, match=r"optimizer\.param_groups list \d+ parameter indices, not each of the "
                                         r"model's \d+ parameters once"):
        Trainer(None, RecordDataset([]), RecordDataset([]), ck["symbols"], tmp_path / "r", torch.device("cpu"),
                resume=True)
