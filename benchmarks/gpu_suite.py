"""The GPU check in one go: one JSON object per figure on stdout.

    python benchmarks/gpu_suite.py --device cuda            # on the GPU machine (< 9 min with the bundle)
    python benchmarks/gpu_suite.py --device cpu --small     # the suite's test: every figure, tiny sizes

Run through ``benchmarks/gpu_suite.sh`` (``make gpu-suite``). Data: ``$SHARED/data`` (the bundle's
``source .gpu/unpack.sh`` sets ``SHARED=/tmp/shared``; default ``../shared``): IWSLT14 test
``fairseq_prepared/tmp/test.de`` (tokenized) and ``fairseq_prepared/test.{de,en}`` (BPE'd), the German
``synprep`` stanza models. Figures (``"figure"`` names each):

- ``parse_speed``: ``parse_lines`` (no cache) on DEV over the first ``--lines`` lines, pipelined (the
  models' forward in this process, trees/relations/LDD in ``$(nproc)`` decode processes behind a bounded
  queue: docs/parse.md), and unpipelined on one CPU core (torch one thread, jobs 1) over the first
  ``--cpu-lines`` of them; sentences/s, words/s, the ratio; per side the decoder (``compiled``: numba,
  ``stanza``: stanza's own), the seconds in the forward and in the decode stage (summed over processes),
  and DEV's ``gpu_busy_fraction`` (null on the CPU).
- ``gpu_utilization``: nvidia-smi's ``utilization.gpu`` sampled every 100 ms during DEV's parse: mean and
  the fraction of samples > 0 (``skipped`` on the CPU or without nvidia-smi).
- ``gpu_cpu_difference``: DEV's parse of the first ``--cpu-lines`` lines (parsed again, so both sides have
  the same batches) against the one-core CPU parse of the same lines:
  words whose head / relation / UPOS differ, LDD entries of each (zero when DEV is the CPU).
- ``annotate``: ``synprep annotate --device DEV -j $(nproc)`` (pipelined: ``SYNPREP_PARSE_PIPELINE=1``)
  against ``--device cpu -j $(nproc)`` (unpipelined) on the first ``--annotate-lines`` BPE'd lines, wall
  seconds of each command and the ratio, each side's forward/decode seconds (from its throughput line),
  the GPU busy fraction during DEV's command (null on the CPU), and ``timelines``: each command's milestones
  (``synprep.timeline``: imports, input checks, parser identity, workers ready, each block parsed, each shard's
  records and write, the check, the workers released; seconds since the process started).
- the trainer's figures: every JSON line of ``benchmarks/bench_train_gpu.py --device DEV --graphs --graphs-compile
  --batch-order --set-lookup [--small]`` and ``benchmarks/bench_translate.py --device DEV [--small]`` when those scripts exist
  (``skipped`` otherwise).
- then ``translate_iwslt_size``, ``attention_backends``, ``stanza_path``, ``parse_workers`` (each function's
  docstring), and last ``compile``: ``bench_train_gpu.py --compile-only`` (eager against
  ``torch.compile``, vanilla and gated; compilation takes minutes on a full-size model).

Timings are wall seconds (``time.perf_counter``); a figure that fails prints ``{"figure": ..., "error": ...}``
and the suite goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def tokenized_lines(shared: Path, n: int) -> list[list[str]]:
    from synprep.text.escape import unescape_tokens

    out = []
    with open(shared / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / "test.de", encoding="utf-8") as f:
        for line in f:
            out.append(unescape_tokens(line.split()))
            if len(out) >= n:
                break
    return out


class GpuSampler:
    """nvidia-smi's utilization.gpu every 100 ms in a background process, while the block runs."""

    def __init__(self) -> None:
        self.samples: list[int] = []
        self.proc: subprocess.Popen | None = None
        self.thread: threading.Thread | None = None

    def __enter__(self) -> GpuSampler:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return self
        self.proc = subprocess.Popen([exe, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                      "-lms", "100", "-i", "0"], stdout=subprocess.PIPE, text=True)

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                if line.strip().isdigit():
                    self.samples.append(int(line.strip()))

        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        if self.thread is not None:
            self.thread.join(timeout=10)


def timed_parse(lines, spec, jobs: int = 1, pipeline: bool = False):
    """``(parsed lines, wall seconds, forward seconds, decode seconds)`` of one ``parse_lines`` run."""
    from synprep.parse import run as parse_run
    from synprep.parse.options import Parallel, ParseRun

    thr = parse_run.THROUGHPUT
    f0, d0 = thr.forward_seconds, thr.decode_seconds
    t0 = time.perf_counter()
    out = list(parse_run.parse_lines(lines, ParseRun(spec, par=Parallel(jobs=jobs), pipeline=pipeline)))
    return out, time.perf_counter() - t0, thr.forward_seconds - f0, thr.decode_seconds - d0


def busy_fraction(sampler: GpuSampler) -> float | None:
    """The fraction of nvidia-smi samples with the GPU busy (> 0 %), None without samples."""
    s = sampler.samples
    return round(sum(1 for x in s if x > 0) / len(s), 3) if s else None


