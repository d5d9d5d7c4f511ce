"""A part's walk over its split: what reading the whole split costs a ``--part I/N`` run that makes 1/N of its shards.

    python benchmarks/bench_part_walk.py [--repeat 20] [--parts 8]

The items of IWSLT14's prepared test split (fairseq's BPE'd ``test.de``/``test.en``, 6,750 pairs, read ``--repeat``
times in memory), built as ``annotate`` builds them (:func:`synprep.annotate.items_from_files`, cut into shards of
10,000 pairs) for every pair, then as part 1 of ``--parts`` builds them (the other parts' pairs placeholders:
nothing split, unescaped or parsed).
Prints µs a line for both (best of 3) as JSON.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.annotate import items_from_files  # noqa: E402
from synprep.parallel import chunked  # noqa: E402
from synprep.pipeline.parts import Part, skip_others  # noqa: E402

SHARD = 10_000


def walk(src: list[str], tgt: list[str], words: list[str], skip) -> float:
    """Seconds to build and cut the items of ``src``/``tgt``, the parser's words given as the lines of the
    pipeline's words file (``words``: Moses-escaped tokens, split and unescaped for the items built)."""
    t0 = time.perf_counter()
    for _ in chunked(items_from_files(iter(src), iter(tgt), iter(range(1, len(src) + 1)), words=iter(words),
                                      skip=skip), SHARD):
        pass
    return time.perf_counter() - t0


def main() -> None:
    ap = arg_parser(__doc__, whole=True)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--parts", type=int, default=8)
    opts = ap.parse_args()
    shared = Path(os.environ.get("SYNPREP_SHARED", ROOT.parent / "shared")) / "data"
    prepared = shared / "iwslt14_de-en" / "fairseq_prepared"
    src = (prepared / "test.de").read_text(encoding="utf-8").splitlines() * opts.repeat
    tgt = (prepared / "test.en").read_text(encoding="utf-8").splitlines() * opts.repeat
    words = [s.replace("@@ ", "") for s in src]
    every = min(walk(src, tgt, words, None) for _ in range(3))
    part = min(walk(src, tgt, words, skip_others(Part(1, opts.parts), SHARD)) for _ in range(3))
    emit({"figure": "part walk", "data": f"IWSLT14 test BPE'd, {len(src)} pairs, shards of {SHARD}",
          "all_items_us_per_line": round(every / len(src) * 1e6, 2),
          f"part_1_of_{opts.parts}_us_per_line": round(part / len(src) * 1e6, 2)})


if __name__ == "__main__":
    main()
