"""The resume state of a checkpoint in range before a run goes on from it (``synprep train --resume``): the
trainer's position, the schedule, the optimizer's settings, and the optimizer's state tensor by tensor (each
parameter's Adam moments and step: shape, dtype, finite, in range). A wrong-shaped moment crashed the fused AdamW
(a segmentation fault); a NaN or negative second moment, or a step of -1, trained to NaN and exited 0. Each is
one line naming the file and the field."""

from __future__ import annotations

import math
from typing import Any

import torch

from synprep.errors import InputError
from synprep.train.config import LR_MAX, WEIGHT_DECAY_MAX

#: the most updates, epochs and batches a resume state may count (the config's ``max_steps`` bound)
MAX_COUNT = 1 << 40


def _bad_number(value: Any, *, integer: bool, low: float, high: float, inf_ok: bool = False) -> bool:
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        return True
    if isinstance(value, float) and math.isinf(value) and value > 0 and inf_ok:
        return False
    return not (math.isfinite(value) and low <= value <= high)


def check_resume_state(ck: dict[str, Any], where: str, params: list[tuple[str, tuple[int, ...]]] | None = None) -> None:
    """The position, schedule and optimizer settings of a checkpoint to resume from are in range: a step
    of -5 or 2^62, an infinite learning rate or a NaN best validation loss (then no later checkpoint would
    ever count as the best) are refused before the run goes on.

    Checked: ``state`` (``step``, ``epoch``, ``batch_in_epoch``, ``epoch_tokens``: integers in
    [0, :data:`MAX_COUNT`]; ``best_valid``: >= 0, inf before the first validation; ``epoch_loss``,
    ``epoch_nll``: finite, >= 0; ``validated``: a bool), the scheduler's ``last_epoch`` (an update count)
    and learning rates, and each optimizer parameter group's ``lr``, ``betas``, ``eps``, ``weight_decay``; with
    ``params``, the optimizer's state tensor by tensor (:func:`check_optimizer_tensors`).

    Args:
        ck: the loaded checkpoint.
        where: its path, for the message.
        params: the model's parameters (name, shape) in the optimizer's order (``model.parameters()``).

    Raises:
        InputError: ``PATH: damaged resume state: FIELD is VALUE, not …`` for the first field out of range.
    """
    def bad(field: str, value: Any, want: str) -> InputError:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        return InputError(f"damaged resume state: {field} is {shown}, not {want}", where)

    state = ck["state"]
    count = f"an integer in [0, 2^{MAX_COUNT.bit_length() - 1}]"
    for key in ("step", "epoch", "batch_in_epoch", "epoch_tokens"):
        if key in state and _bad_number(state[key], integer=True, low=0, high=MAX_COUNT):
            raise bad(f"state.{key}", state[key], count)
    if "best_valid" in state and _bad_number(state["best_valid"], integer=False, low=0, high=math.inf, inf_ok=True):
        raise bad("state.best_valid", state["best_valid"], "a loss >= 0 (inf before the first validation)")
    for key in ("epoch_loss", "epoch_nll"):
        if key in state and _bad_number(state[key], integer=False, low=0, high=math.inf):
            raise bad(f"state.{key}", state[key], "a finite sum >= 0")
    if "validated" in state and not isinstance(state["validated"], bool):
        raise bad("state.validated", state["validated"], "true or false")
    sched = ck["scheduler"]
    if "last_epoch" in sched and _bad_number(sched["last_epoch"], integer=True, low=0, high=MAX_COUNT):
        raise bad("scheduler.last_epoch", sched["last_epoch"], count)
    for key in ("base_lrs", "_last_lr"):
        for i, v in enumerate(sched.get(key) or []):
            if _bad_number(v, integer=False, low=0, high=LR_MAX):
                raise bad(f"scheduler.{key}[{i}]", v, f"a learning rate in [0, {LR_MAX:g}]")
    groups = ck["optimizer"].get("param_groups")
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise InputError("damaged resume state: optimizer.param_groups is not a list of groups", where)
    for i, g in enumerate(groups):
        for key, low, high in (("lr", 0.0, LR_MAX), ("initial_lr", 0.0, LR_MAX), ("eps", 0.0, 1.0),
                               ("weight_decay", 0.0, WEIGHT_DECAY_MAX)):
            if key in g and _bad_number(g[key], integer=False, low=low, high=high):
                raise bad(f"optimizer.param_groups[{i}].{key}", g[key], f"a number in [0, {high:g}]")
        betas = g.get("betas")
        if betas is not None and not (isinstance(betas, list | tuple) and len(betas) == 2 and not any(
                _bad_number(b, integer=False, low=0.0, high=1.0) or b == 1.0 for b in betas)):
            raise bad(f"optimizer.param_groups[{i}].betas", betas, "two numbers in [0, 1)")
    if params is not None:
        check_optimizer_tensors(ck["optimizer"], params, where)