def parse_figures(args, shared: Path) -> None:
    from synprep.parallel import limit_threads
    from synprep.parse import ParserSpec
    from synprep.parse import run as parse_run
    from synprep.parse.options import Parallel, ParseRun
    from synprep.parse.stanza_parser import fast_decoder_available

    sdir = str(shared / "stanza_resources")
    lines = tokenized_lines(shared, args.lines)
    limit_threads(1)
    dev = ParserSpec(lang="de", dir=sdir, package="synprep", device=args.device)
    cpu = ParserSpec(lang="de", dir=sdir, package="synprep")
    jobs = os.cpu_count() or 1
    parse_run.worker_parser(dev)  # loaded before the clock starts, on both sides
    # warm-up: CUDA context, kernels, the decoder's cache, the decode processes
    list(parse_run.parse_lines(lines[:8], ParseRun(dev, par=Parallel(jobs=jobs), pipeline=True)))
    with GpuSampler() as sampler:
        got, t_dev, f_dev, d_dev = timed_parse(lines, dev, jobs=jobs, pipeline=True)
    parse_run.worker_parser(cpu)
    list(parse_run.parse_lines(lines[:8], ParseRun(cpu)))
    ref, t_cpu, f_cpu, d_cpu = timed_parse(lines[: args.cpu_lines], cpu)
    n_dev = [s for pl in got for s in pl.sentences]
    n_cpu = [s for pl in ref for s in pl.sentences]
    w_dev, w_cpu = sum(len(s.words) for s in n_dev), sum(len(s.words) for s in n_cpu)
    decoder = "compiled" if fast_decoder_available() else "stanza"
    emit({"figure": "parse_speed", "device": args.device, "decoder": decoder, "pipelined": True, "decode_jobs": jobs,
          "lines": len(lines), "sentences": len(n_dev), "words": w_dev, "seconds": round(t_dev, 2),
          "sentences_per_s": round(len(n_dev) / t_dev, 1), "words_per_s": round(w_dev / t_dev),
          "forward_seconds": round(f_dev, 2), "decode_seconds": round(d_dev, 2),
          "gpu_busy_fraction": busy_fraction(sampler),
          "cpu_one_core": {"lines": len(ref), "sentences": len(n_cpu), "words": w_cpu, "seconds": round(t_cpu, 2),
                           "sentences_per_s": round(len(n_cpu) / t_cpu, 1), "decoder": decoder, "pipelined": False,
                           "forward_seconds": round(f_cpu, 2), "decode_seconds": round(d_cpu, 2)},
          "speedup_vs_one_core": round((len(n_dev) / t_dev) / (len(n_cpu) / t_cpu), 2)})
    if args.device == "cpu" or not sampler.proc:
        emit({"figure": "gpu_utilization", "skipped": "device cpu" if args.device == "cpu" else "no nvidia-smi"})
    else:
        s = sampler.samples
        emit({"figure": "gpu_utilization", "samples": len(s), "mean_percent": round(sum(s) / max(len(s), 1), 1),
              "busy_fraction": round(sum(1 for x in s if x > 0) / max(len(s), 1), 3), "parse_seconds": round(t_dev, 2)})
    # the difference on the same lines in the same batches (a parse depends on its batch-mates)
    same = timed_parse(lines[: args.cpu_lines], dev, jobs=jobs, pipeline=True)[0]
    a = [s for pl in same for s in pl.sentences]
    b = n_cpu
    diff = {"figure": "gpu_cpu_difference", "device": args.device, "lines": len(ref), "sentences": len(b),
            "words": w_cpu, "heads": 0, "deprels": 0, "upos": 0, "ldd_entries_device": 0, "ldd_entries_cpu": 0,
            "same_words": True}
    for x, y in zip(a, b, strict=True):
        if x.words != y.words:
            diff["same_words"] = False
            continue
        diff["heads"] += sum(h != k for h, k in zip(x.heads, y.heads, strict=True))
        diff["deprels"] += sum(h != k for h, k in zip(x.deprels, y.deprels, strict=True))
        diff["upos"] += sum(h != k for h, k in zip(x.upos, y.upos, strict=True))
        diff["ldd_entries_device"] += len(x.ldd.dep) if x.ldd is not None else 0
        diff["ldd_entries_cpu"] += len(y.ldd.dep) if y.ldd is not None else 0
    emit(diff)


def _language_check_args() -> list[str]:
    """``--no-language-check`` where py3langid is not installed (the GPU bundle leaves it out: 64 MiB)."""
    import importlib.util

    return [] if importlib.util.find_spec("py3langid") else ["--no-language-check"]


