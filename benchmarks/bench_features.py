"""Speed of the per-line syntax features against the parse they follow.

Real input: the first N lines of IWSLT14 ``fairseq_prepared/test.en`` (BPE'd TED talks), parsed
at the word level with the small offline stanza models (pos, depparse, constituency) from
``../shared/data/stanza_resources``, one torch thread. Then :func:`line_features` runs on every
line, with the parser's trees (constituency path) and without them (dependency-derived trees,
the German path). Also the SLR masks (numpy, torch CPU) at typical lengths.

Prints one JSON object. Timings on a shared machine are noisy: run it twice.

    python benchmarks/bench_features.py [--lines 200] [--repeat 5]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.align import bpe_words  # noqa: E402
from synprep.features import slr, slr_torch  # noqa: E402
from synprep.features.line import line_features  # noqa: E402
from synprep.text.escape import unescape  # noqa: E402
from synprep.types import ParsedLine, ParsedSentence  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"


def parse(lines: list[list[str]], stanza_dir: Path) -> tuple[list[ParsedLine], float]:
    import stanza
    import torch

    torch.set_num_threads(1)
    nlp = stanza.Pipeline("en", dir=str(stanza_dir), package="synprep",
                          processors="tokenize,pos,lemma,depparse,constituency", tokenize_pretokenized=True,
                          lemma_use_identity=True, download_method=None, use_gpu=False, logging_level="WARN")
    t0 = time.perf_counter()
    doc = nlp(lines)
    secs = time.perf_counter() - t0
    out = []
    for i, s in enumerate(doc.sentences):
        words = [w.text for w in s.words]
        out.append(ParsedLine(line=i + 1, sentences=[ParsedSentence(
            words=words, upos=[w.upos for w in s.words], heads=[w.head for w in s.words],
            deprels=[w.deprel for w in s.words], tree=str(s.constituency), tree_source="constituency")]))
    return out, secs


def rate(fn, n_items: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n_items / best


def main() -> None:
    ap = arg_parser(__doc__)
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--stanza-dir", type=Path, default=SHARED / "stanza_resources")
    args = ap.parse_args()

    bpe = (SHARED / "iwslt14_de-en" / "fairseq_prepared" / "test.en").read_text("utf-8").splitlines()[: args.lines]
    pieces = [line.split() for line in bpe]
    words = [[unescape(w) for w in bpe_words(p)[0]] for p in pieces]
    parsed, parse_secs = parse(words, args.stanza_dir)
    n = len(parsed)

    def run_const():
        for p, pl in zip(pieces, parsed, strict=True):
            line_features(pl, p, pl.line)

    dep_parsed = [ParsedLine(line=pl.line, sentences=[ParsedSentence(s.words, s.upos, s.heads, s.deprels)
                                                      for s in pl.sentences]) for pl in parsed]

    def run_dep():
        for p, pl in zip(pieces, dep_parsed, strict=True):
            line_features(pl, p, pl.line)

    const_rate = rate(run_const, n, args.repeat)
    dep_rate = rate(run_dep, n, args.repeat)
    parse_rate = n / parse_secs

    import torch

    torch.set_num_threads(1)
    masks = {}
    rng = np.random.default_rng(0)
    for t in (32, 64, 128):
        g = np.append(rng.integers(1, 12, size=t - 2), 2000).astype(np.float32)
        masks[f"numpy_soft_T{t}_per_s"] = round(rate(lambda g=g: slr.soft_slr_mask(g), 1, args.repeat * 4), 1)
        gb = torch.tensor(np.tile(g, (64, 1)))
        masks[f"torch_cpu_soft_B64_T{t}_batches_per_s"] = round(
            rate(lambda gb=gb: slr_torch.soft_slr_log_mask(gb), 1, args.repeat), 1)

    emit({
        "data": f"IWSLT14 test.en first {n} lines (BPE'd), stanza synprep/en pos+depparse+constituency",
        "mean_words_per_line": round(float(np.mean([len(w) for w in words])), 1),
        "mean_pieces_per_line": round(float(np.mean([len(p) for p in pieces])), 1),
        "parse_sentences_per_s": round(parse_rate, 1),
        "line_features_lines_per_s_constituency": round(const_rate, 1),
        "line_features_lines_per_s_dependency_trees": round(dep_rate, 1),
        "feature_time_fraction_of_parse_time": round(parse_rate / const_rate, 4),
        **masks,
        "note": "one core, best of --repeat runs; the machine is shared, timings are noisy",
    })


if __name__ == "__main__":
    main()
