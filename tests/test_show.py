"""``synprep show``: one stored pair as text and as a PNG (tests/iwslt_sample.py: real IWSLT14 + stanza)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli

from synprep.errors import InputError
from synprep.features.slr import hard_slr_mask, soft_slr_mask
from synprep.show import PairView, load_pair, pair_figure, pair_matrices, pair_text
from synprep.types import PairRecord
from tests.iwslt_sample import Sample, iwslt_sample

pytestmark = pytest.mark.slow

# line 4 of IWSLT14 test: two sentences, a Moses escape
LINE4_SRC = "we &apos;re all born . we all bring our children into the world ."
LINE4_TGT = "wir werden alle geboren . wir bringen kinder zur welt ."


@pytest.fixture(scope="module")
def sample(tmp_path_factory, shared_data: Path, stanza_dir: Path) -> Sample:
    return iwslt_sample(tmp_path_factory, shared_data, stanza_dir)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_text_of_a_known_pair(sample: Sample, tmp_path: Path) -> None:
    png = tmp_path / "line4.png"
    proc = run_cli("show", str(sample.shards), "--line", "4", "--png", str(png))
    out = proc.stdout
    lines = out.splitlines()
    assert lines[0] == "train pair 3 (line 4) — shards/train.00000.h5"
    assert "source: 14 bpe pieces, 14 words, 2 sentences" in out
    assert "  " + LINE4_SRC in lines and "  " + LINE4_TGT in lines
    assert "sentences start at words: 1 6" in out
    # the piece table: piece 4 ('.') ends sentence 1: gap 999 in both conventions
    row = next(x for x in lines if x.split()[:3] == ["4", ".", "5"])
    assert row.split()[3:5] == ["999", "999"]
    assert next(x for x in lines if x.split()[:2] == ["13", "."]).split()[3:5] == ["-", "-"]
    # the word table shows the parser's words (escapes undone) with 1-based line-level heads
    word2 = next(x for x in lines if x.split()[:2] == ["2", "'re"]).split()
    assert word2[2] == "4"
    table = lines[lines.index(next(x for x in lines if x.split()[:3] == ["id", "word", "head"])) + 1:]
    table = table[:table.index("  (word ids and heads 1-based, line-level: head 0 = root)")]
    heads = [int(x.split()[2]) for x in table]
    assert [x.split()[1] for x in table] == LINE4_SRC.replace("&apos;", "'").split()
    # one root per sentence; sentence 2's heads are line-level (offset by 5 words)
    assert heads.count(0) == 2 and all(h == 0 or h <= 5 for h in heads[:5]) and all(h == 0 or h > 5 for h in heads[5:])
    assert proc.stderr.strip().splitlines()[-1].startswith("synprep:0.1.0|tok:given|")

    data = png.read_bytes()
    width, height = png_size(data)
    assert 1000 <= width <= 2700 and 1000 <= height <= 3000
    assert 50_000 < len(data) < 3_000_000


def test_index_and_line_agree_and_long_pairs_stay_bounded(sample: Sample) -> None:
    by_line = load_pair(sample.shards, line=4)
    by_index = load_pair(sample.shards, index=3)
    by_negative = load_pair(sample.shards, index=-5)  # 8 pairs
    assert by_line.record.line == by_index.record.line == by_negative.record.line == 4
    assert " ".join(by_index.src) == LINE4_SRC and by_index.words[1] == "'re"
    assert pair_text(by_line) == pair_text(by_index)
    # pair 1 (line 2) has 130 pieces: the figure's size is capped (drawing it is left to the CLI test)
    long = load_pair(sample.shards, line=2)
    assert len(long.src) == 130
    fig = pair_figure(long)
    width, height = fig.get_size_inches() * fig.dpi
    assert width <= 2600 and height <= 3400  # with the constituency tree panel (at most 4 inches)


def test_matrices_are_the_trainers(sample: Sample) -> None:
    view = load_pair(sample.shards, line=4)
    t = len(view.src)
    m = pair_matrices(view, tau=10.0, mode="nary")
    gaps = np.append(view.record.gaps_nary, 2000)
    assert m["soft"].shape == m["hard"].shape == m["pascal"].shape == (t + 1, t + 1)
    np.testing.assert_array_equal(m["hard"], hard_slr_mask(gaps, strict=False))
    np.testing.assert_allclose(m["soft"], soft_slr_mask(gaps, 10.0))
    assert m["parents"][-1] == t  # </s> points at itself
    # every PASCAL row peaks at its parent
    peak = m["pascal"].argmax(axis=1)
    assert np.all(np.abs(peak - m["parents"]) <= 0.5)


def test_spec_known_answer_through_a_view() -> None:
    # SPEC.md §3: "I swim across the river ." with stored gaps [6,4,3,2,5] (+ 2000 for </s>)
    z = np.zeros(0, dtype=np.int64)
    rec = PairRecord(line=1, src_ids=np.arange(4, 10), tgt_ids=np.array([4]), word_index=np.arange(6),
                     heads=np.array([2, 0, 2, 5, 3, 2]), deprel=np.zeros(6, np.int64), upos=np.zeros(6, np.int64),
                     sent_start=np.array([0]), gaps_cnf=np.array([6, 4, 3, 2, 5]), gaps_nary=np.array([5, 4, 3, 2, 5]),
                     ldd_dep=z, ldd_head=z, ldd_rel=z, ldd_prob=np.zeros(0, np.float32))
    view = PairView(folder=Path("x"), split="train", index=0, shard="train.00000.h5", position=0, record=rec,
                    attrs={}, src="I swim across the river .".split(), tgt=["x"],
                    words="I swim across the river .".split(), deprels=["dep"] * 6, upos=["X"] * 6)
    m = pair_matrices(view, tau=10.0, mode="cnf")
    rows = ["1111110", "1111100", "0111100", "0011100", "0001110", "0111111", "1111111"]
    assert ["".join("1" if x else "0" for x in r) for r in m["hard"]] == rows
    np.testing.assert_allclose(m["soft"][0], [1, 1, .5987, .3865, .2667, .1466, 0], atol=5e-5)
    np.testing.assert_allclose(m["soft"][3], [.1595, .4502, 1, 1, 1, .3543, 0], atol=5e-5)
    # PASCAL: N(0) on the parent, N(±1) beside it (SPEC.md §4)
    assert m["parents"].tolist() == [1, 1, 1, 4, 2, 1, 6]
    np.testing.assert_allclose(m["pascal"][0, :3], [.241971, .398942, .241971], atol=1e-6)


def test_errors_are_named(sample: Sample) -> None:
    proc = run_cli("show", str(sample.shards), "--index", "8", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"synprep: error: {sample.shards}: pair index 8 out of range: "
                                   "split 'train' has 8 pairs (0..7)")
    proc = run_cli("show", str(sample.shards), "--line", "9", check=False)
    assert proc.returncode == 2 and "line 9 is not in split 'train' (lines 1..8 stored)" in proc.stderr
    proc = run_cli("show", str(sample.shards), "--split", "valid", "--index", "0", check=False)
    assert proc.returncode == 2 and "split 'valid' has no shards here (splits: train)" in proc.stderr
    proc = run_cli("show", str(sample.shards), check=False)
    assert proc.returncode == 2 and "give one of --index I and --line N" in proc.stderr
    assert "Traceback" not in proc.stderr
    with pytest.raises(InputError, match="no such output folder"):
        load_pair(sample.shards / "missing", index=0)