def annotate_figure(args, shared: Path) -> None:
    prep = shared / "iwslt14_de-en" / "fairseq_prepared"
    sdir = str(shared / "stanza_resources")
    jobs = os.cpu_count() or 1
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    lang = _language_check_args()
    # numba's on-disk cache of the tree decoder warmed first: on a fresh machine every variant's workers would
    # otherwise compile it, and only the first variant pays (on a fresh GPU machine: decode summed 48.8 s vs 8.9 s)
    from synprep import timeline
    from synprep.parse import ParserSpec
    from synprep.parse import run as parse_run
    from synprep.parse.options import ParseRun

    list(parse_run.parse_lines(tokenized_lines(shared, 8), ParseRun(ParserSpec(lang="de", dir=sdir, package="synprep"))))
    # and one small annotate -j 2 before the variants: every module a command and its workers import is then
    # read from bytecode (gpu_suite.sh) and the disk's cache by each variant alike, not compiled by the first
    with tempfile.TemporaryDirectory() as tmp:
        for side in ("de", "en"):
            with open(prep / f"test.{side}", encoding="utf-8") as f:
                (Path(tmp) / f"w.{side}").write_text("".join(itertools.islice(f, 8)), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "synprep", "annotate", "--src", f"{tmp}/w.de", "--tgt", f"{tmp}/w.en",
                        "-s", "de", "-t", "en", "--out", f"{tmp}/out", "--split", "test", "--vocab-split", "test",
                        "--no-cache", "--stanza-dir", sdir, "--stanza-package", "synprep", *lang, "-j", "2"],
                       capture_output=True, env={**env, "SYNPREP_ANNOTATE_STREAM": "1"}, check=False)
    # DEV pipelined (forward here, decode/features/shards in -j processes), DEV unpipelined (one
    # worker), the CPU with -j workers (unpipelined)
    variants = [(args.device, ["--device", args.device, "-j", str(jobs)], {"SYNPREP_PARSE_PIPELINE": "1"})]
    if args.annotate_unpipelined_only and args.device != "cpu":
        variants = []
    if args.device != "cpu":  # -j workers that share the GPU, each its own models (forward and decode)
        variants.append((f"{args.device}-unpipelined-j{jobs}", ["--device", args.device, "-j", str(jobs)],
                         {"SYNPREP_PARSE_PIPELINE": "0"}))
    variants.append((f"cpu-j{jobs}", ["--device", "cpu", "-j", str(jobs)], {"SYNPREP_PARSE_PIPELINE": "0"}))
    with tempfile.TemporaryDirectory() as tmp:
        src, tgt = Path(tmp) / "test.de", Path(tmp) / "test.en"
        for path, side in ((src, "de"), (tgt, "en")):
            with open(prep / f"test.{side}", encoding="utf-8") as f:
                path.write_text("".join(itertools.islice(f, args.annotate_lines)), encoding="utf-8")
        times: dict[str, float] = {}
        stages: dict[str, dict | None] = {}
        lines: dict[str, str] = {}
        errors: dict[str, str] = {}
        timelines: dict[str, dict | None] = {}
        busy = None
        for name, extra, pipe in variants:
            out = Path(tmp) / name
            cmd = [sys.executable, "-m", "synprep", "annotate", "--src", str(src), "--tgt", str(tgt), "-s", "de",
                   "-t", "en", "--out", str(out), "--split", "test", "--vocab-split", "test", "--no-cache", "--stanza-dir", sdir,
                   "--stanza-package", "synprep", *lang, *extra]
            with GpuSampler() if name == args.device else contextlib.nullcontext() as sampler:
                t0 = time.perf_counter()
                proc = subprocess.run(cmd, capture_output=True, text=True, env={**env, **pipe})
                dt = time.perf_counter() - t0
            if sampler is not None:
                busy = busy_fraction(sampler)
            if proc.returncode != 0:
                errors[name] = f"exited {proc.returncode}: {proc.stderr[-1200:]}"
                continue
            times[name] = round(dt, 2)
            m = re.search(r"; forward ([\d.]+) s, decode ([\d.]+) s", proc.stderr)
            stages[name] = {"forward_seconds": float(m[1]), "decode_seconds": float(m[2])} if m else None
            timelines[name] = timeline.parse_line(proc.stderr)  # where each variant's wall time went
            tail = [x for x in proc.stderr.splitlines() if "sentences/s" in x]
            if tail:
                lines[name] = tail[-1].strip()[-240:]
    cpu = times.get(f"cpu-j{jobs}")
    dev = times.get(args.device)
    rec: dict = {"figure": "annotate", "lines": args.annotate_lines, "device": args.device, "device_seconds": dev,
                 "device_jobs": jobs, "device_pipelined": True, "device_stages": stages.get(args.device),
                 "gpu_busy_fraction": busy if args.device != "cpu" else None, "cpu_jobs": jobs, "cpu_seconds": cpu,
                 "cpu_stages": stages.get(f"cpu-j{jobs}"), "device_speedup": round(cpu / dev, 2) if cpu and dev else None,
                 "language_check": not lang, "seconds": times, "stages": stages, "throughput_lines": lines,
                 "timelines": timelines}
    for name, _, _ in variants[:-1]:
        if cpu and name in times:
            rec[f"speedup {name} vs cpu-j{jobs}"] = round(cpu / times[name], 2)
    if errors:
        rec["error"] = errors
    emit(rec)


def remaining(args) -> float:
    """Seconds left of the suite's ``--budget`` (0 when spent)."""
    return max(0.0, args.budget - (time.perf_counter() - args.start))


