"""Joint BPE learn/apply (subword-nmt), checked against fairseq's real prepared data."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from helpers import run_cli

from synprep.errors import InputError
from synprep.parallel import chunked
from synprep.text.bpe import apply_bpe_stream, learn_bpe, load_bpe
from synprep.textio import iter_lines


@pytest.fixture(scope="module")
def prepared(shared_data):
    return shared_data / "iwslt14_de-en" / "fairseq_prepared"


@pytest.mark.parametrize("name", ["valid.de", "valid.en", "test.de", "test.en"])
def test_apply_reproduces_fairseq(prepared, name):
    """DATA.md: apply-bpe -c code on tmp/{valid,test}.L gives {valid,test}.L byte for byte."""
    out = "".join(x + "\n" for x in apply_bpe_stream(iter_lines(prepared / "tmp" / name), prepared / "code"))
    assert out.encode("utf-8") == (prepared / name).read_bytes()


def test_the_segmentation_memo_is_bounded_and_only_saves_time(prepared, monkeypatch):
    """synprep keeps each distinct word's segmentation (subword-nmt's own memo, ``BPE.cache``, is emptied) and
    empties its memo past BPE_CACHE_CHARS characters of words; the output is still fairseq's byte for byte."""
    from synprep.text import bpe as bpe_mod

    monkeypatch.setattr(bpe_mod, "BPE_CACHE_CHARS", 2000)
    codes = prepared / "code"
    bpe = load_bpe(codes)
    bpe_mod._WORDS.pop(bpe, None)
    bpe_mod._CACHE_CHARS.pop(bpe, None)
    sizes = []
    out = []
    for chunk in chunked(iter_lines(prepared / "tmp" / "valid.de"), 4):
        out += bpe_mod.apply_bpe_lines(chunk, str(codes))
        sizes.append(sum(map(len, bpe_mod._WORDS[bpe])))  # the characters of the words it holds
        assert not bpe.cache
    assert "".join(x + "\n" for x in out).encode("utf-8") == (prepared / "valid.de").read_bytes()
    assert 0 < max(sizes) <= 2000 + max(map(len, bpe_mod._WORDS[bpe]))  # checked before each word is added
    assert sum(b < a for a, b in zip(sizes[:-1], sizes[1:], strict=True)) > 10  # emptied again and again, not only grown
    lines = list(iter_lines(prepared / "tmp" / "test.de"))[:300]
    one_by_one = [bpe_mod.apply_bpe_line(bpe, x) for x in lines]
    assert one_by_one == bpe_mod.apply_bpe_lines(lines, str(codes))


def test_segmenting_each_word_once_gives_what_process_line_gives(prepared):
    """segment_lines (each distinct word segmented once, lines joined from the words) against subword-nmt's own
    ``BPE.process_line`` on a fresh BPE: every line of IWSLT14 test in both languages, and lines with spaces,
    CR and tabs at either end or doubled inside, empty lines, single characters and a separator in the text."""
    from subword_nmt.apply_bpe import BPE

    from synprep.text.bpe import segment_lines

    codes = prepared / "code"
    lines = [*iter_lines(prepared / "tmp" / "test.de"), *iter_lines(prepared / "tmp" / "test.en"),
             "", " ", "   ", "a", " a", "a ", "a  b", "  a  b  ", "\ra b", "a b\r", "a\tb c", "\tab", "ri@@ ver",
             "@@", "x @@ y", "über  straße ", "a\rb"]
    with open(codes, encoding="utf-8") as f:
        reference = BPE(f)
    expected = [reference.process_line(line) for line in lines]
    assert segment_lines(load_bpe(codes), lines) == expected
    assert segment_lines(load_bpe(codes), lines) == expected  # again, every word from the memo


def test_cli_apply_with_two_jobs_reproduces_fairseq(prepared, tmp_path):
    out = tmp_path / "valid.de"
    proc = run_cli("bpe", "apply", "-c", str(prepared / "code"), "-i", str(prepared / "tmp" / "valid.de"),
                   "-o", str(out), "-j", "2")
    assert out.read_bytes() == (prepared / "valid.de").read_bytes()
    assert "bpe:subword-nmt-" in proc.stderr


