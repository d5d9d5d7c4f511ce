"""The parser reads the cased source, not fairseq's lowercased BPE'd text.

Real parts only: fairseq's prepared IWSLT14 test split (lowercased BPE, ../shared/data), the cased
tokenized text that ``synprep iwslt14`` keeps beside it, and the offline stanza German models.
"""

from __future__ import annotations

import json

import h5py
import pytest
from helpers import run_cli

from synprep.shards.reader import open_split
from synprep.text.escape import unescape_tokens
from synprep.text.tokenize import moses_lowercase

N = 30


@pytest.fixture(scope="module")
def iwslt_out(shared_data, tmp_path_factory):
    """``synprep iwslt14 --splits test`` with fairseq's codes (its files are byte-identical to fairseq's)."""
    iwslt = shared_data / "iwslt14_de-en"
    out = tmp_path_factory.mktemp("iwslt14") / "out"
    run_cli("iwslt14", "--orig", str(iwslt / "orig"), "--splits", "test", "--codes",
            str(iwslt / "fairseq_prepared" / "code"), "--out", str(out))
    return out


@pytest.fixture(scope="module")
def first_lines(iwslt_out, shared_data, tmp_path_factory):
    """The first N lines of fairseq's test.de/test.en (lowercased, BPE'd) and of the recipe's cased text."""
    base = tmp_path_factory.mktemp("first")
    prepared = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    files = {}
    for name, path in (("src", prepared / "test.de"), ("tgt", prepared / "test.en"),
                       ("cased", iwslt_out / "tmp" / "test.cased.de"), ("tok", prepared / "tmp" / "test.de")):
        files[name] = base / name
        files[name].write_text("".join(path.read_text(encoding="utf-8").splitlines(True)[:N]), encoding="utf-8")
    return files


