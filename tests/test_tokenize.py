"""Moses tokenization (sacremoses) and the fairseq-compat rule."""

from __future__ import annotations

import pytest
from helpers import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from synprep.errors import ConfigError
from synprep.text.escape import unescape_tokens
from synprep.text.tokenize import (
    fairseq_split_final_dot,
    moses_lowercase,
    tokenize_line,
    tokenize_lines,
    tokenize_stream,
)


@pytest.mark.parametrize("text,lang,expected", [
    # escapes, SPEC.md §1
    ('He said: "It\'s [really] <fine> & good | ok."', "en",
     "He said : &quot; It &apos;s &#91; really &#93; &lt; fine &gt; &amp; good &#124; ok . &quot;"),
    # German nonbreaking prefixes: sacremoses keeps a final abbreviation whole
    ("Das ist z.B. ein Test usw.", "de", "Das ist z.B. ein Test usw."),
    ("Hello...", "en", "Hello ..."),
    ("", "en", ""),
    ("   ", "en", ""),
])
def test_sacremoses_known_answers(text, lang, expected):
    assert tokenize_line(text, lang) == expected


@pytest.mark.parametrize("text,lang,expected", [
    # the old perl split the final '.' off the last token even after an abbreviation or number
    ("Das kostet 70.", "de", "das kostet 70 ."),
    ("Wir sahen die U.S.A.", "en", "wir sahen die u.s.a ."),
    ("Er kam usw.", "de", "er kam usw ."),
    # multi-dots stay whole, a lone '.' is left alone
    ("Hello...", "en", "hello ..."),
    ("Nein.", "de", "nein ."),
    # and printed an all-whitespace line unchanged
    (" \t ", "de", " \t "),
])
def test_fairseq_compat(text, lang, expected):
    assert tokenize_line(text, lang, lowercase=True, fairseq_compat=True) == expected


def test_no_escape():
    assert tokenize_line("a & b", "en", escape=False) == "a & b"
    assert tokenize_line("a & b", "en") == "a &amp; b"


def test_lowercase_is_perl_lc():
    # Python's str.lower() writes a word-final sigma as ς; Perl lc (lowercase.perl) writes σ
    assert "ΟΔΟΣ".lower() == "οδος"
    assert moses_lowercase("ΟΔΟΣ") == "οδοσ"
    assert moses_lowercase("Straße İ") == "straße i\u0307"


def test_split_final_dot_rule():
    assert fairseq_split_final_dot(["a", "usw."]) == ["a", "usw", "."]
    assert fairseq_split_final_dot(["..."]) == ["..."]
    assert fairseq_split_final_dot(["a."]) == ["a", "."]
    assert fairseq_split_final_dot(["a..."]) == ["a..."]  # ends in two dots: not the rule
    assert fairseq_split_final_dot([]) == []


def test_bad_language_code():
    with pytest.raises(ConfigError, match="bad language code"):
        tokenize_line("x", "../../etc")


_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=60)


@settings(max_examples=150, deadline=None)
@given(_text, st.booleans())
def test_properties(text, compat):
    out = tokenize_line(text, "en", fairseq_compat=compat)
    if not (compat and not text.strip()):
        # single spaces between tokens, none at the ends, no raw XML-special characters left
        assert out == " ".join(out.split(" ")) and "  " not in out and out == out.strip()
        assert not set(out) & set("<>\"'[]|")
    if not compat:
        assert "\n" not in out
    # unescaping never changes the token count (SPEC.md §1)
    toks = out.split()
    assert len(unescape_tokens(toks)) == len(toks)
    # the compat rule only ever adds a trailing " ."
    plain = tokenize_line(text, "en")
    if compat and text.strip():
        assert out == plain or out == plain[:-1] + " ."


def test_stream_keeps_order_and_count_with_jobs():
    lines = [f"Line {i}: this is sentence number {i}." for i in range(250)]
    one = list(tokenize_stream(lines, "en", chunk_lines=40))
    assert one == tokenize_lines(lines, "en")
    assert list(tokenize_stream(iter(lines), "en", jobs=2, chunk_lines=40)) == one


def test_cli_stdin_stdout_and_files(tmp_path):
    proc = run_cli("tokenize", "-l", "en", "--lowercase", "--fairseq-compat", input="It's 5 p.m.\nHi!\n")
    assert proc.stdout == "it &apos;s 5 p.m .\nhi !\n"
    assert "tok:sacremoses-" in proc.stderr and "lc:yes" in proc.stderr
    src = tmp_path / "in.de"
    src.write_text("Guten Tag, Welt.\n\nWie geht's?\n", encoding="utf-8")
    out = tmp_path / "out.de"
    run_cli("tokenize", "-l", "de", "-i", str(src), "-o", str(out), "-j", "2")
    assert out.read_text(encoding="utf-8") == "Guten Tag , Welt .\n\nWie geht &apos; s ?\n"


def test_the_character_class_tests_answer_as_sacremoses_does():
    """synprep's tokenizer reads each class as a set made once; sacremoses' makes it at every call: the same
    answers for a sample of the lowercase letters, of the other letters and of all code points, alone and after
    a lowercase letter, in English and in Chinese (which adds characters to its IsAlpha)."""
    import random

    from sacremoses import MosesTokenizer

    from synprep.text.tokenize import _tokenizer

    rng = random.Random(5)
    for lang, n in (("en", 600), ("zh", 40)):  # sacremoses: 0.07 ms an islower, 0.7 an isanyalpha, 18 in Chinese
        ours, theirs = _tokenizer(lang), MosesTokenizer(lang=lang)
        assert type(ours) is not MosesTokenizer  # the subclass is what is tested
        assert ours.IsAlpha == theirs.IsAlpha and ours.IsLower == theirs.IsLower
        chars = [*rng.sample(theirs.IsLower, 600), *rng.sample(theirs.IsAlpha, 300), *map(chr, range(128)),
                 *(chr(rng.randrange(0x110000)) for _ in range(300))]
        texts = ["", *chars, *("a" + c for c in chars[::3])]
        assert [ours.islower(t) for t in texts] == [theirs.islower(t) for t in texts]
        sample = texts[:: len(texts) // n]
        assert [ours.isanyalpha(t) for t in sample] == [theirs.isanyalpha(t) for t in sample]


def test_tokenizing_iwslt14_gives_sacremoses_own_output(shared_data):
    """Every line of IWSLT14's raw English and German test and dev sets: synprep's tokenizer writes what
    sacremoses' own ``MosesTokenizer`` does."""
    from sacremoses import MosesTokenizer

    from synprep.recipes.iwslt14 import PAIR, TEST_SETS, extract_segments
    from synprep.textio import iter_lines

    orig = shared_data / "iwslt14_de-en" / "orig"
    for lang in ("en", "de"):
        lines = [s for ts in TEST_SETS for s in extract_segments(iter_lines(orig / f"{ts}.{PAIR}.{lang}.xml"))]
        assert len(lines) > 6000
        plain = MosesTokenizer(lang=lang)
        assert tokenize_lines(lines, lang) == [" ".join(plain.tokenize(x)) for x in lines]
