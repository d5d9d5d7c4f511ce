"""chunk_map: a text stage's chunks over workers, an input of one chunk in this process; the same results."""

from __future__ import annotations

import os

import pytest

from synprep.errors import ConfigError
from synprep.parallel import chunk_map
from synprep.text.bpe import apply_bpe_lines, apply_bpe_stream
from synprep.text.tokenize import tokenize_lines, tokenize_stream


def tagged(chunk: list[int]) -> list[tuple[int, int]]:
    """Each item with the pid of the process that saw it (a worker's function: top level)."""
    return [(x, os.getpid()) for x in chunk]


def test_one_chunk_is_done_here_and_more_in_the_workers():
    here = os.getpid()
    one = list(chunk_map(tagged, range(5), 5, jobs=2))
    assert [x for x, _ in one] == list(range(5))
    assert {pid for _, pid in one} == {here}
    more = list(chunk_map(tagged, range(12), 5, jobs=2))
    assert [x for x, _ in more] == list(range(12))
    assert here not in {pid for _, pid in more}


def test_an_empty_input_gives_nothing_and_a_bad_size_is_refused():
    assert list(chunk_map(tagged, [], 5, jobs=2)) == []
    with pytest.raises(ConfigError, match="chunk size"):
        list(chunk_map(tagged, range(3), 0, jobs=2))


def test_a_text_stage_of_one_chunk_gives_the_bytes_the_workers_give(tmp_path):
    lines = [f"Line {i}: it's sentence number {i}, isn't it?" for i in range(60)]
    want = tokenize_lines(lines, "en")
    assert list(tokenize_stream(lines, "en", jobs=2)) == want  # one chunk: here
    assert list(tokenize_stream(lines, "en", jobs=2, chunk_lines=7)) == want  # nine: the workers
    codes = tmp_path / "codes"
    codes.write_text("#version: 0.2\ni t\ns e\nn t\ne n\nse n\nL i\n", encoding="utf-8")
    pieces = apply_bpe_lines(want, str(codes))
    assert any("@@" in p for p in pieces)
    assert list(apply_bpe_stream(want, codes, jobs=2)) == pieces
    assert list(apply_bpe_stream(want, codes, jobs=2, chunk_lines=7)) == pieces
