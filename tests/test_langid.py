"""A side whose text is in another language than -s/-t say is refused (py3langid)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import run_cli

from synprep.text.langid import detect_language, looks_lowercased, sample_lines

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"


def lines(name: str) -> list[str]:
    return (SAMPLE / name).read_text(encoding="utf-8").splitlines()


def test_detect_language_of_real_text():
    de, en = detect_language(lines("train.de")), detect_language(lines("train.en"))
    assert (de.lang, en.lang) == ("de", "en")
    assert de.share > 0.9 and en.share > 0.9
    assert 100 <= de.sample <= 200  # a sample, not the corpus; short lines do not vote
    assert de.share_of("de-AT") == de.share and de.share_of("en") < 0.1


def test_sample_lines_spreads_over_the_input():
    got = sample_lines(iter(str(i) for i in range(1000)), 1000, sample=4)
    assert got == ["0", "250", "500", "750"]
    assert sample_lines(iter(["a", "b"]), 2, sample=10) == ["a", "b"]


def test_looks_lowercased(shared_data):
    tok = shared_data / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / "test.de"
    assert looks_lowercased(tok.read_text(encoding="utf-8").splitlines()[:200])
    assert not looks_lowercased(lines("train.de"))
    assert not looks_lowercased(["日本 語 の 文 です 。"] * 100)  # a script without case: nothing to tell


ONE_LINE = re.compile(r"synprep: error: (?P<file>\S+): this text looks German \('de': \d+% of \d+ sampled lines\), "
                      r"not 'en' as -s says \(\d+%\): give -s de, swap the sides, or add --no-language-check")


def test_german_given_as_english_is_refused_naming_german(tmp_path):
    """pipeline with the sides swapped: exit 2 before anything is written, naming German."""
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--src", str(SAMPLE / "train.de"), "--tgt", str(SAMPLE / "train.en"), "-s", "en",
                   "-t", "de", "--out", str(out), "--no-cache", check=False)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and ONE_LINE.fullmatch(err[0]) and ONE_LINE.fullmatch(err[0])["file"].endswith("train.de")
    assert not out.exists()


def test_annotate_refuses_german_bpe_as_english(shared_data, tmp_path):
    prepared = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    out = tmp_path / "out"
    proc = run_cli("annotate", "--src", str(prepared / "test.de"), "--tgt", str(prepared / "test.en"), "-s", "en",
                   "-t", "de", "--out", str(out), "--no-cache", check=False)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and ONE_LINE.fullmatch(err[0]), err
    assert not out.exists()


def test_no_language_check_overrides_and_is_recorded(shared_data, tmp_path):
    """German gold parses imported as -s en: refused; with --no-language-check the run goes through and the
    folder's configuration (pipeline.json, every shard's config) says the check was off."""
    gold = tmp_path / "gold.conllu"
    blocks = (shared_data / "ud" / "de_pud-ud-test.conllu").read_text(encoding="utf-8").split("\n\n")[:40]
    gold.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    tgt = tmp_path / "t.en"
    en = (shared_data / "ud" / "en_pud-ud-test.conllu").read_text(encoding="utf-8")
    texts = [x[len("# text = "):] for x in en.splitlines() if x.startswith("# text = ")][:40]
    tgt.write_text("\n".join(texts) + "\n", encoding="utf-8")
    base = ["pipeline", "--parser", "conllu", "--conllu", str(gold), "--tgt", str(tgt), "-s", "en", "-t", "en",
            "--merges", "100"]
    proc = run_cli(*base, "--out", str(tmp_path / "refused"), check=False)
    assert proc.returncode == 2
    assert ONE_LINE.fullmatch(proc.stderr.strip().splitlines()[-1])["file"].endswith("gold.conllu")
    assert not (tmp_path / "refused").exists()
    out = tmp_path / "out"
    run_cli(*base, "--out", str(out), "--no-language-check")
    assert json.loads((out / "pipeline.json").read_text())["language_check"] is False
    import h5py

    with h5py.File(sorted(out.glob("train.*.h5"))[0]) as f:
        assert json.loads(f.attrs["config"])["language_check"] is False
    # a later split inherits the setting from pipeline.json (no flag needed) and is not refused
    run_cli(*base[:-2], "--split", "valid", "--out", str(out))


@pytest.mark.parametrize("args", [["-s", "de", "-t", "en"]])
def test_the_right_languages_pass(tmp_path, args):
    """The sample data in its own languages passes the check (and fails later, on purpose: no parser)."""
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--src", str(SAMPLE / "test.de"), "--tgt", str(SAMPLE / "test.en"), *args,
                   "--out", str(out), "--parser", "stanza", "--stanza-dir", str(tmp_path / "none"), "--no-cache",
                   check=False)
    assert "looks" not in proc.stderr and f"--stanza-dir {tmp_path / 'none'}: no such folder" in proc.stderr
