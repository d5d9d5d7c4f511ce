"""Messages that name the real cause: every traceback becomes one line.

The parse cache: a damaged file is an environment problem (exit status 1) found before the text
stages, saying how to recover; an entry holding another sentence's parse is reported as a cache
problem and parsed again, never blamed on an input line; a cache locked past its timeout skips
caching, not the work. A tree too deep for nltk does not ask a CLI user to change an nltk
constant. An error while writing names the target file, never its temporary file.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from helpers import SAMPLE_DATA, run_cli

from synprep.parse.cache import ParseCache, cache_key, encode
from synprep.textio import atomic_write
from synprep.types import ParsedSentence


def sent(words: list[str]) -> ParsedSentence:
    return ParsedSentence(words, ["X"] * len(words), [0] + [1] * (len(words) - 1), ["root"] + ["dep"] * (len(words) - 1))


def test_a_wrong_cache_entry_is_a_cache_problem(tmp_path, caplog):
    path = tmp_path / "c.sqlite"
    with ParseCache(path) as cache:
        cache.put_many("id", [(["a", "b"], sent(["a", "b"]))])
    db = sqlite3.connect(path)  # the entry of "x y z" holds the parse of "a b"
    db.execute("INSERT INTO parses VALUES (?, ?)", (cache_key("id", ["x", "y", "z"]), encode(sent(["a", "b"]))))
    db.commit()
    db.close()
    with ParseCache(path) as cache, caplog.at_level(logging.WARNING):
        got = cache.get_many("id", [["a", "b"], ["x", "y", "z"]])
        assert got[0] is not None and got[0].words == ["a", "b"]
        assert got[1] is None and cache.wrong == 1 and cache.misses == 1  # parsed again, then overwritten
    assert f"parse cache {path}: the entry of a 3-word sentence holds the parse of other words" in caplog.text
    assert "--no-cache, or delete" in caplog.text


def test_a_locked_cache_skips_caching_not_the_work(tmp_path, caplog):
    path = tmp_path / "c.sqlite"
    ParseCache(path).close()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another run holds the write lock
    try:
        with ParseCache(path, timeout=0.2) as cache, caplog.at_level(logging.WARNING):
            assert cache.put_many("id", [(["a", "b"], sent(["a", "b"]))]) == 0
            assert cache.get_many("id", [["a", "b"]]) == [None]
        assert "stayed locked by another process past the timeout: 1 parses not cached" in caplog.text
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_a_damaged_cache_stops_the_pipeline_before_the_text_stages(tmp_path, stanza_dir):
    bad = tmp_path / "parse.sqlite"
    bad.write_bytes(b"\x00garbage, not sqlite\n" * 300)
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--src", str(SAMPLE_DATA / "train.de"), "--tgt", str(SAMPLE_DATA / "train.en"),
                   "-s", "de", "-t", "en", "--out", str(out), "--cache", str(bad), "--stanza-dir", str(stanza_dir),
                   "--stanza-package", "synprep", check=False)
    assert proc.returncode == 1, proc.stderr  # an environment problem, not bad input (2)
    assert "Traceback" not in proc.stderr
    errors = [x for x in proc.stderr.splitlines() if x.startswith("synprep: error:")]
    assert len(errors) == 1 and f"cannot use {bad} as a parse cache" in errors[0]
    assert f"run with --no-cache, or delete {bad}" in errors[0]
    assert not list((out / "text").glob("train.tok.*"))  # no text stage ran


def test_deep_and_wide_trees_do_not_ask_to_change_nltk():
    """Too wide a tree (for the distances) and too deep a one (refused while it is read)
    name synprep's bound and the fix, never nltk's module variable."""
    from synprep.features.distance import cnf_gaps
    from synprep.parse.trees import parse_tree

    wide = "(S " + " ".join(f"(X w{i})" for i in range(700)) + ")"
    deep = "(S " * 900 + "(X w)" + ")" * 900
    messages = []
    for fn, arg in ((cnf_gaps, wide), (cnf_gaps, deep), (lambda s: parse_tree(s, "trees.txt", 3), deep)):
        with pytest.raises(ValueError) as e:
            fn(arg)
        messages.append(str(e.value))
    assert "MAX_TREE_DEPTH (500)" in messages[0]
    assert messages[2].startswith("trees.txt:3: bad bracketed tree: the tree nests more than 500 brackets deep")
    for msg in messages:
        assert "nltk.tree.tree.MAX_TREE_DEPTH" not in msg
        assert "synprep cannot use such a tree (leave the sentence out, or split it)" in msg


def test_a_write_error_names_the_target_not_the_temporary_file(tmp_path):
    target = tmp_path / ("n" * 240)  # a valid name; its temporary file's name would be too long
    with pytest.raises(OSError) as e:
        with atomic_write(target) as f:
            f.write("x")
    assert e.value.filename == str(target)
    assert not list(Path(tmp_path).iterdir())
