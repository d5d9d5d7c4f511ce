"""Cleaning with clean-corpus-n.perl semantics.

The known answers below were checked against mosesdecoder's clean-corpus-n.perl (perl 5.36,
``-ratio 1.5 … 1 175``) when this file was written, as were 6000 random pairs mixing Unicode
spaces and ``|`` (same kept lines, same bytes).
"""

from __future__ import annotations

import pytest
from helpers import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from synprep.errors import InputError
from synprep.text.clean import REASONS, CleanStats, clean_pairs


def _one(src, tgt, **kw):
    return list(clean_pairs([("a", "b"), (src, tgt)], **kw))[1]


@pytest.mark.parametrize("src,tgt,reason", [
    ("ein kleiner test", "a small test", None),
    ("", "a", "empty"),
    ("a", "   ", "empty"),
    ("|", "a", "empty"),                       # '|' removed in a non-factored corpus
    ("w " * 176, "w " * 176, "too_long"),
    ("w " * 175, "w " * 175, None),            # bounds are inclusive
    ("w " * 200, "", "empty"),                 # empty is tested first
    ("a b c", "a b c d e", "ratio"),           # 5/3 > 1.5
    ("a b", "a b c", None),                    # 3/2 = 1.5 is kept
    ("a b c d e", "a b c", "ratio"),
    ("x" * 1001, "y", "word_too_long"),
    ("x" * 1000, "y", None),
    ("w " * 176, "a", "too_long"),             # too_long before ratio
])
def test_reasons(src, tgt, reason):
    assert _one(src, tgt).reason == reason


def test_too_short_and_order():
    assert _one("a", "b", min_len=2).reason == "too_short"
    # too_long is tested before too_short
    assert _one("a", "w " * 10, min_len=2, max_len=5).reason == "too_long"


def test_normalization_is_perl_whitespace():
    r = _one("  a\u00a0\u00a0b\t c  ", "x\u3000y | z")
    assert (r.src, r.tgt, r.src_len, r.tgt_len) == ("a b c", "x y z", 3, 3)
    # U+001C is whitespace for Python but not for Perl: it stays inside the token
    r = _one("a\x1cb", "ab")
    assert (r.src, r.src_len) == ("a\x1cb", 1)


def test_factored_corpus_keeps_pipes_and_rejects_empty_factors():
    rs = list(clean_pairs([("a|N b|V", "x|N y|V"), ("c|N", "z|N")]))
    assert [r.src for r in rs] == ["a|N b|V", "c|N"]
    with pytest.raises(InputError, match="empty factor") as e:
        list(clean_pairs([("a|N", "x|N"), ("c||N", "z|N")], names=("s.de", "s.en")))
    assert (e.value.path, e.value.line) == ("s.de", 2)


def test_keep_pipes_keeps_every_pipe_as_part_of_its_token():
    """The pipeline's cleaning: a "|" (a token of --tokenized text) is neither removed nor a factor separator."""
    pairs = [("| a", "| x"), ("a | b", "x | y"), ("a|b ||", "x|y |"), ("|", "x")]
    rs = list(clean_pairs(pairs, keep_pipes=True))
    assert [(r.src, r.tgt, r.src_len, r.tgt_len, r.reason) for r in rs] == [
        ("| a", "| x", 2, 2, None), ("a | b", "x | y", 3, 3, None), ("a|b ||", "x|y |", 2, 2, None),
        ("|", "x", 1, 1, None)]
    # a "|" counts toward the token's length
    assert next(clean_pairs([("a|b", "x")], keep_pipes=True, max_word_length=2)).reason == "word_too_long"
    with pytest.raises(ValueError, match="factored"):
        list(clean_pairs(pairs, keep_pipes=True, factored=True))


_side = st.lists(st.sampled_from(["a", "bb", "|", " ", "\t", "\u00a0", "ccc"]), max_size=12).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_side, _side), max_size=40))
def test_every_pair_accounted_for(pairs):
    stats = CleanStats()
    results = list(clean_pairs(pairs, max_len=6, factored=False))
    for r in results:
        stats.add(r)
        assert r.kept == (r.reason is None) and (r.reason is None or r.reason in REASONS)
        if r.kept:
            assert 1 <= r.src_len <= 6 and 1 <= r.tgt_len <= 6
            assert max(r.src_len / r.tgt_len, r.tgt_len / r.src_len) <= 1.5
    assert [r.line for r in results] == list(range(1, len(pairs) + 1))
    assert stats.input == len(pairs) == stats.kept + stats.n_dropped


def test_cli_prefix_report_and_counts(tmp_path):
    s, t = tmp_path / "c.de", tmp_path / "c.en"
    s.write_text("ein test\n\nkurz\neins zwei drei vier\nok\n", encoding="utf-8")
    t.write_text("a test\nleer\none two three four\none\nok\n", encoding="utf-8")
    proc = run_cli("clean", str(s), str(t), "-o", str(tmp_path / "out"), "--report", str(tmp_path / "r.tsv"))
    assert (tmp_path / "out.de").read_text() == "ein test\nok\n"
    assert (tmp_path / "out.en").read_text() == "a test\nok\n"
    assert (tmp_path / "r.tsv").read_text() == (
        "line\treason\tsrc_tokens\ttgt_tokens\n2\tempty\t0\t1\n3\tratio\t1\t4\n4\tratio\t4\t1\n")
    assert "input 5, kept 2, dropped 3 (empty 1, ratio 2)" in proc.stderr
    # explicit output files
    run_cli("clean", str(s), str(t), "--out-src", str(tmp_path / "k1"), "--out-tgt", str(tmp_path / "k2"),
            "--max-len", "4", "--ratio", "4")
    assert (tmp_path / "k1").read_text() == "ein test\nkurz\neins zwei drei vier\nok\n"
    run_cli("clean", str(s), str(t), "--out-src", str(tmp_path / "k1"), "--out-tgt", str(tmp_path / "k2"),
            "--max-len", "3", "--ratio", "4")
    assert (tmp_path / "k2").read_text() == "a test\nok\n"


def test_cli_needs_an_output(tmp_path):
    s, t = tmp_path / "a.txt", tmp_path / "b.txt"
    s.write_text("a\n")
    t.write_text("b\n")
    proc = run_cli("clean", str(s), str(t), "-o", str(tmp_path / "x"), check=False)
    assert proc.returncode == 2 and "cannot take two distinct language suffixes" in proc.stderr
    proc = run_cli("clean", str(s), str(t), check=False)
    assert proc.returncode == 2 and "-o PREFIX" in proc.stderr