def stanza_args(stanza_dir, cache):
    return ["--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "--cache", str(cache)]


@pytest.fixture(scope="module")
def annotated(first_lines, stanza_dir, tmp_path_factory):
    """annotate with --parse-src, and annotate without it (the route before --parse-src)."""
    base = tmp_path_factory.mktemp("runs")
    cache = base / "cache.sqlite"
    f = first_lines
    common = ["--split", "test", "--vocab-split", "test", "--src", str(f["src"]), "--tgt", str(f["tgt"]), "-s", "de", "-t", "en"]
    with_cased = run_cli("annotate", *common, "--parse-src", str(f["cased"]), "--out", str(base / "cased"),
                         *stanza_args(stanza_dir, cache))
    without = run_cli("annotate", *common, "--out", str(base / "lower"), *stanza_args(stanza_dir, cache))
    return base, with_cased, without


@pytest.fixture(scope="module")
def codes_here(first_lines, shared_data):
    code = first_lines["src"].parent / "code"
    code.write_bytes((shared_data / "iwslt14_de-en" / "fairseq_prepared" / "code").read_bytes())
    return code


def records(folder):
    out = []
    for shard in open_split(folder, "test"):
        out += [(shard.lines[i], shard[i], shard.words(i)) for i in range(len(shard))]
    return out


def test_recipe_keeps_the_cased_text_of_the_lowercased_one(iwslt_out, shared_data):
    """tmp/test.cased.{de,en}: lowercased, they are fairseq's tmp/test.{de,en} byte for byte."""
    for lang in ("de", "en"):
        cased = (iwslt_out / "tmp" / f"test.cased.{lang}").read_text(encoding="utf-8")
        fairseq = (shared_data / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / f"test.{lang}").read_text(
            encoding="utf-8")
        assert moses_lowercase(cased) == fairseq
        assert cased != fairseq  # it is cased


def test_parse_src_heads_and_upos_equal_a_cased_run(annotated, first_lines, codes_here, stanza_dir, tmp_path):
    """The meaning: annotate --parse-src parses what a cased pipeline run parses (heads, UPOS, the words)."""
    base, proc, _ = annotated
    assert "lowercase" not in proc.stderr
    assert "pwords:cased" in proc.stderr.strip().splitlines()[-1]
    f = first_lines
    tgt_tok = tmp_path / "tgt.tok"
    tgt_tok.write_text(f["tgt"].read_text(encoding="utf-8").replace("@@ ", ""), encoding="utf-8")
    run_cli("pipeline", "--split", "test", "--tokenized", "--lowercase", "--src", str(f["cased"]), "--tgt",
            str(tgt_tok), "-s", "de", "-t", "en", "--out", str(tmp_path / "pipe"), "--codes", str(codes_here),
            "--vocab", str(base / "cased" / "dict.txt"), *stanza_args(stanza_dir, base / "cache.sqlite"))
    ann, ref = records(base / "cased"), records(tmp_path / "pipe")
    assert len(ann) == len(ref) == N
    cased_lines = f["cased"].read_text(encoding="utf-8").splitlines()
    for (n, a, wa), (m, r, wr) in zip(ann, ref, strict=True):
        assert n == m
        assert a.src_ids.tolist() == r.src_ids.tolist()  # the same pieces (fairseq's BPE of the same text)
        assert a.heads.tolist() == r.heads.tolist() and a.upos.tolist() == r.upos.tolist()
        assert wa == wr == unescape_tokens(cased_lines[n - 1].split())  # the words the parser read, cased


def test_lowercased_route_warns_and_parses_worse(annotated):
    """Without --parse-src: a warning naming lowercase and --parse-src, and other UPOS than the cased parse."""
    base, _, proc = annotated
    warning = [x for x in proc.stderr.splitlines() if "warning" in x]
    assert len(warning) == 1 and "lowercase" in warning[0] and "--parse-src" in warning[0]
    cased, lower = records(base / "cased"), records(base / "lower")
    assert [r.heads.tolist() for _, r, _ in cased] != [r.heads.tolist() for _, r, _ in lower]
    assert sum(a.upos.tolist() != b.upos.tolist() for (_, a, _), (_, b, _) in zip(cased, lower, strict=True)) >= 5
    assert all(w == [x.lower() for x in w] for _, _, w in lower)  # stored: the lowercased words it read


def test_parse_src_mismatch_names_the_line_and_word(first_lines, stanza_dir, tmp_path):
    f = first_lines
    lines = f["cased"].read_text(encoding="utf-8").splitlines()
    words = lines[2].split()
    words[3] = "Haus"
    lines[2] = " ".join(words)
    bad = tmp_path / "bad.cased.de"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = run_cli("annotate", "--split", "test", "--vocab-split", "test", "--src", str(f["src"]), "--tgt", str(f["tgt"]), "-s", "de",
                   "-t", "en", "--parse-src", str(bad), "--out", str(out), *stanza_args(stanza_dir, tmp_path / "c"),
                   check=False)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert err[-1] == (f"synprep: error: {bad}:3: word 4 is 'Haus' here but "
                       f"{unescape_tokens(f['tok'].read_text(encoding='utf-8').splitlines()[2].split())[3]!r} in --src: "
                       "--parse-src must hold the same tokens as --src (its pieces joined), up to case")
    assert not list(out.glob("*.h5"))


def test_parse_src_of_another_length_is_refused_before_anything_is_written(first_lines, tmp_path):
    f = first_lines
    short = tmp_path / "short.de"
    short.write_text("".join(f["cased"].read_text(encoding="utf-8").splitlines(True)[:5]), encoding="utf-8")
    out = tmp_path / "out"
    proc = run_cli("annotate", "--src", str(f["src"]), "--tgt", str(f["tgt"]), "-s", "de", "-t", "en",
                   "--parse-src", str(short), "--out", str(out), check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"synprep: error: {short}: line counts differ: --parse-src has 5 lines, --src {f['src']} {N}")
    assert not out.exists()


def test_words_are_an_additive_dataset(annotated):
    """The shards' ``words``: UTF-8 bytes on the word axis (docs/FORMAT.md), beside unchanged version-1 data."""
    base, _, _ = annotated
    shard = sorted((base / "cased").glob("test.*.h5"))[0]
    with h5py.File(shard, "r") as f:
        assert f.attrs["format_version"] == 1
        words = f["words"][()].tobytes().decode("utf-8").split("\n")[:-1]
        assert len(words) == int(f["offsets/word"][-1]) == len(f["heads"])
        config = json.loads(f.attrs["config"])
    assert config["parse_src"] is True and len(config["parse_src_sha256"]) == 64
    assert config["parser"]["constituency"] is False  # no German constituency model ran (item 5)


def test_show_prints_the_words_the_parser_read(annotated, first_lines):
    base, _, _ = annotated
    shown = run_cli("show", str(base / "cased"), "--split", "test", "--index", "0").stdout
    first = unescape_tokens(first_lines["cased"].read_text(encoding="utf-8").splitlines()[0].split())
    assert "the words as the parser read them" in shown
    pieces = first_lines["src"].read_text(encoding="utf-8").splitlines()[0]
    assert shown.index("  " + pieces) < shown.index("the words as the parser read them")  # below the pieces
    rows = [r.split() for r in shown.split("id  word")[1].splitlines()[1:len(first) + 1]]
    assert [r[1] for r in rows] == first and first[0] == "Wissen"  # cased, as the parser read them
