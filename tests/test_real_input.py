"""Issue 9: ordinary real-world input never gives wrong data that ``synprep check`` calls OK.

Each test here failed before its fix: same language on both sides, already tokenized input, a
byte-order mark, ``--parser conllu`` with a ``--src`` of another text, exit statuses. Real stanza
runs (the offline models in ../shared/data) on a few lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from synprep.shards import check_dir, open_split
from synprep.vocab import Vocab
from tests.conftest import ROOT, run_cli

SAMPLE = ROOT / "sample_data"


def head(src: Path, dst: Path, n: int) -> Path:
    dst.write_text("".join(src.read_text(encoding="utf-8").splitlines(keepends=True)[:n]), encoding="utf-8")
    return dst


def stanza_args(stanza_dir: Path, cache: Path) -> list[str]:
    return ["--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "--cache", str(cache)]


def unbpe(pieces: list[str]) -> list[str]:
    return " ".join(pieces).replace("@@ ", "").split()


# --- item 1: the same language on both sides -------------------------------------------------------


def test_same_language_on_both_sides_stores_the_targets(tmp_path, stanza_dir):
    """``-s en -t en`` (English source, German text as target): the stored targets are the German lines."""
    from synprep.text.tokenize import tokenize_stream

    src, tgt = head(SAMPLE / "valid.en", tmp_path / "a.en", 12), head(SAMPLE / "valid.de", tmp_path / "b.en", 12)
    out = tmp_path / "out"
    run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "en", "-t", "en", "--out", str(out),
            "--merges", "200", "--no-clean", *stanza_args(stanza_dir, tmp_path / "cache.sqlite"))
    assert check_dir(out).ok
    assert (out / "text" / "train.tok.src.en").exists() and (out / "text" / "train.tok.tgt.en").exists()
    vocab = Vocab.load(out / "dict.txt")
    want_tgt = list(tokenize_stream(tgt.read_text(encoding="utf-8").splitlines(), "en"))
    want_src = list(tokenize_stream(src.read_text(encoding="utf-8").splitlines(), "en"))
    [reader] = open_split(out, "train")
    assert len(reader) == 12
    for k in range(len(reader)):
        rec = reader[k]
        assert unbpe(vocab.decode(rec.tgt_ids)) == want_tgt[rec.line - 1].split()
        assert unbpe(vocab.decode(rec.src_ids)) == want_src[rec.line - 1].split()
    shown = run_cli("show", str(out), "--split", "train", "--index", "0").stdout
    assert " ".join(vocab.decode(reader[0].tgt_ids)) in shown.split("target:")[1]
    assert "G@@ uten" in shown.split("target:")[1] or "Guten" in shown.split("target:")[1]


def test_a_same_language_folder_of_the_old_layout_is_refused(tmp_path):
    out = tmp_path / "out"
    (out / "text").mkdir(parents=True)
    (out / "text" / "train.tok.en").write_text("a\n")  # what the old version left: one file for both sides
    src = head(SAMPLE / "valid.en", tmp_path / "a.en", 3)
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(src), "-s", "en", "-t", "en", "--out", str(out),
                   "--no-cache", check=False)
    assert proc.returncode == 2, proc.stderr
    assert "train.tok.en" in proc.stderr and "overwrote" in proc.stderr and "delete" in proc.stderr


# --- item 2: already tokenized input ---------------------------------------------------------------


@pytest.fixture
def tokenized_pair(shared_data, tmp_path) -> tuple[Path, Path]:
    """The first 30 lines of IWSLT14's tokenized, escaped, lowercased test set (fairseq's tmp/)."""
    tmp = shared_data / "iwslt14_de-en" / "fairseq_prepared" / "tmp"
    return head(tmp / "test.de", tmp_path / "tok.de", 30), head(tmp / "test.en", tmp_path / "tok.en", 30)


def test_tokenized_input_without_the_switch_is_refused(tokenized_pair, tmp_path):
    src, tgt = tokenized_pair
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(out),
                   "--no-cache", check=False)
    assert proc.returncode == 2, proc.stderr
    first = next(n for n, line in enumerate(tgt.read_text().splitlines(), 1) if "&apos;" in line)
    assert f"{tgt}:{first}: '&apos;' is a Moses escape" in proc.stderr
    assert "--tokenized" in proc.stderr and "Traceback" not in proc.stderr
    assert not (out / "text").exists() or not any((out / "text").iterdir())


def test_tokenized_input_keeps_its_tokens(tokenized_pair, tmp_path, stanza_dir):
    src, tgt = tokenized_pair
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(out),
                   "--tokenized", "--no-clean", "--merges", "300", *stanza_args(stanza_dir, tmp_path / "c.sqlite"))
    assert "tok:given" in proc.stderr
    vocab = Vocab.load(out / "dict.txt")
    src_lines, tgt_lines = src.read_text().splitlines(), tgt.read_text().splitlines()
    readers = open_split(out, "train")
    n = 0
    for r in readers:
        for k in range(len(r)):
            rec = r[k]
            assert unbpe(vocab.decode(rec.src_ids)) == src_lines[rec.line - 1].split()
            assert unbpe(vocab.decode(rec.tgt_ids)) == tgt_lines[rec.line - 1].split()
            assert len(rec.heads) == len(src_lines[rec.line - 1].split())  # one parsed word per token
            n += 1
    assert n == 30
    # the parser saw the unescaped words ('"', never '&', 'quot', ';')
    shown = run_cli("show", str(out), "--split", "train", "--index", "26").stdout
    assert '"' in shown and "&quot;" in shown
