"""Every message names the right next step: text given as tokenized that is not, the settings a run takes from
its folder, ``check`` while a split is written or made in parts, a part of another N or of a merged split, a
mistyped language or ``--stanza-dir``, stanza's own warnings, a high drop share, CJK figures without a font.

Cheap: 12-20 line inputs, imported parses (``--parser conllu``) or ``--prepare-only`` where no parse is needed.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import warnings
from pathlib import Path

import pytest
from builders import japanese_gold_folder, one_line, write_corpus
from helpers import SAMPLE_DATA, run_cli
from pipeline_runs import folder_bytes

from synprep.text.tokenized import GLUED_SHARE_LIMIT, glued_share, looks_untokenized


def _raw(tmp_path: Path, n: int = 12) -> tuple[Path, Path]:
    paths = []
    for lang in ("de", "en"):
        p = tmp_path / f"raw.{lang}"
        p.write_text("".join((SAMPLE_DATA / f"train.{lang}").read_text(encoding="utf-8").splitlines(True)[:n]),
                     encoding="utf-8")
        paths.append(p)
    return paths[0], paths[1]


def _stanza(stanza_dir: Path) -> list[str]:
    return ["--no-cache", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep"]


# --- the tokenized-ness check ---------------------------------------------------------------------------------


def test_glued_punctuation_share_tells_raw_from_tokenized_text() -> None:
    raw = ["Guten Morgen, zusammen. Wie geht es?", "Das ist gut: wir tun es!"]
    tok = ["Guten Morgen , zusammen . Wie geht es ?", "z.B. &quot; Das &quot; ist l&apos; homme ."]
    r, t = glued_share(raw), glued_share(tok)
    assert (r.glued, r.tokens, r.first_line, r.example) == (5, 12, 1, "Morgen,")
    assert (t.glued, t.tokens) == (1, 17)  # z.B. alone: an escape's ';' is no punctuation
    plain = ["Das ist ein ganz gewöhnlicher Satz mit vielen Wörtern und keiner Abkürzung ."] * 4
    assert looks_untokenized(raw * 4, "de") is not None and looks_untokenized(tok * 4 + plain, "de") is None
    assert looks_untokenized(raw, "de") is None  # under 40 tokens: too few to tell
    assert looks_untokenized(["今日は、良い天気です。"] * 50, "ja") is None  # written without spaces: not judged
    assert 0.0033 < GLUED_SHARE_LIMIT < 0.085  # between the measured corpora (benchmarks/bench_tokenized_share.py)


def test_allow_untokenized_turns_the_refusal_into_a_warning(tmp_path: Path, stanza_dir: Path) -> None:
    src, tgt = _raw(tmp_path)
    out = tmp_path / "out"
    base = ["pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(out),
            "--merges", "40", "--prepare-only", *_stanza(stanza_dir)]
    proc = run_cli(*base, "--tokenized", "--allow-untokenized")
    warned = [x for x in proc.stderr.splitlines() if "glued" in x]
    assert warned[0] == (f"synprep: warning: {src}:1: 'Dank,': 16.1 % of the tokens of --src end in punctuation glued "
                         "to a word (Moses-tokenized text: under 4 %); used as it is (--allow-untokenized): the parser "
                         "and the subwords see those tokens whole"), proc.stderr
    assert len(warned) == 2 and warned[1].startswith(f"synprep: warning: {tgt}:1: 'much,': 13.5 % of the tokens of --tgt")
    assert json.loads((out / "pipeline.json").read_text())["tokenized"] is True
    proc = run_cli(*base[:-6], "--out", str(tmp_path / "other"), "--allow-untokenized", check=False)
    one_line(proc, 2, "--allow-untokenized has no effect without --tokenized")
    assert not (tmp_path / "other").exists()


def test_a_run_into_a_folder_names_the_settings_it_took_from_it(tmp_path: Path, stanza_dir: Path) -> None:
    src, tgt = _raw(tmp_path)
    out = tmp_path / "out"
    common = ["--src", str(src), "--tgt", str(tgt), "--out", str(out), "--prepare-only", *_stanza(stanza_dir)]
    first = run_cli("pipeline", *common, "-s", "de", "-t", "en", "--lowercase", "--no-ssplit", "--merges", "40")
    assert "settings from" not in first.stderr
    later = run_cli("pipeline", "--split", "valid", *common)
    taken = [x for x in later.stderr.splitlines() if "settings from" in x]
    assert taken == [f"synprep: settings from {out}/pipeline.json (not on the command line): --source-lang de "
                     "--target-lang en --lowercase --merges 40 --no-ssplit"], later.stderr
    # stated the other way on the command line: refused, naming the field (the folder has shards of nothing yet,
    # but a finished split: train's prepared entry)
    proc = run_cli("pipeline", "--split", "valid", *common, "--no-lowercase", check=False)
    assert proc.returncode == 2 and "lowercase: the folder has true, this run false" in proc.stderr


# --- check while a split is written, prepared, made in parts; a part of another N or of a merged split ----------


@pytest.fixture
def conllu_corpus(tmp_path: Path) -> list[str]:
    """A 20-line split with imported parses (no parser runs): the pipeline's arguments but ``--out``."""
    from synprep.text.bpe import learn_bpe

    _, tgt, conllu = write_corpus(tmp_path, "train", 20, 1)
    learn_bpe([tgt], 20, tmp_path / "codes")
    return ["pipeline", "--tgt", str(tgt), "--parser", "conllu", "--conllu", str(conllu), "-s", "de", "-t", "en",
            "--codes", str(tmp_path / "codes"), "--shard-size", "8", "--no-language-check"]