#: the per-parameter entries of (fused) AdamW's state: the moments, shaped as their parameter, and the step
_MOMENTS = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")


def check_optimizer_tensors(opt: dict[str, Any], params: list[tuple[str, tuple[int, ...]]], where: str) -> None:
    """AdamW's state dict agrees with the model tensor by tensor: the groups list every parameter index once;
    each parameter's ``exp_avg``/``exp_avg_sq`` (and ``max_exp_avg_sq``) is a floating-point tensor of its
    parameter's shape, finite, the second moments >= 0; its ``step`` a finite whole number in
    [0, :data:`MAX_COUNT`] (a scalar tensor or a number).

    Args:
        opt: the checkpoint's ``optimizer`` entry.
        params: (name, shape) of each model parameter, in the optimizer's order.
        where: the checkpoint's path, for the message.

    Raises:
        InputError: ``PATH: damaged resume state: optimizer.state[I].FIELD …`` for the first tensor out of range.
    """
    def bad(field: str, what: str) -> InputError:
        return InputError(f"damaged resume state: {field} {what}", where)

    listed = [i for g in opt["param_groups"] for i in (g.get("params") or [])]
    if sorted(x for x in listed if isinstance(x, int)) != list(range(len(params))) or len(listed) != len(params):
        raise bad("optimizer.param_groups", f"list {len(listed)} parameter indices, not each of the model's "
                                            f"{len(params)} parameters once")
    state = opt.get("state")
    if not isinstance(state, dict):
        raise bad("optimizer.state", "is not a dict of parameter states")
    for i, entry in state.items():
        if not isinstance(i, int) or not 0 <= i < len(params) or not isinstance(entry, dict):
            raise bad(f"optimizer.state[{i!r}]", f"is not the state of one of the {len(params)} parameters")
        name, shape = params[i]
        for key, v in entry.items():
            field = f"optimizer.state[{i}].{key}"
            if key == "step":
                _check_step(v, field, bad)
                continue
            if key not in _MOMENTS:
                raise bad(field, "is not an entry of AdamW's state")
            if not isinstance(v, torch.Tensor) or not v.is_floating_point():
                raise bad(field, "is not a floating-point tensor")
            if tuple(v.shape) != shape:
                raise bad(field, f"has shape {tuple(v.shape)}, not {shape} (parameter {name})")
            if not bool(torch.isfinite(v).all()):
                raise bad(field, f"holds NaN or inf (parameter {name})")
            if key != "exp_avg" and bool((v < 0).any()):
                raise bad(field, f"holds a negative value, not a second moment >= 0 (parameter {name})")


def _check_step(v: Any, field: str, bad: Any) -> None:
    if isinstance(v, torch.Tensor):
        if v.numel() != 1:
            raise bad(field, f"has shape {tuple(v.shape)}, not a scalar")
        v = v.item()
    if _bad_number(v, integer=False, low=0, high=MAX_COUNT) or v != int(v):
        raise bad(field, f"is {v!r}, not a whole number in [0, 2^{MAX_COUNT.bit_length() - 1}]")
