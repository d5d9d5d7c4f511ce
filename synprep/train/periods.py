"""The end of a training period and the log interval: validation, the metrics rows, gates.png, the checkpoints.

A period is an epoch, or the run when ``max_steps`` stops it mid-epoch. :class:`Periods` is a part of
:class:`~synprep.train.loop.Trainer` (its base class): the trainer's state it reads is declared here, the
trainer's methods it calls are :class:`~synprep.train.loop.Trainer`'s.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import torch
import torch.distributed as dist

from synprep.train.checkpoint import CheckpointWriter
from synprep.train.config import TrainConfig
from synprep.train.data import Batch
from synprep.train.distributed import DistEnv
from synprep.train.graphs import GraphedUpdates
from synprep.train.metrics import MetricsLog
from synprep.train.model import EncoderOut, Seq2Seq
from synprep.train.rundir import restored_interval
from synprep.train.runtime import RuntimePolicy
from synprep.train.state import TrainState, effective_gates

log = logging.getLogger("synprep.train")
LN2 = math.log(2.0)


class Periods:
    """Validation, metrics rows and checkpoints at the end of a period and at each log interval (a part of
    :class:`~synprep.train.loop.Trainer`)."""

    cfg: TrainConfig
    state: TrainState
    env: DistEnv
    device: torch.device
    model: Seq2Seq
    ddp: torch.nn.Module
    gate_params: list[torch.nn.Parameter]
    gates: list[list[float]]
    metrics: MetricsLog
    runtime: RuntimePolicy
    writer: CheckpointWriter
    optimizer: torch.optim.Optimizer
    graphs: GraphedUpdates | None
    valid_loader: Any
    _interval: dict[str, Any]
    _write_s_logged: float

    # the trainer's own (synprep.train.loop.Trainer)
    def _loss(self, module: torch.nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, EncoderOut]:
        raise NotImplementedError

    def _flush(self) -> None:
        raise NotImplementedError

    def _draw(self, epoch: int) -> None:
        raise NotImplementedError

    def save(self, is_best: bool, epoch_end: bool = False) -> None:
        raise NotImplementedError

    # --- read by the updates too -----------------------------------------------------------------
    def _frozen(self) -> bool:
        return bool(self.gate_params) and self.state.epoch < self.cfg.gate_freeze_epochs

    def _all_reduce(self, values: list[float]) -> list[float]:
        if not self.env.enabled:
            return values
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return t.tolist()

    # --- validation --------------------------------------------------------------------------
    @torch.no_grad()
    def validate(self) -> dict[str, Any]:
        """Validation loss (bits per token) and mean gate per encoder layer and head."""
        self.ddp.eval()
        H = self.cfg.heads
        tok = n_sent = 0.0
        sums = torch.zeros(2, dtype=torch.float64, device=self.device)  # loss, nll: read once at the end
        gate_sums: dict[int, torch.Tensor] = {}
        for batch in self.valid_loader:
            batch = batch.to(self.device)
            ls, ns, enc = self._loss(self.model, batch)
            sums = sums + torch.stack([ls, ns]).double()
            tok += batch.ntokens
            n_sent += batch.size
            for layer, g in enc.gates.items():
                gate_sums[layer] = gate_sums.get(layer, torch.zeros(H, dtype=torch.float64, device=self.device)) \
                    + g.double().sum(0)
        layers = sorted(self.model.head_sources) if self.gate_params else []
        loss, nll = sums.tolist()
        flat = [loss, nll, tok, n_sent] + [float(x) for layer in layers
                                           for x in gate_sums.get(layer, torch.zeros(H, dtype=torch.float64)).tolist()]
        flat = self._all_reduce(flat)
        loss, nll, tok, n_sent = flat[:4]
        learned = {layer: [flat[4 + i * H + h] / max(n_sent, 1.0) for h in range(H)] for i, layer in enumerate(layers)}
        self.gates = effective_gates(self.cfg, learned)
        return {"valid_loss": loss / max(tok, 1.0) / LN2, "valid_nll_loss": nll / max(tok, 1.0) / LN2,
                "valid_ppl": 2 ** (nll / max(tok, 1.0) / LN2), "valid_tokens": int(tok)}

    def _end_of_period(self, record: dict[str, Any], final: bool) -> None:
        t_valid = time.perf_counter()
        v = self.validate()
        self._interval["valid_s"] += time.perf_counter() - t_valid
        is_best = v["valid_loss"] < self.state.best_valid
        if is_best:
            self.state.best_valid = v["valid_loss"]
        self.state.validated = True
        if self.env.is_main:
            rec = {**record, **v, "best_valid_loss": self.state.best_valid, "gates": self.gates,
                   "runtime": self.runtime.record()}
            self.metrics.write(rec)
            if final or (record["epoch_done"] and record["epoch"] % 10 == 0):  # matplotlib is slow
                self._draw(record["epoch"])
            log.info("epoch %d step %d | valid loss %.3f | nll %.3f | ppl %.2f%s", record["epoch"], self.state.step,
                     v["valid_loss"], v["valid_nll_loss"], v["valid_ppl"], " | best" if is_best else "")
        t_save = time.perf_counter()
        self.save(is_best, epoch_end=record["epoch_done"])
        self._interval["checkpoint_s"] += time.perf_counter() - t_save

    def _close_period(self, n_batches: int, stopped: bool) -> dict[str, Any]:
        """End of an epoch, or of the run when ``max_steps`` stops it mid-epoch: the epoch's record,
        the epoch counters advanced, validation, metrics row, gates.png, checkpoints."""
        cfg, st = self.cfg, self.state
        self._flush()
        epoch_done = st.batch_in_epoch >= n_batches
        record = {"step": st.step, "epoch": st.epoch + 1, "epoch_done": epoch_done,
                  "train_loss": st.epoch_loss / max(st.epoch_tokens, 1) / LN2,
                  "train_nll_loss": st.epoch_nll / max(st.epoch_tokens, 1) / LN2,
                  "lr": self.optimizer.param_groups[0]["lr"], "gates_frozen": self._frozen()}
        if epoch_done:
            st.epoch += 1
            st.batch_in_epoch = 0
            st.epoch_loss = st.epoch_nll = 0.0
            st.epoch_tokens = 0
        final = stopped or (cfg.max_epochs != 0 and st.epoch >= cfg.max_epochs)
        self._end_of_period(record, final)
        return record

    def _log_interval(self, iv: dict[str, Any], bar) -> None:
        """A metrics row of the interval: the one place (with checkpoints and period ends) where the
        device's sums are read."""
        keys = ("loss", "nll", "ntokens", "gnorm")
        vals = torch.stack([torch.as_tensor(iv[k], dtype=torch.float64, device=self.device) for k in keys]).tolist()
        iv.update(zip(keys, vals, strict=True))
        self._flush()
        dt = max(time.perf_counter() - iv["t0"], 1e-9)
        tok = max(iv["ntokens"], 1.0)
        rec = {"step": self.state.step, "epoch": self.state.epoch + 1, "train_loss": iv["loss"] / tok / LN2,
               "train_nll_loss": iv["nll"] / tok / LN2, "lr": self.optimizer.param_groups[0]["lr"],
               "gnorm": iv["gnorm"] / max(iv["n"], 1), "ntokens": int(iv["ntokens"]),
               "tokens_per_s": round((iv["ntokens"] - iv.get("ntokens_t0", 0.0)) / dt, 1),
               # where the interval's wall time went besides the updates
               "seconds": round(dt, 3), "data_wait_s": round(iv["wait_s"], 3), "valid_s": round(iv["valid_s"], 3),
               "checkpoint_s": round(iv["checkpoint_s"], 3),
               # background checkpoint writes that ended in the interval (overlapping the updates)
               "checkpoint_write_s": round(self.writer.write_s - self._write_s_logged, 3)}
        self._write_s_logged = self.writer.write_s
        if self.graphs is not None:  # graphs held, captured, replayed, eager batches, capture seconds (so far)
            rec["cuda_graphs"] = self.graphs.stats()
        if self.env.is_main:
            self.metrics.write(rec)
            bar.set_postfix(loss=f"{rec['train_loss']:.3f}", lr=f"{rec['lr']:.2e}")
            if bar.disable:
                log.info("epoch %d step %d | loss %.3f | nll %.3f | lr %.3g | gnorm %.2f | %.0f tok/s", rec["epoch"],
                         rec["step"], rec["train_loss"], rec["train_nll_loss"], rec["lr"], rec["gnorm"],
                         rec["tokens_per_s"])
        iv.update(restored_interval(None))
