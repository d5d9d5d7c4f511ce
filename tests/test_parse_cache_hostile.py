"""Hostile parse-cache entries, written into a real cache that a real parse (stanza, package ``synprep``) filled:
an entry is inflated only up to a bound derived from its sentence and checked as a fresh parse is (labels,
one tree, heads in range); one that is not is a cache problem reported once with the fix, never the input
line's, and its batch is parsed afresh to the same bytes as with no cache."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import zlib
from pathlib import Path

import pytest
from helpers import run_cli

from synprep.parse import ParseCache, ParserSpec
from synprep.parse import run as parse_run
from synprep.parse.cache import EntryTooLarge, decode, entry_bound, sentence_to_json
from synprep.parse.options import ParseRun

LINES = ["Das ist gut .", "Wir sehen uns morgen .", "Der Hund schläft im Garten .", "Ich habe heute keine Zeit .",
         "Sie liest ein Buch .", "Das Wetter ist schön ."]
WORDS = [line.split() for line in LINES]


def spec(stanza_dir: Path) -> ParserSpec:
    return ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")


@pytest.fixture(scope="module")
def real_cache(tmp_path_factory, stanza_dir: Path) -> tuple[Path, list]:
    """A cache filled by a real parse of LINES (batches of 4), and that parse."""
    path = tmp_path_factory.mktemp("cache") / "parse.sqlite"
    with ParseCache(path) as cache:
        parsed = parse_run.parse_block(WORDS, ParseRun(spec(stanza_dir).with_config(batch_size=4), cache=cache))
    return path, dump(parsed)


def dump(parsed: list) -> list:
    return [[sentence_to_json(s) for s in pl.sentences] for pl in parsed]


def rewrite(path: Path, change) -> int:
    """Replace every entry's value by ``change(json dict, rows) -> bytes``; returns the number of entries."""
    db = sqlite3.connect(path)
    rows = db.execute("SELECT key, value FROM parses ORDER BY key").fetchall()
    for i, (key, value) in enumerate(rows):
        db.execute("UPDATE parses SET value = ? WHERE key = ?", (change(json.loads(zlib.decompress(value)), rows, i),
                                                                 key))
    db.commit()
    db.close()
    return len(rows)


def packed(d: dict) -> bytes:
    return zlib.compress(json.dumps(d, ensure_ascii=False).encode("utf-8"))


def bomb(d: dict, padding: int) -> bytes:
    """The entry's JSON followed by ``padding`` spaces (still valid JSON), deflated (~1000:1) chunk by chunk."""
    z = zlib.compressobj(9)
    out = [z.compress(json.dumps(d, ensure_ascii=False).encode("utf-8"))]
    chunk = b" " * (1 << 20)
    for _ in range(padding >> 20):
        out.append(z.compress(chunk))
    return b"".join(out) + z.flush()


def edit(fn):
    def change(d: dict, rows, i) -> bytes:
        fn(d)
        return packed(d)
    return change


def set_heads(d: dict, heads) -> None:
    n = len(d["words"])
    d["heads"] = heads(n)


POISONS = {
    "13 roots": edit(lambda d: set_heads(d, lambda n: [0] * n)),
    "a cycle": edit(lambda d: set_heads(d, lambda n: [2, 1, 0] + [3] * (n - 3))),
    "a head out of range": edit(lambda d: set_heads(d, lambda n: [n + 5] + d["heads"][1:])),
    "an unknown relation": edit(lambda d: d["deprels"].__setitem__(0, "bogus")),
    "an unknown tag": edit(lambda d: d["upos"].__setitem__(0, "NOTATAG")),
    "too few tags": edit(lambda d: d.__setitem__("upos", d["upos"][:-1])),
    "a tree of other words": edit(lambda d: d.update(tree="(ROOT (X other) (X words))", tree_source="constituency")),
    "an LDD word out of range": edit(lambda d: d["ldd"]["dep"].__setitem__(0, 99)),
    "an LDD probability of 2": edit(lambda d: d["ldd"]["prob"].__setitem__(0, 2.0)),
    "rotated": lambda d, rows, i: rows[(i + 1) % len(rows)][1],  # each entry holds another sentence's parse
    "not zlib": lambda d, rows, i: b"garbage",
    "a deflate bomb": lambda d, rows, i: bomb(d, 16 << 20),
    "nested past the recursion limit": lambda d, rows, i: zlib.compress(b"[" * 3000),  # 20 bytes deflated
}


