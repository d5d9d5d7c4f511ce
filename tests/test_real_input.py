"""Ordinary real-world input never gives wrong data that ``synprep check`` calls OK.

Each test here failed before its fix: same language on both sides, already tokenized input, a
byte-order mark, ``--parser conllu`` with a ``--src`` of another text, exit statuses. Real stanza
runs (the offline models in ../shared/data) on a few lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, run_cli
from pipeline_runs import folder_bytes

from synprep.errors import InputError
from synprep.shards import check_dir, open_split
from synprep.vocab import Vocab

SAMPLE = ROOT / "sample_data"


def head(src: Path, dst: Path, n: int) -> Path:
    dst.write_text("".join(src.read_text(encoding="utf-8").splitlines(keepends=True)[:n]), encoding="utf-8")
    return dst


def stanza_args(stanza_dir: Path, cache: Path) -> list[str]:
    return ["--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "--cache", str(cache)]


def unbpe(pieces: list[str]) -> list[str]:
    return " ".join(pieces).replace("@@ ", "").split()


# --- item 1: the same language on both sides -------------------------------------------------------


def test_same_language_on_both_sides_stores_the_targets(tmp_path, stanza_dir):
    """``-s en -t en`` (English source, German text as target): the stored targets are the German lines."""
    from synprep.text.tokenize import tokenize_stream

    src, tgt = head(SAMPLE / "valid.en", tmp_path / "a.en", 12), head(SAMPLE / "valid.de", tmp_path / "b.en", 12)
    out = tmp_path / "out"
    cmd = ("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "en", "-t", "en", "--out", str(out),
           "--merges", "200", "--no-clean", "--no-language-check",  # German text given as -t en, on purpose
           *stanza_args(stanza_dir, tmp_path / "cache.sqlite"))
    run_cli(*cmd)
    assert check_dir(out).ok
    before = folder_bytes(out)
    run_cli(*cmd)  # a same-language folder of this version resumes (nothing left to do), never refused
    assert folder_bytes(out) == before
    assert (out / "text" / "train.tok.src.en").exists() and (out / "text" / "train.tok.tgt.en").exists()
    vocab = Vocab.load(out / "dict.txt")
    want_tgt = list(tokenize_stream(tgt.read_text(encoding="utf-8").splitlines(), "en"))
    want_src = list(tokenize_stream(src.read_text(encoding="utf-8").splitlines(), "en"))
    [reader] = open_split(out, "train")
    assert len(reader) == 12
    for k in range(len(reader)):
        rec = reader[k]
        assert unbpe(vocab.decode(rec.tgt_ids)) == want_tgt[rec.line - 1].split()
        assert unbpe(vocab.decode(rec.src_ids)) == want_src[rec.line - 1].split()
    shown = run_cli("show", str(out), "--split", "train", "--index", "0").stdout
    assert " ".join(vocab.decode(reader[0].tgt_ids)) in shown.split("target:")[1]
    assert "G@@ uten" in shown.split("target:")[1] or "Guten" in shown.split("target:")[1]


def test_same_language_with_spm_stores_the_targets(tmp_path, stanza_dir):
    """``--subword spm`` reads the raw lines and writes its own files: named by side too, so the
    stored targets are the German lines, not copies of the English sources."""
    import sentencepiece as spm

    src, tgt = head(SAMPLE / "valid.en", tmp_path / "a.en", 12), head(SAMPLE / "valid.de", tmp_path / "b.en", 12)
    out = tmp_path / "out"
    run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "en", "-t", "en", "--out", str(out),
            "--subword", "spm", "--vocab-size", "150", "--no-clean", "--no-language-check",  # German as -t en
            *stanza_args(stanza_dir, tmp_path / "cache.sqlite"))
    assert check_dir(out).ok
    for name in ("raw", "spm"):
        assert (out / "text" / f"train.{name}.src.en").exists() and (out / "text" / f"train.{name}.tgt.en").exists()
    sp = spm.SentencePieceProcessor(model_file=str(out / "spm.model"))
    vocab = Vocab.load(out / "dict.txt")
    want_tgt = tgt.read_text(encoding="utf-8").splitlines()
    want_src = src.read_text(encoding="utf-8").splitlines()
    [reader] = open_split(out, "train")
    assert len(reader) == 12
    for k in range(len(reader)):
        rec = reader[k]
        assert sp.decode_pieces(vocab.decode(rec.tgt_ids)) == want_tgt[rec.line - 1].strip()
        assert sp.decode_pieces(vocab.decode(rec.src_ids)) == want_src[rec.line - 1].strip()


def test_a_same_language_folder_of_the_old_layout_is_refused(tmp_path):
    out = tmp_path / "out"
    (out / "text").mkdir(parents=True)
    (out / "text" / "train.tok.en").write_text("a\n")  # what the old version left: one file for both sides
    src = head(SAMPLE / "valid.en", tmp_path / "a.en", 3)
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(src), "-s", "en", "-t", "en", "--out", str(out),
                   "--no-cache", check=False)
    assert proc.returncode == 2, proc.stderr
    assert "train.tok.en" in proc.stderr and "overwrote" in proc.stderr and "delete" in proc.stderr


# --- item 2: already tokenized input ---------------------------------------------------------------


@pytest.fixture
def tokenized_pair(shared_data, tmp_path) -> tuple[Path, Path]:
    """The first 30 lines of IWSLT14's tokenized, escaped, lowercased test set (fairseq's tmp/)."""
    tmp = shared_data / "iwslt14_de-en" / "fairseq_prepared" / "tmp"
    return head(tmp / "test.de", tmp_path / "tok.de", 30), head(tmp / "test.en", tmp_path / "tok.en", 30)


def test_tokenized_input_without_the_switch_is_refused(tokenized_pair, tmp_path):
    src, tgt = tokenized_pair
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(out),
                   "--no-cache", check=False)
    assert proc.returncode == 2, proc.stderr
    first = next(n for n, line in enumerate(tgt.read_text().splitlines(), 1) if "&apos;" in line)
    assert f"{tgt}:{first}: '&apos;' is a Moses escape" in proc.stderr
    assert "--tokenized" in proc.stderr and "Traceback" not in proc.stderr
    assert not (out / "text").exists() or not any((out / "text").iterdir())


def test_html_escapes_in_untokenized_text_are_not_taken_for_tokenized_input(shared_data, tmp_path, caplog):
    """Multi30k's raw captions hold `&amp;` on 16 lines (`stone &amp; tile.`): untokenized text with HTML
    escapes, which `make multi30k` must still run on; tokenized text is still refused."""
    import gzip
    import logging

    from synprep.pipeline import refuse_tokenized

    with gzip.open(shared_data / "multi30k" / "train.en.gz", "rt", encoding="utf-8") as f:
        lines = [line for line in f if "&amp;" in line]
    assert len(lines) > 5
    raw = tmp_path / "m30k.en"
    raw.write_text("".join(lines), encoding="utf-8")
    caplog.set_level(logging.WARNING, logger="synprep")
    refuse_tokenized(str(raw))
    [warning] = [r.getMessage() for r in caplog.records]
    assert f"{raw}:1: '&amp;': {len(lines)} line(s)" in warning and "kept as text" in warning
    tok = head(shared_data / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / "test.en", tmp_path / "t.en", 40)
    with pytest.raises(InputError, match="is already tokenized"):
        refuse_tokenized(str(tok))


def test_tokenized_input_keeps_its_tokens(tokenized_pair, tmp_path, stanza_dir):
    src, tgt = tokenized_pair
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(out),
                   "--tokenized", "--no-clean", "--merges", "300", *stanza_args(stanza_dir, tmp_path / "c.sqlite"))
    assert "tok:given" in proc.stderr
    vocab = Vocab.load(out / "dict.txt")
    src_lines, tgt_lines = src.read_text().splitlines(), tgt.read_text().splitlines()
    readers = open_split(out, "train")
    n = 0
    for r in readers:
        for k in range(len(r)):
            rec = r[k]
            assert unbpe(vocab.decode(rec.src_ids)) == src_lines[rec.line - 1].split()
            assert unbpe(vocab.decode(rec.tgt_ids)) == tgt_lines[rec.line - 1].split()
            assert len(rec.heads) == len(src_lines[rec.line - 1].split())  # one parsed word per token
            n += 1
    assert n == 30
    # the parser saw the unescaped words ('"', never '&', 'quot', ';')
    shown = run_cli("show", str(out), "--split", "train", "--index", "26").stdout
    assert '"' in shown and "&quot;" in shown


# --- item 4: options that have no effect ------------------------------------------------------------


def _pud(shared_data: Path, tmp_path: Path, n: int) -> tuple[Path, list[str]]:
    """The first n sentences of English PUD (gold CoNLL-U) and their '# text' lines."""
    blocks = (shared_data / "ud" / "en_pud-ud-test.conllu").read_text(encoding="utf-8").split("\n\n")[:n]
    gold = tmp_path / "gold.conllu"
    gold.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    texts = [line[len("# text = "):] for b in blocks for line in b.splitlines() if line.startswith("# text = ")]
    return gold, texts


def test_conllu_import_checks_src_against_the_parsed_words(shared_data, tmp_path):
    """--src beside --parser conllu was accepted and ignored, even another text, while inputs.json said used."""
    gold, texts = _pud(shared_data, tmp_path, 6)
    tgt = head(SAMPLE / "valid.de", tmp_path / "t.de", 6)
    other = tmp_path / "other.en"
    other.write_text("\n".join(texts[:3] + ["This is not the parsed sentence ."] + texts[4:]) + "\n")
    base = ["pipeline", "--parser", "conllu", "--conllu", str(gold), "--tgt", str(tgt), "-s", "en", "-t", "de",
            "--merges", "100"]
    proc = run_cli(*base, "--src", str(other), "--out", str(tmp_path / "bad"), check=False)
    assert proc.returncode == 2, proc.stderr
    assert f"{other}:4: this line is not the text of the CoNLL-U parse of line 4" in proc.stderr
    assert not list((tmp_path / "bad").glob("*.h5"))
    short = head(other, tmp_path / "short.en", 3)
    proc = run_cli(*base, "--src", str(short), "--out", str(tmp_path / "short"), check=False)
    assert proc.returncode == 2 and "line counts differ" in proc.stderr
    # the text that was parsed is accepted (tokenization differs from Moses', the characters do not)
    good = tmp_path / "good.en"
    good.write_text("\n".join(texts) + "\n")
    run_cli(*base, "--src", str(good), "--out", str(tmp_path / "good"))
    assert check_dir(tmp_path / "good").ok


@pytest.mark.parametrize(("args", "named"), [
    (["--parser", "conllu", "--conllu", "X", "--stanza-dir", "D"], "--stanza-dir has no effect with --parser conllu"),
    # (--max-words applies to imported parses too: tests/test_bounds.py)
    (["--parser", "conllu", "--conllu", "X", "--label-map", "M"], "--label-map has no effect with --parser conllu"),
    (["--spacy-model", "ja_ginza"], "--spacy-model has no effect with --parser stanza"),
    (["--parser", "spacy", "--spacy-model", "ja_ginza", "--stanza-dir", "D"],
     "--stanza-dir has no effect with --parser spacy"),
    (["--conllu", "X"], "--conllu has no effect with --parser stanza"),
    (["--codes", "C", "--merges", "5"], "--merges has no effect with --codes"),
    (["--no-cache", "--cache", "C"], "--cache has no effect with --no-cache"),
    (["--scheduler", "tcp://h:1"], "--scheduler has no effect without --backend dask"),
])
def test_an_option_without_effect_is_an_error(tmp_path, args, named):
    src = head(SAMPLE / "valid.de", tmp_path / "s.de", 2)
    tgt = head(SAMPLE / "valid.en", tmp_path / "t.en", 2)
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out",
                   str(tmp_path / "out"), *args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert named in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_parse_refuses_options_of_the_other_parser():
    proc = run_cli("parse", "-l", "en", "--corenlp-endpoint", "http://x:9000", input="a\n", check=False)
    assert proc.returncode == 2 and "--corenlp-endpoint has no effect with --parser stanza" in proc.stderr
    proc = run_cli("parse", "-l", "en", "--parser", "corenlp", "--label-map", "M", input="a\n", check=False)
    assert proc.returncode == 2 and "--label-map has no effect with --parser corenlp" in proc.stderr


# --- items 6, 9, 10: retry after a fix, exit statuses, one record of every drop ---------------------


def test_a_fixed_input_is_accepted_and_every_drop_is_in_dropped_tsv(tmp_path, stanza_dir):
    """A run that failed on a bad byte is retried after the fix (not refused as 'made from other input');
    its parse drops are listed in text/train.dropped.tsv beside the cleaning's; check says an interrupted
    split is incomplete and the same command resumes it."""
    lines = (SAMPLE / "valid.de").read_text(encoding="utf-8").splitlines()[:6]
    src, tgt = tmp_path / "s.de", head(SAMPLE / "valid.en", tmp_path / "t.en", 6)
    src.write_bytes("\n".join(lines[:2]).encode() + b"\nkaputt \xff\n" + "\n".join(lines[3:]).encode() + b"\n")
    out = tmp_path / "out"
    args = ["pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(out),
            "--merges", "100", "--max-words", "12", "--shard-size", "2", *stanza_args(stanza_dir, tmp_path / "c.db")]
    proc = run_cli(*args, check=False)
    assert proc.returncode == 2 and f"{src}:3: not valid UTF-8" in proc.stderr
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")  # fixed in place
    run_cli(*args)
    m = json.loads((out / "manifest.json").read_text())["splits"]["train"]
    parse_drops = [(n, r) for n, r, _ in m["dropped_lines"] if r.startswith("parse:")]
    assert parse_drops, "--max-words 12 drops some of these lines"
    rows = [r.split("\t") for r in (out / "text" / "train.dropped.tsv").read_text().splitlines()]
    assert rows[0] == ["line", "reason", "src_tokens", "tgt_tokens", "detail"]
    listed = {(int(r[0]), r[1] if ":" in r[1] else f"clean:{r[1]}") for r in rows[1:]}
    assert listed == {(n, r) for n, r, _ in m["dropped_lines"]}
    # an interrupted split: the manifest has its first shard only
    raw = json.loads((out / "manifest.json").read_text())
    split = raw["splits"]["train"]
    last = split["shards"].pop()
    (out / last["file"]).unlink()
    split["pairs"] -= last["pairs"]
    split["dropped_lines"] = [d for d in split["dropped_lines"] if d[1].startswith("clean:") or d[0] < last["first_line"]]
    split["dropped"] = {k: sum(1 for d in split["dropped_lines"] if d[1] == k) for k in split["dropped"]}
    (out / "manifest.json").write_text(json.dumps(raw))
    proc = run_cli("check", str(out), check=False)
    assert proc.returncode != 0
    assert "incomplete" in proc.stdout + proc.stderr and "running the same command again resumes it" in \
        proc.stdout + proc.stderr
    run_cli(*args)
    assert check_dir(out).ok


def test_input_errors_exit_with_status_2(tmp_path):
    src = head(SAMPLE / "valid.de", tmp_path / "s.de", 2)
    tgt = head(SAMPLE / "valid.en", tmp_path / "t.en", 2)
    a_file = tmp_path / "file"
    a_file.write_text("x\n")
    for args, message in [
        (["--src", str(tmp_path), "--tgt", str(tgt), "--out", str(tmp_path / "o1")], "is a directory"),
        (["--src", str(src), "--tgt", str(tgt), "--out", str(a_file)], "is a file, not a folder (--out)"),
        (["--src", str(src), "--tgt", str(tgt), "--out", str(a_file / "sub")], "is a file, not a folder"),
    ]:
        proc = run_cli("pipeline", *args, "-s", "de", "-t", "en", "--no-cache", check=False)
        assert proc.returncode == 2, proc.stderr
        assert message in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("annotate", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(a_file),
                   "--no-cache", check=False)
    assert proc.returncode == 2 and "is a file, not a folder" in proc.stderr


# --- the data-side configuration ---------------------------------------------------------------------


def test_config_file_reproduces_the_folder_byte_for_byte(tmp_path, stanza_dir):
    """`synprep pipeline --config OUT/pipeline.json` with the same inputs writes the same bytes."""
    from pipeline_runs import assert_same_folder

    src, tgt = head(SAMPLE / "train.de", tmp_path / "s.de", 20), head(SAMPLE / "train.en", tmp_path / "t.en", 20)
    cache = ["--stanza-dir", str(stanza_dir), "--cache", str(tmp_path / "c.db")]
    first, again = tmp_path / "first", tmp_path / "again"
    run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(first),
            "--lowercase", "--merges", "150", "--shard-size", "7", "--max-words", "30", "--batch-size", "8",
            "--ratio", "2.5", "--stanza-package", "synprep", *cache)
    cfg = json.loads((first / "pipeline.json").read_text())
    assert (cfg["merges"], cfg["shard_size"], cfg["max_words"], cfg["batch_size"], cfg["ratio"]) == (150, 7, 30, 8, 2.5)
    run_cli("pipeline", "--config", str(first / "pipeline.json"), "--src", str(src), "--tgt", str(tgt),
            "--out", str(again), *cache)
    assert_same_folder(again, first)
    # a value given beside the folder's configuration that differs is refused, naming the field (a later split:
    # the train split's own settings left out are refused before, test_mistake_matrix.py)
    proc = run_cli("pipeline", "--split", "valid", "--src", str(src), "--tgt", str(tgt), "--out", str(first),
                   "--batch-size", "9", *cache, check=False)
    assert proc.returncode == 2 and "batch_size: the folder has 8, this run 9" in proc.stderr
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "--out", str(first), "--batch-size", "9",
                   *cache, check=False)
    assert proc.returncode == 2 and "was made with --lowercase --ratio 2.5 --merges 150 --stanza-package synprep " \
        "--max-words 30 --shard-size 7, which this command leaves out (the default is --no-lowercase --ratio 1.5 " \
        "--merges 10000 no --stanza-package --max-words 250 --shard-size 10000)" in proc.stderr


def test_a_pipeline_json_of_the_earlier_layout_is_read(tmp_path):
    from synprep.config import DataConfig, differences

    old = {"fairseq_compat": False, "ldd_threshold": 0.01, "lowercase": True, "merges": 1000, "mode": "pipeline",
           "parser": {"batch_size": 16, "constituency": True, "identity": "stanza-1.15.0/de/synprep/abc",
                      "lang": "de", "ldd_threshold": 0.01, "max_words": 250, "name": "stanza", "package": "synprep",
                      "ssplit": True}, "shard_size": 50, "src_lang": "de", "tgt_lang": "en",
           "tokenizer": "sacremoses-0.2.0"}
    path = tmp_path / "pipeline.json"
    path.write_text(json.dumps(old))
    cfg = DataConfig.load(path)
    assert (cfg.text.lowercase, cfg.subword.merges, cfg.parse.batch_size, cfg.parse.stanza_package,
            cfg.shards.shard_size) == (True, 1000, 16, "synprep", 50)
    assert differences(cfg, cfg.replace(merges=2000)) == ["merges: the folder has 1000, this run 2000"]
    path.write_text(json.dumps({"format": "synprep-data-config", "version": 99}))
    with pytest.raises(Exception, match="newer"):
        DataConfig.load(path)
    path.write_text(json.dumps({"merge": 5}))
    with pytest.raises(Exception, match="unknown field"):
        DataConfig.load(path)


# --- item 5 (first sentence): --trees on pipeline and annotate ---------------------------------------


GERMAN = ["Ich schwimme .", "Der Hund läuft schnell .", "Sie liest Bücher .", "Wir lachen ."]
TREES = ["(ROOT (S (NP (PPER Ich)) (VP (VVFIN schwimme)) (PUNCT .)))",
         "(ROOT (S (NP (ART Der) (NN Hund)) (VP (VVFIN läuft) (ADV schnell)) (PUNCT .)))",
         "(ROOT (S (NP (PPER Sie)) (VP (VVFIN liest) (NP (NN Bücher))) (PUNCT .)))",
         "(ROOT (S (NP (PPER Wir)) (VP (VVFIN lachen)) (PUNCT .)))"]


def test_own_trees_in_one_command(tmp_path, stanza_dir):
    """The German models here have no constituency parser: the gaps come from the user's trees."""
    src, tgt, trees = tmp_path / "s.de", tmp_path / "t.en", tmp_path / "trees.txt"
    src.write_text("\n".join(GERMAN) + "\n")
    tgt.write_text("I swim .\nThe dog runs fast .\nShe reads books .\nWe laugh .\n")
    trees.write_text("\n".join(TREES) + "\n")
    base = ["--tgt", str(tgt), "-s", "de", "-t", "en", "--no-clean", *stanza_args(stanza_dir, tmp_path / "c.db")]
    out = tmp_path / "out"
    run_cli("pipeline", "--src", str(src), "--out", str(out), "--merges", "20", "--trees", str(trees), *base)
    [shard] = open_split(out, "train")
    assert shard.attrs["tree_source"] == "constituency" and len(shard) == 4
    # annotate: the same trees beside the BPE'd text
    bpe = out / "text" / "train.bpe.de"
    run_cli("annotate", "--src", str(bpe), "--tgt", str(out / "text" / "train.bpe.en"), "-s", "de", "-t", "en",
            "--out", str(tmp_path / "ann"), "--trees", str(trees), *stanza_args(stanza_dir, tmp_path / "c.db"))
    [ann] = open_split(tmp_path / "ann", "train")
    assert ann.attrs["tree_source"] == "constituency"
    assert [ann[k].gaps_cnf.tolist() for k in range(4)] == [shard[k].gaps_cnf.tolist() for k in range(4)]
    # a tree whose leaves are not the line's words names the trees file and the line
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(TREES[:2] + [TREES[2].replace("Bücher", "Zeitungen")] + TREES[3:]) + "\n")
    proc = run_cli("pipeline", "--src", str(src), "--out", str(tmp_path / "bad"), "--merges", "20", "--trees",
                   str(bad), *base, check=False)
    assert proc.returncode == 2 and f"{bad}:3:" in proc.stderr, proc.stderr


