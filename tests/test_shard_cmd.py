"""``synprep shard``: BPE'd text + ``synprep parse`` output → shards that pass ``synprep check``.

Real data: the first 8 lines of IWSLT14 test (fairseq's prepared BPE text) parsed by the real
stanza English models (tests/iwslt_sample.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli

from synprep.align import bpe_words
from synprep.errors import InputError
from synprep.parse.conllu_io import read_conllu
from synprep.pipeline import numbered_parses
from synprep.shards import SplitReader, open_split
from synprep.show import load_pair
from synprep.vocab import Vocab
from tests.iwslt_sample import N_LINES, Sample, iwslt_sample

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sample(tmp_path_factory, shared_data: Path, stanza_dir: Path) -> Sample:
    return iwslt_sample(tmp_path_factory, shared_data, stanza_dir)


def blocks(text: str) -> list[str]:
    return [b for b in text.split("\n\n") if b.strip()]


def join(bs: list[str]) -> str:
    return "\n\n".join(bs) + "\n\n"


def block_of(bs: list[str], line: int, sentence: int = 0) -> int:
    """Position of the ``sentence``-th block carrying ``# line = line``."""
    hits = [i for i, b in enumerate(bs) if f"# line = {line}\n" in b + "\n"]
    return hits[sentence]


def set_form(block: str, token: int, form: str) -> str:
    """Replace the FORM of token ``token`` (and its leaf in the tree comment) in one CoNLL-U block."""
    out = []
    old = None
    for row in block.split("\n"):
        cols = row.split("\t")
        if len(cols) == 10 and cols[0] == str(token):
            old = cols[1]
            cols[1] = form
            row = "\t".join(cols)
        out.append(row)
    assert old is not None
    text = "\n".join(out)
    return text.replace(f" {old})", f" {form})", 1) if "# constituency" in text else text


def shard_args(s: Sample, conllu: Path, out: Path, *extra: str) -> list[str]:
    return ["shard", "--src", str(s.src), "--tgt", str(s.tgt), "--conllu", str(conllu), "-s", "en", "-t", "de",
            "--out", str(out), *extra]


def test_parse_then_shard_then_check(sample: Sample) -> None:
    out = sample.shards
    check = run_cli("check", str(out))
    assert check.stdout.strip() == f"synprep check: OK {out}: train {N_LINES} pairs (2 shards)"
    manifest = json.loads((out / "manifest.json").read_text())
    entry = manifest["splits"]["train"]
    assert entry["input_lines"] == N_LINES and entry["pairs"] == N_LINES
    assert [s["pairs"] for s in entry["shards"]] == [5, 3]
    # fairseq's pieces are lowercased: the signature says so
    assert manifest["signature"] == "synprep:0.1.0|tok:given|lc:yes|parser:conllu|feat:cnf+nary+ldd|shard:v1"

    vocab = Vocab.load(out / "dict.txt")
    parsed = list(read_conllu(sample.conllu))
    src_lines = sample.src.read_text(encoding="utf-8").splitlines()
    tgt_lines = sample.tgt.read_text(encoding="utf-8").splitlines()
    with SplitReader(open_split(out, "train")) as data:
        assert data.lines.tolist() == list(range(1, N_LINES + 1))
        for k, rec in enumerate(data):
            # the ids decode to the BPE lines byte for byte
            assert " ".join(vocab.decode(rec.src_ids)) == src_lines[k]
            assert " ".join(vocab.decode(rec.tgt_ids)) == tgt_lines[k]
            # the stored heads are the parse's, offset per sentence (line 4 holds two sentences)
            pl = parsed[k]
            expected, start = [], 0
            for s in pl.sentences:
                expected += [h + start if h else 0 for h in s.heads]
                start += len(s.words)
            assert rec.heads.tolist() == expected
            assert rec.word_index.tolist() == bpe_words(src_lines[k].split())[1].tolist()
    assert [len(pl.sentences) for pl in parsed][3] == 2
    with SplitReader(open_split(out, "train")) as data:  # English: real constituency trees, cnf != nary
        assert any(not np.array_equal(r.gaps_cnf, r.gaps_nary) for r in data)
        r = data[3]
        assert r.sent_start.tolist() == [0, 5] and r.gaps_cnf[4] == 999


