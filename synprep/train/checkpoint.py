"""Checkpoints that resume exactly: model, optimizer, scheduler, trainer position and RNG states.

A checkpoint is one ``torch.save`` dict (written atomically: temp file + rename)::

    {"format": "synprep-checkpoint", "version": 1,
     "config": TrainConfig as dict, "symbols": [id → piece], "signature": str,
     "model": state_dict, "optimizer": state_dict, "scheduler": state_dict,
     "state": {"epoch", "batch_in_epoch", "step", "best_valid", "epoch_sums", ...},
     "rng": [per-rank {"torch", "cuda"}]}

It holds only tensors and plain Python data, so it is loaded with ``torch.load(weights_only=True)``:
a pickle that names any other object (a crafted ``checkpoint_best.pt`` calling ``os.system``) is
refused before anything runs (issue 10 item 4). :func:`validate_checkpoint` then checks the keys,
the config (typed and size-bounded with its vocabulary: :func:`synprep.train.config.config_from_dict`,
:func:`~synprep.train.config.check_model_size`), the vocabulary
and every tensor's shape against the model that config describes — built on the ``meta`` device,
which allocates nothing — before a real model is built.

``checkpoint{EPOCH}.pt`` (1-based epoch) are the per-epoch copies kept with ``keep_last_epochs``;
:func:`average_checkpoints` averages them like fairseq's ``scripts/average_checkpoints.py``.
"""

from __future__ import annotations

import errno
import os
import pickle
import re
import shutil
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from synprep.errors import InputError
from synprep.textio import atomic_write

CHECKPOINT_FORMAT = "synprep-checkpoint"
CHECKPOINT_VERSION = 1
LAST = "checkpoint_last.pt"
BEST = "checkpoint_best.pt"
EPOCH_RE = re.compile(r"checkpoint(\d+)\.pt")
#: largest vocabulary a checkpoint may declare
MAX_SYMBOLS = 1 << 21
#: fault injection for the kill-at-every-save tests: ``SYNPREP_KILL_AFTER_WRITE=N`` SIGKILLs this
#: process right after its N-th checkpoint file is in place (1-based; checkpoint_best/last/epoch);
#: ``SYNPREP_KILL_SIGNAL=TERM`` (or INT, ...) sends that signal instead of SIGKILL
KILL_ENV = "SYNPREP_KILL_AFTER_WRITE"
KILL_SIGNAL_ENV = "SYNPREP_KILL_SIGNAL"
_writes = 0


def _written(path: str | os.PathLike) -> None:
    """Called after every checkpoint file is renamed into place (see :data:`KILL_ENV`)."""
    global _writes
    _writes += 1
    if os.environ.get(KILL_ENV) == str(_writes):
        os.kill(os.getpid(), getattr(signal, "SIG" + os.environ.get(KILL_SIGNAL_ENV, "KILL").upper()))


def epoch_checkpoint(epoch: int) -> str:
    """File name of the copy kept after the 1-based ``epoch``: ``checkpoint{epoch}.pt``."""
    return f"checkpoint{epoch}.pt"


def epoch_checkpoints(run_dir: str | os.PathLike) -> list[Path]:
    """The ``checkpoint{EPOCH}.pt`` files of a run folder, oldest epoch first."""
    found = []
    for p in Path(run_dir).iterdir():
        m = EPOCH_RE.fullmatch(p.name)
        if m:
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def prune_epoch_checkpoints(run_dir: str | os.PathLike, keep: int) -> None:
    """Delete all but the last ``keep`` epoch checkpoints (fairseq ``--keep-last-epochs``)."""
    for p in epoch_checkpoints(run_dir)[:-keep] if keep > 0 else []:
        p.unlink(missing_ok=True)


