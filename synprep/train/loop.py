"""The training loop: one process, or one per device under ``torchrun`` (DDP).

What one update does (fairseq's semantics): ``update_freq`` batches are forwarded, the summed
label-smoothed loss divided by the number of target tokens of all of them (across ranks) is
back-propagated, gradients are clipped (``clip_norm > 0``), then Adam (decoupled weight decay)
steps and the inverse-sqrt schedule advances. While the gate networks are frozen (pre-warmup,
the first ``gate_freeze_epochs`` epochs) their gradients are dropped before the step, so Adam
neither moves them nor accumulates state for them.

After every epoch (and when ``max_steps`` stops a run mid-epoch: :mod:`synprep.train.periods`) the
validation split is scored, the mean gate of every encoder layer and head over it is logged and drawn
(``gates.png``), and
``checkpoint_last.pt`` is written (``checkpoint_best.pt`` too when the validation loss improved).
With ``async_checkpoint`` (the default) the loop only copies the state to host memory and a
background thread writes the files (:class:`~synprep.train.checkpoint.CheckpointWriter`); the run
waits for that write before it ends, fails or stops on SIGTERM, and a failed write stops the run
with the error a synchronous save gives.
A checkpoint holds everything needed to continue *exactly*: model, optimizer, scheduler, the
position inside the epoch and every rank's RNG state; batch order is a pure function of
``(seed, epoch)``, and the DataLoader gets its own generator so it never draws from the global one.

Losses in metrics.jsonl are per target token in base 2 (bits), like fairseq's logs.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import Dataset

from synprep import extras
from synprep.errors import ConfigError, InputError
from synprep.textio import atomic_write
from synprep.train import runtime
from synprep.train.checkpoint import (
    LAST,
    CheckpointWriter,
    copy_checkpoint,
    epoch_checkpoint,
    load_checkpoint,
    prune_epoch_checkpoints,
    rng_state,
    set_rng_state,
    snapshot,
    validate_checkpoint,
    write_checkpoints,
)
from synprep.train.compiling import compile_model, compiled_loss
from synprep.train.config import TrainConfig, resume_config
from synprep.train.data import Batch, Collater, make_loaders
from synprep.train.distributed import DistEnv
from synprep.train.graphs import GraphedUpdates
from synprep.train.loss import smoothed_loss_from_logits
from synprep.train.metrics import MetricsLog, draw_gate_heatmap
from synprep.train.model import EncoderOut, Seq2Seq, real_positions
from synprep.train.periods import Periods
from synprep.train.rundir import (
    carried_interval,
    restored_interval,
    sweep_partial_files,
)
from synprep.train.state import TrainState, effective_gates, inverse_sqrt, train_signature

log = logging.getLogger("synprep.train")


# --------------------------------------------------------------------------------------------
# the trainer
# --------------------------------------------------------------------------------------------
class Trainer(Periods):
    """Runs updates, validation and checkpoints for one process (see the module docstring).

    Args:
        cfg: configuration (None when resuming: the checkpoint's is used).
        train_ds: datasets yielding ``(index, PairRecord)`` with ``src_lengths``/``tgt_lengths``
            arrays.
        valid_ds: datasets yielding ``(index, PairRecord)`` with ``src_lengths``/``tgt_lengths``
            arrays.
        symbols: the vocabulary (id → piece).
        out_dir: where metrics.jsonl, gates.png, config.json and checkpoints go.
        device: training device.
        dist_env: DDP position.
        resume: continue from ``out_dir/checkpoint_last.pt``.
        overrides: with ``resume``, new values of the fields in
            :data:`~synprep.train.config.RESUME_OVERRIDABLE` (others must not change).
        progress: tqdm bars (None = when stderr is a terminal).
        data_signature: the shards' signature, recorded in checkpoints.

    Raises:
        InputError: with ``resume``, a missing, unreadable or damaged ``checkpoint_last.pt``
            (:func:`~synprep.train.checkpoint.load_checkpoint`,
            :func:`~synprep.train.checkpoint.validate_checkpoint`), or shards whose vocabulary differs from it.
        ConfigError: no configuration for a new run, ``max_epochs`` and ``max_steps`` both 0, an override of a
            field that cannot change on resume, or ``cuda_graphs`` off CUDA or in more than one process.
    """

    ddp: torch.nn.Module  #: the model, or its DDP / torch.compile wrapper (what the updates call)
    graphs: GraphedUpdates | None  #: the CUDA graphs of the updates (``cuda_graphs``), else None

    def __init__(self, cfg: TrainConfig | None, train_ds: Dataset, valid_ds: Dataset, symbols: list[str], out_dir: str | Path,
                 device: torch.device, dist_env: DistEnv | None = None, resume: bool = False,
                 overrides: dict[str, Any] | None = None, progress: bool | None = None,
                 data_signature: str | None = None):
        self.env = dist_env or DistEnv()
        self.out = Path(out_dir)
        self.device = device
        self.symbols = list(symbols)
        self.progress = progress
        self.data_signature = data_signature
        ck = self._checkpoint() if resume else None
        if ck is not None:
            cfg = resume_config(ck["config"], overrides, str(self.out / LAST))
            if list(ck["symbols"]) != self.symbols:
                raise InputError("the shards' vocabulary differs from the checkpoint's", str(self.out / LAST))
        if cfg is None:
            raise ConfigError("a configuration (--config or --preset) is needed for a new run")
        if cfg.max_epochs == 0 and cfg.max_steps == 0:
            raise ConfigError("set max_epochs or max_steps (both are 0: the run would never end)")
        self.cfg = cfg
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.runtime = runtime.resolve(cfg, device)  # device, autocast, TF32, attention kernels, compile
        if cfg.cuda_graphs:
            self._check_graphs(cfg, device)
        runtime.apply(self.runtime)
        self._build(cfg, device)
        if ck is not None:
            self._restore(ck)
        if self.env.enabled:  # after the restore: DDP starts from the restored weights
            from torch.nn.parallel import DistributedDataParallel as DDP

            self.ddp = DDP(self.model, device_ids=[device.index] if device.type == "cuda" else None)
        self._loaders(cfg, train_ds, valid_ds, device)
        self.autocast = self.runtime.autocast("train")
        if cfg.compile:  # regional: each layer in place, and the loss (synprep.train.compiling)
            compile_model(self.model)
        self.graphs = None
        if cfg.cuda_graphs:  # the graphs' step: the model itself (no DDP, checked)
            self.graphs = GraphedUpdates(functools.partial(self._forward_backward, self.model), self.model.parameters(),
                                         device)
        self.signature = train_signature(cfg, data_signature, self.env.world_size)
        if self.env.is_main:
            self._open_run_folder(resumed=ck is not None)
        self.gates: list[list[float]] = effective_gates(cfg)
        self.writer = CheckpointWriter(background=cfg.async_checkpoint)
        self._write_s_logged = 0.0  # writer.write_s at the last metrics row

    # --- construction steps ------------------------------------------------------------------
    def _check_graphs(self, cfg: TrainConfig, device: torch.device) -> None:
        """``cuda_graphs`` needs CUDA and one process (:mod:`synprep.train.graphs`). With ``compile`` the
        graphs record the compiled layers' kernels: each shape's eager first run compiles (or reuses) the
        layers' code for it, its capture records that code's launches.

        Raises:
            ConfigError: naming what stands in the way.
        """
        if device.type != "cuda":
            raise ConfigError(f"cuda_graphs replays CUDA graphs; this run is on {device.type} (set cuda_graphs false)")
        if self.env.enabled:
            raise ConfigError("cuda_graphs runs in one process; this run has "
                              f"{self.env.world_size} (set cuda_graphs false for DDP)")

    def _checkpoint(self) -> dict[str, Any]:
        """``out/checkpoint_last.pt``, loaded and validated for a resume."""
        ck = load_checkpoint(self.out / LAST, map_location="cpu")
        validate_checkpoint(ck, self.out / LAST, resume=True)
        return ck

    def _build(self, cfg: TrainConfig, device: torch.device) -> None:
        """Model (seeded by ``cfg.seed``), fused AdamW, the inverse-sqrt schedule, a fresh state;
        then the per-rank dropout stream."""
        torch.manual_seed(cfg.seed)
        self.model = Seq2Seq(cfg, len(self.symbols)).to(device)
        self.gate_params = self.model.gate_parameters()
        self.ddp = self.model
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, betas=(cfg.adam_betas[0], cfg.adam_betas[1]),
                                           eps=cfg.adam_eps, weight_decay=cfg.weight_decay, fused=True)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, inverse_sqrt(cfg))
        self.state = TrainState()
        torch.manual_seed(cfg.seed + self.env.rank)  # dropout streams differ per rank

    def _restore(self, ck: dict[str, Any]) -> None:
        """Weights, optimizer, schedule, position and this rank's RNG from a checkpoint; the epoch
        copies a killed run left unfinished are completed and pruned.

        Raises:
            InputError: a damaged resume state.
            ConfigError: stopped inside an epoch with another number of processes.
        """
        try:
            self.model.load_state_dict(ck["model"])
            self.optimizer.load_state_dict(ck["optimizer"])
            for group in self.optimizer.param_groups:  # a checkpoint of the unfused optimizer
                group.update(fused=True, foreach=None)
            self.scheduler.load_state_dict(ck["scheduler"])
            self.state = TrainState(**ck["state"])
            restored_interval(self.state.interval)  # checked here: a damaged one is a one-line error
            rngs = ck["rng"]
            set_rng_state(rngs[self.env.rank % len(rngs)])
        except (KeyError, TypeError, ValueError, RuntimeError, IndexError, ZeroDivisionError) as e:
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(f"damaged resume state: {msg}", str(self.out / LAST)) from None
        st = self.state
        if ck.get("world_size", 1) != self.env.world_size and st.batch_in_epoch:
            raise ConfigError(f"this checkpoint stopped inside an epoch with {ck.get('world_size', 1)} process(es): "
                              f"resume it with as many (now {self.env.world_size})")
        if self.env.is_main and self.cfg.keep_last_epochs:
            if st.epoch > 0 and st.batch_in_epoch == 0 and st.validated \
                    and not (self.out / epoch_checkpoint(st.epoch)).exists():
                # killed between an epoch's checkpoint_last.pt and its epoch copy: that LAST *is* the copy
                copy_checkpoint(self.out / LAST, self.out / epoch_checkpoint(st.epoch))
            prune_epoch_checkpoints(self.out, self.cfg.keep_last_epochs)  # killed before the pruning

    def _loaders(self, cfg: TrainConfig, train_ds: Dataset, valid_ds: Dataset, device: torch.device) -> None:
        """Samplers and loaders of both splits (:func:`synprep.train.data.make_loaders`)."""
        (self.train_sampler, self.valid_sampler, self.train_loader,
         self.valid_loader) = make_loaders(cfg, train_ds, valid_ds,
                                           Collater.for_model(self.model, graph_shapes=cfg.cuda_graphs), self.env.rank,
                                           self.env.world_size, device, log_skipped=self.env.is_main)

    def _open_run_folder(self, resumed: bool) -> None:
        """The main rank's run folder: partial files swept, ``config.json`` (with ``_runtime``), the
        runtime policy logged, the metrics log opened (cut back to the checkpoint when ``resumed``)."""
        self.out.mkdir(parents=True, exist_ok=True)
        sweep_partial_files(self.out)  # a killed run's partial checkpoint (the run lock is held: train())

        with atomic_write(self.out / "config.json") as f:  # _runtime: metadata, skipped when read back
            f.write(json.dumps({**self.cfg.to_dict(), "_runtime": self.runtime.record()}, indent=2) + "\n")
        log.info("%s", self.runtime.describe())
        log.info("checkpoints: %s", "written by a background thread from a host copy (async_checkpoint)"
                 if self.cfg.async_checkpoint else "written in the training loop (async_checkpoint false)")
        self.metrics = MetricsLog(self.out / "metrics.jsonl", resume_step=self.state.step if resumed else None,
                                  resume_validated=self.state.validated)

    # --- one update --------------------------------------------------------------------------
    #: device accumulators of the epoch's (loss, nll, tokens), started from ``self.state``'s and read
    #: back into it by :meth:`_flush` (at a log interval, a checkpoint, the end of a period)
    _epoch_acc: torch.Tensor | None = None
    _skipped: torch.Tensor | None = None  # updates skipped for a non-finite gradient norm, not yet logged

    def _loss(self, module: torch.nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, EncoderOut]:
        """Summed label-smoothed loss and NLL (nats) of ``batch`` through ``module`` (the model or
        its DDP wrapper), and the encoder output. Forward under autocast, log-softmax in float32."""
        with self.autocast:
            logits, enc = module(batch)  # (N, V): real target positions only
        target = batch.target.flatten().index_select(0, real_positions(batch))  # no host sync (N is known)
        if self.cfg.compile:
            loss, nll = compiled_loss(logits, target, self.cfg.label_smoothing)
        else:  # the logits are read by nothing else: their memory takes the log-probabilities (on the CPU)
            loss, nll = smoothed_loss_from_logits(logits, target, self.cfg.label_smoothing, overwrite=True)
        return loss, nll, enc

    def _forward_backward(self, module: torch.nn.Module, batch: Batch,
                          scale: float | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Forward and backward of one device batch through ``module`` (the model or its DDP wrapper):
        gradients of ``(loss + aux) · scale`` added into ``.grad``; a source's auxiliary loss (LISA)
        joins the objective, not the logged loss. With a device ``scale`` it reads no host value but
        ``batch.ntokens``: a CUDA graph's step (:class:`~synprep.train.graphs.GraphedUpdates`).

        Returns:
            (loss, nll): () float32 sums over the batch's target tokens (nats), detached.
        """
        loss, nll, enc = self._loss(module, batch)
        total = loss if enc.aux_loss is None else loss + enc.aux_loss.float()
        (total * scale).backward()
        return loss.detach(), nll.detach()

    def train_step(self, group: list[Batch]) -> dict[str, torch.Tensor]:
        """One update on ``group`` (``update_freq`` batches).

        Nothing in it waits for the device: the token count is known on the host, losses
        are summed on the device, and an update whose gradient norm is not finite is skipped by the
        fused AdamW itself (``found_inf``), not by a host test.

        Returns:
            summed ``loss``/``nll`` (nats), ``ntokens`` and ``gnorm`` (before clipping) as float64
            scalars on the training device: read them once per log interval, not per update.
        """
        self.ddp.train()
        dev = self.device
        ntok_host = float(sum(b.ntokens for b in group))
        if self.env.enabled:
            ntok = self._reduce_t(torch.full((), ntok_host, dtype=torch.float64, device=dev))
            scale: float | torch.Tensor = self.env.world_size / ntok.clamp(min=1.0)  # DDP averages over ranks
        else:
            ntok = torch.full((), ntok_host, dtype=torch.float64, device=dev)
            scale = 1.0 / max(ntok_host, 1.0)  # grads = Σ loss / ntok
        loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
        nll_sum = torch.zeros((), dtype=torch.float64, device=dev)
        for i, batch in enumerate(group):
            if self.graphs is not None:  # one process, no DDP (checked)
                loss, nll = self.graphs(batch, float(scale))
            else:
                sync = contextlib.nullcontext()
                if self.env.enabled and i < len(group) - 1:
                    sync = self.ddp.no_sync()  # type: ignore[operator]
                with sync:
                    loss, nll = self._forward_backward(self.ddp, batch.to(self.device), scale)
            loss_sum = loss_sum + loss.double()
            nll_sum = nll_sum + nll.double()
        held = [(p, p.grad) for p in self.gate_params] if self._frozen() else []
        for p, _ in held:
            p.grad = None
        max_norm = self.cfg.clip_norm if self.cfg.clip_norm > 0 else math.inf
        gnorm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
        found_inf = (~torch.isfinite(gnorm)).float()  # 1: the fused AdamW leaves weights and state alone
        self.optimizer.found_inf = found_inf  # type: ignore[attr-defined]
        self.optimizer.step()
        self._skipped = found_inf if self._skipped is None else self._skipped + found_inf
        self.scheduler.step()
        for p, g in held:  # with cuda_graphs the graphs add into these very tensors: kept, zeroed
            p.grad = g
        self.optimizer.zero_grad(set_to_none=self.graphs is None)
        if self.env.enabled:
            loss_sum, nll_sum = self._reduce_t(torch.stack([loss_sum, nll_sum])).unbind()
        return {"loss": loss_sum, "nll": nll_sum, "ntokens": ntok, "gnorm": gnorm.double()}

    def _reduce_t(self, t: torch.Tensor) -> torch.Tensor:
        """Sum of ``t`` over the ranks, on the device (no host read)."""
        dist.all_reduce(t)
        return t

    def _accumulate(self, out: dict[str, torch.Tensor]) -> None:
        """Add an update's sums to the epoch's, on the device (the same float64 additions, in the
        same order, as the host sums they replace: losses stay bit-identical)."""
        if self._epoch_acc is None:
            st = self.state
            self._epoch_acc = torch.tensor([st.epoch_loss, st.epoch_nll, float(st.epoch_tokens)],
                                           dtype=torch.float64, device=self.device)
        self._epoch_acc = self._epoch_acc + torch.stack([out["loss"], out["nll"], out["ntokens"]])

    def _flush(self) -> None:
        """Read the device accumulators back into ``self.state`` (one transfer) and log skipped updates."""
        if self._epoch_acc is not None:
            loss, nll, tok = self._epoch_acc.tolist()
            st = self.state
            st.epoch_loss, st.epoch_nll, st.epoch_tokens = loss, nll, int(tok)
            self._epoch_acc = None
        if self._skipped is not None:
            n = int(self._skipped)
            self._skipped = None
            if n:
                log.warning("%d update(s) up to step %d skipped: non-finite gradient norm", n, self.state.step)

    # --- checkpoints ---------------------------------------------------------------------------
    def save(self, is_best: bool, epoch_end: bool = False) -> None:
        """Write checkpoint_last.pt (and checkpoint_best.pt, and ``checkpoint{EPOCH}.pt`` at the end
        of an epoch when ``keep_last_epochs``; order: :func:`~synprep.train.checkpoint.write_checkpoints`);
        every rank takes part (RNG gather).

        With ``async_checkpoint`` the files are written in the background from a host copy of the
        state taken here (:func:`~synprep.train.checkpoint.snapshot`), after the previous write
        has finished: call :meth:`finish_writes` before reading them.

        Raises:
            OSError: this write, or the previous background write, failed (naming the file)."""
        self._flush()
        rngs = [rng_state()]
        if self.env.enabled:
            gathered: list[Any] = [None] * self.env.world_size
            dist.all_gather_object(gathered, rngs[0])
            rngs = gathered
        if not self.env.is_main:
            return
        self.state.interval = carried_interval(getattr(self, "_interval", {}))  # the open metrics row's sums
        payload = {
            "config": self.cfg.to_dict(), "symbols": self.symbols, "signature": self.signature,
            "data_signature": self.data_signature, "world_size": self.env.world_size,
            "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(), "state": asdict(self.state), "rng": rngs}
        self.writer.wait()  # one write at a time: the previous one's error surfaces here, its buffers are free
        if self.writer.background:  # copies: the next update changes the weights in place
            payload = snapshot(payload, self.writer.buffers)
        self.writer.submit(write_checkpoints, self.out, payload, is_best,
                           self.state.epoch if epoch_end else None, self.cfg.keep_last_epochs)

    def finish_writes(self, raise_errors: bool = True) -> None:
        """Wait for the checkpoint write in flight (see :class:`~synprep.train.checkpoint.CheckpointWriter`).

        Raises:
            OSError: it failed (with ``raise_errors=False``: logged instead)."""
        self.writer.close(raise_errors)

    def _draw(self, epoch: int) -> None:
        """gates.png, titled with the 1-based epoch of the metrics row and log line it belongs to; a
        model without syntax heads (vanilla) has no gates: said once, nothing drawn."""
        if not self.cfg.uses_syntax:
            if not getattr(self, "_said_no_gates", False):
                log.info("no gates: a vanilla model has no syntax heads (no gates.png)")
                self._said_no_gates = True
            return

        if not extras.available("matplotlib"):  # the gate values are in metrics.jsonl either way
            if not getattr(self, "_warned_no_plot", False):
                log.warning("gates.png not drawn: matplotlib is not installed (pip install 'synprep[plot]')")
                self._warned_no_plot = True
            return
        title = f"{self.cfg.describe()} — epoch {epoch}, step {self.state.step}"
        draw_gate_heatmap(self.gates, self.out / "gates.png", title)

    # --- the run -----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Train until ``max_epochs`` or ``max_steps``; returns a summary once every checkpoint is
        written (an exception or SIGTERM also waits for the write in flight before it propagates).

        Raises:
            OSError: a checkpoint could not be written (a background write: at the next save, the
                next update or the end)."""
        try:
            summary = self._run()
        except BaseException:
            self.finish_writes(raise_errors=False)
            raise
        self.finish_writes()
        return summary

    def _run(self) -> dict[str, Any]:
        cfg, st = self.cfg, self.state
        from tqdm import tqdm

        interval = self._interval = restored_interval(st.interval)  # a resumed row covers what it would have
        stopped = bool(cfg.max_steps and st.step >= cfg.max_steps)
        last_valid: dict[str, Any] = {}
        if stopped and not st.validated:
            # resumed from an interval checkpoint saved at the last step, before that period's
            # validation: do it now, exactly as the uninterrupted run did
            n_batches = len(self.train_sampler.rank_batches(st.epoch))
            last_valid = self._close_period(n_batches, stopped=True)
        while not stopped and (cfg.max_epochs == 0 or st.epoch < cfg.max_epochs):
            self.train_sampler.set_epoch(st.epoch, st.batch_in_epoch)
            n_batches = len(self.train_sampler.rank_batches(st.epoch))
            show = self.env.is_main and (sys.stderr.isatty() if self.progress is None else self.progress)
            bar = tqdm(total=n_batches, initial=st.batch_in_epoch, desc=f"epoch {st.epoch + 1}", leave=False,
                       file=sys.stderr, disable=not show, unit="batch")
            it = iter(self.train_loader)
            while not (cfg.max_steps and st.step >= cfg.max_steps):
                t_wait = time.perf_counter()
                group = [b for _, b in zip(range(cfg.update_freq), it, strict=False)]
                interval["wait_s"] += time.perf_counter() - t_wait  # the DataLoader: reading, collation
                if not group:
                    break
                out = self.train_step(group)
                st.step += 1
                st.validated = False
                st.batch_in_epoch += len(group)
                self._accumulate(out)  # on the device; read at the log interval
                for key in ("loss", "nll", "ntokens", "gnorm"):
                    interval[key] += out[key]
                interval["n"] += 1
                bar.update(len(group))
                self.writer.check()  # a failed background write stops the run now (no wait)
                if st.step % cfg.log_interval == 0:
                    self._log_interval(interval, bar)
                if cfg.save_interval_updates and st.step % cfg.save_interval_updates == 0:
                    t_save = time.perf_counter()
                    self.save(False)
                    interval["checkpoint_s"] += time.perf_counter() - t_save
            stopped = bool(cfg.max_steps and st.step >= cfg.max_steps)
            bar.close()
            last_valid = self._close_period(n_batches, stopped)
        return {"step": st.step, "epoch": st.epoch, "batches_in_epoch": st.batch_in_epoch,
                "best_valid_loss": st.best_valid,
                "last": last_valid, "out": str(self.out), "signature": self.signature}
