"""Parse speed: sentences/s of ``parse_lines`` at several ``--jobs``, model load time apart, peak RSS.

    python benchmarks/bench_parse.py [--lines 500] [--jobs 1 2] [--langs en de] [--pipeline]

Input: the first N lines of ``../shared/data/iwslt14_de-en/fairseq_prepared/tmp/test.{lang}``
(real TED text, Moses-tokenized and lowercased), unescaped, split into sentences as
``synprep parse`` does. English runs pos + depparse (+ LDD) + constituency, German pos +
depparse (+ LDD). No cache. For each (lang, jobs): the model load time (one parser built in this
process for jobs=1; for jobs>1 a warm-up run that makes every worker load its parser), then the
timed parse of the N lines with the parsers already loaded, and the peak resident memory of this
process plus its workers (sampled every 0.1 s). Each run is a fresh process, so no run sees
another's loaded models or worker pool. Prints one JSON object per run. Timings on a shared
machine are noisy: compare runs made together. ``--pipeline``: the forward and decode stages
pipelined (docs/parse.md; the forward in this process, the decode in ``jobs`` processes, which the
warm-up starts); each run also reports the seconds in each stage.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _rss import PeakRSS  # noqa: E402

from synprep.parse import ParserSpec, parse_lines  # noqa: E402
from synprep.parse import run as parse_run  # noqa: E402
from synprep.parse.options import Parallel, ParseRun  # noqa: E402
from synprep.parse.stanza_parser import stanza_identity, stanza_short_identity  # noqa: E402
from synprep.text.escape import unescape_tokens  # noqa: E402


def run_one(args: argparse.Namespace, lang: str, jobs: int) -> dict:
    logging.getLogger("stanza").setLevel(logging.WARNING)
    shared = Path(args.shared)
    stanza_dir = args.stanza_dir or str(shared / "stanza_resources")
    path = shared / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / f"test.{lang}"
    with open(path, encoding="utf-8") as f:
        lines = [unescape_tokens(next(f).split()) for _ in range(args.lines)]
    spec = ParserSpec(lang=lang, dir=stanza_dir, package=args.package, device=args.device)
    ident = stanza_short_identity(stanza_identity(spec))
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        if jobs == 1 and not args.pipeline:
            parse_run.worker_parser(spec)  # the same global the jobs=1 path uses
        else:  # every worker loads (pipelined: the decode processes start)
            list(parse_lines(lines[: 2 * jobs], ParseRun(spec.with_config(batch_size=1), par=Parallel(jobs=jobs), pipeline=args.pipeline)))
        load = time.perf_counter() - t0
        thr = parse_run.THROUGHPUT
        f0, d0 = thr.forward_seconds, thr.decode_seconds
        t0 = time.perf_counter()
        out = list(parse_lines(lines, ParseRun(spec.with_config(batch_size=args.batch_size), par=Parallel(jobs=jobs), pipeline=args.pipeline)))
        seconds = time.perf_counter() - t0
    sentences = sum(len(pl.sentences) for pl in out)
    words = sum(len(pl.words) for pl in out)
    return {
        "lang": lang, "parser": ident, "jobs": jobs, "device": args.device, "pipelined": args.pipeline,
        "lines": len(lines),
        "sentences": sentences, "words": words, "failed_lines": sum(pl.error is not None for pl in out),
        "load_s": round(load, 2), "parse_s": round(seconds, 2),
        "sentences_per_s": round(sentences / seconds, 1), "words_per_s": round(words / seconds),
        "peak_rss_mb": round(mem.peak / 2**20),
        "forward_s": round(thr.forward_seconds - f0, 2), "decode_s": round(thr.decode_seconds - d0, 2),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=500)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--langs", nargs="+", default=["en", "de"])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--stanza-dir", default=None, help="default: SHARED/stanza_resources")
    ap.add_argument("--package", default="synprep")
    ap.add_argument("--pipeline", action="store_true", help="forward and decode pipelined (docs/parse.md)")
    ap.add_argument("--one", nargs=2, metavar=("LANG", "JOBS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args, args.one[0], int(args.one[1]))), flush=True)
        return
    for lang in args.langs:
        for jobs in args.jobs:
            cmd = [sys.executable, __file__, "--one", lang, str(jobs), "--lines", str(args.lines),
                   "--batch-size", str(args.batch_size), "--device", args.device, "--shared", args.shared,
                   "--package", args.package] + (["--pipeline"] if args.pipeline else [])  # fmt: skip
            if args.stanza_dir:
                cmd += ["--stanza-dir", args.stanza_dir]
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
            print(proc.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
