"""Checkpoints that resume exactly: model, optimizer, scheduler, trainer position and RNG states.

A checkpoint is one ``torch.save`` dict (written atomically: temp file + rename)::

    {"format": "synprep-checkpoint", "version": 1,
     "config": TrainConfig as dict, "symbols": [id → piece], "signature": str,
     "model": state_dict, "optimizer": state_dict, "scheduler": state_dict,
     "state": {"epoch", "batch_in_epoch", "step", "best_valid", "epoch_sums", ...},
     "rng": [per-rank {"torch", "cuda"}]}

It holds only tensors and plain Python data, so it is loaded with ``torch.load(weights_only=True)``:
a pickle that names any other object (a crafted ``checkpoint_best.pt`` calling ``os.system``) is
refused before anything runs. :func:`validate_checkpoint` then checks the keys,
the config (typed and size-bounded with its vocabulary: :func:`synprep.train.config.config_from_dict`,
:func:`~synprep.train.config.check_model_size`), the vocabulary
and every tensor's shape against the model that config describes — built on the ``meta`` device,
which allocates nothing — before a real model is built.

``checkpoint{EPOCH}.pt`` (1-based epoch) are the per-epoch copies kept with ``keep_last_epochs``;
:func:`average_checkpoints` averages them like fairseq's ``scripts/average_checkpoints.py``.

Writing without stalling the training (``async_checkpoint``): :func:`snapshot`
copies the payload's tensors to host memory (pinned, non-blocking copies and one synchronisation
on CUDA), and a :class:`CheckpointWriter` runs :func:`write_checkpoints` (serialisation, fsync,
rename) in one background thread, one write at a time; the files it leaves are the same files,
written by the same atomic steps, as a synchronous save.
"""

from __future__ import annotations

import errno
import logging
import os
import pickle
import re
import shutil
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

from synprep.errors import ConfigError, InputError
from synprep.textio import atomic_write
from synprep.train.config import (
    RESUME_OVERRIDABLE,
    check_model_size,
    config_from_dict,
)
from synprep.train.model import Seq2Seq
from synprep.train.resume_state import check_resume_state

log = logging.getLogger("synprep.train")

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


def write_checkpoints(out: str | os.PathLike, payload: dict[str, Any], is_best: bool,
                      epoch: int | None = None, keep_last_epochs: int = 0) -> None:
    """Write one save point's files into the run folder ``out``: ``checkpoint_last.pt``, with
    ``is_best`` ``checkpoint_best.pt`` too, with ``epoch`` (1-based) the epoch copy, then prune the
    epoch copies to ``keep_last_epochs``.

    Order: the best checkpoint is written first and then copied to checkpoint_last.pt, so a run
    killed between the two resumes from the previous checkpoint_last.pt, redoes the period and
    writes both again; killed after, both are there. Epoch copies come last.

    Raises:
        OSError: a file cannot be written (:func:`save_checkpoint`).
    """
    out = Path(out)
    if is_best:
        save_checkpoint(out / BEST, payload)
        copy_checkpoint(out / BEST, out / LAST)
    else:
        save_checkpoint(out / LAST, payload)
    if epoch is not None and keep_last_epochs:
        copy_checkpoint(out / LAST, out / epoch_checkpoint(epoch))
        prune_epoch_checkpoints(out, keep_last_epochs)


_IMMUTABLE = (str, bytes, int, float, complex, bool, type(None), torch.dtype, torch.device)


