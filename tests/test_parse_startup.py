"""Start-up work ``synprep parse`` skips: the stanza trainers' optimizers (only training uses them), and nltk
wherever the parse is a dependency parse (the parse and its records need no tree object)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

pytestmark = pytest.mark.slow

PROBE = """
import json, sys
import stanza.models.common.utils as su
real = su.get_split_optimizer
from synprep.parse import ParserSpec, ParseRun, parse_lines
spec = ParserSpec(lang="de", dir=sys.argv[1], package="synprep")
out = list(parse_lines([["Das", "Haus", "ist", "alt", "."]], ParseRun(spec)))
from synprep.parse import run
parser = run.worker_parser(spec)
from collections import Counter
from synprep.annotate import build_records
from synprep.features.line import line_features
from synprep.parse.options import Item
from synprep.vocab import Vocab
feats = line_features(out[0], ["Das", "Haus", "ist", "alt", "."], 1)
src, tgt = ["das", "ha@@", "us", "ist", "alt", "."], ["the", "house", "is", "old", "."]  # a lowercased corpus
item = Item(1, ["Das", "Haus", "ist", "alt", "."], src, tgt)
recs, drops, _, _ = build_records([item], out, Vocab.from_counts(Counter(src + tgt)), ldd_threshold=0.01,
                                  lowercase=True, path="x")
print(json.dumps({
    "nltk": "nltk" in sys.modules,
    "sacremoses": "sacremoses" in sys.modules,
    "records": [len(recs), len(drops), len(recs[0].src_ids) if recs else None],
    "gaps": feats.gaps_cnf.tolist(),
    "dynamo": "torch._dynamo" in sys.modules,
    "restored": su.get_split_optimizer is real,
    "pos_optimizers": sorted(parser.nlp.processors["pos"].trainer.optimizers),
    "heads": out[0].sentences[0].heads,
}))
"""


def test_parsing_builds_no_optimizer_and_never_imports_dynamo_or_nltk(stanza_dir: Path):
    # stanza's POS/depparse Trainer.__init__ build torch optimizers even to predict; the first one imports
    # torch._dynamo (~1.4 s CPU per process, per worker). synprep's parser skips them while it loads.
    proc = subprocess.run([sys.executable, "-c", PROBE, str(stanza_dir)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["pos_optimizers"] == []
    assert got["dynamo"] is False
    assert got["restored"] is True  # a Pipeline built afterwards (or training) gets stanza's optimizers again
    assert len(got["heads"]) == 5 and got["heads"].count(0) == 1
    # a German dependency parse and its records (the gaps of the derived tree) never import nltk (0.2 s on
    # a warm disk, ~2 s per worker process on the H100 machine's: docs/parse.md)
    assert got["nltk"] is False
    # nor do they import the Moses tokenizer (sacremoses, with joblib: 0.2-0.3 s per process): the records
    # need only Moses' lowercasing (synprep.text.case)
    assert got["records"] == [1, 0, 6]
    assert got["sacremoses"] is False
    assert len(got["gaps"]) == 4 and min(got["gaps"]) >= 2  # word gaps d + 1, d >= 1
