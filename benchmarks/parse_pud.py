"""stanza's UAS/LAS on Parallel UD (PUD) with gold tokenization, and LDD-vs-tree agreement.

    python benchmarks/parse_pud.py [--langs en de] [--jobs 1] [--stanza-dir D] [--package P]

Parses the gold words of ``../shared/data/ud/{lang}_pud-ud-test.conllu`` (1000 sentences, one
gold sentence = one sentence, no splitting), scores with stanza's CoNLL 2018 scorer
(:mod:`synprep.parse.evaluate`) and prints one JSON object per language. It also reports how
often the most probable (head, relation) of the LDD equals the decoded tree's. The German model
saw German PUD in training: its PUD score is printed but flagged ``"meaningless": true``.
"""

from __future__ import annotations

import io
import logging
import sys
import time
from pathlib import Path

from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.parse import ParserSpec, parse_lines, read_conllu  # noqa: E402
from synprep.parse.evaluate import evaluate_conllu, write_like_gold  # noqa: E402
from synprep.parse.options import Parallel, ParseRun  # noqa: E402
from synprep.parse.stanza_parser import ldd_argmax, stanza_identity, stanza_short_identity  # noqa: E402


def main() -> None:
    ap = arg_parser(__doc__)
    ap.add_argument("--langs", nargs="+", default=["en", "de"])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--stanza-dir", default=None, help="default: SHARED/stanza_resources")
    ap.add_argument("--package", default="synprep")
    ap.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    args = ap.parse_args()
    logging.getLogger("stanza").setLevel(logging.WARNING)
    shared = Path(args.shared)
    stanza_dir = args.stanza_dir or str(shared / "stanza_resources")
    for lang in args.langs:
        gold = shared / "ud" / f"{lang}_pud-ud-test.conllu"
        gold_lines = list(read_conllu(gold, words="syntactic"))
        if args.limit:
            gold_lines = gold_lines[: args.limit]
            text = gold.read_text(encoding="utf-8").strip().split("\n\n")[: args.limit]
            gold = Path("/tmp") / f"pud_{lang}_{args.limit}.conllu"
            gold.write_text("\n\n".join(text) + "\n\n", encoding="utf-8")
        spec = ParserSpec(lang=lang, dir=stanza_dir, package=args.package, constituency=False)
        t0 = time.perf_counter()
        parsed = list(parse_lines([pl.words for pl in gold_lines], ParseRun(spec.with_config(ssplit=False), par=Parallel(jobs=args.jobs))))
        seconds = time.perf_counter() - t0
        agree_arc = agree_head = words = 0
        for pl in parsed:
            for s in pl.sentences:
                heads, rels = ldd_argmax(s.ldd, len(s.words))
                agree_head += sum(h == g for h, g in zip(heads, s.heads, strict=True))
                agree_arc += sum(h == g and r == d for h, r, g, d in zip(heads, rels, s.heads, s.deprels, strict=True))
                words += len(s.words)
        buf = io.StringIO()
        failed = write_like_gold(gold, parsed, buf)
        system = Path("/tmp") / f"pud_{lang}.system.conllu"
        system.write_text(buf.getvalue(), encoding="utf-8")
        scores = evaluate_conllu(system, gold)
        result = {
            "lang": lang,
            "parser": stanza_short_identity(stanza_identity(spec)),
            "sentences": len(gold_lines),
            "failed": failed,
            "words": int(scores["gold_words"]),
            "UAS": round(scores["UAS"], 2),
            "LAS": round(scores["LAS"], 2),
            "UPOS": round(scores["UPOS"], 2),
            "ldd_argmax_equals_tree": round(agree_arc / words, 4),
            "ldd_argmax_head_equals_tree": round(agree_head / words, 4),
            "seconds_incl_load": round(seconds, 1),
            "meaningless": lang == "de",
        }
        if lang == "de":
            result["note"] = "the synprep de model was trained on German PUD: this is not a held-out score"
        emit(result, indent=None)


if __name__ == "__main__":
    main()