@pytest.mark.parametrize("poison", sorted(POISONS))
def test_a_poisoned_entry_is_a_cache_problem_parsed_afresh(real_cache, tmp_path: Path, stanza_dir: Path, caplog,
                                                            poison: str) -> None:
    src, fresh = real_cache
    path = tmp_path / "parse.sqlite"
    shutil.copy(src, path)
    n = rewrite(path, POISONS[poison])
    before = parse_run.PARSER_CALLS
    with caplog.at_level(logging.WARNING, logger="synprep"):
        with ParseCache(path) as cache:
            got = parse_run.parse_block(WORDS, ParseRun(spec(stanza_dir).with_config(batch_size=4), cache=cache))
            assert sum(cache.problems.values()) == n
    assert dump(got) == fresh  # the parser's own parses, as with no cache
    assert parse_run.PARSER_CALLS - before == len(WORDS)  # every batch parsed afresh
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings  # once, with the count and the fix
    assert f"parse cache {path}: the entry of a " in warnings[0] and f"{n} entries ignored" in warnings[0]
    assert f"--no-cache, or delete {path}" in warnings[0] and "not the input's" in warnings[0]
    with ParseCache(path) as cache:  # the entries were overwritten by the fresh parses: read back as they are
        again = parse_run.parse_block(WORDS, ParseRun(spec(stanza_dir).with_config(batch_size=4), cache=cache))
        assert not cache.problems and cache.hits == len(WORDS)
    assert dump(again) == fresh


def test_an_entry_is_inflated_only_up_to_its_bound() -> None:
    words = ["Das", "ist", "gut", "."]
    limit = entry_bound(words, 0.01)
    assert limit < 64 << 10  # a few KB a word
    assert entry_bound(words, 0.0) > limit and entry_bound(words * 60, 0.01) < 4 << 20
    blob = bomb({"words": words}, 32 << 20)  # ~32 KB that would inflate to 32 MB
    with pytest.raises(EntryTooLarge, match=f"more than {limit} bytes"):
        decode(blob, limit)


def test_synprep_parse_never_writes_a_cached_cycle(tmp_path: Path, stanza_dir: Path) -> None:
    """A cycle in every cached entry (the cache filled in this process as ``synprep parse`` would):
    ``synprep parse`` writes the parser's own parse, warns once with the fix, exits 0."""
    import io

    from synprep.parse import write_conllu

    path = tmp_path / "parse.sqlite"
    with ParseCache(path) as cache:  # the spec the command builds from these options, the default batches
        fresh = io.StringIO()
        write_conllu(parse_run.parse_lines(WORDS, ParseRun(spec(stanza_dir), cache=cache)), fresh)
    rewrite(path, POISONS["a cycle"])
    text = tmp_path / "in.de"
    text.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    proc = run_cli("parse", "-l", "de", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "--cache",
                   str(path), "-i", str(text))
    assert proc.stdout == fresh.getvalue()
    warnings = [x for x in proc.stderr.splitlines() if "ignored" in x]
    assert len(warnings) == 1 and "heads contain a cycle" in warnings[0] and "--no-cache" in warnings[0]
    assert "Traceback" not in proc.stderr


def test_the_cache_check_of_heads_is_the_feature_stages() -> None:
    """A cached entry's heads are refused exactly when the feature stage would refuse them (every head
    vector of up to 5 words)."""
    import itertools

    from synprep.features.line import _sentence_heads
    from synprep.parse.wellformed import heads_problem

    for n in range(1, 6):
        for heads in itertools.product(range(n + 2), repeat=n):  # n + 1: out of range
            try:
                _sentence_heads(list(heads))
                fine = True
            except ValueError:
                fine = False
            assert (heads_problem(list(heads)) is None) == fine, heads