def trainer_figures(args, scripts=(("bench_train_gpu.py", ["--graphs", "--graphs-compile", "--batch-order",
                                                           "--set-lookup"]),
                                   ("bench_translate.py", []))) -> None:
    for script, extra in scripts:
        path = ROOT / "benchmarks" / script
        if not path.exists():
            emit({"figure": script, "skipped": "not in this checkout"})
            continue
        cmd = [sys.executable, str(path), "--device", args.device] + (["--small"] if args.small else []) + extra
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        left = remaining(args)
        with tempfile.TemporaryFile("w+") as err:  # figures streamed as they come: a cut-off run keeps them
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
            assert proc.stdout is not None
            timer = threading.Timer(min(left, 7 * 86400), proc.kill)  # the suite's budget: a figure says it ran out
            timer.start()
            try:
                for line in proc.stdout:
                    if line.startswith("{"):
                        obj = json.loads(line)
                        emit({"figure": obj.pop("figure", script), "source": script, **obj})
                rc = proc.wait()
            finally:
                timer.cancel()
            if rc != 0 and remaining(args) <= 0:
                emit({"figure": script, "args": extra, "error": f"not finished within the suite's budget "
                      f"({left:.0f} s left of --budget {args.budget:.0f} s)"})
            elif rc != 0:
                err.seek(0)
                emit({"figure": script, "error": f"exited {rc}: {err.read()[-800:]}"})


def compile_figure(args) -> None:
    """``compile: true`` against eager for vanilla and gated (bench_train_gpu.py ``--compile-only``: compilation
    seconds, tokens/s after it, the largest relative loss difference); ``--small``: vanilla, one update each."""
    extra = ["--compile-only"] + (["--presets", "vanilla_iwslt14_de_en", "--steps", "1", "--compile-updates", "1"]
                                  if args.small else [])
    trainer_figures(args, (("bench_train_gpu.py", extra),))


