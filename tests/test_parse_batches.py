"""Parse batches are cut by characters as well as by sentences (synprep/parse/run.py ``cut_batches``).

Lines of long words (base64, minified code) are within ``max_words`` and ``max_word_chars``, yet 64 such
sentences in one batch held 16,000 words of 999 characters: stanza's character models then took gigabytes.
Real text never reaches the budgets, so its batches (and its bytes) are what they were; the memory test
runs the real stanza models in a child process on long-word lines, with the budgets scaled down so that it
runs in seconds (benchmarks/hostile_rss.py measures the defaults).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from synprep.parallel import chunked
from synprep.parse.ssplit import split_sentences


def words(n: int, length: int, tag: str = "x") -> tuple[str, ...]:
    return tuple(f"{tag}{i % 10}".ljust(length, "a") for i in range(n))


def test_a_batch_ends_before_a_budget_and_an_over_budget_sentence_goes_alone():
    from synprep.parse.run import cut_batches

    long = words(10, 100)  # 1,000 characters, 1,000 padded
    assert [len(b) for b in cut_batches([long] * 7, 64, max_chars=3000, max_padded=10**9)] == [3, 3, 1]
    assert [len(b) for b in cut_batches([long] * 7, 2, max_chars=3000, max_padded=10**9)] == [2, 2, 2, 1]
    huge = words(10, 1000)  # 10,000 characters: over the budget on its own
    assert cut_batches([long, huge, long, long], 64, max_chars=3000, max_padded=10**9) == [[long], [huge], [long, long]]
    # padded: 20 short words and one of 100 characters hold 21 × 100 padded characters
    short = (*words(20, 3), "y" * 100)
    assert [len(b) for b in cut_batches([short] * 5, 64, max_chars=10**9, max_padded=4200)] == [2, 2, 1]
    assert cut_batches([], 64) == []


def _sentences(path: Path) -> list[tuple[str, ...]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[:2048]:  # one block of parse_lines
        ws = line.split()[:250]
        out += [tuple(ws[a:b]) for a, b in split_sentences(ws, enabled=True)]
    return list(dict.fromkeys(out))


@pytest.mark.parametrize("name", ["iwslt14_de-en/fairseq_prepared/test.de", "iwslt14_de-en/fairseq_prepared/test.en",
                                  "iwslt14_de-en/fairseq_prepared/tmp/IWSLT14.TEDX.dev2012.de-en.de"])
def test_real_text_is_cut_every_batch_size_sentences_as_before(shared_data, name):
    """The budgets are far above real text: the batches (so the parses, the cache keys, the shards) are
    the ones every ``batch_size`` sentences gave before the budgets existed."""
    from synprep.parse.run import BATCH_CHARS, BATCH_PADDED_CHARS, cut_batches

    sentences = _sentences(shared_data / name)
    for size in (8, 64):
        assert cut_batches(sentences, size) == list(chunked(sentences, size))
    assert max(sum(map(len, s)) for s in sentences) * 64 < BATCH_CHARS * 4  # a bound that holds by far
    assert BATCH_PADDED_CHARS >= 250 * 1000  # a sentence at the default bounds fits in one batch


#: a child that loads the German stanza models, parses a short line, then the long-word lines with the
#: budgets divided by 25; it prints the growth of its peak RSS (MB) and the lines' errors
CHILD = """
import json, random, resource, string, sys
import synprep.parse.run as run
from synprep.parse.base import ParserSpec

kind, stanza_dir = sys.argv[1], sys.argv[2]
spec = ParserSpec(name="stanza", lang="de", dir=stanza_dir, package="synprep")
list(run.parse_lines([["Das", "ist", "gut", "."]], run.ParseRun(spec)))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
run.BATCH_CHARS, run.BATCH_PADDED_CHARS = 10_000, 40_000
rng = random.Random(0)
alphabet = string.ascii_letters + string.digits
word = lambda k: "".join(rng.choices(alphabet, k=k))
if kind == "long words":  # 8 lines of 50 words of 200 characters: 80,000 characters
    lines = [[word(200) for _ in range(50)] for _ in range(8)]
else:  # 16 lines of 40 short words and one of 999 characters: 655,000 padded characters
    lines = [[f"w{j % 10}" for j in range(20)] + [word(999)] + [f"w{j % 10}" for j in range(20)] for _ in range(16)]
out = list(run.parse_lines(lines, run.ParseRun(spec)))
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024
print(json.dumps([grown, [p.error for p in out]]))
"""

#: peak RSS growth (MB) allowed over a parse of a short line. Measured (2-core machine) with all lines in one
#: batch: 246 (long words), 300 (one long word a line); cut by the scaled budgets: 40 and 37.
BOUND_MB = 100


@pytest.mark.parametrize("kind", ["long words", "one long word a line"])
def test_long_word_lines_parse_within_a_memory_bound(stanza_dir, kind):
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, str(stanza_dir)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    grown, errors = json.loads(proc.stdout.strip().splitlines()[-1])
    assert errors == [None] * len(errors)  # every line parsed
    assert grown < BOUND_MB, f"peak RSS grew by {grown} MB"
