"""Run ``synprep train`` or ``fairseq-train`` in this process with a clock on every update.

    python benchmarks/_train_clock.py synprep|fairseq TICKS.json [--profile PROFILE.prof] [--ops OPS.txt]
        [--profile-from 51] [--profile-to 0] -- ARGS...

ARGS: synprep's command line (``-q train --shards ...``) or fairseq-train's. Runs with either tool's interpreter (synprep's, or fairseq's venv: it imports nothing of synprep's
but what the synprep side runs). Both trainers' ``Trainer.train_step`` (one update: forward, backward,
clipping, optimizer step) is wrapped so that each update records the process's CPU time
(``time.process_time``: user + system of every thread, the quantity other work on the machine moves
least) and the wall time when it starts and ends, and the update's target tokens (``</s>`` included,
padding excluded: synprep's ``Batch.ntokens``, fairseq's ``sample["ntokens"]``). TICKS.json then
holds ``{"tool", "threads" (torch's intra-op threads the updates ran with), "updates": [[cpu_start, cpu_end, wall_start, wall_end, tokens], ...]}``:
the loop's time of update k is the time between the starts of updates k and k+1 (reading and collating
the next batch, logging included), its step's time ``end - start``.

``--profile`` runs cProfile from the start of update ``--profile-from`` (1-based) to the end of update
``--profile-to`` (0: of the run), and dumps its statistics to PROFILE.prof (``python -m pstats``; the clock: CPU time); ``--ops OPS.txt``
runs ``torch.profiler`` over the same updates and writes its table of operators by self CPU time.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import sys
import time


def _tokens_synprep(args: tuple) -> int:
    return int(sum(b.ntokens for b in args[0]))


def _tokens_fairseq(args: tuple) -> int:
    return int(sum(int(s.get("ntokens", 0)) for s in args[0] if s))


def _stop(prof: cProfile.Profile | None, ops, opt: argparse.Namespace) -> None:
    """Stop both profilers once and write what they measured."""
    if prof is not None and opt.profile:
        prof.disable()
        prof.dump_stats(opt.profile)
        opt.profile = None
    if ops is not None and opt.ops:
        ops.stop()
        with open(opt.ops, "w", encoding="utf-8") as f:
            f.write(ops.key_averages().table(sort_by="self_cpu_time_total", row_limit=40) + "\n")
        opt.ops = None


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tool", choices=("synprep", "fairseq"))
    ap.add_argument("ticks")
    ap.add_argument("--profile", default=None)
    ap.add_argument("--profile-from", type=int, default=51)
    ap.add_argument("--profile-to", type=int, default=0)
    ap.add_argument("--ops", default=None)
    cut = argv.index("--") if "--" in argv else len(argv)
    opt, rest = ap.parse_args(argv[:cut]), argv[cut + 1:]
    import torch

    if opt.tool == "synprep":
        from synprep.cli import main as entry
        from synprep.train.loop import Trainer

        tokens = _tokens_synprep

        def run() -> None:
            try:
                entry(rest)
            except SystemExit as e:
                if e.code:
                    raise
    else:
        from fairseq.trainer import Trainer  # type: ignore[no-redef]
        from fairseq_cli.train import cli_main

        tokens = _tokens_fairseq
        sys.argv = ["fairseq-train", *rest]
        run = cli_main
    updates: list[list[float]] = []
    threads: list[int] = []
    prof = cProfile.Profile(time.process_time) if opt.profile else None
    ops = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) if opt.ops else None
    inner = Trainer.train_step

    def train_step(self, *args, **kwargs):  # the same wrapper around either trainer's update
        if len(updates) + 1 == opt.profile_from:
            if prof is not None:
                prof.enable()
            if ops is not None:
                ops.start()
        c0, w0 = time.process_time(), time.perf_counter()
        out = inner(self, *args, **kwargs)
        updates.append([c0, time.process_time(), w0, time.perf_counter(), tokens(args)])
        threads.append(torch.get_num_threads())
        if len(updates) == opt.profile_to:
            _stop(prof, ops, opt)
        return out

    Trainer.train_step = train_step
    try:
        run()
    finally:
        _stop(prof, ops, opt)
        with open(opt.ticks, "w", encoding="utf-8") as f:
            json.dump({"tool": opt.tool, "threads": sorted(set(threads)), "updates": updates}, f)


if __name__ == "__main__":
    main(sys.argv[1:])
