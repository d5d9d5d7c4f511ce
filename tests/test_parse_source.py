"""The parse source registry: the annotation stage asks a ParseSource, never branches on the parser name."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from synprep.annotate import Item, Parallel, ParseOptions
from synprep.errors import ConfigError, InputError
from synprep.parse.base import ParserSpec
from synprep.parse.config import ParseConfig
from synprep.parse.source import SOURCES, ImportConllu, RunParser, source_for
from synprep.types import ParsedLine


def test_every_parser_name_has_a_source():
    assert set(SOURCES) == {"conllu"}  # every parser backend runs through RunParser
    assert isinstance(source_for(ParseOptions(ParseConfig(parser="conllu"))), ImportConllu)
    assert isinstance(source_for(ParseOptions(ParseConfig(parser="stanza"), spec=ParserSpec(lang="en"))), RunParser)
    with pytest.raises(ConfigError, match="unknown parser 'udpipe'"):
        source_for(ParseOptions(ParseConfig(parser="udpipe")))


def test_imported_parses_must_belong_to_their_line():
    source = source_for(ParseOptions(ParseConfig(parser="conllu")))
    ok = ParsedLine(line=3, error="empty line")
    item = Item(line=3, words=[], src=[], tgt=["x"], parse=ok)
    assert source.parse([item], Parallel(), None, None) == [ok]
    with pytest.raises(InputError, match="line 4: the CoNLL-U parse of line 3 was given for line 4"):
        source.parse([Item(line=4, words=[], src=[], tgt=["x"], parse=ok)], Parallel(), None, None)
    assert not source.runs_parser and source.config() == {"name": "conllu", "ssplit": True}
    assert source.signature() == "conllu"


def test_no_branch_on_where_parses_come_from_outside_the_sources():
    """The pipeline asks its ParseSource where parses come from: a comparison with a source name
    (``== "conllu"``) anywhere else in synprep/ is a branch on it and fails this test."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "synprep"
    names = "|".join(map(re.escape, SOURCES))
    pattern = re.compile(rf"""[!=]=\s*["']({names})["']|["']({names})["']\s*[!=]=|\bin\s*[(\[{{][^)\]}}]*["']({names})["']""")
    hits = [f"{p.relative_to(root)}:{i}: {line.strip()}" for p in root.rglob("*.py") if p.name != "source.py"
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == []
    assert pattern.search('if parse.parser == "conllu":') and pattern.search("if opts.parser in ('x', 'conllu'):")


def test_a_parser_spec_holds_the_parse_section_whole():
    config = ParseConfig(stanza_package="synprep", max_words=60, batch_size=8, ssplit=False)
    spec = ParserSpec(config, lang="de", dir="/models")
    assert spec.config is config  # the section whole; its settings read as the backends read them
    assert (spec.name, spec.package, spec.max_words, spec.ldd_threshold, spec.device) == ("stanza", "synprep", 60, 0.01,
                                                                                           "cpu")
    assert ParserSpec(name="stanza", lang="de", dir="/models", package="synprep", max_words=60, batch_size=8,
                      ssplit=False) == spec  # the keyword form builds the same section
    assert pickle.loads(pickle.dumps(spec)) == spec and len(pickle.dumps(spec)) < 1000  # sent to every worker
    assert spec.with_config(batch_size=4).config.batch_size == 4 and spec.config.batch_size == 8
    assert spec.recorded() == {"name": "stanza", "lang": "de", "package": "synprep", "constituency": True,
                               "max_words": 60, "ldd_threshold": 0.01}  # no runtime setting (the folder)
    with pytest.raises(TypeError, match="unknown keyword max_word"):
        ParserSpec(name="stanza", max_word=3)
    on_gpu = spec.with_config(device="cuda")
    assert dataclasses.replace(on_gpu, device="cpu") == spec  # a setting beside the section changes the section's
    assert ParserSpec(config, max_words=3).config == dataclasses.replace(config, max_words=3)
    with pytest.raises(ConfigError, match="max_words must be >= 1, got 0"):
        spec.with_config(max_words=0)
