"""Throughput of Moses tokenization and BPE application, ``--jobs 1`` vs ``--jobs 2``.

Real text: the 13500 raw IWSLT14 dev/test segments (XML extraction of the recipe) for
tokenization, and fairseq's tokenized ``tmp/test.{de,en}`` with its ``code`` for BPE. Runs the
same streaming functions as ``synprep tokenize`` / ``synprep bpe apply`` (chunks of 2000 lines
through synprep.parallel.parallel_map). ``first`` includes starting the worker pool; ``best`` is the
fastest of ``--repeat`` runs (pool already warm).

    python benchmarks/bench_text.py [--data ../shared/data] [--repeat 3] [--jobs 1 2]

Prints one JSON object: sentences/s per task and jobs.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path

from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.recipes.iwslt14 import PAIR, TEST_SETS, extract_segments  # noqa: E402
from synprep.text.bpe import apply_bpe_stream  # noqa: E402
from synprep.text.tokenize import tokenize_stream  # noqa: E402
from synprep.textio import iter_lines  # noqa: E402


def _time(fn) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = sum(1 for _ in fn())
    return time.perf_counter() - t0, n


def main() -> None:
    ap = arg_parser(__doc__)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    iwslt = args.data / "iwslt14_de-en"
    raw = {lang: [s for ts in TEST_SETS for s in extract_segments(
        iter_lines(iwslt / "orig" / f"{ts}.{PAIR}.{lang}.xml"))] for lang in ("de", "en")}
    tok = {lang: list(iter_lines(iwslt / "fairseq_prepared" / "tmp" / f"test.{lang}")) for lang in ("de", "en")}
    code = iwslt / "fairseq_prepared" / "code"

    tasks = {
        "tokenize": lambda jobs: (lambda: (x for lang in ("de", "en") for x in tokenize_stream(
            raw[lang], lang, lowercase=True, fairseq_compat=True, jobs=jobs))),
        "bpe_apply": lambda jobs: (lambda: (x for lang in ("de", "en") for x in apply_bpe_stream(
            tok[lang], code, jobs=jobs))),
    }
    result: dict = {
        "data": {"tokenize": f"IWSLT14 dev/test XML segments, {sum(map(len, raw.values()))} sentences (de+en)",
                 "bpe_apply": f"fairseq_prepared/tmp/test.{{de,en}}, {sum(map(len, tok.values()))} sentences, "
                              "10000-merge code"},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "unit": "sentences/s",
    }
    for name, make in tasks.items():
        result[name] = {}
        for jobs in args.jobs:
            times = []
            for _ in range(args.repeat):
                dt, n = _time(make(jobs))
                times.append(dt)
            result[name][f"jobs{jobs}"] = {"first": round(n / times[0]), "best": round(n / min(times)),
                                           "median": round(n / statistics.median(times))}
    emit(result)


if __name__ == "__main__":
    main()
