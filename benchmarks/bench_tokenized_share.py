"""How much of raw and of Moses-tokenized text is punctuation glued to a word, per corpus and language.

The share of whitespace-separated tokens ending in ``, . : ; ? !`` right after a letter
(:func:`synprep.text.tokenized.glued_share`), on every corpus of ``../shared/data`` in both forms:

* IWSLT14 de/en dev+test: the raw XML segments (the recipe's extraction) and fairseq's prepared
  tokenized ``tmp/test.L`` (the old tokenizer.perl, lowercased); the raw segments through sacremoses;
* TED toy train de/en: raw, and through sacremoses;
* Multi30k train de/en: raw captions, and through sacremoses;
* UD treebanks (en EWT, de GSD, en/de PUD, fr Sequoia): the ``# text`` lines (raw) and the gold tokens
  (a treebank's tokenization, multiword tokens as written).

The largest tokenized share and the smallest raw one bound :data:`synprep.text.tokenized.GLUED_SHARE_LIMIT`.

    python benchmarks/bench_tokenized_share.py [--data ../shared/data] [--out benchmarks/results/tokenized-share-cpu.json]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import _provenance as prov
from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.recipes.iwslt14 import PAIR, TEST_SETS, extract_segments  # noqa: E402
from synprep.text.tokenize import tokenize_stream  # noqa: E402
from synprep.text.tokenized import GLUED_SHARE_LIMIT, glued_share  # noqa: E402
from synprep.textio import iter_lines  # noqa: E402

UD = {"en_ewt": ("en", ["en_ewt-ud-dev", "en_ewt-ud-test"]), "de_gsd": ("de", ["de_gsd-ud-dev", "de_gsd-ud-test"]),
      "en_pud": ("en", ["en_pud-ud-test"]), "de_pud": ("de", ["de_pud-ud-test"]),
      "fr_sequoia": ("fr", ["fr_sequoia-ud-test"])}


def ud_sides(path: Path) -> tuple[list[str], list[str]]:
    """The ``# text`` lines and the gold token lines (a multiword token as written, not its parts)."""
    raw, tok, cur, skip_to = [], [], [], 0
    for line in iter_lines(path):
        if line.startswith("# text = "):
            raw.append(line[len("# text = "):])
        elif not line.strip():
            if cur:
                tok.append(" ".join(cur))
            cur, skip_to = [], 0
        elif not line.startswith("#"):
            cols = line.split("\t")
            if "-" in cols[0]:
                cur.append(cols[1])
                skip_to = int(cols[0].split("-")[1])
            elif "." not in cols[0] and int(cols[0]) > skip_to:
                cur.append(cols[1])
    if cur:
        tok.append(" ".join(cur))
    return raw, tok


def corpora(data: Path) -> Iterator[tuple[str, str, str, list[str]]]:
    """``(corpus, language, form, lines)``, form ``raw``, ``moses`` (sacremoses on the raw lines) or
    ``tokenized`` (the corpus's own tokenized release)."""
    iwslt = data / "iwslt14_de-en"
    for lang in ("de", "en"):
        raw = [s for ts in TEST_SETS for s in extract_segments(iter_lines(iwslt / "orig" / f"{ts}.{PAIR}.{lang}.xml"))]
        yield "iwslt14 dev+test", lang, "raw", raw
        yield "iwslt14 dev+test", lang, "tokenized", list(iter_lines(iwslt / "fairseq_prepared" / "tmp" / f"test.{lang}"))
        yield "iwslt14 dev+test", lang, "moses", list(tokenize_stream(raw, lang))
        ted = list(iter_lines(data / "ted_toy" / f"train.{lang}"))
        yield "ted_toy train", lang, "raw", ted
        yield "ted_toy train", lang, "moses", list(tokenize_stream(ted, lang))
        m30k = list(iter_lines(data / "multi30k" / f"train.{lang}.gz"))
        yield "multi30k train", lang, "raw", m30k
        yield "multi30k train", lang, "moses", list(tokenize_stream(m30k, lang))
    for name, (lang, files) in UD.items():
        raw, tok = [], []
        for f in files:
            r, t = ud_sides(data / "ud" / f"{f}.conllu")
            raw += r
            tok += t
        yield f"ud {name}", lang, "raw", raw
        yield f"ud {name}", lang, "tokenized", tok


def main() -> None:
    ap = arg_parser(__doc__)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "tokenized-share-cpu.json")
    args = ap.parse_args()
    result: dict = {"figure": "glued punctuation share",
                    "data": "share (%) of whitespace tokens ending in , . : ; ? ! after a letter; raw text, its "
                            "sacremoses tokenization (moses), a corpus's own tokenized release (tokenized)"}
    shares: dict[str, list[float]] = {"raw": [], "tokenized": []}
    for corpus, lang, form, lines in corpora(args.data):
        c = glued_share(lines)
        pct = round(100 * c.share, 2)
        result[f"{corpus.replace(' ', '_').replace('+', '_')}_{lang}_{form}_pct"] = pct
        shares["raw" if form == "raw" else "tokenized"].append(pct)
    result.update(tokenized_max_pct=max(shares["tokenized"]), raw_min_pct=min(shares["raw"]),
                  limit_pct=round(100 * GLUED_SHARE_LIMIT, 2))
    record = prov.make_row(stage="text: tokenized-ness (glued punctuation)", command="python benchmarks/bench_tokenized_share.py",
                           data=result["data"], result=result, versions=prov.versions("sacremoses"),
                           note="shares of tokens, not timings")
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    emit(result, indent=None)


if __name__ == "__main__":
    main()
