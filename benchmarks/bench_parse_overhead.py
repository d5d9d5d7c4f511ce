"""What synprep's parser layer costs over the plain library, one process, models loaded, no cache.

    python benchmarks/bench_parse_overhead.py spacy [--model fr_core_news_sm --lang fr] [--sentences 456]
    python benchmarks/bench_parse_overhead.py stanza [--lang de] [--sentences 500] [--profile]
    python benchmarks/bench_parse_overhead.py stanza-cli [--lang de] [--sentences 2000] [--baseline DIR]

spacy: the gold words of ``../shared/data/ud/{lang}_*-ud-test.conllu`` (fr: Sequoia, ja: GSD). Plain:
``nlp.pipe`` over ``Doc(nlp.vocab, words=...)`` in batches of ``--batch-size`` with the same loaded
pipeline and components; synprep: :func:`synprep.parse.parse_lines` (``--parser spacy``, ``ssplit=False``,
jobs 1). Target: synprep ≥ 0.9 × plain sentences/s.

stanza: the first N sentences of IWSLT14 ``tmp/test.{lang}`` (Moses-tokenized, unescaped, split as
``synprep parse`` splits). Plain: ``stanza.Pipeline(lang, processors="tokenize,pos,lemma,depparse[,constituency]",
tokenize_pretokenized=True, lemma_use_identity=True)`` called on the word lists in docs of
``--batch-size`` sentences; synprep: :func:`~synprep.parse.parse_lines` with the same processors (its
depparse pass also computes the LDD). Target: synprep ≤ 1.1 × plain CPU time. ``--profile`` prints the
top functions of synprep's run (cProfile, cumulative).

stanza-cli: whole commands, start-up included (what a user waits for): ``synprep parse -l LANG --no-ssplit
--no-cache`` on the first N sentences (one per line, Moses-escaped) against a plain Python process that
imports stanza, builds the same Pipeline and writes each doc's CoNLL-U; both with one torch thread.
CPU time = the child's user + system time (``os.wait4``). Target: synprep ≤ 0.85 × plain.
``--baseline DIR`` also runs ``synprep parse`` of another checkout (``git worktree``/``git archive`` of an older
commit) in the same rounds, for a before/after on the same machine load. Each checkout first parses 20 lines
untimed (a fresh checkout compiles numba's tree decoder into its cache on its first run).

Both sides run alternately ``--repeat`` times after a warm-up; the minimum CPU time (``time.process_time``)
of each is kept. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import logging
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from synprep.parallel import chunked, limit_threads  # noqa: E402
from synprep.parse import ParserSpec, parse_lines, read_conllu  # noqa: E402
from synprep.parse import run as parse_run  # noqa: E402
from synprep.parse.options import ParseRun  # noqa: E402
from synprep.parse.ssplit import split_sentences  # noqa: E402
from synprep.text.escape import unescape_tokens  # noqa: E402

UD = {"fr": "fr_sequoia-ud-test.conllu", "ja": "ja_gsd-ud-test.conllu", "en": "en_ewt-ud-test.conllu"}


def iwslt_sentences(shared: Path, lang: str, n: int) -> list[list[str]]:
    """The first ``n`` sentences of IWSLT14 ``tmp/test.{lang}`` (unescaped, split as ``synprep parse`` splits)."""
    sents: list[list[str]] = []
    with open(shared / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / f"test.{lang}", encoding="utf-8") as f:
        for line in f:
            w = unescape_tokens(line.split())
            sents += [w[a:b] for a, b in split_sentences(w)]
            if len(sents) >= n:
                break
    return sents[:n]


def timed(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("backend", choices=["spacy", "stanza", "stanza-cli"])
    ap.add_argument("--lang", default=None)
    ap.add_argument("--model", default="fr_core_news_sm")
    ap.add_argument("--sentences", type=int, default=500)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--constituency", action="store_true", help="stanza: also the constituency model (en)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--baseline", default=None, metavar="DIR",
                    help="stanza-cli: another synprep checkout (e.g. the commit before a change), run alternately too")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    args = ap.parse_args()
    logging.getLogger("stanza").setLevel(logging.WARNING)
    limit_threads(1)
    shared = Path(args.shared)
    bs = args.batch_size
    if args.baseline and (args.backend != "stanza-cli" or not (Path(args.baseline) / "synprep").is_dir()):
        ap.error("--baseline DIR: only with stanza-cli, and DIR must be a synprep checkout")
    if args.backend == "stanza-cli":
        cli_overhead(args, shared)
        return
    if args.backend == "spacy":
        lang = args.lang or "fr"
        sents = [pl.words for pl in read_conllu(shared / "ud" / UD[lang], words="syntactic")][: args.sentences]
        spec = ParserSpec(name="spacy", lang=lang, spacy_model=args.model)
        parser = parse_run.worker_parser(spec)  # the global parse_lines (jobs 1) uses: loaded once
        nlp = parser.nlp
        from spacy.tokens import Doc

        def plain() -> None:
            for batch in chunked(sents, bs):
                list(nlp.pipe([Doc(nlp.vocab, words=w) for w in batch], batch_size=bs))

    else:
        import stanza

        lang = args.lang or "de"
        sents = iwslt_sentences(shared, lang, args.sentences)
        spec = ParserSpec(lang=lang, dir=str(shared / "stanza_resources"), package="synprep",
                          constituency=args.constituency)
        parser = parse_run.worker_parser(spec)
        procs = ",".join(parser.resources.processors)
        nlp = stanza.Pipeline(lang, dir=str(shared / "stanza_resources"), package="synprep", processors=procs,
                              tokenize_pretokenized=True, lemma_use_identity=True, download_method=None,
                              use_gpu=False, logging_level="WARN")

        def plain() -> None:
            for batch in chunked(sents, bs):
                nlp(batch)

    def ours() -> None:
        list(parse_lines(sents, ParseRun(spec.with_config(ssplit=False, batch_size=bs))))

    plain(), ours()  # warm-up
    t_plain, t_ours = [], []
    for _ in range(args.repeat):
        t_plain.append(timed(plain))
        t_ours.append(timed(ours))
    result = {
        "backend": args.backend, "lang": lang, "model": args.model if args.backend == "spacy" else procs,
        "sentences": len(sents), "words": sum(map(len, sents)), "batch_size": bs,
        "plain_cpu_s": round(min(t_plain), 3), "synprep_cpu_s": round(min(t_ours), 3),
        "plain_sentences_per_cpu_s": round(len(sents) / min(t_plain), 1),
        "synprep_sentences_per_cpu_s": round(len(sents) / min(t_ours), 1),
        "synprep_over_plain_time": round(min(t_ours) / min(t_plain), 3),
        "all_plain": [round(t, 3) for t in t_plain], "all_synprep": [round(t, 3) for t in t_ours],
    }  # fmt: skip
    print(json.dumps(result), flush=True)
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(ours)
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)


PLAIN = """
import sys, torch, stanza
torch.set_num_threads(1)
lang, sdir, procs, path, bs = sys.argv[1:6]
nlp = stanza.Pipeline(lang, dir=sdir, package="synprep", processors=procs, tokenize_pretokenized=True,
                      lemma_use_identity=True, download_method=None, use_gpu=False, logging_level="WARN")
