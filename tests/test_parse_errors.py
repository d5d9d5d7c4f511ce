"""One classification of parse error messages: the parse stats and the annotation stage's drop reasons."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from synprep.annotate import drop_reason
from synprep.parse.base import ERROR_KINDS, error_kind
from synprep.parse.conllu_io import read_conllu, write_conllu
from synprep.types import ParsedLine

# every form of message synprep writes (parse_block), and # error texts an imported CoNLL-U may carry
MESSAGES = [
    ("empty line", "empty"),
    ("sentence 2 has 300 words (more than max_words=250)", "too_long"),
    ("sentence longer than 250 words (max_words)", "too_long"),
    ("parser failed: ValueError: bad input", "failed"),
    ("parser failed: sentence 2: RuntimeError: out of memory", "failed"),
    ("unknown error", "failed"),
    ("Empty line", "failed"),
]


@pytest.mark.parametrize(("message", "kind"), MESSAGES)
def test_error_kind_and_drop_reason(message: str, kind: str) -> None:
    assert error_kind(message) == kind in ERROR_KINDS
    assert drop_reason(message) == f"parse:{kind}"


def test_error_blocks_keep_their_kind_through_conllu(tmp_path: Path) -> None:
    lines = [ParsedLine(k, error=m) for k, (m, _) in enumerate(MESSAGES, 1)]
    buf = io.StringIO()
    write_conllu(lines, buf)
    path = tmp_path / "x.conllu"
    path.write_text(buf.getvalue(), encoding="utf-8")
    back = list(read_conllu(path))
    assert [drop_reason(pl.error or "") for pl in back] == [f"parse:{k}" for _, k in MESSAGES]
