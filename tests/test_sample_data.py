"""sample_data/: the project's own corpus is well-formed and cleaning drops exactly what its README says."""

from __future__ import annotations

import pytest
from helpers import SAMPLE_DATA

from synprep.text.clean import CleanStats, clean_pairs
from synprep.text.tokenize import tokenize_lines

SIZES = {"train": 300, "valid": 40, "test": 40}
#: sample_data/README.md, "What cleaning drops"
TRAIN_DROPS = [(38, "empty"), (82, "empty"), (141, "ratio"), (200, "ratio"), (231, "ratio"), (269, "too_long")]


def _read(split, lang):
    raw = (SAMPLE_DATA / f"{split}.{lang}").read_bytes()
    assert b"\r" not in raw and raw.endswith(b"\n")
    return raw.decode("utf-8").split("\n")[:-1]


@pytest.mark.parametrize("split", SIZES)
def test_files_and_drops(split):
    de, en = _read(split, "de"), _read(split, "en")
    assert len(de) == len(en) == SIZES[split]
    results = list(clean_pairs(zip(tokenize_lines(de, "de"), tokenize_lines(en, "en"), strict=True)))
    stats = CleanStats()
    for r in results:
        stats.add(r)
    dropped = [(r.line, r.reason) for r in results if not r.kept]
    assert dropped == (TRAIN_DROPS if split == "train" else [])
    assert stats.kept == SIZES[split] - len(dropped)


def test_text_is_varied_and_uses_every_moses_escape():
    lines = [x for s in SIZES for lang in ("de", "en") for x in _read(s, lang)]
    for ch in "&<>'\"[]|":
        assert sum(ch in x for x in lines) >= 2, ch
    assert sum(". " in x and x.rstrip().endswith((".", "?", "!", ")", '"')) for x in lines) >= 40  # two sentences
    srcs = [x for s in SIZES for x in _read(s, "en") if x]
    assert len(set(srcs)) == len(srcs)  # no repeated English sentence across the splits
