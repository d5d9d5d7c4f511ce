"""synprep parse (stanza) against a plain stanza Pipeline: whole processes, CPU time, the same sentences.

    python benchmarks/bench_parse_peer.py [--sentences 600] [--repeat 3] [--small] [--write]

Data: the first N gold-tokenized sentences of ``../shared/data/ud/en_pud-ud-test.conllu`` (its
syntactic words, one sentence per line). synprep: ``synprep parse -l en --stanza-dir DIR --stanza-package
synprep --no-ssplit --no-cache`` on those words (Moses-escaped, as the command reads them). Peer: a plain
Python process that imports stanza, sets ``torch.set_num_threads(1)`` (synprep's models run with one
intra-op thread), builds ``stanza.Pipeline("en", processors="tokenize,pos,lemma,depparse,constituency",
tokenize_pretokenized=True, lemma_use_identity=True)`` with the same models, calls it once on all the word
lists and writes the document's CoNLL-U (``"{:C}".format(doc)``). Both with ``OMP_NUM_THREADS=1``.

CPU time = the child's user + system seconds (``os.wait4``: start-up, model loading and writing included);
peak RSS = its process tree's, sampled (``_provenance.run_once``, as every row beside a peer). The two commands run alternately ``--repeat`` times after one untimed warm-up
of each (a fresh checkout compiles numba's tree decoder into its cache on its first run); the best (least)
CPU time of each is kept. sentences/s and words/s are per CPU second.

Agreement: synprep's CoNLL-U writes ``_`` for LEMMA, XPOS, FEATS and MISC and adds its own comments
(``# line``, ``# ldd``), by design; stanza's writes them all. So the check compares, for every word, the
columns both write — ID, FORM, UPOS, HEAD, DEPREL — and each sentence's constituency tree
(``# constituency =``): ``identical`` is true when all of them are equal, and the counts of words and trees
that differ are reported.

``main`` returns the row (benchmarks/_provenance.py's keys: stage, machine, commit, date, versions, data,
result, note); ``--write`` stores it in ``benchmarks/results/parse-stanza-cpu.json``.
Target (not a test): synprep ≤ 0.80 × the plain Pipeline's CPU time.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import _provenance as prov
from _cli import arg_parser, emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.parse import read_conllu  # noqa: E402
from synprep.text.escape import escape  # noqa: E402

RESULT = ROOT / "benchmarks" / "results" / "parse-stanza-cpu.json"
TREEBANK = "en_pud-ud-test.conllu"
PROCESSORS = "tokenize,pos,lemma,depparse,constituency"
STAGE = "parse: stanza"
PEER = f"stanza.Pipeline('en', processors='{PROCESSORS}', tokenize_pretokenized=True) on all the sentences at once"

PLAIN = """
import json, sys, torch, stanza
torch.set_num_threads(1)
sdir, procs, words_path, out_path = sys.argv[1:5]
nlp = stanza.Pipeline("en", dir=sdir, package="synprep", processors=procs, tokenize_pretokenized=True,
                      lemma_use_identity=True, download_method=None, use_gpu=False, logging_level="WARN")
sents = [json.loads(line) for line in open(words_path, encoding="utf-8")]
with open(out_path, "w", encoding="utf-8") as out:
    out.write("{:C}".format(nlp(sents)) + "\\n")
"""


def columns(path: Path) -> tuple[list[tuple[str, ...]], list[str]]:
    """Per word ``(ID, FORM, UPOS, HEAD, DEPREL)`` and per sentence its ``# constituency`` tree, of a CoNLL-U file."""
    words: list[tuple[str, ...]] = []
    trees: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# constituency = "):
            trees.append(line.split(" = ", 1)[1])
        elif line and not line.startswith("#"):
            c = line.split("\t")
            words.append((c[0], c[1], c[3], c[6], c[7]))
    return words, trees


def agreement(ours: Path, plain: Path) -> dict:
    """Whether the two parses agree on every column both write (see the module docstring)."""
    w1, t1 = columns(ours)
    w2, t2 = columns(plain)
    words_differ = sum(a != b for a, b in zip(w1, w2, strict=False)) + abs(len(w1) - len(w2))
    trees_differ = sum(a != b for a, b in zip(t1, t2, strict=False)) + abs(len(t1) - len(t2))
    return {"identical": words_differ == 0 and trees_differ == 0, "compared": "ID FORM UPOS HEAD DEPREL, trees",
            "words_differ": words_differ, "trees_differ": trees_differ}