# --- items 3 and 8 end to end: a byte-order mark, gzip input ------------------------------------------


def test_bom_and_gzip_input_through_pipeline(tmp_path, stanza_dir):
    """A BOM became an invisible first word (parsed, stored, in dict.txt); .gz gave 'line counts differ'."""
    import gzip

    src = tmp_path / "s.de.gz"
    with gzip.open(src, "wb") as f:
        f.write(b"\xef\xbb\xbf" + (SAMPLE / "valid.de").read_bytes().split(b"\n", 6)[0] + b"\n" +
                b"\n".join((SAMPLE / "valid.de").read_bytes().split(b"\n")[1:6]) + b"\n")
    tgt = tmp_path / "t.en"
    tgt.write_bytes(b"\xef\xbb\xbf" + b"\n".join((SAMPLE / "valid.en").read_bytes().split(b"\n")[:6]) + b"\n")
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(out),
                   "--merges", "50", "--no-clean", *stanza_args(stanza_dir, tmp_path / "c.db"))
    assert "byte-order mark" in proc.stderr
    assert "\ufeff" not in (out / "dict.txt").read_text(encoding="utf-8")
    [shard] = open_split(out, "train")
    vocab = Vocab.load(out / "dict.txt")
    assert len(shard) == 6
    assert unbpe(vocab.decode(shard[0].src_ids))[0] == "Guten"
    assert unbpe(vocab.decode(shard[0].tgt_ids))[0] == "Good"


