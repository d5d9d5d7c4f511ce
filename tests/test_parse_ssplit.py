"""Sentence splitting on given Moses tokens (SPEC.md §1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synprep.parse.ssplit import split_sentences


def cut(text: str, enabled: bool = True) -> list[str]:
    words = text.split()
    return [" ".join(words[a:b]) for a, b in split_sentences(words, enabled)]


@pytest.mark.parametrize(
    "text, expected",
    [
        # SPEC.md §2's two-sentence example line
        ("hello . i swim across the river .", ["hello .", "i swim across the river ."]),
        # lowercased text: no capitals needed
        ("it works . it really does !", ["it works .", "it really does !"]),
        ("why ? because .", ["why ?", "because ."]),
        ("wait ... what ?", ["wait ...", "what ?"]),
        # consecutive final punctuation stays together
        ("yes ! ! no", ["yes ! !", "no"]),
        ("really ?! ok", ["really ?!", "ok"]),
        # a closing quote after the end stays with its sentence (escaped or not) ...
        ("he said &quot; stop . &quot; and left .", ["he said &quot; stop . &quot;", "and left ."]),
        ('he said " stop . " and left .', ['he said " stop . "', "and left ."]),
        # ... but a quote with no open quote before it opens the next sentence
        ("stop . &quot; hello &quot; he said", ["stop .", "&quot; hello &quot; he said"]),
        # closing brackets always stay
        ("( laughter . ) thank you .", ["( laughter . )", "thank you ."]),
        ("thank you . ( applause )", ["thank you .", "( applause )"]),
        # abbreviations are single Moses tokens, not punctuation tokens
        ("dr. smith met u.s. officials .", ["dr. smith met u.s. officials ."]),
        # no split at the very end, none inside a punctuation-only start
        ("... and then . ok", ["... and then .", "ok"]),
        (". . .", [". . ."]),
        ("no final punctuation", ["no final punctuation"]),
        # German quotes
        ("er sagte „ nein . “ dann ging er .", ["er sagte „ nein . “", "dann ging er ."]),
    ],
)
def test_split_cases(text: str, expected: list[str]) -> None:
    assert cut(text) == expected


def test_disabled_and_empty() -> None:
    assert cut("hello . i swim .", enabled=False) == ["hello . i swim ."]
    assert split_sentences([]) == []
    assert split_sentences([], enabled=False) == []


TOKENS = st.sampled_from(["a", "b", ".", "!", "?", "...", '"', "&quot;", ")", "(", "'", "u.s."])


@given(st.lists(TOKENS, max_size=30))
def test_spans_cover_the_line_in_order(words: list[str]) -> None:
    spans = split_sentences(words)
    if not words:
        assert spans == []
        return
    assert spans[0][0] == 0 and spans[-1][1] == len(words)
    for (a, b), (c, _) in zip(spans, spans[1:], strict=False):
        assert a < b == c
    # never re-tokenized: the sentences concatenate to the line
    assert [w for a, b in spans for w in words[a:b]] == words
