"""Training figures for a GPU, also runnable on the CPU: one JSON object per line per figure.

    python benchmarks/bench_train_gpu.py --device cuda            # the paper presets, bf16
    python benchmarks/bench_train_gpu.py --device cpu --small     # seconds: a smoke run (tests)

Figures (``figure`` key):

* ``train_tokens_per_s``: target tokens/s of the real update (``Trainer.train_step``) per preset on
  synthetic records of realistic shape (``synprep.shards.synthetic``), collated before timing, after
  warm-up updates; bf16 autocast on CUDA (``--fp32`` for float32), float32 on the CPU; with
  ``ratio_vs_vanilla`` and ``peak_memory_bytes`` (``torch.cuda.max_memory_allocated`` of that
  preset's run; null on the CPU).
* ``update_profile``: per update, host CPU time (the profiler's CPU self time of all operators)
  against device time (the CUDA kernels' time, each kernel counted once; null on the CPU), and the top
  operators; on CUDA also ``top_kernels`` (the 12 kernels with the most device time: name, seconds per
  update, calls per update) and ``kernel_launches_per_update``.
* ``batch_split``: ``max_tokens`` 16384 × ``update_freq`` 1 against 8192 × 2 (same effective
  batch) for the gated preset.
* ``real_loop_tokens_per_s``: the real ``synprep train`` loop (shards written to a temporary
  folder, DataLoader, collation, logging) as logged in metrics.jsonl, against the same preset's
  ``train_tokens_per_s``.
* ``host_profile`` (only with ``--host-profile``): where an update's host time goes, from Python's
  cProfile over 6 updates after the warm-up (profiler overhead included, so read shares, not totals): the
  wall seconds per update, and the 25 functions with the most own time (file:line:function, milliseconds
  per update, calls per update) and the 15 with the most cumulative time.
* ``cuda_graphs`` (only with ``--graphs``, CUDA only): per preset, ``cuda_graphs:
  true`` (:mod:`synprep.train.graphs`) against eager on a fixed set of ``--graph-batches`` batches of
  the same records, as the epochs of one corpus bring the same shapes back: the seconds of each pass
  over them (``cycles_s``; eager: a warm-up, then 3 timed; graphs: eager (the warm-up), the captures,
  then 3 timed of replays only), tokens/s over the timed passes, peak memory, the ``update_profile``
  of a timed update, the graphs' counters, and ``distinct_keys_two_epochs`` against
  ``batches_per_epoch`` (how well the preset's batch shapes come back epoch after epoch); then, when
  the gated preset is among them, ``real_loop_cuda_graphs``: the real loop's last logged interval of
  the gated preset without and with graphs. With ``--graphs-compile`` each preset's row also has
  ``graphs_compiled``: graphs over compiled layers (``compile: true`` too, Dynamo reset first, so its
  first pass holds the compilation), measured as ``graphs``, and ``compiled_vs_graphs`` (tokens/s ratio):
  whether Inductor's fused kernels shorten a replayed update (the graphs' updates are kernel-bound).
* ``batch_order`` (only with ``--batch-order``): per preset (default vanilla), ``batch_order: target``
  against ``source`` on 160,000 pairs (20,000 synthetic records 8 times, IWSLT14's training-set size; --small:
  800) over the first ``--graph-batches`` batches of an epoch (with ``cuda_graphs`` on CUDA, timed after the
  eager pass and the captures; eagerly on the CPU): tokens/s, the fraction of batches without source padding
  (the encoder and the cross-attention then take no mask), the encoder's and decoder's positions per real
  token, the ``update_profile``; ``source_vs_target`` the ratio of tokens/s.
* ``set_lookup`` (only with ``--set-lookup``): the SET preset with ``SORTED_LOOKUP_ON_CUDA`` off (the
  relation lookup as ``F.embedding``, the default) and on (:class:`synprep.train.sources.set._SortedLookup`:
  the rows laid out per column, the table's gradient by segment sums over the pairs sorted once per batch),
  over the same ``--graph-batches`` batches (with ``cuda_graphs`` on CUDA, timed after the eager pass and
  the captures): tokens/s and ``update_profile`` each, ``sorted_vs_embedding`` their ratio; and
  ``lookup_fwd_bwd_per_layer``: one layer's lookup forward and backward alone on the largest batch's
  relation ids (pairs, relations, the fraction of pairs without a relation), milliseconds per call for
  ``embedding`` and ``sorted`` (``sort_ms``: the batch's sort, once for all layers), each gradient's largest
  difference from the float64 sum. On an H100 this figure put 3.4 ms of SET's 13 ms of extra kernels
  per update in the embedding's row gather and 4.0 ms in its backward's sort-and-reduce kernels.
* ``compile`` (only with ``--compile``): per preset, ``compile: true``
  (each layer and the loss through ``torch.compile(dynamic=True)``, :mod:`synprep.train.compiling`)
  against eager from the same seed on the same batches, dropout off (so the two runs compute the
  same function): the seconds of the first ``--compile-updates`` updates (compilation included),
  tokens/s of the timed updates after them, and the largest relative difference of the per-update
  losses over all updates; ``graphs`` compiled, ``graph_breaks``, ``recompiles`` (Dynamo's
  counters; each preset starts from a reset); ``compile_progress`` lines
  (seconds since the first compiled update began, after each of them) say how far a run cut off by a
  time limit got.

``--small``: a d=64 model, 2 presets (vanilla, gated), a few updates of 1024 tokens: the figures'
shapes, not their values.
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

from synprep.constants import PAD_ID  # noqa: E402
from synprep.shards.synthetic import random_records, write_folder  # noqa: E402
from synprep.train.config import load_preset, with_overrides  # noqa: E402
from synprep.train.data import RecordDataset  # noqa: E402
from synprep.train.loop import Trainer  # noqa: E402
from synprep.train.run import train  # noqa: E402

PRESETS = ["vanilla_iwslt14_de_en", "gated_iwslt14_de_en", "pascal_iwslt14_de_en", "ldd_iwslt14_de_en",
           "ldd_parent_iwslt14_de_en", "sla_iwslt14_de_en", "slr_iwslt14_de_en", "lisa_iwslt14_de_en",
           "set_iwslt14_de_en"]
SMALL = {"d_model": 64, "ffn_dim": 128, "encoder_layers": 2, "decoder_layers": 2, "gate_hidden": 32}


def _cfg(preset: str, args, **over):
    extra = dict(SMALL) if args.small else {}
    extra.update({"max_tokens": args.max_tokens, "update_freq": 1, "bf16": args.bf16, "gate_freeze_epochs": 0,
                  "threads": args.threads if args.device == "cpu" else 0})
    extra.update(over)
    return with_overrides(load_preset(preset), extra)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def endless(tr: Trainer):
    """The trainer's train batches, epoch after epoch, without end (benchmarks time updates, not epochs)."""
    epoch = 0
    while True:
        tr.train_sampler.set_epoch(epoch)
        yield from tr.train_loader
        epoch += 1


