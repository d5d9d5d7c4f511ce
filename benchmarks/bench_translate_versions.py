"""Beam search of two checkouts on one checkpoint: today's sentences/s measured against
the decoder as it was (an older commit's own search and model code), not against
``tests/decode_reference.py`` (the old search on today's model code, which got faster too).

    git worktree add --detach /tmp/old OLD_COMMIT     # the checkout to compare against
    python benchmarks/bench_translate_versions.py --baseline /tmp/old --sentences 2000 --jobs 2
    python benchmarks/bench_translate_versions.py --baseline . --small      # the machinery, seconds

The baseline's code trains the checkpoint (the ``tiny`` preset, ``--steps`` updates of
``bench_translate.py``'s copy task over synthetic records; ``Trainer.save``), so both sides can read
it (a checkpoint is read by later code, not always by earlier). Each run is a process of its own that
puts one checkout first on ``sys.path``, loads the checkpoint with that checkout's ``load_model`` and
times its ``translate_dataset`` over the same ``--sentences`` copy-task sources (beam 5, length limit
1.5·src + 10, ``--max-tokens`` 4096), after a warm-up on 40 other sentences, best of ``--rounds``.
The runs alternate ``--reps`` times: the baseline at ``--threads`` torch threads, this checkout with
``-j 1`` at the same threads, and with ``-j --jobs`` (``translate -j``; ``--jobs 1`` skips it).
Prints one JSON object per run (``figure: "translate_version"``) and a comparison
(``figure: "translate_versions"``: the ratios of the bests, and whether every run gave the same
hypotheses). Wall clock: the machine should be quiet.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VOCAB = 1000
TRAIN_RECORDS = 2000


def _records(n_eval: int):
    """The copy-task records of ``bench_translate.copy_task_model`` (the same generator and seed):
    ``TRAIN_RECORDS`` to train on, then ``n_eval`` to translate. Repeated here, as is its training loop
    in :func:`child_train`, on purpose: a child runs with the baseline checkout first on ``sys.path``,
    whose ``bench_translate`` may not exist or may differ; only the library's API is shared."""
    import dataclasses

    import numpy as np

    from synprep.shards.synthetic import random_records

    rng = np.random.default_rng(0)
    return [dataclasses.replace(r, tgt_ids=r.src_ids.copy())
            for r in random_records(TRAIN_RECORDS + n_eval, rng, vocab_size=VOCAB)]


def child_train(out: str, steps: int) -> None:
    """This process's checkout trains the copy-task model ``steps`` updates and saves it in ``out``."""
    import torch

    from synprep.train.config import load_preset, with_overrides
    from synprep.train.data import RecordDataset
    from synprep.train.loop import Trainer

    torch.set_num_threads(1)
    recs = _records(16)
    cfg = with_overrides(load_preset("tiny"), {"max_steps": steps, "max_epochs": 0, "log_interval": 10 ** 6,
                                               "max_tokens": 2048, "warmup_updates": min(50, steps)})
    tr = Trainer(cfg, RecordDataset(recs[:TRAIN_RECORDS]), RecordDataset(recs[TRAIN_RECORDS:]),
                 [f"p{i}" for i in range(VOCAB)], out, torch.device("cpu"), progress=False)
    epoch = 0
    done = 0
    while done < steps:
        tr.train_sampler.set_epoch(epoch)
        for batch in tr.train_loader:
            tr.train_step([batch])
            done += 1
            if done == steps:
                break
        epoch += 1
    tr.save(is_best=True)


def child_time(ckpt: str, sentences: int, rounds: int, jobs: int, threads: int, max_tokens: int) -> dict:
    """This process's checkout decodes ``sentences`` copy-task sources; sentences/s, best of ``rounds``."""
    import torch

    from synprep.train import decode
    from synprep.train.data import RecordDataset

    torch.set_num_threads(threads)
    recs = _records(sentences + 40)
    model, _, _ = decode.load_model(ckpt)
    kw = {"beam": 5, "lenpen": 1.0, "max_len_a": 1.5, "max_len_b": 10, "progress": False, "max_tokens": max_tokens}
    if jobs > 1:
        kw["jobs"] = jobs  # a checkout without translate -j fails here, as it should
    decode.translate_dataset(model, RecordDataset(recs[TRAIN_RECORDS + sentences:]), **kw)  # warm-up
    data = RecordDataset(recs[TRAIN_RECORDS:TRAIN_RECORDS + sentences])
    best, hyps = float("inf"), None
    for _ in range(rounds):
        t0 = time.perf_counter()
        hyps = decode.translate_dataset(model, data, **kw)
        best = min(best, time.perf_counter() - t0)
    return {"sentences_per_s": round(sentences / best, 1),
            "hypotheses_sha256": hashlib.sha256(json.dumps(hyps).encode()).hexdigest()[:16]}


def _child(root: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, __file__, "--child", str(root), *args], capture_output=True, text=True,
                          env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{root}: {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        sys.path.insert(0, sys.argv[2])
        kind, rest = sys.argv[3], sys.argv[4:]
        if kind == "train":
            child_train(rest[0], int(rest[1]))
        else:
            print(json.dumps(child_time(rest[0], *map(int, rest[1:]))))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="the older checkout (a git worktree)")
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads (default: the cores)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="this checkout's translate -j")
    ap.add_argument("--max-tokens", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=300, help="copy-task updates of the checkpoint")
    ap.add_argument("--small", action="store_true", help="seconds: 40 updates, 24 sentences, 1 round, 1 rep")
    args = ap.parse_args()
    if args.small:
        args.steps, args.sentences, args.rounds, args.reps = 40, 24, 1, 1
    runs = [("baseline", args.baseline.resolve(), 1), ("now -j 1", ROOT, 1)]
    if args.jobs > 1:
        runs.append((f"now -j {args.jobs}", ROOT, args.jobs))
    best: dict[str, float] = {}
    shas: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        _child(args.baseline.resolve(), "train", tmp, str(args.steps))
        ckpt = str(Path(tmp) / "checkpoint_best.pt")
        for rep in range(args.reps):
            for name, root, jobs in runs:
                rec = json.loads(_child(root, "time", ckpt, str(args.sentences), str(args.rounds), str(jobs),
                                        str(args.threads), str(args.max_tokens)))
                print(json.dumps({"figure": "translate_version", "run": name, "rep": rep + 1, "root": str(root),
                                  "jobs": jobs, "threads": args.threads, **rec}), flush=True)
                best[name] = max(best.get(name, 0.0), rec["sentences_per_s"])
                shas.add(rec["hypotheses_sha256"])
    base = best["baseline"]
    print(json.dumps({"figure": "translate_versions", "baseline": str(args.baseline), "sentences": args.sentences,
                      "beam": 5, "threads": args.threads, "best_sentences_per_s": best,
                      "vs_baseline": {k: round(v / base, 2) for k, v in best.items() if k != "baseline"},
                      "identical": len(shas) == 1}))


if __name__ == "__main__":
    main()
