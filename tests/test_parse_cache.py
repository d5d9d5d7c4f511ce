"""The parse cache: exact round trip, reuse across runs, survival of a killed writer."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from synprep.parse import ParseCache, ParserSpec, ParseStats, parse_lines
from synprep.parse import run as parse_run
from synprep.parse.cache import cache_key, decode, encode, sentence_to_json
from synprep.parse.options import ParseRun
from synprep.parse.trees import parse_tree, tree_to_str, tree_words
from synprep.types import ParsedSentence, SparseLDD

ROOT = Path(__file__).resolve().parent.parent


def sentence(words: list[str]) -> ParsedSentence:
    n = len(words)
    return ParsedSentence(
        words=words, upos=["X"] * n, heads=[0] + [1] * (n - 1), deprels=["root"] + ["dep"] * (n - 1),
        tree="(ROOT " + " ".join(f"(X {w})" for w in words) + ")", tree_source="constituency",
        ldd=SparseLDD(dep=np.arange(1, n + 1, dtype=np.int32), head=np.zeros(n, np.int32), rel=["root"] * n,
                      prob=np.float32(np.linspace(0.01, 1, n)), threshold=0.01),
    )  # fmt: skip


def test_value_round_trip_is_exact() -> None:
    s = sentence(["über", "&", "\"x\"", "."])
    back = decode(encode(s))
    assert sentence_to_json(back) == sentence_to_json(s)
    assert back.ldd.prob.tobytes() == s.ldd.prob.tobytes() and back.ldd.prob.dtype == np.float32
    assert back.ldd.dep.dtype == np.int32


def test_keys_separate_identities_and_word_boundaries() -> None:
    assert cache_key("p", ["a b"]) != cache_key("p", ["a", "b"])
    assert cache_key("p", ["a"]) != cache_key("q", ["a"])
    assert len(cache_key("p", ["a"])) == 32


def test_get_and_put(tmp_path: Path) -> None:
    with ParseCache(tmp_path / "c.sqlite") as cache:
        a, b = ["hello", "."], ["bye", "."]
        assert cache.get_many("id", [a, b]) == [None, None]
        assert cache.put_many("id", [(a, sentence(a))]) == 1
        got = cache.get_many("id", [a, b])
        assert got[1] is None and sentence_to_json(got[0]) == sentence_to_json(sentence(a))
        assert cache.get_many("other id", [a]) == [None]
        assert (cache.hits, cache.misses, len(cache)) == (1, 4, 1)


def test_cache_hit_avoids_reparsing(tmp_path: Path, stanza_dir: Path) -> None:
    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")
    lines = [
        "das ist gut .".split(), [], "hallo . das ist gut .".split(), "wir sehen uns morgen .".split(),
    ]  # fmt: skip
    path = tmp_path / "parse.sqlite"
    with ParseCache(path) as cache:
        before = parse_run.PARSER_CALLS
        first = list(parse_lines(lines, ParseRun(spec, cache=cache)))
        # 3 unique sentences ("das ist gut ." twice) went to the parser
        assert parse_run.PARSER_CALLS - before == 3
        assert len(cache) == 3
    with ParseCache(path) as cache:  # a later run
        before = parse_run.PARSER_CALLS
        stats = ParseStats()
        second = list(parse_lines(lines, ParseRun(spec, cache=cache, stats=stats)))
        assert parse_run.PARSER_CALLS == before
        assert (stats.parsed, stats.cache_hits) == (0, 4)
    dump = [[sentence_to_json(s) for s in pl.sentences] for pl in first]
    assert [[sentence_to_json(s) for s in pl.sentences] for pl in second] == dump
    assert second[1].error == "empty line"
    # another parser identity (here: another LDD threshold) does not reuse them
    with ParseCache(path) as cache:
        before = parse_run.PARSER_CALLS
        list(parse_lines(lines, ParseRun(ParserSpec(lang="de", dir=str(stanza_dir), package="synprep", ldd_threshold=0.1), cache=cache)))
        assert parse_run.PARSER_CALLS - before == 3


def test_a_parse_never_depends_on_what_the_cache_held(tmp_path: Path, stanza_dir: Path) -> None:
    """A cache filled by another block (other batch-mates) is not read for this block's batch:
    the block is parsed as with no cache, to the same bytes (stanza's floats depend on the batch)."""
    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")
    block = ["das ist gut .".split(), "wir sehen uns morgen .".split(), "der hund schläft im garten .".split()]
    other = ["das ist gut .".split(), "ich habe heute keine zeit für lange gespräche .".split()]
    plain = parse_run.parse_block(block, ParseRun(spec))
    with ParseCache(tmp_path / "parse.sqlite") as cache:
        parse_run.parse_block(other, ParseRun(spec, cache=cache))  # another folder's block filled the cache
        before = parse_run.PARSER_CALLS
        stats = ParseStats()
        got = parse_run.parse_block(block, ParseRun(spec, cache=cache, stats=stats))
        assert parse_run.PARSER_CALLS - before == 3 and stats.cache_hits == 0  # "das ist gut ." parsed again
        before = parse_run.PARSER_CALLS
        again = parse_run.parse_block(block, ParseRun(spec, cache=cache, stats=stats))  # the same block: its batch is cached
        assert parse_run.PARSER_CALLS == before
    dump = [[sentence_to_json(s) for s in pl.sentences] for pl in plain]
    assert [[sentence_to_json(s) for s in pl.sentences] for pl in got] == dump
    assert [[sentence_to_json(s) for s in pl.sentences] for pl in again] == dump


def test_the_cache_never_returns_another_device_kinds_parse(tmp_path: Path, stanza_dir: Path) -> None:
    """The device kind is part of the identity, so of every cache key."""
    cpu = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")
    cuda = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep", device="cuda")
    ident_cpu, ident_cuda = parse_run.parser_identity(cpu), parse_run.parser_identity(cuda)
    assert ident_cuda == ident_cpu + "|device=cuda"
    assert "device=cpu" not in ident_cpu  # a CPU identity is the one earlier versions wrote
    assert parse_run.short_identity(ident_cuda) != parse_run.short_identity(ident_cpu)
    block = ["das ist gut .".split()]
    batch = [tuple(block[0])]
    with ParseCache(tmp_path / "parse.sqlite") as cache:
        parse_run.parse_block(block, ParseRun(cpu, cache=cache))
        assert cache.get_many(parse_run.batch_identity(ident_cpu, batch), batch)[0] is not None
        assert cache.get_many(parse_run.batch_identity(ident_cuda, batch), batch) == [None]



def test_user_trees_do_not_fill_the_cache_of_the_constituency_parser(tmp_path: Path, stanza_dir: Path) -> None:
    # with the user's trees the constituency model is not run: those parses must be cached under the
    # identity of the parser without it, not under the one a later run without trees looks up
    spec = ParserSpec(lang="en", dir=str(stanza_dir), package="synprep")  # English has a constituency model
    words = ["it is good .".split()]
    user = [[parse_tree("(ROOT (S (NP (PRP it)) (VP (VBZ is) (ADJP (JJ good))) (. .)))")]]
    with ParseCache(tmp_path / "parse.sqlite") as cache:
        with_trees = list(parse_lines(words, ParseRun(spec, cache=cache), trees=user))
        assert with_trees[0].sentences[0].tree == tree_to_str(user[0][0])
        before = parse_run.PARSER_CALLS
        stats = ParseStats()
        plain = list(parse_lines(words, ParseRun(spec, cache=cache, stats=stats)))
    assert parse_run.PARSER_CALLS - before == 1 and stats.cache_hits == 0
    sent = plain[0].sentences[0]
    assert sent.tree is not None and sent.tree_source == "constituency"
    assert tree_words(parse_tree(sent.tree)) == words[0]


def test_a_repeated_sentence_gives_separate_objects(tmp_path: Path) -> None:
    # the block's parse of a sentence is handed out once; every further use is a copy of its own
    lines = [["a", "b", "."], ["a", "b", ".", "a", "b", "."], ["a", "b", "."]]
    trees = [[parse_tree(f"(ROOT (S (X{k} a) (Y b) (. .)))")] for k in range(3)]
    trees[1].insert(0, parse_tree("(ROOT (Q (Z a) (Z b) (. .)))"))
    with ParseCache(tmp_path / "c.sqlite") as cache:
        cache.put_many(parse_run.batch_identity("id", [tuple(lines[0])]), [(lines[0], sentence(lines[0]))])
        for user in (None, trees):
            before = parse_run.PARSER_CALLS
            out = parse_run.parse_block(lines, ParseRun(ParserSpec(), cache=cache, identity="id"), trees=user)
            assert parse_run.PARSER_CALLS == before
            sents = [s for pl in out for s in pl.sentences]
            parts = [id(x) for s in sents for x in (s, s.words, s.upos, s.heads, s.deprels, s.ldd, s.ldd.dep)]
            assert len(sents) == 4 and len(parts) == len(set(parts))
            expect = [tree_to_str(t) for ts in trees for t in ts] if user else [sentence(lines[0]).tree] * 4
            assert [s.tree for s in sents] == expect


WRITER = """
import sys
from synprep.parse.cache import ParseCache
from synprep.types import ParsedSentence
cache = ParseCache(sys.argv[1])
k = 0
while True:
    batch = []
    for _ in range(400):
        words = ["w%d" % k, "x" * 200, "."]
        batch.append((words, ParsedSentence(words, ["X"] * 3, [0, 1, 1], ["root", "dep", "dep"])))
        k += 1
    cache.put_many("writer", batch)
    print(k, flush=True)
"""


def test_killed_writer_leaves_no_corrupt_entry(tmp_path: Path) -> None:
    path = tmp_path / "parse.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        for _ in range(3):  # let it commit a few transactions, then kill it in the middle of work
            assert proc.stdout.readline(), "writer died"
        time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    n = db.execute("SELECT COUNT(*) FROM parses").fetchone()[0]
    db.close()
    assert n >= 1200 and n % 400 == 0  # whole transactions only
    with ParseCache(path) as cache:
        got = cache.get_many("writer", [[f"w{k}", "x" * 200, "."] for k in range(n + 400)])
        assert all(s is not None and s.heads == [0, 1, 1] for s in got[:n])
        assert all(s is None for s in got[n:])
        cache.put_many("writer", [(["new"], ParsedSentence(["new"], ["X"], [0], ["root"]))])
        assert len(cache) == n + 1


def test_not_a_cache_is_a_clear_error(tmp_path: Path) -> None:
    """A damaged cache is an environment problem (exit status 1) that says how to recover."""
    from synprep.errors import EnvironmentProblem

    bad = tmp_path / "bad.sqlite"
    bad.write_text("this is not sqlite\n" * 100)
    with pytest.raises(EnvironmentProblem, match="cannot use .* as a parse cache .*--no-cache, or delete") as e:
        ParseCache(bad)
    assert e.value.exit_status == 1
