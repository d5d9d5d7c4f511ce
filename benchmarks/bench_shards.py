"""Shard write/read/check throughput, bytes per pair, and peak memory vs corpus size.

    python benchmarks/bench_shards.py [--pairs 20000] [--shard-size 5000] [--rss-pairs 20000]

Synthetic but realistically sized records (synprep.shards.synthetic.random_records: W ≈ 20 words,
T ≈ 30 source pieces, U ≈ 30 target pieces, K ≈ 2W LDD entries, 10% two-sentence lines).
Prints one JSON object:

- ``write_pairs_per_s``, ``bytes_per_pair`` (file bytes / pairs, gzip 4 + shuffle);
- ``read_cached_pairs_per_s`` (ShardReader default: every dataset loaded once, then slices) vs
  ``read_uncached_pairs_per_s`` (``cache=False``: a dozen h5py slice reads per pair), random order;
- ``check_pairs_per_s`` (``check_dir`` on the written folder, sha256 included);
- ``peak_rss_mb``: peak RSS of a fresh process streaming ``rss_pairs`` and 10× as many pairs into
  shards of ``shard_size`` (records from a fixed pool, renumbered, so generation costs no memory):
  it must stay flat, as only one shard is ever buffered.

Timings on a shared machine are noisy; run it alone for numbers you report.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.shards import ShardReader, shard_name  # noqa: E402
from synprep.shards.check import check_dir  # noqa: E402
from synprep.shards.synthetic import random_records, write_folder_records  # noqa: E402

VOCAB = 10_000


def _stream(n: int, pool_size: int = 2000):
    """n records cycling over a fixed pool, renumbered with increasing lines (memory stays flat)."""
    pool = list(random_records(pool_size, np.random.default_rng(0), vocab_size=VOCAB))
    for line, rec in zip(range(1, n + 1), itertools.cycle(pool), strict=False):
        r = copy.copy(rec)
        r.line = line
        yield r


def _write_folder(folder: Path, records, shard_size: int) -> None:
    """The folder of ``records`` (streamed, a shard at a time): the tests' builder, synthetic.write_folder_records."""
    write_folder_records(folder, {"train": records}, shard_size=shard_size, vocab_size=VOCAB)


def _rss_child(n: int, shard_size: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _write_folder(Path(tmp), _stream(n), shard_size)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def main() -> None:
    ap = arg_parser(__doc__)
    ap.add_argument("--pairs", type=int, default=20_000)
    ap.add_argument("--shard-size", type=int, default=5000)
    ap.add_argument("--rss-pairs", type=int, default=20_000)
    ap.add_argument("--_rss", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._rss is not None:
        _rss_child(args._rss, args.shard_size)
        return

    out: dict[str, object] = {"pairs": args.pairs, "shard_size": args.shard_size}
    records = list(_stream(args.pairs))
    out["mean_T"] = float(np.mean([len(r.src_ids) for r in records]))
    out["mean_W"] = float(np.mean([len(r.heads) for r in records]))
    out["mean_K"] = float(np.mean([len(r.ldd_dep) for r in records]))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        _write_folder(folder, records, args.shard_size)
        dt = time.perf_counter() - t
        size = sum(p.stat().st_size for p in folder.glob("train.*.h5"))
        out["write_pairs_per_s"] = round(args.pairs / dt)
        out["bytes_per_pair"] = round(size / args.pairs, 1)
        out["mb_per_1k_pairs"] = round(size / args.pairs * 1000 / 2**20, 3)

        shard = folder / shard_name("train", 0)
        n = len(ShardReader(shard))
        order = np.random.default_rng(1).permutation(n)
        for cache in (True, False):
            r = ShardReader(shard, cache=cache)
            k = n if cache else min(n, 500)
            t = time.perf_counter()
            for i in order[:k]:
                r[int(i)]
            dt = time.perf_counter() - t
            out[f"read_{'cached' if cache else 'uncached'}_pairs_per_s"] = round(k / dt)
            r.close()

        t = time.perf_counter()
        report = check_dir(folder)
        dt = time.perf_counter() - t
        assert report.ok, report.violation
        out["check_pairs_per_s"] = round(args.pairs / dt)

    rss = {}
    for n in (args.rss_pairs, 10 * args.rss_pairs):
        proc = subprocess.run([sys.executable, __file__, "--_rss", str(n), "--shard-size", str(args.shard_size)],
                              capture_output=True, text=True, check=True)
        rss[n] = round(float(proc.stdout.strip()), 1)
    out["peak_rss_mb"] = rss
    emit(out)


if __name__ == "__main__":
    main()
