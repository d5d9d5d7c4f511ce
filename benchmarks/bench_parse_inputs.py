"""The host-side Python of a stanza parse's forward stage: the models' inputs, stanza's way and synprep's.

    python benchmarks/bench_parse_inputs.py [--lang de] [--sentences 2000] [--repeat 3]
    python benchmarks/bench_parse_inputs.py --parse [--lang de] [--sentences 2000]

The first N sentences of IWSLT14 ``tmp/test.{lang}`` (split as ``synprep parse`` splits), in work items of
``--batch-size`` (64) sentences, as ``synprep parse`` hands them to the parser. No model runs: the POS tags
are computed once beforehand and fed to both sides.

* ``stanza``: what ``StanzaParser._forward_doc`` does besides the forward calls — the Document from the
  words (tokenize processor), the POS ``Dataset`` and its loader's batches, the tags set on the document
  (``doc.set``), the identity lemmatizer, the depparse ``DataLoader`` and its batches.
* ``synprep``: ``InputBuilder.table`` (the per-word cache), ``pos_batches``, ``dp_tags`` (each column's
  POS ids to labels and depparse ids) and ``dp_batches``. ``cold``: a fresh builder each round (every
  word is new to the cache, as at a process's start); ``warm``: a builder that has already seen the
  other half of the corpus (steady state of a long run: the items measured are not the ones it saw).

Both run alternately ``--repeat`` times; the minimum CPU time (``time.process_time``) of each is kept.

``--parse``: the whole ``StanzaParser.parse`` (models, decode, LDD) of every work item on the Document path
(``parser.inputs = None``, what the parser ran before) and on the word path, the two alternating per item
(which goes first alternates too), CPU times summed per path: a before/after that a loaded machine's drift
hits equally (the same models, one process).

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_parse_overhead import iwslt_sentences  # noqa: E402

from synprep.parallel import limit_threads  # noqa: E402
from synprep.parse import ParserSpec  # noqa: E402
from synprep.parse.stanza_inputs import InputBuilder  # noqa: E402
from synprep.parse.stanza_parser import StanzaParser  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lang", default="de")
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parse", action="store_true", help="whole parses, Document path vs word path, per item")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared" / "data"))
    args = ap.parse_args()
    if args.parse and args.repeat != ap.get_default("repeat"):
        ap.error("--repeat has no effect with --parse (each item is parsed once per path)")
    logging.getLogger("stanza").setLevel(logging.WARNING)
    limit_threads(1)
    import numpy as np
    from stanza.models.common import doc as sdoc
    from stanza.models.depparse.data import DataLoader
    from stanza.models.pos.data import Dataset
    from stanza.pipeline.depparse_processor import DEFAULT_SEPARATE_BATCH

    shared = Path(args.shared)
    sents = iwslt_sentences(shared, args.lang, 2 * args.sentences)
    other, sents = sents[args.sentences:], sents[: args.sentences]
    items = [sents[i:i + args.batch_size] for i in range(0, len(sents), args.batch_size)]
    parser = StanzaParser(ParserSpec(lang=args.lang, dir=str(shared / "stanza_resources"), package="synprep"))
    pos, dp = parser.nlp.processors["pos"], parser.depparse
    if args.parse:
        parse_paths(parser, items, args)
        return
    # the tags once (stanza's POS processor): per item, the words' [upos, xpos, feats] and their POS ids
    tags, ids = [], []
    for item in items:
        d = parser.nlp(item, processors="tokenize,pos")
        t = [[w.upos, w.xpos or "_", w.feats or "_"] for s in d.sentences for w in s.words]
        tags.append(t)
        ids.append({c: np.array([pos.vocab[c].unit2id(x[k]) for x in t]) for k, c in enumerate(("upos", "xpos", "feats"))})

    def stanza_way() -> None:
        cfg, dcfg = pos.config, dp.config
        for item, t in zip(items, tags, strict=True):
            doc = parser.nlp(item, processors="tokenize")
            ds = Dataset(doc, cfg, pos.pretrain, vocab=pos.vocab, evaluation=True, sort_during_eval=True)
            for _ in ds.to_length_limited_loader(batch_size=cfg["batch_size"],
                                                 maximum_tokens=cfg.get("batch_maximum_tokens", 5000)):
                pass
            doc.set([sdoc.UPOS, sdoc.XPOS, sdoc.FEATS], t)
            doc = parser.nlp(doc, processors="lemma")
            for _ in DataLoader(doc, dcfg["batch_size"], dcfg, dp.pretrain, vocab=dp.vocab, evaluation=True,
                                sort_during_eval=dcfg.get("sort_during_eval", True),
                                min_length_to_batch_separately=dcfg.get("min_length_to_batch_separately",
                                                                        DEFAULT_SEPARATE_BATCH)):
                pass

    def synprep_way(builder: InputBuilder) -> None:
        for item, i in zip(items, ids, strict=True):
            t = builder.table(item)
            for _ in builder.pos_batches(t):
                pass
            dep = {c: builder.dp_tags(c, v)[1] for c, v in i.items()}
            _, batches = builder.dp_batches(t, dep["upos"], dep["xpos"], dep["feats"])
            for _ in batches:
                pass

    warm = InputBuilder(pos, dp)
    warm.table(other)
    times: dict[str, list[float]] = {"stanza": [], "synprep_cold": [], "synprep_warm": []}
    stanza_way()  # warm-up (imports, first allocations)
    for _ in range(args.repeat):
        for name, fn in (("stanza", stanza_way), ("synprep_cold", lambda: synprep_way(InputBuilder(pos, dp))),
                         ("synprep_warm", lambda: synprep_way(warm))):
            t0 = time.process_time()
            fn()
            times[name].append(time.process_time() - t0)
    best = {k: min(v) for k, v in times.items()}
    print(json.dumps({
        "lang": args.lang, "sentences": len(sents), "words": sum(map(len, sents)), "items": len(items),
        "stanza_cpu_s": round(best["stanza"], 3), "synprep_cold_cpu_s": round(best["synprep_cold"], 3),
        "synprep_warm_cpu_s": round(best["synprep_warm"], 3),
        "stanza_over_synprep_warm": round(best["stanza"] / best["synprep_warm"], 1),
        "all": {k: [round(x, 3) for x in v] for k, v in times.items()},
    }), flush=True)


def parse_paths(parser: StanzaParser, items: list, args) -> None:
    """``--parse``: each item parsed on the Document path and on the word path, alternately; CPU s summed."""
    builder = parser.inputs
    parser.parse(items[0])  # warm-up
    total = {"document_path": 0.0, "word_path": 0.0}
    for k, item in enumerate(items):
        for name in (("document_path", "word_path") if k % 2 else ("word_path", "document_path")):
            parser.inputs = builder if name == "word_path" else None
            t0 = time.process_time()
            parser.parse(item)
            total[name] += time.process_time() - t0
    parser.inputs = builder
    print(json.dumps({
        "lang": args.lang, "sentences": sum(map(len, items)), "words": sum(len(s) for i in items for s in i),
        "items": len(items), "document_path_cpu_s": round(total["document_path"], 2),
        "word_path_cpu_s": round(total["word_path"], 2),
        "word_over_document": round(total["word_path"] / total["document_path"], 3),
    }), flush=True)


if __name__ == "__main__":
    main()