def measure(n: int, repeat: int, shared: Path) -> dict:
    """Run both commands alternately; the figures of :func:`main`'s result."""
    sents = [pl.words for pl in read_conllu(shared / "ud" / TREEBANK, words="syntactic")][:n]
    sdir = str(shared / "stanza_resources")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "in.tok").write_text("".join(" ".join(escape(w) for w in s) + "\n" for s in sents), encoding="utf-8")
        (t / "in.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sents), encoding="utf-8")
        ours = [sys.executable, "-m", "synprep", "parse", "-l", "en", "--stanza-dir", sdir, "--stanza-package",
                "synprep", "--no-ssplit", "--no-cache", "-i", str(t / "in.tok"), "-o", str(t / "ours.conllu")]
        plain = [sys.executable, "-c", PLAIN, sdir, PROCESSORS, str(t / "in.jsonl"), str(t / "plain.conllu")]
        for cmd in (ours, plain):  # warm-up: numba's cache, bytecode, the page cache
            prov.run_once(cmd, env=env, cwd=ROOT)
        cpu: dict[str, list[float]] = {"synprep": [], "plain": []}
        rss: dict[str, float] = {"synprep": 0.0, "plain": 0.0}
        for _ in range(repeat):
            for name, cmd in (("plain", plain), ("synprep", ours)):
                s, _, m = prov.run_once(cmd, env=env, cwd=ROOT)
                cpu[name].append(s)
                rss[name] = max(rss[name], m)
        agree = agreement(t / "ours.conllu", t / "plain.conllu")
    words = sum(map(len, sents))
    best = {k: min(v) for k, v in cpu.items()}
    out: dict = {"data": f"{TREEBANK}, first {len(sents)} sentences, gold words", "sentences": len(sents),
                 "words": words, "threads": 1, "processors": PROCESSORS}
    for name in ("synprep", "plain"):
        out |= {f"{name}_cpu_s": round(best[name], 2),
                f"{name}_sentences_per_s": round(len(sents) / best[name], 1),
                f"{name}_words_per_s": round(words / best[name]),
                f"{name}_peak_rss_mb": round(rss[name]),
                f"{name}_all_cpu_s": [round(x, 2) for x in cpu[name]]}
    out["synprep_over_plain_cpu"] = round(best["synprep"] / best["plain"], 3)
    return out | agree


def make_row(figures: dict, command: str) -> dict:
    """The benchmark row of :func:`measure`'s figures: synprep's sentences/s beside the plain Pipeline's, the CPU
    time ratio, and the provenance (benchmarks/_provenance.py)."""
    extra = {"cpu_time_ratio": figures["synprep_over_plain_cpu"],
             "synprep_cpu_s": figures["synprep_cpu_s"], "peer_cpu_s": figures["plain_cpu_s"],
             "synprep_words_per_s": figures["synprep_words_per_s"], "peer_words_per_s": figures["plain_words_per_s"],
             "synprep_peak_rss_mb": figures["synprep_peak_rss_mb"], "peer_peak_rss_mb": figures["plain_peak_rss_mb"],
             "words_differ": figures["words_differ"], "trees_differ": figures["trees_differ"]}
    main = {"unit": "sentences/s", "synprep": figures["synprep_sentences_per_s"],
            "peer": figures["plain_sentences_per_s"], "peer_name": PEER, "identical": figures["identical"]}
    data = f"English PUD gold words, first {figures['sentences']} sentences, {figures['words']} words"
    note = (f"CPU time of whole processes, best of {len(figures['synprep_all_cpu_s'])}, interleaved; one thread a side;"
            f" loaded; identical: the same {figures['compared']} (synprep writes _ for LEMMA, XPOS, FEATS, MISC)")
    result = prov.peer_result(**main, **extra)
    return prov.make_row(stage=STAGE, command=command, data=data, result=result,
                         versions=prov.versions("stanza", "torch"), note=note)


def main(argv: list[str] | None = None) -> dict:
    """Measure, print the figures, and return the row (written to benchmarks/results/ with ``--write``)."""
    ap = arg_parser(__doc__)
    ap.add_argument("--sentences", type=int, default=600)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--small", action="store_true", help="60 sentences, 1 round: a quick check that it runs")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--write", action="store_true", help=f"store the row in {RESULT.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    n, repeat = (60, 1) if args.small else (args.sentences, args.repeat)
    figures = measure(n, repeat, Path(args.shared))
    emit(figures)
    command = "python benchmarks/bench_parse_peer.py" + ("" if n == 600 else f" --sentences {n}") + (
        "" if repeat == 3 else f" --repeat {repeat}")
    row = make_row(figures, command)
    if args.write:
        RESULT.write_text(json.dumps(row, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return row


if __name__ == "__main__":
    main(sys.argv[1:])