def _trainer(cfg, data, vocab: int, device: str, tmp: Path) -> Trainer:
    return Trainer(cfg, data, data, [f"p{i}" for i in range(vocab)], tmp, torch.device(device), progress=False)


def tokens_per_s(tr: Trainer, it, steps: int, warmup: int, device: str, update_freq: int = 1) -> float:
    for _ in range(warmup):
        tr.train_step([next(it) for _ in range(update_freq)])
    groups = [[next(it) for _ in range(update_freq)] for _ in range(steps)]
    _sync(device)
    t0, tokens = time.perf_counter(), 0.0
    for g in groups:
        tokens = tokens + tr.train_step(g)["ntokens"]
    tokens = float(tokens)  # waits for the device
    return tokens / (time.perf_counter() - t0)


def profile(tr: Trainer, it, steps: int, device: str) -> dict:
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as prof

    groups = [[next(it)] for _ in range(steps)]
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    _sync(device)
    t0 = time.perf_counter()
    with prof(activities=acts) as p:
        for g in groups:
            tr.train_step(g)
        _sync(device)
    wall = time.perf_counter() - t0
    events = p.key_averages()
    host = sum(e.self_cpu_time_total for e in events) / 1e6
    # the kernels' own rows only, as torch's table totals them: an operator's self device time is the time of
    # the kernels it launched, which have rows of their own (summing both would count every kernel twice)
    kernels = [e for e in events if e.device_type == DeviceType.CUDA and not e.is_user_annotation]
    dev = sum(e.self_device_time_total for e in kernels) / 1e6 if device.startswith("cuda") else None
    top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:5]
    rec = {"updates": steps, "wall_s_per_update": round(wall / steps, 5), "host_s_per_update": round(host / steps, 5),
           "device_s_per_update": None if dev is None else round(dev / steps, 5),
           "top_host_ops": [[e.key, round(e.self_cpu_time_total / 1e6 / steps, 5)] for e in top]}
    if dev is not None:  # where the kernel time goes: kernels (and ops) by self device time, with their count
        kern = sorted(kernels, key=lambda e: e.self_device_time_total, reverse=True)[:12]
        rec["top_kernels"] = [[e.key[:90], round(e.self_device_time_total / 1e6 / steps, 5), e.count // steps]
                              for e in kern]
        rec["kernel_launches_per_update"] = sum(e.count for e in events if e.key == "cudaLaunchKernel") // steps
    return rec


def host_profile(tr: Trainer, it, steps: int, device: str) -> dict:
    """cProfile of ``steps`` updates (see the module docstring: ``host_profile``)."""
    import cProfile
    import pstats

    groups = [[next(it)] for _ in range(steps)]
    _sync(device)
    pr = cProfile.Profile()
    t0 = time.perf_counter()
    pr.enable()
    for g in groups:
        tr.train_step(g)
    _sync(device)
    pr.disable()
    wall = time.perf_counter() - t0
    st = pstats.Stats(pr).stats  # {(file, line, name): (cc, ncalls, tottime, cumtime, callers)}

    def rows(key: int, n: int) -> list:
        top = sorted(st.items(), key=lambda kv: kv[1][key], reverse=True)[:n]
        return [[f"{Path(f).name}:{line}:{name}"[:90], round(v[key] * 1e3 / steps, 2), v[1] // steps]
                for (f, line, name), v in top]

    return {"updates": steps, "wall_s_per_update": round(wall / steps, 5), "top_own_ms": rows(2, 25),
            "top_cumulative_ms": rows(3, 15)}


def compile_figure(preset: str, args, data, vocab: int, steps: int, tmp: Path) -> dict:
    """Eager against ``torch.compile`` on one preset (see the module docstring: ``compile``)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    n_first = args.compile_updates
    rec: dict = {"figure": "compile", "preset": preset, "first_updates": n_first, "timed_updates": steps}
    losses = {}
    off = {"dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0, "syntax_dropout": 0.0}
    for name, on in (("eager", False), ("compiled", True)):
        if on:  # this preset's cold start: no graph of an earlier preset reused (Inductor's disk cache may be)
            torch._dynamo.reset()
            counters.clear()
        cfg = _cfg(preset, args, compile=on, **off)
        tr = _trainer(cfg, data, vocab, args.device, tmp / name)
        it = endless(tr)
        groups = [[next(it)] for _ in range(n_first + steps)]
        _sync(args.device)
        t0 = time.perf_counter()
        out = []
        for k, g in enumerate(groups[:n_first]):
            out.append(tr.train_step(g))
            if on:  # compilation can take minutes: a run cut off still says how far it got
                _sync(args.device)
                print(json.dumps({"figure": "compile_progress", "preset": preset, "update": k + 1,
                                  "seconds": round(time.perf_counter() - t0, 2)}), flush=True)
        _sync(args.device)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        out += [tr.train_step(g) for g in groups[n_first:]]
        _sync(args.device)
        timed = time.perf_counter() - t0
        tokens = sum(float(o["ntokens"]) for o in out[n_first:])
        losses[name] = np.array([float(o["loss"]) / max(float(o["ntokens"]), 1.0) for o in out])
        rec[name] = {"first_updates_s": round(first, 2), "tokens_per_s": round(tokens / timed, 1)}
        del tr, it
    rel = np.abs(losses["compiled"] - losses["eager"]) / np.abs(losses["eager"])
    rec["speedup"] = round(rec["compiled"]["tokens_per_s"] / rec["eager"]["tokens_per_s"], 3)
    rec["max_relative_loss_difference"] = float(rel.max())
    # graphs compiled (regional: one per kind of layer, and the loss), graph breaks, recompilations
    rec["graphs"] = counters["stats"]["unique_graphs"]
    rec["graph_breaks"] = sum(counters["graph_break"].values())
    rec["recompiles"] = sum(counters["recompiles"].values())
    return rec


def passes(tr: Trainer, batches: list, n: int, device: str) -> list[float]:
    """Wall seconds of each of ``n`` passes of one update per batch over ``batches``."""
    seconds = []
    for _ in range(n):
        _sync(device)
        t0 = time.perf_counter()
        for b in batches:
            tr.train_step([b])
        _sync(device)
        seconds.append(time.perf_counter() - t0)
    return seconds


def steady_tokens_per_s(batches: list, seconds: list[float], cycles: int) -> float:
    """Target tokens/s over the last ``cycles`` passes of :func:`passes` over ``batches``."""
    return round(sum(b.ntokens for b in batches) * cycles / sum(seconds[-cycles:]), 1)


def graphs_figure(preset: str, args, data, vocab: int, tmp: Path) -> dict:
    """``cuda_graphs`` against eager on one preset (see the module docstring: ``cuda_graphs``)."""
    import itertools

    from synprep.train.graphs import batch_key

    n, cycles = (4, 2) if args.small else (args.graph_batches, 3)
    rec: dict = {"figure": "cuda_graphs", "preset": preset, "batches": n, "timed_cycles": cycles}
    variants = [("eager", False, False), ("graphs", True, False)]
    if args.graphs_compile:
        variants.append(("graphs_compiled", True, True))
    for name, on, comp in variants:
        if args.device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        if comp:  # this preset's own compilation, in its first (eager) pass
            from torch import _dynamo

            _dynamo.reset()
        tr = _trainer(_cfg(preset, args, cuda_graphs=on, compile=comp), data, vocab, args.device, tmp / name)
        it = endless(tr)
        batches = [next(it) for _ in range(n)]  # a fixed set of shapes, as epochs of one corpus bring back
        seconds = passes(tr, batches, 2 + cycles if on else 1 + cycles, args.device)  # graphs: 1 eager, 1 capture
        rec[name] = {"cycles_s": [round(x, 3) for x in seconds],
                     "tokens_per_s": steady_tokens_per_s(batches, seconds, cycles),
                     "peak_memory_bytes": torch.cuda.max_memory_allocated() if args.device.startswith("cuda") else None,
                     **profile(tr, itertools.cycle(batches), 4, args.device)}
        if tr.graphs is not None:
            rec[name]["graph_stats"] = tr.graphs.stats()
        if tr.graphs is not None and not comp:
            # how well this source's shapes come back: distinct graph keys over two whole epochs of the
            # records (tie order shuffled per epoch) against the batches of one
            keys, per_epoch = set(), 0
            for epoch in (0, 1):
                tr.train_sampler.set_epoch(epoch)
                for b in tr.train_loader:
                    keys.add(batch_key(b))
                    per_epoch += epoch == 0
            rec["distinct_keys_two_epochs"], rec["batches_per_epoch"] = len(keys), per_epoch
        del tr, it, batches
    rec["speedup"] = round(rec["graphs"]["tokens_per_s"] / rec["eager"]["tokens_per_s"], 3)
    if args.graphs_compile:
        rec["compiled_vs_graphs"] = round(rec["graphs_compiled"]["tokens_per_s"] / rec["graphs"]["tokens_per_s"], 3)
    return rec


def order_figure(preset: str, args, vocab: int, tmp: Path) -> dict:
    """``batch_order`` ``target`` against ``source`` (see the module docstring: ``batch_order``)."""
    import itertools

    distinct, copies, n, cycles = (200, 4, 4, 2) if args.small else (20000, 8, args.graph_batches, 3)
    recs = list(random_records(distinct, np.random.default_rng(1), vocab_size=vocab))
    data = RecordDataset(recs * copies)  # IWSLT14's training-set size (160k pairs) of synthetic lengths
    cuda = args.device.startswith("cuda")
    rec: dict = {"figure": "batch_order", "preset": preset, "pairs": len(data), "batches": n, "cuda_graphs": cuda}
    for order in ("target", "source"):
        tr = _trainer(_cfg(preset, args, batch_order=order, cuda_graphs=cuda), data, vocab, args.device, tmp / order)
        batches = [b for _, b in zip(range(n), tr.train_loader, strict=False)]  # an epoch's first (shuffled) batches
        real_src = sum(int(b.src_lengths.sum()) for b in batches)
        tokens_per_cycle = sum(b.ntokens for b in batches)
        seconds = passes(tr, batches, (2 if cuda else 1) + cycles, args.device)  # eager, the captures on CUDA, timed
        rec[order] = {"unpadded_source_fraction": round(float(np.mean([not b.src_padded for b in batches])), 3),
                      "encoder_positions_per_token": round(sum(b.src_tokens.numel() for b in batches) / real_src, 3),
                      "decoder_positions_per_token": round(sum(b.target.numel() for b in batches) / tokens_per_cycle, 3),
                      "cycles_s": [round(x, 3) for x in seconds],
                      "tokens_per_s": steady_tokens_per_s(batches, seconds, cycles),
                      **profile(tr, itertools.cycle(batches), 4, args.device)}
        del tr, batches
    rec["source_vs_target"] = round(rec["source"]["tokens_per_s"] / rec["target"]["tokens_per_s"], 3)
    return rec


def _lookup_backward(kind: str, rel: torch.Tensor, table: torch.Tensor, grad: torch.Tensor,
                     sorted_rel: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """One SET layer's relation-table lookup forward and backward, by ``kind``: ``embedding`` (the default
    path) or ``sorted`` (:class:`synprep.train.sources.set._SortedLookup` with the batch's ``sorted_rel``).
    ``grad``: (C, B, T, T). Returns the table's gradient."""
    from synprep.train.sources.set import relation_lookup

    t = table.detach().requires_grad_(True)
    relation_lookup(rel, t, sorted_rel if kind == "sorted" else None).backward(grad)
    assert t.grad is not None
    return t.grad


def set_lookup_figure(args, data, vocab: int, tmp: Path) -> dict:
    """SET's relation lookup, ``F.embedding`` against ``_SortedLookup`` (see the module docstring: ``set_lookup``)."""
    import itertools

    from synprep.train.sources import set as set_mod

    preset, cuda = "set_iwslt14_de_en", args.device.startswith("cuda")
    n, cycles = (4, 2) if args.small else (args.graph_batches, 3)
    rec: dict = {"figure": "set_lookup", "preset": preset, "batches": n, "cuda_graphs": cuda}
    before = set_mod.SORTED_LOOKUP_ON_CUDA
    try:
        for flag in (False, True):
            set_mod.SORTED_LOOKUP_ON_CUDA = flag
            tr = _trainer(_cfg(preset, args, cuda_graphs=cuda), data, vocab, args.device, tmp / f"sorted{flag}")
            it = endless(tr)
            batches = [next(it) for _ in range(n)]
            seconds = passes(tr, batches, (2 if cuda else 1) + cycles, args.device)
            rec[f"sorted_{str(flag).lower()}"] = {
                "tokens_per_s": steady_tokens_per_s(batches, seconds, cycles),
                "cycles_s": [round(x, 3) for x in seconds], **profile(tr, itertools.cycle(batches), 4, args.device)}
            if not flag:  # the lookup alone, on the largest batch's real relation ids
                b = max(batches, key=lambda x: x.src_tokens.numel()).to(args.device)
                src = tr.model.sources_map()["set"]
                rel = src.prepare(b.syntax["set"], b.src_tokens.eq(PAD_ID))["rel"]
                table = torch.randn(src.n_rel, 2 * tr.cfg.heads, device=args.device)
                dtype = torch.bfloat16 if args.bf16 else torch.float32
                grad = torch.randn(table.shape[1], *rel.shape, device=args.device).to(dtype)
                exact = torch.zeros(table.shape, dtype=torch.float64, device=args.device).index_add_(
                    0, rel.reshape(-1), grad.reshape(table.shape[1], -1).t().double())
                micro: dict = {"pairs": rel.numel(), "relations": src.n_rel,
                               "none_fraction": round(float(rel.eq(set_mod.NONE).float().mean()), 3)}
                sorted_rel = set_mod.sort_relations(rel, src.n_rel)
                for kind in ("sort", "embedding", "sorted", "sort", "embedding", "sorted"):  # round 1: warm-up
                    _sync(args.device)
                    t0 = time.perf_counter()
                    for _ in range(10):
                        if kind == "sort":
                            sorted_rel = set_mod.sort_relations(rel, src.n_rel)
                        else:
                            g = _lookup_backward(kind, rel, table.to(dtype), grad, sorted_rel)
                    _sync(args.device)
                    ms = round((time.perf_counter() - t0) * 100, 3)
                    if kind == "sort":
                        micro["sort_ms"] = ms
                    else:
                        micro[kind] = {"ms": ms, "max_error": float((g.double() - exact).abs().max())}
                rec["lookup_fwd_bwd_per_layer"] = micro
            del tr, it, batches
    finally:
        set_mod.SORTED_LOOKUP_ON_CUDA = before
    rec["sorted_vs_embedding"] = round(rec["sorted_true"]["tokens_per_s"] / rec["sorted_false"]["tokens_per_s"], 3)
    return rec


#: what :func:`real_loop` adds to the interval's row: the run's length against its epochs
LOOP_RUN = ("updates", "batches_per_epoch", "interval_after_captures")


def loop_updates(per_epoch: int, interval: int) -> int:
    """Updates of the real loop: whole log intervals, the last starting after the first ``CAPTURE_AT`` epochs
    of ``per_epoch`` updates. With ``cuda_graphs`` a shape runs eagerly in epoch 1 and is captured in
    epoch 2: after that every update is a replay, as in a long run and in the step figure's timed passes."""
    import math

    from synprep.train.graphs import CAPTURE_AT

    return (math.ceil(CAPTURE_AT * per_epoch / interval) + 1) * interval


def real_loop(preset: str, args, vocab: int, tmp: Path, **over) -> dict:
    """The last interval row ``synprep train`` logs on synthetic shards: its tokens/s and where its wall
    time went (``data_wait_s``, ``valid_s``, ``checkpoint_s`` of ``seconds``; ``checkpoint_write_s``: the
    background writes, overlapping the updates; with ``cuda_graphs``, its counters and ``in_interval``: the
    captures, replays and capture seconds of that interval). The run has whole intervals of 100 updates,
    as many as put the last one after the first ``CAPTURE_AT`` epochs (``--small``: two of 3 updates;
    ``--loop-steps`` overrides): the steady state, as the step figure's timed passes are (``batches_per_epoch``,
    ``updates`` and ``interval_after_captures`` say so in the row; with 200 updates of 55
    batches an epoch the last 10 captures would fall in the interval measured)."""
    from synprep.train.data import BucketBatchSampler, ShardDataset
    from synprep.train.graphs import CAPTURE_AT

    n = 300 if args.small else 20000
    write_folder(tmp / "shards", {"train": n, "valid": 50}, vocab_size=vocab)
    interval = 3 if args.small else 100
    probe = _cfg(preset, args, **over)
    ds = ShardDataset(tmp / "shards", "train")
    per_epoch = len(BucketBatchSampler(ds.src_lengths, ds.tgt_lengths, probe.max_tokens,
                                       max_positions=probe.max_positions))  # updates an epoch (update_freq 1)
    steps = args.loop_steps or (2 * interval if args.small else loop_updates(per_epoch, interval))
    cfg = _cfg(preset, args, max_steps=steps, max_epochs=0, log_interval=interval,
               num_workers=0 if args.small else 2, **over)
    train(tmp / "shards", tmp / "run", cfg, device=args.device, progress=False)
    rows = [r for r in map(json.loads, (tmp / "run" / "metrics.jsonl").read_text().splitlines()) if "tokens_per_s" in r]
    last = {**rows[-1], "updates": steps, "batches_per_epoch": per_epoch,
            "interval_after_captures": steps - interval >= CAPTURE_AT * per_epoch}
    if "cuda_graphs" in last and len(rows) > 1:  # the counters are cumulative: what the last interval added
        last["cuda_graphs"] = {**last["cuda_graphs"], "in_interval": {
            k: round(last["cuda_graphs"][k] - rows[-2]["cuda_graphs"][k], 3) for k in ("captures", "replays", "capture_s")}}
    return last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--small", action="store_true", help="a smoke run: small model, 2 presets, few updates")
    ap.add_argument("--presets", nargs="+", choices=PRESETS, help="default: all (--small: vanilla, gated)")
    ap.add_argument("--max-tokens", type=int, default=None, help="default 16384 (--small: 1024)")
    ap.add_argument("--steps", type=int, default=None, help="timed updates per preset (default 60; --small 2)")
    ap.add_argument("--loop-steps", type=int, default=None,
                    help="updates of the real loop (default: whole intervals of 100, the last after the graphs' "
                         "captures; --small: 6)")
    ap.add_argument("--fp32", action="store_true", help="float32 on CUDA instead of bf16 autocast")
    ap.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    ap.add_argument("--compile", action="store_true", help="add the compile figure (eager vs torch.compile)")
    ap.add_argument("--compile-only", action="store_true", help="only the compile figure")
    ap.add_argument("--host-profile", action="store_true", help="add the host_profile figure (cProfile)")
    ap.add_argument("--compile-updates", type=int, default=None,
                    help="updates counted as compilation (default 4; --small 2)")
    ap.add_argument("--graphs", action="store_true", help="add the cuda_graphs figure (CUDA only)")
    ap.add_argument("--graphs-only", action="store_true", help="only the cuda_graphs figures (and the real loop)")
    ap.add_argument("--batch-order", action="store_true", help="add the batch_order figure (target vs source)")
    ap.add_argument("--set-lookup", action="store_true",
                    help="add the set_lookup figure (SET's relation lookup: F.embedding vs the sorted lookup)")
    ap.add_argument("--graphs-compile", action="store_true",
                    help="the cuda_graphs figure also over compiled layers (compile: true)")
    ap.add_argument("--graph-batches", type=int, default=40, help="batches of the cuda_graphs figure (default 40)")
    ap.add_argument("--graphs-loop", choices=["both", "graphs", "none"], default="both",
                    help="real_loop_cuda_graphs: without and with graphs (default), with graphs only, or none")
    args = ap.parse_args()
    args.compile_updates = args.compile_updates or (2 if args.small else 4)
    cuda = args.device.startswith("cuda")
    args.bf16 = cuda and not args.fp32
    args.max_tokens = args.max_tokens or (1024 if args.small else 16384)
    # 20 timed updates gave the same gated configuration 119k-182k tokens/s on one H100 (this script):
    # hence more updates, a longer warm-up (the allocator and the kernels' first shapes)
    steps = args.steps or (2 if args.small else 60)
    warmup = 1 if args.small else 10
    presets = args.presets or (PRESETS[:2] if args.small else PRESETS)
    vocab = 500 if args.small else 10000
    rng = np.random.default_rng(0)
    data = RecordDataset(list(random_records(400 if args.small else 6000, rng, vocab_size=vocab)))
    common = {"device": args.device, "dtype": "bf16" if args.bf16 else "fp32", "max_tokens": args.max_tokens,
              "small": args.small, "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(torch.device(args.device)) if cuda else None}

    def emit(rec: dict) -> None:
        print(json.dumps({**rec, **common}), flush=True)

    rates: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if args.compile or args.compile_only:
            for preset in args.presets or PRESETS[:2]:
                try:
                    emit(compile_figure(preset, args, data, vocab, steps, tmp / f"compile-{preset}"))
                except Exception as e:  # noqa: BLE001 - a preset torch.compile cannot take is a finding
                    emit({"figure": "compile", "preset": preset, "error": f"{type(e).__name__}: {str(e)[:600]}"})
            if args.compile_only:
                return
        if args.batch_order:
            for preset in args.presets or PRESETS[:1]:
                try:
                    emit(order_figure(preset, args, vocab, tmp / f"order-{preset}"))
                except Exception as e:  # noqa: BLE001 - one figure failing must not hide the others
                    emit({"figure": "batch_order", "preset": preset, "error": f"{type(e).__name__}: {str(e)[:600]}"})
        if args.graphs or args.graphs_only:
            for preset in args.presets or PRESETS[:2]:
                if not cuda:
                    emit({"figure": "cuda_graphs", "preset": preset, "skipped": "CUDA graphs need CUDA"})
                    continue
                try:
                    emit(graphs_figure(preset, args, data, vocab, tmp / f"graphs-{preset}"))
                except Exception as e:  # noqa: BLE001 - a preset that cannot be captured is a finding
                    emit({"figure": "cuda_graphs", "preset": preset, "error": f"{type(e).__name__}: {str(e)[:600]}"})
            gated = "gated_iwslt14_de_en"
            if cuda and gated in (args.presets or PRESETS[:2]) and args.graphs_loop != "none":
                for on in ((True,) if args.graphs_loop == "graphs" else (False, True)):
                    try:
                        row = real_loop(gated, args, vocab, tmp / f"loop-graphs{on}", cuda_graphs=on)
                        emit({"figure": "real_loop_cuda_graphs", "preset": gated, "cuda_graphs": on,
                              **{k: row.get(k) for k in ("tokens_per_s", "seconds", "data_wait_s", "valid_s",
                                                         "checkpoint_s", "step", "cuda_graphs", *LOOP_RUN)}})
                    except Exception as e:  # noqa: BLE001
                        emit({"figure": "real_loop_cuda_graphs", "cuda_graphs": on,
                              "error": f"{type(e).__name__}: {str(e)[:600]}"})
        if args.set_lookup:  # after the graphs' figures (the most wanted), before the eager presets
            try:
                emit(set_lookup_figure(args, data, vocab, tmp / "set-lookup"))
            except Exception as e:  # noqa: BLE001 - one figure failing must not hide the others
                emit({"figure": "set_lookup", "error": f"{type(e).__name__}: {str(e)[:600]}"})
        if args.graphs_only:
            return
        for preset in presets:
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            tr = _trainer(_cfg(preset, args), data, vocab, args.device, tmp / preset)
            it = endless(tr)
            rates[preset] = tokens_per_s(tr, it, steps, warmup, args.device)
            base = rates.get(PRESETS[0])
            emit({"figure": "train_tokens_per_s", "preset": preset, "tokens_per_s": round(rates[preset], 1),
                  "ratio_vs_vanilla": round(rates[preset] / base, 3) if base else None,
                  "peak_memory_bytes": torch.cuda.max_memory_allocated() if cuda else None,
                  "attention_backend": tr.runtime.attention_backend})
            emit({"figure": "update_profile", "preset": preset, **profile(tr, it, 2 if args.small else 4, args.device)})
            if args.host_profile:
                emit({"figure": "host_profile", "preset": preset, **host_profile(tr, it, 2 if args.small else 6,
                                                                                  args.device)})
            del tr, it
        gated = "gated_iwslt14_de_en"
        if gated in presets:
            split = {}
            for mt, uf in ((args.max_tokens, 1), (args.max_tokens // 2, 2)):
                tr = _trainer(_cfg(gated, args, max_tokens=mt, update_freq=uf), data, vocab, args.device,
                              tmp / f"split{uf}")
                split[f"{mt}x{uf}"] = round(tokens_per_s(tr, endless(tr), steps, warmup, args.device, uf), 1)
                del tr
            emit({"figure": "batch_split", "preset": gated, "tokens_per_s": split})
            row = real_loop(gated, args, vocab, tmp / "loop")
            loop = row["tokens_per_s"]
            rest = row["seconds"] - row["data_wait_s"] - row["valid_s"] - row["checkpoint_s"]
            emit({"figure": "real_loop_tokens_per_s", "preset": gated, "tokens_per_s": loop,
                  "step_tokens_per_s": round(rates[gated], 1), "ratio": round(loop / rates[gated], 3),
                  "interval_seconds": row["seconds"], "data_wait_s": row["data_wait_s"], "valid_s": row["valid_s"],
                  "checkpoint_s": row["checkpoint_s"], "checkpoint_write_s": row.get("checkpoint_write_s"),
                  "updates_only_tokens_per_s": round(loop * row["seconds"] / rest, 1) if rest > 0 else None,
                  **{k: row[k] for k in LOOP_RUN}})


if __name__ == "__main__":
    main()