sents = [line.split() for line in open(path, encoding="utf-8")]
with open("/dev/null", "w") as out:
    for i in range(0, len(sents), int(bs)):
        out.write("{:C}".format(nlp(sents[i:i + int(bs)])) + "\\n")
"""


def child_cpu(cmd: list[str], stdin_path: str | None = None, root: Path = ROOT) -> float:
    """Run ``cmd`` (one torch thread) with the synprep checkout ``root``; its user + system CPU seconds (os.wait4)."""
    import os
    import subprocess

    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(root)}
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=root)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} exited {proc.returncode}: {err.decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def cli_overhead(args, shared: Path) -> None:
    """``stanza-cli``: whole ``synprep parse`` vs a plain stanza process, start-up included."""
    import tempfile

    from synprep.parse.stanza_parser import resolve_resources
    from synprep.text.escape import escape

    lang = args.lang or "de"
    sents = iwslt_sentences(shared, lang, args.sentences)
    sdir = str(shared / "stanza_resources")
    spec = ParserSpec(lang=lang, dir=sdir, package="synprep", constituency=args.constituency)
    procs = ",".join(resolve_resources(spec).processors)
    with tempfile.TemporaryDirectory() as tmp:
        moses, words = Path(tmp) / "in.tok", Path(tmp) / "in.words"
        moses.write_text("".join(" ".join(escape(t) for t in w) + "\n" for w in sents), encoding="utf-8")
        words.write_text("".join(" ".join(w) + "\n" for w in sents), encoding="utf-8")
        ours = [sys.executable, "-m", "synprep", "parse", "-l", lang, "--stanza-dir", sdir, "--stanza-package",
                "synprep", "--no-ssplit", "--no-cache", "--batch-size", str(args.batch_size)]
        plain = [sys.executable, "-c", PLAIN, lang, sdir, procs, str(words), str(args.batch_size)]
        # warm-up, not timed: each checkout's first run fills numba's cache of the compiled tree decoder (a
        # fresh checkout compiles it, ~10 s) and the bytecode caches
        warm = Path(tmp) / "warm.tok"
        warm.write_text("".join(moses.read_text(encoding="utf-8").splitlines(keepends=True)[:20]), encoding="utf-8")
        for root in [ROOT] + ([Path(args.baseline).resolve()] if args.baseline else []):
            child_cpu(ours, str(warm), root=root)
        t_plain, t_ours, t_base = [], [], []
        for _ in range(args.repeat):
            t_plain.append(child_cpu(plain))
            t_ours.append(child_cpu(ours, str(moses)))
            if args.baseline:
                t_base.append(child_cpu(ours, str(moses), root=Path(args.baseline).resolve()))
    result = {
        "backend": "stanza-cli", "lang": lang, "processors": procs, "sentences": len(sents),
        "words": sum(map(len, sents)), "batch_size": args.batch_size,
        "plain_cpu_s": round(min(t_plain), 2), "synprep_parse_cpu_s": round(min(t_ours), 2),
        "synprep_over_plain_time": round(min(t_ours) / min(t_plain), 3),
        "all_plain": [round(t, 2) for t in t_plain], "all_synprep": [round(t, 2) for t in t_ours],
    }  # fmt: skip
    if t_base:
        result |= {"baseline": str(args.baseline), "baseline_cpu_s": round(min(t_base), 2),
                   "baseline_over_plain_time": round(min(t_base) / min(t_plain), 3),
                   "all_baseline": [round(t, 2) for t in t_base]}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