def _check_says(out: Path) -> str:
    proc = run_cli("check", str(out), check=False)
    assert proc.returncode == 1
    return proc.stderr


def test_check_names_the_next_step_and_parts_of_another_n_are_refused(conllu_corpus: list[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = [*conllu_corpus, "--out", str(out)]
    run_cli(*args, "--prepare-only")
    said = _check_says(out)
    assert "after --prepare-only, run the parts" in said and "running the same command again resumes it" not in said
    # a live writer of the split: wait for it
    lock = out / ".train.lock"
    saved = lock.read_bytes() if lock.exists() else None
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": "synprep pipeline",
                                "started": "now"}))
    assert f"the train split is being written by pid {os.getpid()}" in _check_says(out)
    lock.write_bytes(saved) if saved is not None else lock.unlink()
    run_cli(*args, "--part", "1/2")
    assert "the train split is being made in 2 parts (1 finished)" in _check_says(out)
    before = folder_bytes(out)
    proc = run_cli(*args, "--part", "2/3", check=False)
    one_line(proc, 2, "part 2/3:", "train.part-1-of-2.json", "run --part I/2", f"rm {out}/.parts/train.part-*-of-2.*")
    assert folder_bytes(out) == before
    run_cli(*args, "--part", "2/2")
    run_cli(*args, "--merge-parts")
    merged = folder_bytes(out)
    again = run_cli(*args, "--part", "1/2")  # a re-queued array task
    assert "the split is merged already" in again.stderr and "nothing to do" in again.stderr
    assert folder_bytes(out) == merged
    assert run_cli("check", str(out)).returncode == 0


def test_the_run_log_says_a_high_drop_share_with_its_fix(conllu_corpus: list[str], tmp_path: Path) -> None:
    from synprep.report.flags import drop_warning

    assert drop_warning("train", {"clean:ratio": 2}, 100, {}) is None  # under the report's threshold
    assert drop_warning("train", {"clean:ratio": 23, "clean:empty": 1}, 100, {"src_lang": "ja", "tgt_lang": "en"}) == (
        "warning: train: 24.0% of the input lines were dropped (clean:ratio 23, clean:empty 1; text/train.dropped.tsv "
        "lists them): most drops are the token-count ratio (--ratio 1.5): ja is written without spaces: its "
        "tokenizer's units make its side of a pair several times longer or shorter than a spaced language's; raise "
        "`--ratio` (e.g. --ratio 3) or run with `--no-clean`, after checking the example lines below are real pairs")
    tgt = Path(conllu_corpus[2])
    lines = tgt.read_text().splitlines()
    for i in (2, 5, 11):
        lines[i] = ""
    tgt.write_text("\n".join(lines) + "\n")
    proc = run_cli(*conllu_corpus, "--out", str(tmp_path / "out"))
    said = [x for x in proc.stderr.splitlines() if "were dropped" in x]
    assert said == ["synprep: warning: train: 45.0% of the input lines were dropped (clean:ratio 6, clean:empty 3; "
                    "text/train.dropped.tsv lists them): most drops are the token-count ratio (--ratio 1.5): one side "
                    "has many more tokens than the other; raise `--ratio` (e.g. --ratio 3) or run with `--no-clean`, "
                    "after checking the example lines below are real pairs"], proc.stderr


