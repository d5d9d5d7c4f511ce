"""Training speed: target tokens per second, vanilla vs gated syntax attention (CPU by default).

Runs the real update (``Trainer.train_step``: forward, label-smoothed loss, backward, clipping,
Adam, schedule) on synthetic records of realistic shape (``synprep.shards.synthetic``: ~20 words,
~1.5 pieces per word, ~30 target pieces, a tenth of the lines with two sentences), in memory (no
HDF5 reads), after a few warm-up updates; variants are timed in interleaved rounds and each keeps its best round.
Prints one JSON object per configuration.

    python benchmarks/bench_train.py                       # tiny and mid, CPU, 1 thread
    python benchmarks/bench_train.py --configs mid --steps 20 --rounds 5 --threads 2
    python benchmarks/bench_train.py --configs mid --variants all   # every syntax source
    python benchmarks/bench_train.py --device cuda --configs iwslt --max-tokens 4096

Timings on a shared machine are noisy: compare ratios measured in the same invocation. With
``--clock cpu`` (CPU only) the time is the training process's CPU time (``time.process_time``): with
one torch thread it equals the wall time on an idle machine and does not count the time other jobs
take the core away, so ratios stay meaningful on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from synprep.shards.synthetic import random_records  # noqa: E402
from synprep.train.config import load_preset, with_overrides  # noqa: E402
from synprep.train.data import RecordDataset  # noqa: E402
from synprep.train.loop import Trainer  # noqa: E402

CONFIGS = {
    "tiny": {"preset": "tiny", "set": {}, "vocab": 2000},
    "mid": {"preset": "iwslt14_de_en", "vocab": 8000,
            "set": {"d_model": 256, "ffn_dim": 512, "encoder_layers": 3, "decoder_layers": 3, "gate_hidden": 128}},
    "iwslt": {"preset": "iwslt14_de_en", "set": {}, "vocab": 10000},
}
VARIANTS = {
    "vanilla": {"syntax": "vanilla"},
    "gated-slr": {"syntax": "gated", "syntax_source": "slr"},
    "gated-pascal": {"syntax": "gated", "syntax_source": "pascal", "parent_ignore": 0.1},
    "gated-ldd": {"syntax": "gated", "syntax_source": "ldd"},
    "gated-ldd_parent": {"syntax": "gated", "syntax_source": "ldd_parent"},
    # the new sources as their papers run them (see synprep/presets/*_iwslt14_de_en.json)
    "hard-lisa": {"syntax": "hard", "syntax_source": "lisa", "syntax_layers": [0], "syntax_heads": [0],
                  "syntax_dropout": None},
    "gated-sla": {"syntax": "gated", "syntax_source": "sla", "syntax_dropout": None},
    # hard SLR as slr_iwslt14_de_en runs it: the 4 heads of layer 0, no gate
    "hard-slr": {"syntax": "hard", "syntax_source": "slr", "syntax_layers": [0], "syntax_heads": [0, 1, 2, 3],
                 "syntax_dropout": 0.0},
    "pure-set": {"syntax": "pure", "syntax_source": "set", "syntax_dropout": None},
}


def endless(tr: Trainer):
    """The trainer's batches, epoch after epoch."""
    epoch = 0
    while True:
        tr.train_sampler.set_epoch(epoch)
        yield from tr.train_loader
        epoch += 1


def bench(name: str, variants: list[str], steps: int, rounds: int, warmup: int, max_tokens: int, device: str,
          threads: int, clock: str = "wall") -> dict:
    """Tokens/s of each variant: ``rounds`` interleaved rounds of ``steps`` updates, best round kept
    (interleaving and the best round make the ratios robust to other jobs on a shared machine)."""
    spec = CONFIGS[name]
    rng = np.random.default_rng(0)
    train = RecordDataset(list(random_records(3000, rng, vocab_size=spec["vocab"])))
    symbols = [f"p{i}" for i in range(spec["vocab"])]
    out: dict = {"config": name, "device": device, "threads": threads, "max_tokens": max_tokens, "steps": steps,
                 "rounds": rounds, "vocab": spec["vocab"], "clock": clock, "tokens_per_s": {}}
    now = time.process_time if clock == "cpu" else time.perf_counter
    tmp = tempfile.TemporaryDirectory()
    trainers, iters = {}, {}
    for variant in variants:
        cfg = with_overrides(load_preset(spec["preset"]), {**spec["set"], **VARIANTS[variant], "max_tokens": max_tokens,
                                                          "threads": threads, "gate_freeze_epochs": 0})
        tr = trainers[variant] = Trainer(cfg, train, train, symbols, Path(tmp.name) / variant, torch.device(device),
                                         progress=False)
        iters[variant] = endless(tr)
        for _ in range(warmup):
            tr.train_step([next(iters[variant])])
        out.setdefault("params", {})[variant] = sum(p.numel() for p in tr.model.parameters())
    best: dict[str, float] = {}
    for _ in range(rounds):
        for variant in variants:
            tr, it = trainers[variant], iters[variant]
            batches = [next(it) for _ in range(steps)]  # collated before timing: loading is not measured
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            tokens, t0 = 0.0, now()
            for b in batches:
                tokens = tokens + tr.train_step([b])["ntokens"]  # a device scalar: no sync per update
            tokens = float(tokens)
            best[variant] = max(best.get(variant, 0.0), tokens / (now() - t0))
    tmp.cleanup()
    out["tokens_per_s"] = {v: round(x, 1) for v, x in best.items()}
    base = best.get("vanilla")
    if base:
        out["ratio_vs_vanilla"] = {v: round(x / base, 3) for v, x in best.items() if v != "vanilla"}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="+", default=["tiny", "mid"], choices=sorted(CONFIGS))
    ap.add_argument("--variants", nargs="+", default=["vanilla", "gated-slr"], choices=sorted(VARIANTS) + ["all"])
    ap.add_argument("--steps", type=int, default=10, help="updates per round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best kept)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=2048)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="wall time, or the process's CPU time (robust on a shared CPU; needs --device cpu)")
    args = ap.parse_args()
    if args.clock == "cpu" and args.device != "cpu":
        ap.error("--clock cpu measures CPU runs only")
    if "all" in args.variants:
        args.variants = list(VARIANTS)
    for name in args.configs:
        print(json.dumps(bench(name, args.variants, args.steps, args.rounds, args.warmup, args.max_tokens,
                               args.device, args.threads, args.clock)), flush=True)


if __name__ == "__main__":
    main()
