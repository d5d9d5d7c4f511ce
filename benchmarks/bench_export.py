"""Export throughput and peak memory at 1× and 10× corpus size; HF datasets vs the HDF5 reader.

    python benchmarks/bench_export.py [--shards build/iwslt14-test-shards] [--split test] [--repeat 10]
    python benchmarks/bench_export.py --synthetic 6750          # no real shards: IWSLT-sized synthetic pairs

The real input is the IWSLT14 de-en test split (6750 pairs) annotated by ``synprep annotate`` on
fairseq's prepared ``test.{de,en}`` (``make iwslt14-test`` or the command in docs/export.md). The
10× folder repeats those pairs ten times (renumbered lines, one shard per repetition; building it
is not timed). Prints one JSON object:

- ``export[FORMAT][1x|10x]``: ``pairs_per_s`` of ``synprep.export.export`` (wall clock, imports
  excluded), ``pairs_per_cpu_s`` (per second of the process's own CPU time: less sensitive to other
  jobs on a shared machine, blind to I/O waits) and
  ``peak_rss_mb`` of a fresh process doing only that export (its own ``VmHWM``: ``ru_maxrss`` would
  keep the RSS of the forked copy of this process, which holds the 10× pairs): nearly flat from
  1× to 10× when the export streams (one shard's data in memory, plus 56 bytes per pair of
  headers);
- ``read``: ``datasets.load_dataset("parquet", …)`` (the Arrow cache build) and iterating every row as
  Python dicts, vs ``synprep.shards.reader.iter_pairs`` over the HDF5 shards (dicts of numpy arrays):
  seconds per 10k pairs.

Timings on a shared machine are noisy; run it alone for numbers you report.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.shards import Manifest, ShardReader, SplitReader, iter_pairs, open_split, shard_name, write_shard  # noqa: E402
from synprep.shards.schema import REQUIRED_ATTRS  # noqa: E402

FORMATS = ("parquet", "fairseq")


def repeat_folder(src: Path, split: str, dest: Path, times: int) -> int:
    """``dest`` = the pairs of ``src``'s split ``times`` times over (lines renumbered), one shard per copy."""
    import shutil

    dest.mkdir(parents=True)
    m = Manifest.load(src)
    shutil.copy(src / "dict.txt", dest / "dict.txt")
    out = Manifest(m.signature, m.config)
    out.vocab = m.vocab
    recs = list(SplitReader(open_split(src, split)))
    attrs = {k: v for k, v in ShardReader(src / shard_name(split, 0)).attrs.items()
             if k in REQUIRED_ATTRS or k in ("deprel_labels", "upos_labels")}
    top = max(r.line for r in recs)
    for rep in range(times):
        for r in recs:
            r.line += 0 if rep == 0 else top
        info = write_shard(dest / shard_name(split, rep), recs, {**attrs, "shard_index": rep})
        out.add_shard(split, info)
    out.set_input_lines(split, top * times)
    out.save(dest)
    return len(recs) * times


def synthetic_folder(dest: Path, pairs: int, split: str) -> None:
    from synprep.shards.synthetic import write_folder

    write_folder(dest, {split: pairs}, shard_size=10_000, vocab_size=10_000)


def child(source: str, fmt: str, dest: str, split: str) -> None:
    from synprep.export import export, get_exporter

    get_exporter(fmt)
    if fmt in ("parquet", "hf"):  # the one-time imports are not export time (pyarrow's first array imports pandas)
        import pyarrow as pa
        import pyarrow.compute  # noqa: F401
        import pyarrow.parquet  # noqa: F401
        import sacremoses  # noqa: F401

        pa.array([""])
    t, cpu = time.perf_counter(), time.process_time()
    record = export(source, fmt, dest, [split])
    dt, dcpu = time.perf_counter() - t, time.process_time() - cpu
    status = Path("/proc/self/status").read_text()
    [kb] = [line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")]
    emit({"pairs": record.pairs(split), "seconds": dt, "cpu_seconds": dcpu, "peak_rss_mb": int(kb) / 1024}, indent=None)


def run_child(source: Path, fmt: str, dest: Path, split: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--_child", str(source), fmt, str(dest), split],
                          capture_output=True, text=True, check=True)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"pairs": got["pairs"], "pairs_per_s": round(got["pairs"] / got["seconds"]),
            "pairs_per_cpu_s": round(got["pairs"] / got["cpu_seconds"]),
            "seconds": round(got["seconds"], 3), "peak_rss_mb": round(got["peak_rss_mb"], 1)}


def read_speeds(folder: Path, parquet: Path, split: str, cache: Path) -> dict:
    from datasets import load_dataset

    n = sum(len(r) for r in open_split(folder, split))
    t = time.perf_counter()
    ds = load_dataset("parquet", data_files={split: str(parquet / "data" / f"{split}-*.parquet")},
                      cache_dir=str(cache))[split]
    load = time.perf_counter() - t
    t = time.perf_counter()
    rows = sum(1 for _ in ds)
    iterate = time.perf_counter() - t
    assert rows == n
    t = time.perf_counter()
    pairs = sum(1 for _ in iter_pairs(folder, split))
    hdf5 = time.perf_counter() - t
    assert pairs == n
    per10k = 10_000 / n
    return {"pairs": n, "hf_load_dataset_s_per_10k": round(load * per10k, 3),
            "hf_iterate_rows_s_per_10k": round(iterate * per10k, 3),
            "hf_total_s_per_10k": round((load + iterate) * per10k, 3),
            "hdf5_iter_pairs_s_per_10k": round(hdf5 * per10k, 3)}


def main() -> None:
    ap = arg_parser(__doc__)
    ap.add_argument("--shards", default=str(ROOT / "build" / "iwslt14-test-shards"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--synthetic", type=int, default=None, metavar="PAIRS",
                    help="Use this many synthetic IWSLT-sized pairs instead of --shards.")
    ap.add_argument("--_child", nargs=4, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child:
        child(*args._child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.synthetic:
            base = work / "base"
            synthetic_folder(base, args.synthetic, args.split)
            source = f"synthetic IWSLT-sized pairs ({args.synthetic})"
        else:
            base = Path(args.shards)
            if not (base / "manifest.json").exists():
                sys.exit(f"no shards at {base}: annotate the IWSLT14 test split first (docs/export.md), "
                         f"or pass --synthetic 6750")
            source = str(base)
        big = work / "x10"
        n_big = repeat_folder(base, args.split, big, args.repeat)
        out: dict[str, object] = {"source": source, "split": args.split, "repeat": args.repeat,
                                  "pairs_1x": n_big // args.repeat, "pairs_10x": n_big}
        export: dict[str, dict] = {}
        for fmt in FORMATS:
            export[fmt] = {"1x": run_child(base, fmt, work / f"{fmt}-1x", args.split),
                           f"{args.repeat}x": run_child(big, fmt, work / f"{fmt}-10x", args.split)}
        out["export"] = export
        out["read"] = read_speeds(base, work / "parquet-1x", args.split, work / "hf-cache")
        out["mean_src_pieces"] = float(np.mean(SplitReader(open_split(base, args.split)).src_lengths))
    emit(out)


if __name__ == "__main__":
    main()