# --- one signature format --------------------------------------------------------------------------


def test_pipeline_and_parse_name_the_parser_alike_with_its_model_digest(tmp_path, stanza_dir):
    src = head(SAMPLE / "valid.de", tmp_path / "s.de", 3)
    tgt = head(SAMPLE / "valid.en", tmp_path / "t.en", 3)
    out = tmp_path / "out"
    run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(out),
            "--merges", "30", "--no-clean", *stanza_args(stanza_dir, tmp_path / "c.db"))
    fields = dict(f.split(":", 1) for f in json.loads((out / "manifest.json").read_text())["signature"].split("|"))
    proc = run_cli("parse", "-l", "de", *stanza_args(stanza_dir, tmp_path / "c.db"), input="Guten Morgen .\n")
    parse_fields = dict(f.split(":", 1) for f in proc.stderr.strip().splitlines()[-1].split("|"))
    assert fields["parser"] == parse_fields["parser"] and "#" in fields["parser"]
    [shard] = open_split(out, "train")
    assert shard.attrs["signature"] == json.loads((out / "manifest.json").read_text())["signature"]


def test_a_folder_with_the_earlier_signature_format_keeps_it(tmp_path):
    from synprep.errors import ConfigError
    from synprep.pipeline import _manifest
    from synprep.shards import Manifest

    Manifest(signature="synprep:0.1.0|parser:stanza-1.15.0/de/synprep", config={"a": 1}).save(tmp_path)
    vocab = Vocab.build([head(SAMPLE / "valid.en", tmp_path / "v.en", 2)])
    m = _manifest(tmp_path, "synprep:0.1.0|parser:stanza-1.15.0/synprep/de#12345678", {"a": 1}, vocab,
                  "synprep:0.1.0|parser:stanza-1.15.0/de/synprep")
    assert m.signature == "synprep:0.1.0|parser:stanza-1.15.0/de/synprep"
    with pytest.raises(ConfigError, match="has signature"):
        _manifest(tmp_path, "synprep:0.1.0|parser:other#1", {"a": 1}, vocab, "synprep:0.1.0|parser:other")
