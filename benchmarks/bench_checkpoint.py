"""How long a checkpoint stalls the training loop: ``Trainer.save`` with the write in
the loop (``async_checkpoint: false``) against the host snapshot + background write (the default).

    python benchmarks/bench_checkpoint.py --device cpu --small     # seconds
    python benchmarks/bench_checkpoint.py --device cuda            # the gated paper model, bf16

One JSON object per line and mode: ``stall_s`` (median seconds inside ``save()``: what the loop
waits), ``write_s`` (median seconds of the write itself: serialisation, fsync, renames; in the
background for ``async``), ``update_s`` (median seconds of an update with no write in flight),
``span_s`` (median seconds from the save through the ``--overlap`` updates after it until the write
is done) and ``cost_s`` (``span_s`` less those updates' ``update_s``: what a checkpoint costs the
loop, the write's competition for the host's cores and Python's GIL included), ``checkpoint_bytes``.
The two modes alternate, save by save. The model is the preset's, on synthetic
records (vocabulary 10000; ``--small``: a d=64 model, vocabulary 500) with Adam's state after a
few updates; files go to ``--dir`` (default: a temporary folder).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from synprep.shards.synthetic import random_records  # noqa: E402
from synprep.train.checkpoint import LAST, CheckpointWriter  # noqa: E402
from synprep.train.config import load_preset, with_overrides  # noqa: E402
from synprep.train.data import RecordDataset  # noqa: E402
from synprep.train.loop import Trainer  # noqa: E402

SMALL = {"d_model": 64, "ffn_dim": 128, "encoder_layers": 2, "decoder_layers": 2, "gate_hidden": 32}


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--preset", default="gated_iwslt14_de_en")
    ap.add_argument("--small", action="store_true", help="a d=64 model: the figure's shape, not its value")
    ap.add_argument("--saves", type=int, default=3, help="saves per mode (default 3)")
    ap.add_argument("--overlap", type=int, default=2, help="updates run after each save (default 2)")
    ap.add_argument("--max-tokens", type=int, default=None, help="per update (default 4096; --small 512)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    ap.add_argument("--dir", default=None, help="where the run folders go (default: a temporary folder)")
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    vocab = 500 if args.small else 10000
    over = {**(SMALL if args.small else {}), "max_tokens": args.max_tokens or (512 if args.small else 4096),
            "bf16": cuda, "gate_freeze_epochs": 0, "max_steps": 10**6, "threads": 0 if cuda else args.threads}
    data = RecordDataset(list(random_records(2000, np.random.default_rng(0), vocab_size=vocab)))
    symbols = [f"p{i}" for i in range(vocab)]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        cfg = with_overrides(load_preset(args.preset), over)
        tr = Trainer(cfg, data, data, symbols, Path(tmp) / "run", torch.device(args.device), progress=False)
        tr.train_sampler.set_epoch(0)
        batches = iter(tr.train_loader)

        def update() -> float:
            t = time.perf_counter()
            tr.train_step([next(batches)])
            _sync(args.device)
            return time.perf_counter() - t

        for _ in range(3):  # warm-up; Adam's state exists from here on
            update()
        writers = {"sync": CheckpointWriter(background=False), "async": CheckpointWriter(background=True)}
        rec: dict[str, dict[str, list[float]]] = {m: {"stall": [], "write": [], "span": []} for m in writers}
        plain = []
        for i in range(args.saves + 1):  # the modes alternate (the machine's load drifts); round 0 allocates
            for mode, writer in writers.items():
                tr.writer = writer
                plain.append(update())
                w0, t = writer.write_s, time.perf_counter()
                tr.save(False)
                stall = time.perf_counter() - t
                for _ in range(args.overlap):
                    update()
                writer.wait()  # (not finish_writes: that frees the host buffers the next save reuses)
                if i:
                    rec[mode]["stall"].append(stall)
                    rec[mode]["write"].append(writer.write_s - w0)
                    rec[mode]["span"].append(time.perf_counter() - t)
        update_s = statistics.median(plain[2:])
        for mode, r in rec.items():
            span = statistics.median(r["span"])
            print(json.dumps({
                "figure": "checkpoint_stall", "mode": mode, "preset": args.preset, "device": args.device,
                "small": args.small, "stall_s": round(statistics.median(r["stall"]), 4),
                "write_s": round(statistics.median(r["write"]), 4), "update_s": round(update_s, 4),
                "span_s": round(span, 4), "cost_s": round(span - args.overlap * update_s, 4),
                "checkpoint_bytes": (Path(tmp) / "run" / LAST).stat().st_size, "torch": torch.__version__,
                "gpu": torch.cuda.get_device_name() if cuda else None}), flush=True)

if __name__ == "__main__":
    main()
