"""Subword ↔ word alignment (SPEC.md §1): identity check against parsed words, real IWSLT14 data."""

from __future__ import annotations

import pytest
from helpers import run_cli

from synprep.align import align, bpe_words, first_difference
from synprep.errors import InputError


def test_spec_example():
    words, wi = bpe_words("i sw@@ im across the ri@@ ver .".split())
    assert words == ["i", "swim", "across", "the", "river", "."]
    assert wi.tolist() == [0, 1, 1, 2, 3, 4, 4, 5]
    assert align("i sw@@ im across the ri@@ ver .".split(), words).tolist() == [0, 1, 1, 2, 3, 4, 4, 5]


def test_moses_escapes_are_compared_unescaped():
    pieces = "it &apos;s r@@ ock &amp; roll &#91; sic &#93; &quot;".split()
    parser_words = ["it", "'s", "rock", "&", "roll", "[", "sic", "]", '"']
    assert align(pieces, parser_words).tolist() == [0, 1, 2, 2, 3, 4, 5, 6, 7, 8]
    # an escape split by BPE is joined before unescaping
    assert align(["&am@@", "p;"], ["&"]).tolist() == [0, 0]


def test_mismatch_names_line_position_and_both_tokens():
    with pytest.raises(InputError) as e:
        align("the ri@@ ver flows".split(), ["the", "rivers", "flows"], line=17, path="test.en")
    msg = str(e.value)
    assert msg.startswith("test.en:17: ")
    assert "word 2" in msg and "'river'" in msg and "'rivers'" in msg


def test_count_mismatch_is_an_error_too():
    with pytest.raises(InputError, match="word 3: BPE '<end>' vs parser 'c'"):
        align(["a", "b"], ["a", "b", "c"], line=1)
    with pytest.raises(InputError, match="word 2: BPE 'b' vs parser '<end>'"):
        align(["a", "b"], ["a"], line=1)
    # never a silent fallback: a re-tokenizing parser ("don't" -> "do n't") is refused
    with pytest.raises(InputError, match="word 1"):
        align(["don&apos;t"], ["do", "n't"], line=3)


def test_malformed_bpe():
    with pytest.raises(InputError, match="continuation marker"):
        bpe_words(["a", "b@@"], line=4, path="x")
    with pytest.raises(InputError, match="empty piece"):
        bpe_words(["a", ""], line=4)
    words, wi = bpe_words([])
    assert words == [] and wi.shape == (0,)
    assert first_difference(["a"], ["a"]) is None


def test_first_difference_with_a_match_predicate():
    assert first_difference(["a", "b"], ["a"]) == (1, "b", "<end>")
    same = lambda x, y: x.lower() == y.lower()  # noqa: E731
    assert first_difference(["A", "b"], ["a", "B"], same=same) is None
    assert first_difference(["A", "b"], ["a", "c", "d"], same=same) == (1, "b", "c")
    assert first_difference(["A"], ["a", "d"], same=same) == (1, "<end>", "d")


def test_real_iwslt14_pieces_rebuild_the_tokenized_text(shared_data):
    # fairseq's prepare-iwslt14.sh: subword-nmt apply-bpe on tmp/test.L gives test.L; joining the
    # pieces must give the tokenized text back byte for byte, every line
    base = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    for lang in ("de", "en"):
        bpe = (base / f"test.{lang}").read_text("utf-8").splitlines()
        tok = (base / "tmp" / f"test.{lang}").read_text("utf-8").splitlines()
        assert len(bpe) == len(tok) == 6750
        n_split = 0
        for b, t in zip(bpe, tok, strict=True):
            words, wi = bpe_words(b.split())
            assert " ".join(words) == t
            assert wi.size == len(b.split()) and (wi[-1] + 1 if wi.size else 0) == len(t.split())
            n_split += wi.size > len(words)
        assert n_split > 1000


def test_cli_align(tmp_path, shared_data):
    out = run_cli("align", input="i sw@@ im across the ri@@ ver .\n\nhello\n")
    assert out.stdout == "0 1 1 2 3 4 4 5\n\n0\n"
    assert "feat:align" in out.stderr
    base = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    res = tmp_path / "wi.txt"
    out = run_cli("align", "-i", str(base / "test.en"), "--words", str(base / "tmp" / "test.en"), "-o", str(res))
    lines = res.read_text().splitlines()
    assert len(lines) == 6750
    assert lines[2] == "0 1 2 3 4 5 6 7 8 9 9 10 10 10 10 11"  # "and of course , we all share the same adap@@ tive im@@ per@@ a@@ tives ."
    # a words file that disagrees: named line, exit 2
    words = tmp_path / "words.txt"
    words.write_text("i swim\ni swam\n")
    out = run_cli("align", "--words", str(words), input="i sw@@ im\ni sw@@ im\n", check=False)
    assert out.returncode == 2
    assert out.stderr.startswith("synprep: error: <stdin>:2: BPE words differ from the parsed words at word 2")
    out = run_cli("align", input="a b@@\n", check=False)
    assert out.returncode == 2 and "<stdin>:1: the line ends with a continuation marker" in out.stderr