def environment_figure(args) -> None:
    import platform

    rec: dict = {"figure": "environment", "device": args.device, "python": platform.python_version(),
                 "cpu_count": os.cpu_count()}
    for mod in ("torch", "numpy", "numba", "stanza", "h5py"):
        try:
            rec[mod] = __import__(mod).__version__
        except Exception as e:  # noqa: BLE001 - report what is missing, go on
            rec[mod] = f"unavailable: {type(e).__name__}: {e}"
    import torch

    rec["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    emit(rec)


_ORIGINAL: dict = {}


def _stanza_path(on: bool) -> None:
    """Switch synprep's POS/decoder stand-ins off (``on=False``: stanza's own processor and decoder) or back."""
    from synprep.parse import stanza_decode

    if not _ORIGINAL:
        _ORIGINAL.update(stanza_reproduced=stanza_decode.stanza_reproduced,
                         fast_decoder_available=stanza_decode.fast_decoder_available)
    for name, mod in list(sys.modules.items()):
        if not name.startswith("synprep.parse") or mod is None:
            continue
        for attr, fn in _ORIGINAL.items():
            if hasattr(mod, attr):
                setattr(mod, attr, fn if on else (lambda: False))


def stanza_path_figure(args, shared: Path) -> None:
    """The same lines on DEV through stanza's own POS processor and tree decoder (what synprep ran before its own POS stage)
    and through synprep's batched POS + compiled decoder: the before/after on one machine."""
    from synprep.parse import ParserSpec
    from synprep.parse import run as parse_run
    from synprep.parse.options import ParseRun

    lines = tokenized_lines(shared, args.cpu_lines)
    dev = ParserSpec(lang="de", dir=str(shared / "stanza_resources"), package="synprep", device=args.device)
    parse_run.worker_parser(dev)
    rec: dict = {"figure": "parse_vs_stanza_path", "device": args.device, "lines": len(lines)}
    got = {}
    try:
        for name, on in (("stanza_path", False), ("synprep_path", True)):
            _stanza_path(on)
            list(parse_run.parse_lines(lines[:8], ParseRun(dev, pipeline=False)))
            # unpipelined, in this process: the switch reaches every stage (decode processes would not see it)
            out, dt = timed_parse(lines, dev, jobs=1, pipeline=False)[:2]
            sents = [s for pl in out for s in pl.sentences]
            got[name] = sents
            rec[name] = {"seconds": round(dt, 2), "sentences_per_s": round(len(sents) / dt, 1)}
    finally:
        _stanza_path(True)
    rec["speedup"] = round(rec["stanza_path"]["seconds"] / rec["synprep_path"]["seconds"], 2)
    a, b = got["stanza_path"], got["synprep_path"]
    rec["same_heads_deprels_upos"] = all(x.heads == y.heads and x.deprels == y.deprels and x.upos == y.upos
                                         for x, y in zip(a, b, strict=True))
    emit(rec)


def attention_figure(args) -> None:
    """The gated preset's tokens/s under each ``attention_backend`` (``auto`` should be the best)."""
    import bench_train_gpu as btg
    import numpy as np
    import torch

    from synprep.shards.synthetic import random_records
    from synprep.train.data import RecordDataset

    cuda = args.device.startswith("cuda")
    ns = argparse.Namespace(small=args.small, max_tokens=1024 if args.small else 16384, bf16=cuda, threads=1,
                            device=args.device)
    vocab = 500 if args.small else 10000
    data = RecordDataset(list(random_records(400 if args.small else 4000, np.random.default_rng(0), vocab_size=vocab)))
    steps, warm = (2, 1) if args.small else (10, 4)
    rates: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in (("auto", "math", "efficient", "flash", "cudnn") if cuda else ("auto", "math")):
            for preset in ("vanilla_iwslt14_de_en", "gated_iwslt14_de_en"):
                try:
                    tr = btg._trainer(btg._cfg(preset, ns, attention_backend=backend), data, vocab, args.device,
                                      Path(tmp) / f"{backend}-{preset}")
                    rates[f"{preset} {backend}"] = round(btg.tokens_per_s(tr, btg.endless(tr), steps, warm,
                                                                          args.device), 1)
                    del tr
                except Exception as e:  # noqa: BLE001 - a kernel this GPU lacks: say so, go on
                    rates[f"{preset} {backend}"] = f"{type(e).__name__}: {str(e)[:200]}"
                if cuda:
                    torch.cuda.empty_cache()
    emit({"figure": "attention_backends", "device": args.device, "max_tokens": ns.max_tokens, "bf16": cuda,
          "steps": steps, "tokens_per_s": rates})


TRANSLATE_PRESETS = ("vanilla_iwslt14_de_en", "gated_iwslt14_de_en")


def translate_figure(args) -> None:
    """Beam-5 sentences/s of the batched decoder on IWSLT14-size models (``vanilla_iwslt14_de_en`` and
    ``gated_iwslt14_de_en``, vocabulary 10,000), bf16 autocast on CUDA: a PROXY workload, not a translation.

    The models are UNTRAINED (seeded init: ``bench_translate.length_bound_model``) and decode synthetic
    records of realistic shape (~30 source pieces) with the limit ``1.0·src_len`` (``max_len_a 1.0,
    max_len_b 0``): an untrained model almost never ranks ``</s>`` among a beam's best 10 of 10,000
    tokens, so nearly every sentence runs to its limit and takes about as many steps as it has source
    pieces, as a trained IWSLT14 model's hypotheses do. The record says how far the searches ran (over
    the ``max_tokens`` 4096 run: ``bench_translate.length_figures``): ``mean_search_steps`` against
    ``mean_limit_steps`` (``steps_to_limit_fraction``), ``mean_hypothesis_tokens`` against
    ``mean_source_tokens``, ``ended_before_limit_fraction``. The real measure is a trained checkpoint:
    ``bench_translate.py --checkpoint CK --shards DIR``.

    Per preset (a ``translate_iwslt_size_preset`` line as each ends, then the whole record): 6750
    sentences (IWSLT14 test's size; ``--small``: 16, the models shrunk to 2+2 layers of width 64) in
    ``translate``'s length-bucketed batches of ``max_tokens`` 4096, 16384 and 32768 source tokens
    (collation untimed), each after a warm-up on its first batch: decode seconds and sentences/s; then the first 200 sentences (``--small``: 4) through the
    per-hypothesis reference decoder (``tests/decode_reference.py``) and the batched one, ``max_tokens``
    4096, no further warm-up: ``identical_on_subset`` and both timings. No training: a few seconds per
    run on an H100. A run that would start after the suite's ``--budget`` is spent is skipped with the
    reason; one that fails records its error and the figure goes on.
    """
    cuda = args.device.startswith("cuda")
    with _one_cpu_thread(cuda):
        _translate_runs(args, cuda)


@contextlib.contextmanager
def _one_cpu_thread(cuda: bool):
    """One torch thread inside the block on the CPU (bench_translate.py's default: two spinning threads on a
    loaded 2-core machine made single runs 40x slower); the thread count as it was after it."""
    import torch

    threads = torch.get_num_threads()
    if not cuda:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _translate_runs(args, cuda: bool) -> None:
    """:func:`translate_figure`'s runs and record."""
    import bench_translate as bt
    import torch

    from synprep.train import decode

    n, ref_n = (16, 4) if args.small else (6750, 200)
    # --small: the presets' syntax variants at the tiny preset's width and depth (seconds on a CPU; the
    # vocabulary, what keeps </s> out of the beams, stays 10,000)
    shrink = {"d_model": 64, "ffn_dim": 128, "encoder_layers": 2, "decoder_layers": 2} if args.small else None
    beam, lenpen, a, b, vocab = 5, 1.0, 1.0, 0, 10000
    rec: dict = {"figure": "translate_iwslt_size", "device": args.device,
                 "model": "untrained (seeded init), length-bound workload: a proxy of IWSLT14 test's decoding "
                          "length; a trained checkpoint is the real measure (bench_translate.py --checkpoint)",
                 "sentences": n, "vocab": vocab, "beam": beam, "lenpen": lenpen, "max_len_a": a, "max_len_b": b,
                 "bf16": cuda, "torch_threads": torch.get_num_threads(), "architecture_overrides": shrink,
                 "presets": {}}
    errors: dict[str, str] = {}
    amp = torch.autocast(torch.device(args.device).type, dtype=torch.bfloat16, enabled=cuda)
    budget = f"skipped: the suite's --budget of {args.budget:.0f} s is spent"
    for preset in TRANSLATE_PRESETS:
        if remaining(args) <= 0:
            rec["presets"][preset] = budget
            continue
        model, dataset = bt.length_bound_model(preset, n, args.device, vocab=vocab, overrides=shrink)
        out: dict = {}
        with amp:
            for max_tokens in (4096, 16384, 32768):
                key = f"max_tokens {max_tokens}"
                if remaining(args) <= 0:
                    out[key] = budget
                    continue
                try:
                    bs = bt.batches(model, dataset, max_tokens, args.device)
                    bt.run(decode, model, bs[:1], beam, lenpen, a, b, args.device)  # warm-up
                    with bt.counting_steps(model, beam) as steps:
                        dt, hyps = bt.run(decode, model, bs, beam, lenpen, a, b, args.device)
                    sents = sum(x.size for x in bs)
                    out[key] = {"sentences": sents, "batches": len(bs), "decode_seconds": round(dt, 2),
                                "sentences_per_s": round(sents / dt, 1)}
                    if "mean_search_steps" not in out:
                        out.update(bt.length_figures(model, bs, hyps, steps[0], a, b))
                except Exception as e:  # noqa: BLE001 - e.g. out of memory at one size: say so, go on
                    errors[f"{preset} {key}"] = out[key] = f"{type(e).__name__}: {str(e)[:300]}"
            if remaining(args) <= 0:
                out["identical_on_subset"] = budget
            else:
                try:
                    out.update(_against_reference(model, dataset, ref_n, (beam, lenpen, a, b), args.device))
                except Exception as e:  # noqa: BLE001 - the timings above still count
                    errors[f"{preset} identical_on_subset"] = out["identical_on_subset"] = \
                        f"{type(e).__name__}: {str(e)[:300]}"
        rec["presets"][preset] = out
        emit({"figure": "translate_iwslt_size_preset", "device": args.device, "preset": preset, **out})
        del model
        if cuda:
            torch.cuda.empty_cache()
    if errors:
        rec["error"] = errors
    emit(rec)


def _against_reference(model, dataset, n: int, search_args: tuple, device: str) -> dict:
    """The first ``n`` sentences of ``dataset`` through the per-hypothesis reference decoder
    (``tests/decode_reference.py``) and the batched one (``max_tokens`` 4096, no warm-up; ``search_args`` =
    beam, lenpen, max_len_a, max_len_b): each one's timing and ``identical_on_subset``."""
    import bench_translate as bt
    import numpy as np
    import torch

    from synprep.train import decode
    from tests import decode_reference as reference

    sub = torch.utils.data.Subset(dataset, range(n))
    sub.src_lengths = np.asarray(dataset.src_lengths)[:n]  # type: ignore[attr-defined]
    bs = bt.batches(model, sub, 4096, device)
    out: dict = {}
    same: dict[str, list] = {}
    for name, search in (("reference", reference), ("batched", decode)):
        dt, same[name] = bt.run(search, model, bs, *search_args, device)
        out[f"{name} on {n}"] = {"decode_seconds": round(dt, 2), "sentences_per_s": round(n / dt, 1)}
    out["identical_on_subset"] = same["reference"] == same["batched"]
    return out


def translate_trained_figure(args, shared: Path) -> None:
    """Beam-5 sentences/s on IWSLT14 test with a model TRAINED here (a sentences/s target
    needs a trained checkpoint; ``translate_iwslt_size`` decodes with untrained models).

    ``vanilla_iwslt14_de_en`` is trained in process on IWSLT14 BPE pairs for at most 150 s
    (``bench_translate.iwslt_trained_model``: on valid when ``--shared`` has it, else on test itself, which
    the record says; 4096 target tokens per update, bf16, ``cuda_graphs``: 16384 gave 1673 updates in 150 s
    on an H100 and a model whose hypotheses ended after 6.7 tokens where the references have 19.4, BLEU
    0.25), then decodes all 6750 test
    sentences (``--small``: the model shrunk to 2+2 layers of width 64, 10 updates of 1024 tokens on 400
    pairs, 16 sentences) with
    beam 5, length penalty 1 and the preset's length limit (``max_len_a`` 0, ``max_len_b`` 200: a search
    ends when its sentence has beam finished hypotheses) in ``translate``'s batches of ``max_tokens`` 4096,
    16384, 32768 (``translate``'s CUDA default) and 65536 source tokens, each after a
    warm-up on its first batch: decode seconds, sentences/s; at 16384, how far
    the searches ran (``bench_translate.length_figures``) against the references' length, the same
    batches with the limit ``1.2·source + 10`` (a weak model's repetitions run to the preset's 200), and the
    tokenized BLEU of the hypotheses (sacrebleu, ``tokenize="none"`` on the lowercased tokenized text:
    a sign that the model translates, not a result). Then the first 200 sentences (``--small``: 4)
    through the per-hypothesis reference decoder too: ``identical_on_subset``. Last, ``translate_dataset``:
    ``synprep translate``'s own path (the pairs as shards, reads and collation included) with and without
    reading ahead (:func:`_translate_end_to_end`).
    """
    import bench_translate as bt
    import numpy as np
    import sacrebleu
    import torch

    from synprep.train import decode

    cuda = args.device.startswith("cuda")
    shrink = {"d_model": 64, "ffn_dim": 128, "encoder_layers": 2, "decoder_layers": 2} if args.small else None
    if args.small:  # seconds on a CPU: 10 updates of 1024 tokens over 400 pairs
        seconds, steps, train_n, test_n, ref_n, max_tokens = float("inf"), 10, 400, 16, 4, 1024
    else:
        seconds, steps, train_n, test_n, ref_n, max_tokens = min(150.0, remaining(args) / 2), 10 ** 6, 0, 0, 200, 4096
    preset, beam, lenpen = "vanilla_iwslt14_de_en", 5, 1.0
    rec: dict = {"figure": "translate_trained", "device": args.device, "preset": preset, "beam": beam,
                 "lenpen": lenpen, "bf16": cuda, "architecture_overrides": shrink}
    with _one_cpu_thread(cuda):
        try:
            model, dataset, refs, symbols, info = bt.iwslt_trained_model(
                shared, preset, args.device, seconds=seconds, max_steps=steps, overrides=shrink, train_lines=train_n,
                test_lines=test_n, max_tokens=max_tokens)
            a, b = model.cfg.max_len_a, model.cfg.max_len_b
            rec.update(info, sentences=len(dataset), max_len_a=a, max_len_b=b)
            amp = torch.autocast(torch.device(args.device).type, dtype=torch.bfloat16, enabled=cuda)
            with amp:
                kept = None  # the batches, hypotheses and counted steps of 16384
                for max_tokens in (4096, 16384, 32768, 65536):
                    bs = bt.batches(model, dataset, max_tokens, args.device)
                    bt.run(decode, model, bs[:1], beam, lenpen, a, b, args.device)  # warm-up
                    with bt.counting_steps(model, beam) as counted:
                        dt, hyps = bt.run(decode, model, bs, beam, lenpen, a, b, args.device)
                    rec[f"max_tokens {max_tokens}"] = {"batches": len(bs), "decode_seconds": round(dt, 2),
                                                       "sentences_per_s": round(len(dataset) / dt, 1)}
                    if max_tokens == 16384:
                        kept = bs, hyps, counted[0]
                assert kept is not None
                bs, hyps, steps_counted = kept
                rec.update(bt.length_figures(model, bs, hyps, steps_counted, a, b))
                order = np.concatenate([x.ids.cpu().numpy() for x in bs])
                text = [""] * len(dataset)
                for i, h in zip(order.tolist(), hyps, strict=True):
                    text[i] = " ".join(symbols[t] for t in h).replace("@@ ", "")
                rec["mean_reference_tokens"] = round(float(np.mean([len(r.split()) for r in refs])), 2)
                rec["bleu_tokenized"] = round(sacrebleu.corpus_bleu(text, [refs], tokenize="none", force=True).score, 2)
                # a weakly trained model may repeat itself up to the preset's 200 tokens: the same batches with a
                # limit of 1.2·source + 10 bound that (the figures above say how often the searches ran to the limit)
                dt, short = bt.run(decode, model, bs, beam, lenpen, 1.2, 10, args.device)
                rec["max_tokens 16384, max_len 1.2x+10"] = {"decode_seconds": round(dt, 2),
                                                            "sentences_per_s": round(len(dataset) / dt, 1),
                                                            "mean_hypothesis_tokens": round(float(np.mean(
                                                                [len(h) for h in short])), 2)}
                rec.update(_against_reference(model, dataset, ref_n, (beam, lenpen, a, b), args.device))
            rec["translate_dataset"] = _translate_end_to_end(model, dataset, symbols, (beam, lenpen, a, b),
                                                             args.device, order, hyps)
        except Exception as e:  # noqa: BLE001 - the figures measured so far still count
            rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    emit(rec)


def _translate_end_to_end(model, dataset, symbols: list[str], search: tuple, device: str, order, hyps) -> dict:
    """``synprep translate``'s own path on the test pairs written as shards (``ShardDataset``: HDF5 reads and
    collation included, the bench's pre-collated batches above exclude them), ``translate``'s default batch
    size for ``device``, after a warm-up: with the batches read in this process between searches, and read
    ahead in a DataLoader worker (``read_ahead``, the GPU's default); seconds, sentences/s, whether both give
    the same hypotheses, and the fraction equal to the 16384-token batches' above (other batches: under bf16
    the padding's last bits may tip a choice)."""
    import tempfile
    import time

    import torch

    from synprep.defaults import DECODE_DEFAULTS
    from synprep.shards.synthetic import write_folder_records
    from synprep.train import decode
    from synprep.train.data import ShardDataset

    beam, lenpen, a, b = search
    by_index = dict(zip(order.tolist(), hyps, strict=True))
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        write_folder_records(tmp, {"test": (rec for _, rec in (dataset[i] for i in range(len(dataset))))},
                             shard_size=2000, vocab_size=len(symbols))
        shards = ShardDataset(tmp, "test")
        kw = {"beam": beam, "lenpen": lenpen, "max_len_a": a, "max_len_b": b, "device": device, "progress": False}
        decode.translate_dataset(model, shards, **kw)  # warm-up
        got = {}
        for ahead in (False, True):
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            got[ahead] = decode.translate_dataset(model, shards, read_ahead=ahead, **kw)
            dt = time.perf_counter() - t0
            out[f"read_ahead {str(ahead).lower()}"] = {"seconds": round(dt, 2),
                                                      "sentences_per_s": round(len(shards) / dt, 1)}
    out["identical"] = got[True] == got[False]
    out["same_as_16384_fraction"] = round(sum(h == by_index[i] for i, h in enumerate(got[True])) / len(got[True]), 4)
    out["max_tokens"] = DECODE_DEFAULTS.max_tokens(device)
    return out


def workers_figure(args, shared: Path) -> None:
    """DEV's parse of the ``--lines`` lines, unpipelined, with ``jobs`` workers that share the GPU (each its own
    models: forward and decode in one process), against the pipelined parse (one forward process, decode in
    ``$(nproc)`` processes); sentences/s, the GPU's busy fraction and mean utilization, and ``startup_seconds``:
    the untimed warm-up before (the workers start, load their models and parse ``64 · jobs`` lines). The models' forward is
    host-bound (stanza's per-word Python batching), so several processes per GPU keep it busy."""
    import dataclasses

    from synprep.parallel import limit_threads
    from synprep.parse import ParserSpec
    from synprep.parse import run as parse_run
    from synprep.parse.options import Parallel, ParseRun

    lines = tokenized_lines(shared, args.lines)
    spec = ParserSpec(lang="de", dir=str(shared / "stanza_resources"), package="synprep", device=args.device)
    nproc = os.cpu_count() or 1
    rec: dict = {"figure": "parse_workers", "device": args.device, "lines": len(lines)}
    # the most wanted first (a run cut off keeps the ones printed): the default on a GPU, then pipelined
    runs = [(f"unpipelined -j{j}", j, False) for j in ((2,) if args.small else (nproc,))]
    runs.append((f"pipelined -j{nproc}", nproc, True))
    runs += [(f"unpipelined -j{j}", j, False) for j in ((1,) if args.small else (8, 4))]
    cpu = dataclasses.replace(spec, device="cpu")
    limit_threads(1)
    list(parse_run.parse_lines(lines[:4], ParseRun(cpu, par=Parallel(jobs=1), pipeline=False)))  # the models loaded before the clock
    t0 = time.perf_counter()
    one = list(parse_run.parse_lines(lines[: args.cpu_lines // 2], ParseRun(cpu, par=Parallel(jobs=1), pipeline=False)))
    n_one = sum(len(pl.sentences) for pl in one)
    rec["cpu one core"] = {"lines": len(one), "sentences_per_s": round(n_one / (time.perf_counter() - t0), 1)}
    for name, jobs, pipe in runs:
        try:
            t0 = time.perf_counter()  # start-up: the workers start, load their models, parse one batch each
            list(parse_run.parse_lines(lines[: 64 * jobs], ParseRun(spec, par=Parallel(jobs=jobs), pipeline=pipe)))
            warm = time.perf_counter() - t0
            with GpuSampler() as sampler:
                t0 = time.perf_counter()
                out = list(parse_run.parse_lines(lines, ParseRun(spec, par=Parallel(jobs=jobs), pipeline=pipe)))
                dt = time.perf_counter() - t0
            n = sum(len(pl.sentences) for pl in out)
            s = sampler.samples
            rec[name] = {"startup_seconds": round(warm, 2), "seconds": round(dt, 2),
                         "sentences_per_s": round(n / dt, 1), "busy_fraction": busy_fraction(sampler),
                         "mean_percent": round(sum(s) / len(s), 1) if s else None,
                         "vs_cpu_one_core": round(n / dt / rec["cpu one core"]["sentences_per_s"], 2)}
        except Exception as e:  # noqa: BLE001 - one configuration failing must not hide the others
            rec[name] = f"{type(e).__name__}: {str(e)[:300]}"
        emit({"figure": "parse_workers_run", "device": args.device, "run": name, "result": rec[name]})
    emit(rec)

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--small", action="store_true", help="tiny sizes (the test suite's run)")
    ap.add_argument("--shared", default=os.environ.get("SHARED", str(ROOT.parent / "shared")))
    ap.add_argument("--only", nargs="*", default=None,
                    help="figures to run: environment parse annotate trainer translate translate_trained attention "
                         "stanza_path workers compile")
    ap.add_argument("--annotate-unpipelined-only", action="store_true",
                    help="annotate: leave out the pipelined GPU variant (the device default is unpipelined)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds for the whole suite (default 540, i.e. 9 minutes; --small: none); a figure "
                         "that would start after it says so, a benchmark subprocess still running at it is stopped")
    args = ap.parse_args()
    if args.budget is None:
        args.budget = float("inf") if args.small else 540.0
    args.start = time.perf_counter()
    args.lines, args.cpu_lines, args.annotate_lines = (12, 6, 10) if args.small else (6750, 1000, 6750)
    shared = Path(args.shared) / "data"
    t0 = time.perf_counter()
    # the most wanted first: a run cut off at its time limit keeps the figures already printed
    steps = (("environment", lambda: environment_figure(args)), ("parse", lambda: parse_figures(args, shared)),
             ("workers", lambda: workers_figure(args, shared)),
             ("annotate", lambda: annotate_figure(args, shared)), ("trainer", lambda: trainer_figures(args)),
             ("compile", lambda: compile_figure(args)),
             ("translate", lambda: translate_figure(args)), ("translate_trained", lambda: translate_trained_figure(args, shared)),
             ("attention", lambda: attention_figure(args)),
             ("stanza_path", lambda: stanza_path_figure(args, shared)))
    only = set(args.only or [name for name, _ in steps])
    for name, run in steps:
        if name not in only:
            continue
        if remaining(args) <= 0:
            emit({"figure": name, "skipped": f"the suite's --budget of {args.budget:.0f} s is spent"})
            continue
        try:
            run()
        except Exception as e:  # one failed figure must not hide the others
            emit({"figure": name, "error": f"{type(e).__name__}: {e}"})
    emit({"figure": "suite", "device": args.device, "small": args.small, "seconds": round(time.perf_counter() - t0, 1)})


if __name__ == "__main__":
    main()
