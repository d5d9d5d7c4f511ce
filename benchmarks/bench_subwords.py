"""Cost of aligning SentencePiece / HuggingFace pieces to the parser's words, against the parse.

Real input: the first N raw German lines of ``../shared/data/ted_toy/train.de`` (TED talks),
Moses-tokenized (the parser's words). A SentencePiece unigram model (``--vocab-size``, default
4000) and a byte-level BPE ``tokenizers`` model of the same size are learned here on the 1000
TED pairs (both sides). Measured per line, best of ``--repeat`` runs: the segmenter alone
(``encode``), segmenting plus alignment (``align_line``, what the pipeline's text stage runs),
and the stanza parse of the same words (``parse_block``, small offline models, one process,
one torch thread, no cache). Also: how often each alignment rule applied on both languages.

Prints one JSON object. Timings on a shared machine are noisy: run it twice.

    python benchmarks/bench_subwords.py [--lines 300] [--repeat 3]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.subword import load_scheme  # noqa: E402
from synprep.subword.offsets import AlignStats  # noqa: E402
from synprep.subword.spm import SpmScheme  # noqa: E402
from synprep.text.escape import unescape_tokens  # noqa: E402
from synprep.text.tokenize import tokenize_line  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
TED = SHARED / "ted_toy"


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def models(tmp: Path, vocab: int):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    files = [TED / "train.de", TED / "train.en"]
    SpmScheme.learn(files, tmp / "spm.model", vocab)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train([str(f) for f in files], trainers.BpeTrainer(vocab_size=vocab, show_progress=False,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.save(str(tmp / "tokenizer.json"))
    return {"spm": load_scheme("spm", tmp / "spm.model"), "hf": load_scheme("hf", tmp / "tokenizer.json")}


def main() -> None:
    ap = arg_parser(__doc__, whole=True)
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--vocab-size", type=int, default=4000)
    ap.add_argument("--stanza-dir", default=str(SHARED / "stanza_resources"))
    args = ap.parse_args()

    data = {}
    for lang in ("de", "en"):
        raw = (TED / f"train.{lang}").read_text("utf-8").splitlines()
        data[lang] = [(t, unescape_tokens(tokenize_line(t, lang).split())) for t in raw if t.strip()]
    de = data["de"][: args.lines]
    result: dict = {"lines": len(de), "source": "ted_toy/train.de", "vocab_size": args.vocab_size, "schemes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        schemes = models(Path(tmp), args.vocab_size)
        for name, scheme in schemes.items():
            enc = best(lambda s=scheme: [s.encode(t) for t, _ in de], args.repeat)
            ali = best(lambda s=scheme: [s.align_line(t, w) for t, w in de], args.repeat)
            rules = {}
            for lang, lines in data.items():
                total, n = AlignStats(), 0
                for t, w in lines:
                    a = scheme.align_line(t, w)
                    total += a.stats
                    n += len(a.pieces)
                rules[lang] = {"lines": len(lines), "stored_pieces": n, **total.as_dict(),
                               "share_of_lines_with_split": round(total.lines_with_split / len(lines), 4)}
            result["schemes"][name] = {"identity": scheme.identity(),
                                       "encode_us_per_line": round(enc / len(de) * 1e6, 1),
                                       "align_us_per_line": round(ali / len(de) * 1e6, 1),
                                       "alignment_only_us_per_line": round((ali - enc) / len(de) * 1e6, 1),
                                       "rules": rules}

    import torch

    from synprep.parse.base import ParserSpec
    from synprep.parse.options import Parallel, ParseRun
    from synprep.parse.run import parse_block

    torch.set_num_threads(1)
    spec = ParserSpec(name="stanza", lang="de", dir=args.stanza_dir, package="synprep")
    words = [w for _, w in de]
    parse_block(words[:8], ParseRun(spec, par=Parallel(jobs=1)))  # model load, not timed
    t0 = time.perf_counter()
    parse_block(words, ParseRun(spec, par=Parallel(jobs=1)))
    parse = time.perf_counter() - t0
    result["parse_ms_per_line"] = round(parse / len(de) * 1e3, 2)
    for s in result["schemes"].values():
        s["align_share_of_parse_percent"] = round(s["align_us_per_line"] / 1e3 / result["parse_ms_per_line"] * 100, 2)
    emit(result)


if __name__ == "__main__":
    main()
