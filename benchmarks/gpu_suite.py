"""The GPU check in one go (issue 17 item 6): one JSON object per figure on stdout.

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
  and the GPU busy fraction during DEV's command (null on the CPU).
- the trainer's figures: every JSON line of ``benchmarks/bench_train_gpu.py --device DEV [--small]`` and
  ``benchmarks/bench_translate.py --device DEV [--small]`` when those scripts exist (``skipped`` otherwise).

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

    thr = parse_run.THROUGHPUT
    f0, d0 = thr.forward_seconds, thr.decode_seconds
    t0 = time.perf_counter()
    out = list(parse_run.parse_lines(lines, spec, jobs=jobs, pipeline=pipeline))
    return out, time.perf_counter() - t0, thr.forward_seconds - f0, thr.decode_seconds - d0


def busy_fraction(sampler: GpuSampler) -> float | None:
    """The fraction of nvidia-smi samples with the GPU busy (> 0 %), None without samples."""
    s = sampler.samples
    return round(sum(1 for x in s if x > 0) / len(s), 3) if s else None


def parse_figures(args, shared: Path) -> None:
    from synprep.parallel import limit_threads
    from synprep.parse import ParserSpec
    from synprep.parse import run as parse_run
    from synprep.parse.stanza_parser import fast_decoder_available

    sdir = str(shared / "stanza_resources")
    lines = tokenized_lines(shared, args.lines)
    limit_threads(1)
    dev = ParserSpec(lang="de", dir=sdir, package="synprep", device=args.device)
    cpu = ParserSpec(lang="de", dir=sdir, package="synprep")
    jobs = os.cpu_count() or 1
    parse_run.worker_parser(dev)  # loaded before the clock starts, on both sides
    # warm-up: CUDA context, kernels, the decoder's cache, the decode processes
    list(parse_run.parse_lines(lines[:8], dev, jobs=jobs, pipeline=True))
    with GpuSampler() as sampler:
        got, t_dev, f_dev, d_dev = timed_parse(lines, dev, jobs=jobs, pipeline=True)
    parse_run.worker_parser(cpu)
    list(parse_run.parse_lines(lines[:8], cpu))
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


def annotate_figure(args, shared: Path) -> None:
    prep = shared / "iwslt14_de-en" / "fairseq_prepared"
    sdir = str(shared / "stanza_resources")
    jobs = os.cpu_count() or 1
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory() as tmp:
        src, tgt = Path(tmp) / "test.de", Path(tmp) / "test.en"
        for path, lang in ((src, "de"), (tgt, "en")):
            with open(prep / f"test.{lang}", encoding="utf-8") as f:
                path.write_text("".join(itertools.islice(f, args.annotate_lines)), encoding="utf-8")
        times, stages, busy = {}, {}, None
        runs = ((args.device, ["--device", args.device, "-j", str(jobs)], {"SYNPREP_PARSE_PIPELINE": "1"}),
                (f"cpu-j{jobs}", ["--device", "cpu", "-j", str(jobs)], {"SYNPREP_PARSE_PIPELINE": "0"}))
        for name, extra, pipe in runs:
            out = Path(tmp) / name
            cmd = [sys.executable, "-m", "synprep", "annotate", "--src", str(src), "--tgt", str(tgt), "-s", "de",
                   "-t", "en", "--out", str(out), "--split", "test", "--vocab-split", "test", "--no-cache", "--stanza-dir", sdir,
                   "--stanza-package", "synprep", *extra]
            with GpuSampler() if name == args.device else contextlib.nullcontext() as sampler:
                t0 = time.perf_counter()
                proc = subprocess.run(cmd, capture_output=True, text=True, env={**env, **pipe})
                times[name] = time.perf_counter() - t0
            if sampler is not None:
                busy = busy_fraction(sampler)
            m = re.search(r"; forward ([\d.]+) s, decode ([\d.]+) s", proc.stderr)
            stages[name] = {"forward_seconds": float(m[1]), "decode_seconds": float(m[2])} if m else None
            if proc.returncode != 0:
                raise RuntimeError(f"annotate {' '.join(extra)} exited {proc.returncode}: {proc.stderr[-1500:]}")
    dev, cpu = times[args.device], times[f"cpu-j{jobs}"]
    emit({"figure": "annotate", "lines": args.annotate_lines, "device": args.device, "device_seconds": round(dev, 2),
          "device_jobs": jobs, "device_pipelined": True, "device_stages": stages[args.device],
          "gpu_busy_fraction": busy if args.device != "cpu" else None, "cpu_jobs": jobs, "cpu_seconds": round(cpu, 2),
          "cpu_stages": stages[f"cpu-j{jobs}"], "device_speedup": round(cpu / dev, 2)})


def trainer_figures(args) -> None:
    for script in ("bench_train_gpu.py", "bench_translate.py"):
        path = ROOT / "benchmarks" / script
        if not path.exists():
            emit({"figure": script, "skipped": "not in this checkout"})
            continue
        cmd = [sys.executable, str(path), "--device", args.device] + (["--small"] if args.small else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                obj = json.loads(line)
                emit({"figure": obj.pop("figure", script), "source": script, **obj})
        if proc.returncode != 0:
            emit({"figure": script, "error": f"exited {proc.returncode}: {proc.stderr[-800:]}"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--small", action="store_true", help="tiny sizes (the test suite's run)")
    ap.add_argument("--shared", default=os.environ.get("SHARED", str(ROOT.parent / "shared")))
    ap.add_argument("--only", nargs="*", default=None, help="figures to run: parse annotate trainer")
    args = ap.parse_args()
    args.lines, args.cpu_lines, args.annotate_lines = (12, 6, 10) if args.small else (6750, 1500, 6750)
    shared = Path(args.shared) / "data"
    t0 = time.perf_counter()
    only = set(args.only or ["parse", "annotate", "trainer"])
    for name, run in (("parse", lambda: parse_figures(args, shared)), ("annotate", lambda: annotate_figure(args, shared)),
                      ("trainer", lambda: trainer_figures(args))):
        if name not in only:
            continue
        try:
            run()
        except Exception as e:  # one failed figure must not hide the others
            emit({"figure": name, "error": f"{type(e).__name__}: {e}"})
    emit({"figure": "suite", "device": args.device, "small": args.small, "seconds": round(time.perf_counter() - t0, 1)})


if __name__ == "__main__":
    main()
