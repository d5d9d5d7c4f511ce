"""Whole-pipeline numbers: parse share of the run, parse throughput at --jobs 1 and 2, peak RSS at 10× input.

    python benchmarks/bench_pipeline.py [--lines 1000] [--jobs 1 2] [--rss-lines 1000] [--shard-size 1000]

Input: the first ``--lines`` lines of IWSLT14's real prepared test set
(``../shared/data/iwslt14_de-en/fairseq_prepared/test.{de,en}``: Moses-tokenized, lowercased,
BPE'd TED talks; German source, parsed by the offline stanza package ``synprep``: pos + depparse
+ LDD, dependency-derived trees). Every measurement runs in a fresh process, no parse cache
unless said.

(a) ``parse``: ``synprep.parse.parse_lines`` alone on the source words (rebuilt from the pieces
    and unescaped, exactly what ``annotate`` gives the parser), per ``--jobs``: model load time
    (for jobs > 1 a warm-up that makes every worker load its model), parse seconds, sentences/s.
(b) ``annotate``: ``synprep annotate`` on the same lines (no cache), wall seconds of the whole
    command per ``--jobs``; ``parse_share`` = (load + parse seconds) / annotate seconds at the
    same jobs, i.e. how much of the pipeline is the parser.
(c) ``rss``: peak resident memory of the whole process tree (psutil, workers included, sampled
    every 0.05 s) of ``synprep annotate -j 1`` on ``--rss-lines`` N lines and on 10×N lines (the
    N lines repeated ten times), each with a fresh parse cache: the 10× run parses the N unique
    lines once and reads the other 9×N from the cache, so it measures that memory does not grow
    with the number of lines streamed through features and shards, not the parser on 10× text.
    ``--rss-no-cache`` adds the same pair without a cache (10× the parsing time).
    ``non_parse_ms_per_line`` = (wall of 10×N − wall of N) / 9N: what a line costs in every
    stage but the parser (text, cache read, features, shards, check), set against the parser's
    ms/line from (a) in ``non_parse_vs_parse``.

Prints one JSON object. Timings on the shared, loaded machine are noisy: compare numbers from
one run, and say so when reporting them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _rss import PeakRSS  # noqa: E402

SHARED = Path(os.environ.get("SYNPREP_SHARED", ROOT.parent / "shared")).resolve() / "data"
PREPARED = SHARED / "iwslt14_de-en" / "fairseq_prepared"


def _inputs(lines: int, folder: Path, repeat: int = 1) -> tuple[Path, Path]:
    """The first ``lines`` pairs of the prepared test set (repeated ``repeat`` times) as files in ``folder``."""
    out = []
    for lang in ("de", "en"):
        with open(PREPARED / f"test.{lang}", encoding="utf-8") as f:
            head = [next(f) for _ in range(lines)]
        p = folder / f"in{lines}x{repeat}.{lang}"
        p.write_text("".join(head) * repeat, encoding="utf-8")
        out.append(p)
    return out[0], out[1]


def _stanza_args(args) -> list[str]:
    return ["--stanza-dir", args.stanza_dir, "--stanza-package", args.package]


# --- (a) parse alone, in a child process ------------------------------------------------------


def parse_child(args) -> dict:
    from synprep.align import bpe_words
    from synprep.parse import ParserSpec, parse_lines
    from synprep.parse import run as parse_run
    from synprep.parse.options import Parallel, ParseRun
    from synprep.text.escape import unescape_tokens

    logging.getLogger("stanza").setLevel(logging.WARNING)
    words = []
    with open(args.child_src, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            words.append(unescape_tokens(bpe_words(line.split(), line=n)[0]))
    spec = ParserSpec(lang="de", dir=args.stanza_dir, package=args.package)
    jobs = args.child_jobs
    t0 = time.perf_counter()
    if jobs == 1:
        parse_run.worker_parser(spec)  # the process-global parser the jobs=1 path reuses
    else:
        list(parse_lines(words[: 2 * jobs], ParseRun(spec.with_config(batch_size=1), par=Parallel(jobs=jobs))))  # every worker loads its model
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = list(parse_lines(words, ParseRun(spec.with_config(batch_size=args.batch_size), par=Parallel(jobs=jobs))))
    seconds = time.perf_counter() - t0
    sentences = sum(len(pl.sentences) for pl in out)
    return {"jobs": jobs, "lines": len(words), "sentences": sentences,
            "words": sum(len(w) for w in words), "failed_lines": sum(pl.error is not None for pl in out),
            "load_s": round(load, 2), "parse_s": round(seconds, 2),
            "sentences_per_s": round(sentences / seconds, 1)}


def measure_parse(args, src: Path, jobs: int) -> dict:
    cmd = [sys.executable, __file__, "--child-parse", "--child-src", str(src), "--child-jobs", str(jobs),
           "--batch-size", str(args.batch_size), "--stanza-dir", args.stanza_dir, "--package", args.package]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- (b), (c) the whole command ----------------------------------------------------------------


def measure_annotate(args, src: Path, tgt: Path, out: Path, jobs: int, cache: Path | None) -> dict:
    cmd = [sys.executable, "-m", "synprep", "-q", "annotate", "--src", str(src), "--tgt", str(tgt), "-s", "de",
           "-t", "en", "--out", str(out), "--shard-size", str(args.shard_size), "--batch-size", str(args.batch_size),
           "-j", str(jobs), *_stanza_args(args), *(["--cache", str(cache)] if cache else ["--no-cache"])]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with PeakRSS(proc.pid) as mem:
        _, err = proc.communicate()
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"annotate failed ({proc.returncode}):\n{err[-3000:]}")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["splits"]["train"]
    return {"jobs": jobs, "lines": manifest["input_lines"], "pairs": manifest["pairs"],
            "shards": len(manifest["shards"]), "cache": cache is not None, "wall_s": round(seconds, 2),
            "lines_per_s": round(manifest["input_lines"] / seconds, 1), "peak_rss_mb": round(mem.peak / 2**20)}


def main() -> None:
    ap = arg_parser(__doc__, whole=True)
    ap.add_argument("--lines", type=int, default=1000, help="lines for (a) and (b); the test set has 6750")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rss-lines", type=int, default=1000, help="N for (c): N and 10×N lines (0: skip)")
    ap.add_argument("--rss-no-cache", action="store_true", help="(c) also without a cache (slow)")
    ap.add_argument("--shard-size", type=int, default=1000, help="pairs per shard (the unit held in memory)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--stanza-dir", default=str(SHARED / "stanza_resources"))
    ap.add_argument("--package", default="synprep")
    ap.add_argument("--child-parse", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-src", help=argparse.SUPPRESS)
    ap.add_argument("--child-jobs", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_parse:
        emit(parse_child(args), indent=None)
        return

    summary: dict = {"input": str(PREPARED / "test.{de,en}"), "machine": {
        "cpus": os.cpu_count(), "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version()}, "shard_size": args.shard_size, "batch_size": args.batch_size}
    with tempfile.TemporaryDirectory(prefix="synprep-bench-") as tmp:
        d = Path(tmp)
        if args.lines:
            src, tgt = _inputs(args.lines, d)
            summary["parse"] = [measure_parse(args, src, j) for j in args.jobs]
            summary["annotate"] = [measure_annotate(args, src, tgt, d / f"out-j{j}", j, None) for j in args.jobs]
            summary["parse_share"] = {
                f"jobs{p['jobs']}": round((p["load_s"] + p["parse_s"]) / a["wall_s"], 3)
                for p, a in zip(summary["parse"], summary["annotate"], strict=True)}
        if args.rss_lines:
            rss = []
            for cached in [True, False] if args.rss_no_cache else [True]:
                for repeat in (1, 10):
                    src, tgt = _inputs(args.rss_lines, d, repeat)
                    cache = d / f"cache-{repeat}.sqlite" if cached else None
                    r = measure_annotate(args, src, tgt, d / f"rss-{repeat}-{cached}", 1, cache)
                    rss.append({**r, "repeat": repeat})
            summary["rss"] = rss
            summary["rss_growth_10x"] = [round(rss[i + 1]["peak_rss_mb"] / rss[i]["peak_rss_mb"], 3)
                                         for i in range(0, len(rss), 2)]
            # the 9×N extra lines of the cached 10× run pass through every stage but the parser
            extra_ms = (rss[1]["wall_s"] - rss[0]["wall_s"]) / (9 * args.rss_lines) * 1000
            summary["non_parse_ms_per_line"] = round(extra_ms, 2)
            if summary.get("parse"):
                p1 = summary["parse"][0]
                parse_ms = p1["parse_s"] / p1["lines"] * 1000
                summary["non_parse_vs_parse"] = {"jobs": p1["jobs"], "parse_ms_per_line": round(parse_ms, 2),
                                                 "ratio": round(extra_ms / parse_ms, 3)}
    summary["machine"]["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    emit(summary)


if __name__ == "__main__":
    main()