def rng_state() -> dict[str, Any]:
    """This process's torch RNG states (CPU and, when present, every CUDA device)."""
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned."""
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Write a checkpoint atomically (nothing half-written is ever left under ``path``).

    Raises:
        OSError: the file cannot be written (a full disk, a file size limit, ...), naming ``path``:
            ``torch.save`` reports a failed write as a ``RuntimeError`` (``unexpected pos ...``)
            raised while handling the ``OSError`` of the write, which is re-raised instead.
    """
    payload = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **payload}
    try:
        with atomic_write(path, "wb", encoding=None) as f:
            torch.save(payload, f)
    except RuntimeError as e:
        cause: BaseException | None = e
        while cause is not None and not isinstance(cause, OSError):
            cause = cause.__cause__ or cause.__context__
        if isinstance(cause, OSError):
            raise OSError(cause.errno, f"cannot write the checkpoint: {cause.strerror or cause}", str(path)) from None
        msg = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise OSError(errno.EIO, f"cannot write the checkpoint: {msg}", str(path)) from None
    _written(path)


def copy_checkpoint(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy a checkpoint file atomically (``checkpoint_last.pt`` → ``checkpoint_best.pt``)."""
    with atomic_write(dst, "wb", encoding=None) as f, open(src, "rb") as g:
        shutil.copyfileobj(g, f)
    _written(dst)


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a synprep checkpoint with ``weights_only=True`` (no code in the file can run).

    Only the envelope is checked here (a dict of a known format and version); call
    :func:`validate_checkpoint` before building anything from it.

    Raises:
        InputError: missing file, not a torch file, a pickle naming objects other than tensors and
            plain data, or not a synprep checkpoint of a known version.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("no such checkpoint", str(p))
    try:
        ck = torch.load(p, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"(Unsupported global|Unsupported operand|unsupported)[^\n]*", str(e))
        why = found.group(0).strip() if found else str(e).strip().splitlines()[0][:200]
        raise InputError(f"refused to load: the file holds objects other than tensors and plain data ({why})",
                         str(p)) from None
    except Exception as e:  # noqa: BLE001 - any other failure means "not a checkpoint"
        msg = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise InputError(f"cannot read checkpoint: {msg}", str(p)) from None
    if not isinstance(ck, dict) or ck.get("format") != CHECKPOINT_FORMAT:
        raise InputError("not a synprep checkpoint", str(p))
    if ck.get("version") != CHECKPOINT_VERSION:
        raise InputError(f"checkpoint version {ck.get('version')!r} is not supported (this synprep reads "
                         f"{CHECKPOINT_VERSION})", str(p))
    return ck


def validate_checkpoint(ck: dict[str, Any], path: str | os.PathLike, resume: bool = False):
    """Check a loaded checkpoint before a model is built from it.

    Checks: the ``config`` (a dict; typed and size-bounded), ``symbols`` (a list of at most
    :data:`MAX_SYMBOLS` strings), ``model`` (a dict of tensors whose names and shapes are exactly
    those of the model the config and vocabulary describe, built on the ``meta`` device, and whose
    floating-point values are all finite: no NaN or inf); with
    ``resume`` also ``optimizer``, ``scheduler``, ``state`` and ``rng`` are present and of the
    right kind.

    Returns:
        the :class:`~synprep.train.config.TrainConfig`.

    Raises:
        InputError: ``PATH: REASON`` naming the first missing key, wrong type or shape.
    """
    from synprep.errors import ConfigError
    from synprep.train.config import check_model_size, config_from_dict
    from synprep.train.model import Seq2Seq

    where = str(path)
    required = ["config", "symbols", "model"] + (["optimizer", "scheduler", "state", "rng"] if resume else [])
    missing = [k for k in required if k not in ck]
    if missing:
        raise InputError(f"damaged checkpoint: no {', '.join(repr(k) for k in missing)} entry", where)
    for key, kind in (("config", dict), ("symbols", list), ("model", dict), ("optimizer", dict),
                      ("scheduler", dict), ("state", dict), ("rng", list)):
        if key in ck and not isinstance(ck[key], kind):
            raise InputError(f"damaged checkpoint: {key!r} is a {type(ck[key]).__name__}, not a {kind.__name__}", where)
    symbols = ck["symbols"]
    if not 4 <= len(symbols) <= MAX_SYMBOLS or not all(isinstance(x, str) for x in symbols):
        raise InputError(f"damaged checkpoint: 'symbols' must be 4 to {MAX_SYMBOLS} strings "
                         f"(got {len(symbols)} entries)", where)
    try:
        cfg = config_from_dict(ck["config"], f"{where}: config")
        check_model_size(cfg, len(symbols), f"{where}: config")
    except ConfigError as e:
        raise InputError(str(e).removeprefix(f"{where}: "), where) from None
    with torch.device("meta"):
        expected = {k: tuple(v.shape) for k, v in Seq2Seq(cfg, len(symbols)).state_dict().items()}
    got = ck["model"]
    for k, shape in expected.items():
        v = got.get(k)
        if not isinstance(v, torch.Tensor):
            raise InputError(f"damaged checkpoint: model has no tensor {k!r}", where)
        if tuple(v.shape) != shape:
            hint = " (a vocabulary of another size?)" if len(symbols) in shape or len(symbols) in v.shape else ""
            raise InputError(f"checkpoint does not match its config: {k} has shape {tuple(v.shape)}, the "
                             f"config and its {len(symbols)} symbols give {shape}{hint}", where)
    extra = sorted(set(got) - set(expected))
    if extra:
        raise InputError(f"checkpoint does not match its config: unexpected tensor {extra[0]!r}", where)
    for k in expected:  # a diverged run's weights translate every sentence to an empty line
        v = got[k]
        if v.is_floating_point() and not bool(torch.isfinite(v).all()):
            raise InputError(f"the model's weights are not finite (NaN or inf in {k}): the training diverged; use an "
                             "earlier checkpoint (checkpoint_best.pt, an epoch copy)", where)
    return cfg


def average_checkpoints(paths: Sequence[str | os.PathLike]) -> dict[str, Any]:
    """Average the model parameters of several checkpoints (fairseq's ``average_checkpoints``).

    Semantics of fairseq's ``scripts/average_checkpoints.py``: the result is the *first*
    checkpoint's dict with ``model`` replaced by the element-wise mean of every model tensor
    (floating tensors in float32/64 arithmetic, then cast back; integer tensors such as
    BatchNorm's ``num_batches_tracked`` floor-divided). Every checkpoint must be validated and
    share the config's model fields and the vocabulary.

    Raises:
        InputError: no paths, an unreadable or damaged checkpoint, or checkpoints of different
            models (the message names the file).
    """
    from synprep.train.config import RESUME_OVERRIDABLE

    if not paths:
        raise InputError("no checkpoints to average", "average")
    first: dict[str, Any] | None = None
    sums: dict[str, torch.Tensor] = {}
    for p in paths:
        ck = load_checkpoint(p)
        validate_checkpoint(ck, p)
        if first is None:
            first = ck
            sums = {k: (v.double() if v.is_floating_point() else v.clone()) for k, v in ck["model"].items()}
            continue
        a = {k: v for k, v in first["config"].items() if k not in RESUME_OVERRIDABLE and k != "seed"}
        b = {k: v for k, v in ck["config"].items() if k not in RESUME_OVERRIDABLE and k != "seed"}
        if a != b or list(ck["symbols"]) != list(first["symbols"]):
            diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            why = f"config differs in {', '.join(diff)}" if diff else "vocabulary differs"
            raise InputError(f"cannot average with {paths[0]}: {why}", str(p))
        for k, v in ck["model"].items():
            sums[k] += v.double() if v.is_floating_point() else v
    assert first is not None
    n = len(paths)
    model = {}
    for k, ref in first["model"].items():
        model[k] = (sums[k] / n).to(ref.dtype) if ref.is_floating_point() else torch.div(sums[k], n, rounding_mode="floor")
    out = dict(first)
    out["model"] = model
    out["averaged"] = [str(p) for p in paths]
    return out
