"""``synprep parse`` and ``synprep models`` as a user runs them."""

from __future__ import annotations

from pathlib import Path

import conllu
import pytest
from helpers import run_cli

from synprep.parse.conllu_io import read_conllu

pytestmark = pytest.mark.slow


def stanza_args(stanza_dir: Path, lang: str = "en") -> list[str]:
    return ["parse", "-l", lang, "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep"]


def test_stdin_to_stdout_with_an_empty_line(tmp_path: Path, stanza_dir: Path) -> None:
    text = "it &apos;s a river . i swim across it .\n\nthe old man saw a &quot; dog &quot; .\n"
    cache = tmp_path / "cache.sqlite"
    proc = run_cli(*stanza_args(stanza_dir), "--cache", str(cache), input=text)
    out = proc.stdout
    blocks = conllu.parse(out)
    assert [b.metadata["line"] for b in blocks] == ["1", "1", "2", "3"]
    assert blocks[2].metadata["error"] == "empty line" and len(blocks[2]) == 0
    assert [t["form"] for t in blocks[0]] == ["it", "'s", "a", "river", "."]  # unescaped for the parser
    assert [t["form"] for t in blocks[3]][5:8] == ['"', "dog", '"']
    for b in (blocks[0], blocks[1], blocks[3]):
        assert b.metadata["constituency"].startswith("(ROOT ")
        assert b.metadata["ldd_threshold"] == "0.01" and b.metadata["ldd"]
        assert sum(t["head"] == 0 for t in b) == 1
    lines = list(read_conllu_text(tmp_path, out))
    assert [(pl.line, len(pl.sentences), pl.error) for pl in lines] == [(1, 2, None), (2, 0, "empty line"), (3, 1, None)]
    assert "synprep: 3 lines: 3 sentences (0 from the cache, 3 by the parser, 0 repeated), 1 failed lines" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("synprep:0.1.0|parser:stanza-1.15.0/synprep/en+const#")
    # the same input again: everything from the cache, the same output
    again = run_cli(*stanza_args(stanza_dir), "--cache", str(cache), input=text)
    assert again.stdout == out
    assert "(3 from the cache, 0 by the parser, 0 repeated)" in again.stderr


def test_counts_add_up_with_repeated_sentences(tmp_path: Path, stanza_dir: Path) -> None:
    # "i swim ." three times (twice on one line): parsed once, the counts still add up
    text = "i swim . i swim .\nthe river is old .\ni swim .\nthe dog barks .\n"
    cache = tmp_path / "cache.sqlite"
    proc = run_cli(*stanza_args(stanza_dir), "--cache", str(cache), input=text)
    assert "synprep: 4 lines: 5 sentences (0 from the cache, 3 by the parser, 2 repeated), 0 failed lines" in proc.stderr
    again = run_cli(*stanza_args(stanza_dir), "--cache", str(cache), input=text)
    assert "synprep: 4 lines: 5 sentences (5 from the cache, 0 by the parser, 0 repeated)" in again.stderr


def read_conllu_text(tmp_path: Path, text: str):
    p = tmp_path / "out.conllu"
    p.write_text(text, encoding="utf-8")
    return read_conllu(p)


def test_user_trees_files_and_no_ssplit(tmp_path: Path, stanza_dir: Path) -> None:
    src = tmp_path / "in.de"
    src.write_text("das ist gut . wir gehen .\n\nja\n", encoding="utf-8")
    trees = tmp_path / "trees.txt"
    trees.write_text(
        "(ROOT (S (PDS das) (VAFIN ist) (ADJD gut) ($. .) (S (PPER wir) (VVFIN gehen) ($. .))))\n\n(ITJ ja)\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.conllu"
    run_cli(*stanza_args(stanza_dir, "de"), "--no-cache", "--trees", str(trees), "-i", str(src), "-o", str(out))
    lines = list(read_conllu(out))
    # one tree on line 1 = one sentence (the trees decide the sentences, not the splitter)
    assert [len(pl.sentences) for pl in lines] == [1, 0, 1]
    s = lines[0].sentences[0]
    assert s.tree == "(ROOT (S (PDS das) (VAFIN ist) (ADJD gut) ($. .) (S (PPER wir) (VVFIN gehen) ($. .))))"
    assert s.tree_source == "constituency" and sum(h == 0 for h in s.heads) == 1 and s.ldd is not None
    assert lines[2].sentences[0].tree == "(ROOT (ITJ ja))"

    # without trees German has none, and --no-ssplit keeps the line whole
    run_cli(*stanza_args(stanza_dir, "de"), "--no-cache", "--no-ssplit", "-i", str(src), "-o", str(out))
    lines = list(read_conllu(out))
    assert [len(pl.sentences) for pl in lines] == [1, 0, 1] and lines[0].sentences[0].tree is None


def test_trees_that_do_not_match_name_the_line(tmp_path: Path, stanza_dir: Path) -> None:
    trees = tmp_path / "trees.txt"
    trees.write_text("(ROOT (NP (NN ok)))\n(ROOT (S (PPER wir) (VVFIN gingen)))\n", encoding="utf-8")
    proc = run_cli(*stanza_args(stanza_dir, "de"), "--no-cache", "--trees", str(trees), "-o",
                   str(tmp_path / "out.conllu"), input="ok\nwir gehen\n", check=False)
    assert proc.returncode == 2
    assert f"synprep: error: {trees}:2: tree leaf 2 is 'gingen' but word 2 of the line is 'gehen'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out.conllu").exists()  # nothing half-written


def test_missing_models_are_a_clear_error(tmp_path: Path) -> None:
    proc = run_cli("parse", "-l", "en", "--stanza-dir", str(tmp_path), "--no-cache", input="hello .\n", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"no stanza resources in {tmp_path} (resources.json missing); run: synprep models download en" in proc.stderr
    proc = run_cli("parse", "-l", "en", "--parser", "corenlp", "--no-cache", input="hello .\n", check=False,
                   env={"CORENLP_HOME": ""})
    assert proc.returncode == 2 and "needs a CoreNLP installation: set CORENLP_HOME" in proc.stderr


def test_models_info(stanza_dir: Path) -> None:
    out = run_cli("models", "info", "de", "--dir", str(stanza_dir), "--package", "synprep").stdout
    rows = dict(line.split("\t", 1) for line in out.splitlines() if not line.startswith("file"))
    assert rows["processors"] == "tokenize,pos,lemma,depparse"
    assert rows["constituency"].startswith("no")
    assert rows["identity"].startswith("stanza|1.15.0|lang=de|package=synprep|processors=pos,depparse|")
    assert "file\tdepparse_model_path\t" in out


def test_parse_takes_its_section_from_the_generated_options(stanza_dir: Path) -> None:
    # --max-words and --no-ssplit reach the parse in its ParseConfig: with ssplit the first line's two sentences fit
    # (4 and 2 words), without it the line is one sentence of 6 words; a line over the bound is never parsed
    text = "das ist gut . ja .\n"
    split = run_cli(*stanza_args(stanza_dir, "de"), "--no-cache", "--max-words", "4", input=text)
    assert [b.metadata.get("error") for b in conllu.parse(split.stdout)] == [None, None]
    whole = run_cli(*stanza_args(stanza_dir, "de"), "--no-cache", "--max-words", "4", "--no-ssplit", input=text)
    assert [b.metadata["error"] for b in conllu.parse(whole.stdout)] == ["sentence 1 has 6 words (more than max_words=4)"]
    assert "failed: too long: 1" in whole.stderr