def test_learn_is_joint_over_the_files(prepared, tmp_path):
    """Learning on two files equals subword-nmt's own learn-bpe on their concatenation."""
    de = prepared / "tmp" / "IWSLT14.TED.dev2010.de-en.de"
    en = prepared / "tmp" / "IWSLT14.TED.dev2010.de-en.en"
    cat = de.read_bytes() + en.read_bytes()
    ref = subprocess.run([sys.executable, "-m", "subword_nmt.learn_bpe", "-s", "300"], input=cat,
                         capture_output=True, check=True).stdout
    codes = tmp_path / "code"
    assert learn_bpe([de, en], 300, codes) == 300
    assert codes.read_bytes() == ref
    # the CLI writes the same codes; codes learned on one side only differ (so both sides counted)
    run_cli("bpe", "learn", "-s", "300", str(de), str(en), "-o", str(tmp_path / "cli"))
    assert (tmp_path / "cli").read_bytes() == ref
    learn_bpe([de], 300, tmp_path / "de_only")
    assert (tmp_path / "de_only").read_bytes() != ref


def test_learn_stops_early_and_reports_merges(tmp_path):
    f = tmp_path / "tiny.txt"
    f.write_text("low lower lowest\nlow low\n", encoding="utf-8")
    n = learn_bpe([f], 1000, tmp_path / "code")
    lines = (tmp_path / "code").read_text().splitlines()
    assert lines[0] == "#version: 0.2" and n == len(lines) - 1 and 0 < n < 1000


@pytest.mark.parametrize("terminal", [True, False])
def test_subword_nmt_s_bar_is_drawn_on_a_terminal_only_and_only_while_learning(tmp_path, monkeypatch, terminal):
    import subword_nmt.learn_bpe as learn_module
    from tqdm import tqdm

    class Stderr(io.StringIO):
        def isatty(self) -> bool:
            return terminal

    f = tmp_path / "tiny.txt"
    f.write_text("low lower lowest newer newest wider\n" * 3, encoding="utf-8")
    assert learn_module.tqdm is tqdm  # importing synprep.text.bpe changed nothing of subword-nmt's
    monkeypatch.setattr(sys, "stderr", Stderr())
    learn_bpe([f], 5, tmp_path / "code")
    drawn = sys.stderr.getvalue()
    assert ("5/5" in drawn and "100%" in drawn) if terminal else drawn == ""
    assert learn_module.tqdm is tqdm  # put back after the call


def test_learn_on_nothing_is_an_error(tmp_path):
    f = tmp_path / "empty.de"
    f.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(InputError, match=r"no tokens to learn BPE from \(2 lines\)"):
        learn_bpe([f], 10, tmp_path / "code")
    assert not (tmp_path / "code").exists()


def test_bad_codes_file_names_the_line(tmp_path):
    c = tmp_path / "code"
    c.write_text("#version: 0.2\na b\nc d e\n", encoding="utf-8")
    with pytest.raises(InputError, match="two units") as e:
        load_bpe(c)
    assert e.value.line == 3


def test_apply_keeps_line_count_and_empty_lines(tmp_path):
    c = tmp_path / "code"
    c.write_text("#version: 0.2\nl o\nlo w</w>\n", encoding="utf-8")
    lines = ["low lower", "", "slow"]
    assert list(apply_bpe_stream(lines, c)) == ["low lo@@ w@@ e@@ r", "", "s@@ low"]


def test_learn_on_single_character_words_is_a_clear_error(tmp_path):
    """subword-nmt fails with max() of an empty sequence when no word has two symbols."""
    from synprep.errors import InputError
    from synprep.text.bpe import learn_bpe

    corpus = tmp_path / "chars.txt"
    corpus.write_text("a b c d a b\nb c d e\n")
    with pytest.raises(InputError, match="no word has two symbols"):
        learn_bpe([corpus], 5, tmp_path / "codes")
    assert not (tmp_path / "codes").exists()
