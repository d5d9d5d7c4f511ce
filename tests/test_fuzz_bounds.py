"""The input bounds under hypothesis (the properties are in tests/fuzz_bounds.py; a longer campaign:
``python benchmarks/fuzz.py --targets imported,long_tokens,values``, docs/hardening.md)."""

from __future__ import annotations

import pytest
from builders import small_folder
from fuzz_bounds import check_imported_lines, check_parsed_long_tokens, check_value_damage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def opts(n: int) -> settings:
    return settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    d = tmp_path_factory.mktemp("base") / "out"
    small_folder(d)
    return d


def test_the_reader_accepts_exactly_what_check_accepts(base, tmp_path_factory):
    scratch = tmp_path_factory.mktemp("values")

    @opts(60)
    @given(data=st.data())
    def run(data):
        check_value_damage(base, scratch / "f", data)

    run()


def test_huge_imported_sentences_and_long_words_are_dropped(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("imported")

    @opts(10)
    @given(data=st.data())
    def run(data):
        check_imported_lines(scratch / "x", data)

    run()


def test_long_tokens_never_reach_the_parser(stanza_dir):
    from synprep.parse.base import ParserSpec

    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")

    @opts(15)
    @given(data=st.data())
    def run(data):
        check_parsed_long_tokens(spec, data)

    run()