# --- languages, stanza folders, stanza's own warnings ----------------------------------------------------------


def test_a_mistyped_language_is_answered_with_the_code_it_meant(tmp_path: Path, stanza_dir: Path) -> None:
    src, tgt = _raw(tmp_path)
    base = ["pipeline", "--src", str(src), "--tgt", str(tgt), "-t", "en", "--out", str(tmp_path / "out"),
            *_stanza(stanza_dir)]
    proc = run_cli(*base, "-s", "dee", check=False)
    assert one_line(proc, 2, alone=True) == ("synprep: error: -s 'dee' is no language code py3langid or stanza knows: "
                                             "did you mean 'de'? run with -s de")
    proc = run_cli(*base, "-s", "ger", check=False)  # named before the language check could warn about 'ger'
    assert one_line(proc, 2, alone=True) == ("synprep: error: 'ger' is not a language code the parsers use: it is 'de' "
                                             "(ISO 639-1); run with de instead")
    assert not (tmp_path / "out").exists()


def test_a_stanza_dir_that_is_no_folder_says_so_and_where_it_was_read(tmp_path: Path) -> None:
    proc = run_cli("parse", "-l", "de", "--stanza-dir", "models/stanza", "--stanza-package", "synprep", "--no-cache",
                   input="Ein Test .\n", cwd=tmp_path, check=False)
    line = one_line(proc, 2, "--stanza-dir models/stanza: no such folder", str(tmp_path / "models" / "stanza"),
                    "a relative path is read from each process's working folder", "dask worker", alone=True)
    assert "--package" not in line and "download de --dir" not in line


def test_stanzas_own_warnings_about_a_package_are_not_printed(stanza_dir: Path) -> None:
    proc = run_cli("parse", "-l", "de", "--stanza-dir", str(stanza_dir), "--stanza-package", "nosuch", "--no-cache",
                   input="Ein Test .\n", check=False)
    one_line(proc, 2, "no stanza pos model for de/nosuch", alone=True)
    assert "Can not find" not in proc.stderr


# --- figures and the reference --------------------------------------------------------------------------------


def test_a_report_without_a_cjk_font_warns_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                                shared_data: Path, tmp_path: Path) -> None:
    from synprep import show
    from synprep.report.figures import example_figures

    out, _ = japanese_gold_folder(shared_data, tmp_path, 3)
    monkeypatch.setattr(show.fonts, "cjk_font", lambda: None)
    show.fonts._warn_no_cjk_font.cache_clear()
    caplog.set_level(logging.WARNING, logger="synprep")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figs = example_figures(out, [("test", 0), ("test", 1), ("test", 2)])
    assert len(figs) == 3 and not [w for w in caught if "Glyph" in str(w.message)]
    assert [r.getMessage() for r in caplog.records if "CJK" in r.getMessage()] == [
        "warning: no CJK font found: Chinese/Japanese/Korean words are drawn as boxes "
        "(install one, e.g. apt-get install fonts-noto-cjk)"]


def test_the_reference_states_that_a_ratio_of_0_is_refused() -> None:
    mkdocs_click = pytest.importorskip("mkdocs_click._docs")
    from synprep.cli.pipeline import pipeline_cmd

    ratio = next(p for p in pipeline_cmd.params if p.name == "ratio")
    assert mkdocs_click._format_table_option_type(ratio) == "float > 0"
    proc = run_cli("clean", "a", "b", "--ratio", "0", check=False)
    assert proc.returncode == 2 and "0.0 is not in the range x>0" in proc.stderr