def test_words_that_differ_name_the_line(sample: Sample, tmp_path: Path) -> None:
    bs = blocks(sample.conllu.read_text(encoding="utf-8"))
    i = block_of(bs, 3)
    bs[i] = set_form(bs[i], 2, "whatever")
    bad = tmp_path / "bad.conllu"
    bad.write_text(join(bs), encoding="utf-8")
    proc = run_cli(*shard_args(sample, bad, tmp_path / "out"), check=False)
    assert proc.returncode == 2, proc.stderr
    assert (f"synprep: error: {sample.src}:3: BPE words differ from the parsed words at word 2: "
            "BPE 'of' vs parser 'whatever'") in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list((tmp_path / "out").glob("*.h5"))


def test_missing_and_extra_parses_are_named(sample: Sample, tmp_path: Path) -> None:
    bs = blocks(sample.conllu.read_text(encoding="utf-8"))
    short = tmp_path / "short.conllu"
    short.write_text(join([b for b in bs if "# line = 8\n" not in b + "\n"]), encoding="utf-8")
    proc = run_cli(*shard_args(sample, short, tmp_path / "o1"), check=False)
    assert proc.returncode == 2
    assert f"synprep: error: {short}: the parses end after line 7, the source has 8 lines" in proc.stderr

    gap = tmp_path / "gap.conllu"
    gap.write_text(join([b for b in bs if "# line = 5\n" not in b + "\n"]), encoding="utf-8")
    with pytest.raises(InputError, match=r"gap.conllu: expected the parse of line 5, found '# line = 6'"):
        list(numbered_parses(str(gap), N_LINES))
    extra = tmp_path / "extra.conllu"
    extra.write_text(join(bs + [bs[-1].replace("# line = 8", "# line = 9")]), encoding="utf-8")
    with pytest.raises(InputError, match="more parses than source lines: the source has 8 lines, the parses go "
                                         "on with line 9"):
        list(numbered_parses(str(extra), N_LINES))
    assert [p.line for p in numbered_parses(str(sample.conllu), N_LINES)] == list(range(1, N_LINES + 1))


def test_failed_line_is_recorded_and_lowercase(sample: Sample, tmp_path: Path) -> None:
    bs = blocks(sample.conllu.read_text(encoding="utf-8"))
    bs = [b for b in bs if "# line = 6\n" not in b + "\n"]
    bs.insert(block_of(bs, 7), "# line = 6\n# error = sentence longer than 250 words (max_words)")
    # line 4 "we 're all born ." parsed with a capital: only --lowercase makes it match the BPE text
    i = block_of(bs, 4)
    bs[i] = set_form(bs[i], 1, "We")
    conllu = tmp_path / "edited.conllu"
    conllu.write_text(join(bs), encoding="utf-8")

    proc = run_cli(*shard_args(sample, conllu, tmp_path / "cased"), check=False)
    assert proc.returncode == 2
    assert "4: BPE words differ from the parsed words at word 1: BPE 'we' vs parser 'We'" in proc.stderr

    out = tmp_path / "lc"
    proc = run_cli(*shard_args(sample, conllu, out, "--lowercase", "--shard-size", "3"))
    assert "train: 8 input lines, 7 pairs in 3 shard(s); dropped: parse:too_long 1" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].split("|")[2] == "lc:yes"
    assert run_cli("check", str(out)).returncode == 0
    entry = json.loads((out / "manifest.json").read_text())["splits"]["train"]
    assert entry["dropped_lines"] == [[6, "parse:too_long", "sentence longer than 250 words (max_words)"]]
    with SplitReader(open_split(out, "train")) as data:
        assert data.lines.tolist() == [1, 2, 3, 4, 5, 7, 8]
    with pytest.raises(InputError, match=r"line 6 is not in split 'train' \(lines 1..8 stored\): it was dropped "
                                         r"\(parse:too_long, sentence longer than 250 words \(max_words\)\)"):
        load_pair(out, line=6)

    # a second run resumes: every shard is skipped, the folder is unchanged
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    run_cli(*shard_args(sample, conllu, out, "--lowercase", "--shard-size", "3"))
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_shard_into_a_folder_with_another_configuration_is_refused(sample: Sample, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    shutil.copytree(sample.shards, out)
    proc = run_cli(*shard_args(sample, sample.conllu, out, "--shard-size", "5", "--ldd-threshold", "0.2"), check=False)
    assert proc.returncode == 2
    assert "was made with another configuration (ldd_threshold: the folder has 0.01, this run 0.2)" in proc.stderr