def snapshot(obj: Any, buffers: dict[Any, torch.Tensor] | None = None) -> Any:
    """A copy of ``obj`` (nested dicts, lists and tuples of tensors and plain data, such as a
    checkpoint payload) whose tensors live in host memory of their own: the training may change
    the originals in place as soon as this returns.

    Each tensor storage is copied once and the tensors are rebuilt over the copies as views with
    their offsets, sizes and strides, so tensors that shared a storage (tied embeddings) still do
    and ``torch.save`` writes the same records, byte for byte on the CPU (a CUDA tensor's copy
    is saved as a CPU tensor: ``map_location`` makes no difference to its values). From CUDA the copies go
    to pinned memory without blocking, then the device's current stream is synchronised once.

    Args:
        obj: the payload.
        buffers: host buffers of the previous snapshot, keyed by source storage, reused where the size fits
            and replaced by this snapshot's (the caller must not reuse them while that snapshot is still being
            written).

    Returns:
        the copy (containers new; immutable leaves shared; other leaves deep-copied).
    """
    import copy

    old = dict(buffers or {})
    memo: dict[Any, torch.Tensor] = {}
    devices: set[torch.device] = set()

    def host_copy(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        key = (t.device, st._cdata if st.nbytes() else id(t))  # torch.save's record key: the storage itself
        buf = memo.get(key)
        if buf is None:
            cuda = t.device.type == "cuda"
            buf = old.pop(key, None)
            if buf is None or buf.numel() != st.nbytes():
                buf = torch.empty(st.nbytes(), dtype=torch.uint8, pin_memory=cuda)
            buf.copy_(torch.empty(0, dtype=torch.uint8, device=t.device).set_(st), non_blocking=cuda)
            if cuda:
                devices.add(t.device)
            memo[key] = buf
        return torch.empty(0, dtype=t.dtype).set_(buf.untyped_storage(), t.storage_offset(), t.size(), t.stride())

    def walk(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return host_copy(x.detach())
        if isinstance(x, dict):  # a state_dict is an OrderedDict with a _metadata attribute: both kept
            y = copy.copy(x)
            for k, v in x.items():
                y[k] = walk(v)
            if getattr(x, "__dict__", None):
                y.__dict__.update(copy.deepcopy(x.__dict__))
            return y
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, tuple):
            items = [walk(v) for v in x]
            return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
        return x if isinstance(x, _IMMUTABLE) else copy.deepcopy(x)

    out = walk(obj)
    for d in devices:  # the one wait: the copies are in host memory when this returns
        torch.cuda.current_stream(d).synchronize()
    if buffers is not None:
        buffers.clear()
        buffers.update(memo)
    return out


class CheckpointWriter:
    """Runs checkpoint writes in one background thread, at most one in flight.

    :meth:`submit` first waits for the write in flight, then starts the new one; :meth:`wait`
    waits for it; :meth:`check` looks without waiting. A failed write is never lost: its exception
    (the ``OSError`` of :func:`save_checkpoint` naming the file, exactly as a synchronous save
    raises it) is raised in the caller's thread by the next :meth:`submit`, :meth:`wait`,
    :meth:`check` or :meth:`close`. With ``background=False`` every write runs in :meth:`submit`.

    Attributes:
        write_s: seconds spent in finished writes so far (in the background thread: overlapped with the
            training).
        buffers: the host buffers of the last :func:`snapshot`, reused by the next (touch them only after
            :meth:`wait`).
    """

    def __init__(self, background: bool = True):
        self.background = background
        self.write_s = 0.0
        self.buffers: dict[Any, torch.Tensor] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future | None = None

    def _timed(self, job: Callable[..., None], *args: Any) -> None:
        t = time.perf_counter()
        try:
            job(*args)
        finally:
            self.write_s += time.perf_counter() - t

    def submit(self, job: Callable[..., None], *args: Any) -> None:
        """Wait for the write in flight (raising its error), then run ``job(*args)`` in the background."""
        self.wait()
        if not self.background:
            self._timed(job, *args)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="synprep-checkpoint")
        self._pending = self._pool.submit(self._timed, job, *args)

    def wait(self) -> None:
        """Wait for the write in flight.

        Raises:
            Exception: the write's own exception (e.g. ``OSError``), once, when it failed.
        """
        f = self._pending
        if f is None:
            return
        exc = f.exception()  # a signal (SIGTERM) interrupting the wait leaves the write pending
        self._pending = None
        if exc is not None:
            raise exc

    def check(self) -> None:
        """Raise the exception of a write that has already failed; never waits."""
        if self._pending is not None and self._pending.done():
            self.wait()

    def close(self, raise_errors: bool = True) -> None:
        """Wait for the write in flight, stop the thread and free the host buffers (a later
        :meth:`submit` starts again). ``raise_errors=False`` (the run is already failing with
        another exception): a failed write is logged, not raised."""
        try:
            if raise_errors:
                self.wait()
            else:
                try:
                    self.wait()
                except Exception as e:  # noqa: BLE001 - the error in flight is the one to report
                    log.error("the checkpoint written in the background failed too: %s", e)
        finally:
            if self._pending is None:  # nothing in flight: the thread and the host buffers go
                self.buffers.clear()
                if self._pool is not None:
                    self._pool.shutdown(wait=True)
                    self._pool = None


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
    right kind, and in range tensor by tensor (:func:`synprep.train.resume_state.check_resume_state`).

    Returns:
        the :class:`~synprep.train.config.TrainConfig`.

    Raises:
        InputError: ``PATH: REASON`` naming the first missing key, wrong type or shape.
    """
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
        meta = Seq2Seq(cfg, len(symbols))
        expected = {k: tuple(v.shape) for k, v in meta.state_dict().items()}
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
    if resume:
        check_resume_state(ck, where, [(n, tuple(p.shape)) for n, p in meta.named_parameters()])
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
