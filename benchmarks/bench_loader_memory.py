"""Memory of the trainer's data loading as the corpus grows: two epochs of a synthetic split through the
trainer's own DataLoader pieces (as ``synprep.train.data.make_loaders`` puts them together: :class:`ShardDataset`,
:class:`BucketBatchSampler`, :class:`Collater`, ``--workers`` worker processes), at two or more corpus
sizes, and each process's memory at the end.

    python benchmarks/bench_loader_memory.py --pairs 20000 80000 --workers 2
    python benchmarks/bench_loader_memory.py --pairs 300 600 --workers 1 --small-shards   # seconds

Per size it prints one JSON object (``figure: "loader_memory"``): seconds for two epochs (the first decodes
the shards), the bytes of the shards and of the mapped arrays, and, at the end, for the main
process and each worker the memory it alone wrote (``Private_Dirty``: its own arrays, what grows with the
shards it holds, but also the pages of files it alone maps that are not yet written back to disk: the
maps a worker just wrote), its anonymous memory (``Anonymous``: its heap and arrays, no file's pages, those a
forked worker shares with its parent included), ``Private_Anonymous`` (the private pages of its mappings
without a file, from ``/proc/PID/smaps``: what a process holds of its own) and its share of mapped files' resident pages (``Pss_File``: shared between
processes and dropped by the kernel under pressure), from ``/proc/PID/smaps_rollup`` (Linux). The shards are written
by a separate process, so that no record is in the memory the workers inherit. ``--map-dir`` gives
:class:`ShardDataset` a decoded-array folder (``map_dir``): the arrays are then mapped, not held. The last
line (``figure: "loader_memory_growth"``) is the growth of each kind of memory per added pair between the
smallest and the largest size, per worker. Memory flat with corpus size means
``private_anonymous_bytes_per_pair`` near 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


KEYS = ("Private_Dirty", "Anonymous", "Pss_File")


def _status(pid: int) -> dict[str, int]:
    """``Private_Dirty`` (pages this process alone maps and wrote, or that are dirty: its own arrays, a
    file it alone maps and just wrote; pages a forked worker shares with its parent are not in it),
    ``Anonymous`` (its heap and arrays, no file's pages) and ``Pss_File`` (its share of mapped files'
    resident pages) in bytes, from ``/proc/PID/smaps_rollup`` (Linux)."""
    out = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, val = line.partition(":")
        if key in KEYS:
            out[key] = int(val.split()[0]) * 1024
    # the private pages of mappings without a file (heap, arrays): what this process holds of its own
    anon, private = True, 0
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if len(head) >= 5 and "-" in head[0] and ":" in head[3]:  # a mapping's header: address perms offset dev inode
            anon = head[4] == "0"
        elif anon and head and head[0] in ("Private_Dirty:", "Private_Clean:"):
            private += int(head[1]) * 1024
    out["Private_Anonymous"] = private
    return out


def _write(folder: str, n: int, shard_size: int) -> None:
    from synprep.shards.synthetic import write_folder

    write_folder(Path(folder), {"train": n}, shard_size=shard_size, words=25)


def one_size(n: int, workers: int, shard_size: int, mapped: bool, max_tokens: int) -> dict:
    import multiprocessing as mp

    from torch.utils.data import DataLoader

    from synprep.train.data import BucketBatchSampler, Collater, ShardDataset, loader_worker_init

    with tempfile.TemporaryDirectory() as tmp:
        # written by another process, so that this one (and the workers it forks) holds no records
        proc = mp.get_context("spawn").Process(target=_write, args=(str(Path(tmp) / "shards"), n, shard_size))
        proc.start()
        proc.join()
        if proc.exitcode:
            raise SystemExit(f"writing {n} synthetic pairs failed (exit {proc.exitcode})")
        ds = ShardDataset(Path(tmp) / "shards", "train", map_dir=Path(tmp) / "map" if mapped else None)
        sampler = BucketBatchSampler(ds.src_lengths, ds.tgt_lengths, max_tokens, shuffle=True, seed=1)
        loader = DataLoader(ds, batch_sampler=sampler, collate_fn=Collater(), num_workers=workers,
                            persistent_workers=workers > 0, worker_init_fn=loader_worker_init if workers else None)
        seconds = []
        for epoch in (1, 2):  # the first decodes the shards (and, mapped, writes their arrays)
            sampler.set_epoch(epoch)
            t0 = time.perf_counter()
            batches = sum(1 for _ in loader)
            seconds.append(round(time.perf_counter() - t0, 2))
        pids = [w.pid for w in loader._iterator._workers] if workers else []  # type: ignore[attr-defined]

        def size(d: Path) -> int:
            return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())

        row = {"figure": "loader_memory", "pairs": n, "shards": -(-n // shard_size), "workers": workers,
               "mapped": mapped, "batches": batches, "epoch_s": seconds,
               "shards_bytes": size(Path(tmp) / "shards"), "arrays_bytes": size(Path(tmp) / "map") if mapped else 0,
               "main": _status(os.getpid()), "per_worker": [_status(p) for p in pids]}
        del loader
        return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, nargs="+", default=[20000, 80000])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-size", type=int, default=5000)
    ap.add_argument("--small-shards", action="store_true", help="100 pairs a shard (for --pairs of hundreds)")
    ap.add_argument("--max-tokens", type=int, default=16384)
    ap.add_argument("--map-dir", action="store_true", help="map decoded arrays (ShardDataset(map_dir=…))")
    args = ap.parse_args()
    if args.workers < 1:
        ap.error("--workers must be >= 1 (the workers' memory is what is measured)")
    shard_size = 100 if args.small_shards else args.shard_size
    rows = []
    for n in sorted(args.pairs):
        row = one_size(n, args.workers, shard_size, args.map_dir, args.max_tokens)
        print(json.dumps(row), flush=True)
        rows.append(row)
    a, b = rows[0], rows[-1]
    dn = b["pairs"] - a["pairs"]
    if dn > 0:
        def per_pair(key: str) -> float:
            grow = [wb[key] - wa[key] for wa, wb in zip(a["per_worker"], b["per_worker"], strict=True)]
            return round(sum(grow) / len(grow) / dn, 1)
        print(json.dumps({"figure": "loader_memory_growth", "mapped": args.map_dir, "from_pairs": a["pairs"],
                          "to_pairs": b["pairs"], "private_bytes_per_pair": per_pair("Private_Dirty"),
                          "anonymous_bytes_per_pair": per_pair("Anonymous"),
                          "private_anonymous_bytes_per_pair": per_pair("Private_Anonymous"),
                          "file_pss_bytes_per_pair": per_pair("Pss_File")}))


if __name__ == "__main__":
    main()
