"""The IWSLT14 recipe against fairseq's real prepare-iwslt14.sh output (../shared/data)."""

from __future__ import annotations

import filecmp
import tarfile

import pytest
from helpers import run_cli

from synprep.errors import InputError
from synprep.recipes.iwslt14 import TEST_SETS, prepare
from synprep.text.bpe import learn_bpe
from synprep.text.clean import clean_pairs
from synprep.text.tokenize import moses_lowercase, tokenize_line


@pytest.fixture(scope="module")
def iwslt(shared_data):
    return shared_data / "iwslt14_de-en"


@pytest.fixture(scope="module")
def test_split_out(iwslt, tmp_path_factory):
    out = tmp_path_factory.mktemp("iwslt14") / "out"
    proc = run_cli("iwslt14", "--orig", str(iwslt / "orig"), "--splits", "test",
                   "--codes", str(iwslt / "fairseq_prepared" / "code"), "--out", str(out))
    return out, proc


@pytest.mark.parametrize("name", ["tmp/test.de", "tmp/test.en", "test.de", "test.en", "code"])
def test_must_show_1_test_split_is_byte_identical(test_split_out, iwslt, name):
    out, _ = test_split_out
    ref = iwslt / "fairseq_prepared" / name
    assert (out / name).read_bytes() == ref.read_bytes()
    if name != "code":
        assert (out / name).read_bytes().count(b"\n") == 6750


def test_per_xml_files_are_byte_identical(test_split_out, iwslt):
    out, _ = test_split_out
    names = [f"{ts}.de-en.{lang}" for ts in TEST_SETS for lang in ("de", "en")]
    match, mismatch, errors = filecmp.cmpfiles(out / "tmp", iwslt / "fairseq_prepared" / "tmp", names, shallow=False)
    assert (mismatch, errors) == ([], []) and len(match) == 10


def test_only_the_asked_split_is_written(test_split_out):
    out, proc = test_split_out
    assert sorted(p.name for p in out.iterdir()) == ["code", "test.de", "test.en", "tmp"]
    assert "iwslt14:" in proc.stderr and "recipe:iwslt14" in proc.stderr


@pytest.mark.parametrize("splits,why", [
    ("train", "the train split"),
    ("valid,test", "the valid split"),
    ("test", "learning the BPE codes"),  # no --codes: codes are learned on train
])
def test_must_show_2_missing_train_file(iwslt, tmp_path, splits, why):
    out = tmp_path / "out"
    proc = run_cli("iwslt14", "--orig", str(iwslt / "orig"), "--splits", splits, "--out", str(out), check=False)
    assert proc.returncode == 2, proc.stderr
    assert f"{iwslt / 'orig' / 'train.tags.de-en.de'}: missing input file, needed for {why}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_failure_midway_leaves_out_untouched(iwslt, tmp_path):
    """A bad byte in the last XML file is found after other files were done: nothing is left."""
    orig = tmp_path / "orig"
    orig.mkdir()
    for p in (iwslt / "orig").glob("*.xml"):
        (orig / p.name).symlink_to(p)
    bad = orig / "IWSLT14.TED.tst2012.de-en.en.xml"
    bad.unlink()
    bad.write_bytes(b'<seg id="1"> caf\xe9 </seg>\n')
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine\n")
    with pytest.raises(InputError, match="not valid UTF-8") as e:
        prepare(orig, out, ["test"], codes=iwslt / "fairseq_prepared" / "code")
    assert e.value.path == str(bad) and e.value.line == 1
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


# --- the train path, on a small train.tags file written here in the WIT3 layout --------------

HEADER = {
    "de": ["<url>http://www.ted.com/talks/lang/de/jane_doe_on_the_sea.html</url>",
           "<keywords>talks, ocean, science</keywords>", "<speaker>Jane Doe</speaker>", "<talkid>9001</talkid>",
           "<title>Jane Doe über das Meer</title>",
           "<description>TED Talk Untertitel und Transkript: Jane Doe über das Meer.</description>"],
    "en": ["<url>http://www.ted.com/talks/jane_doe_on_the_sea.html</url>",
           "<keywords>talks, ocean, science</keywords>", "<speaker>Jane Doe</speaker>", "<talkid>9001</talkid>",
           "<title>Jane Doe on the sea</title>",
           "<description>TED Talk Subtitles and Transcript: Jane Doe on the sea.</description>"],
}


@pytest.fixture(scope="module")
def toy_orig(shared_data, iwslt, tmp_path_factory):
    """WIT3 layout: train.tags.de-en.* = a talk header + the 1000 ted_toy pairs; the real XML files."""
    orig = tmp_path_factory.mktemp("wit3") / "de-en"
    orig.mkdir()
    for lang in ("de", "en"):
        body = (shared_data / "ted_toy" / f"train.{lang}").read_text(encoding="utf-8").splitlines()
        (orig / f"train.tags.de-en.{lang}").write_text("\n".join(HEADER[lang] + body) + "\n", encoding="utf-8")
    for p in (iwslt / "orig").glob("*.xml"):
        (orig / p.name).symlink_to(p)
    return orig


@pytest.fixture(scope="module")
def toy_out(toy_orig, tmp_path_factory):
    out = tmp_path_factory.mktemp("toy") / "out"
    report = prepare(toy_orig, out)
    return out, report


def _lines(p):
    return p.read_text(encoding="utf-8").splitlines()


def test_train_steps_follow_prepare_iwslt14(toy_orig, toy_out):
    out, report = toy_out
    # independent re-statement of the script: grep -v / sed, tokenize, clean, lc, NR % 23
    filtered = {}
    for lang in ("de", "en"):
        kept = [x for x in _lines(toy_orig / f"train.tags.de-en.{lang}")
                if not any(t in x for t in ("<url>", "<talkid>", "<keywords>"))]
        for tag in ("<title>", "</title>", "<description>", "</description>"):
            kept = [x.replace(tag, "") for x in kept]
        filtered[lang] = [tokenize_line(x, lang, fairseq_compat=True) for x in kept]
    cleaned = [(moses_lowercase(r.src), moses_lowercase(r.tgt))
               for r in clean_pairs(zip(filtered["de"], filtered["en"], strict=True)) if r.kept]
    for i, lang in enumerate(("de", "en")):
        assert _lines(out / "tmp" / f"valid.{lang}") == [p[i] for n, p in enumerate(cleaned, 1) if n % 23 == 0]
        assert _lines(out / "tmp" / f"train.{lang}") == [p[i] for n, p in enumerate(cleaned, 1) if n % 23]
    # what fairseq keeps and drops of the talk header
    de = _lines(out / "tmp" / "train.de")
    assert de[0] == "&lt; speaker &gt; jane doe &lt; / speaker &gt;"
    assert de[1] == "jane doe über das meer"
    assert not any("9001" in x or "ted.com" in x for x in de)
    # the clean report accounts for every filtered line
    assert report.clean.input == 1003 == len(filtered["de"])
    rows = _lines(out / "tmp" / "train.tags.de-en.dropped.tsv")
    assert len(rows) - 1 == report.clean.n_dropped and report.clean.kept == len(cleaned)
    assert report.lines["valid.de"] == len(cleaned) // 23
    assert report.lines["train.en"] == len(cleaned) - len(cleaned) // 23


def test_codes_are_learned_jointly_on_train(toy_out, tmp_path):
    out, report = toy_out
    learn_bpe([out / "tmp" / "train.de", out / "tmp" / "train.en"], 10000, tmp_path / "code")
    assert (out / "code").read_bytes() == (tmp_path / "code").read_bytes()
    assert report.codes_learned and report.merges == len(_lines(out / "code")) - 1
    for split in ("train", "valid", "test"):
        for lang in ("de", "en"):
            bpe = _lines(out / f"{split}.{lang}")
            assert len(bpe) == len(_lines(out / "tmp" / f"{split}.{lang}"))
            assert [x.replace("@@ ", "") for x in bpe] == _lines(out / "tmp" / f"{split}.{lang}")


def test_tgz_input_and_jobs_give_the_same_bytes(toy_orig, toy_out, tmp_path):
    out, _ = toy_out
    tgz = tmp_path / "de-en.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for p in sorted(toy_orig.iterdir()):
            tar.add(p.resolve(), arcname=f"de-en/{p.name}")
    out2 = tmp_path / "out"
    proc = run_cli("iwslt14", "--orig", str(tgz), "--out", str(out2), "-j", "2")
    assert "input 1003, kept" in proc.stderr
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == sorted(str(p.relative_to(out2)) for p in out2.rglob("*") if p.is_file())
    assert all((out / f).read_bytes() == (out2 / f).read_bytes() for f in files)


def test_tgz_without_train_names_the_member(toy_orig, tmp_path):
    tgz = tmp_path / "de-en.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for p in sorted(toy_orig.glob("*.xml")):
            tar.add(p.resolve(), arcname=f"de-en/{p.name}")
    proc = run_cli("iwslt14", "--orig", str(tgz), "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2
    assert f"{tgz}:de-en/train.tags.de-en.de: missing input file" in proc.stderr


def test_segment_count_mismatch_is_an_error(iwslt, tmp_path):
    orig = tmp_path / "orig"
    orig.mkdir()
    for p in (iwslt / "orig").glob("*.xml"):
        (orig / p.name).symlink_to(p)
    short = orig / "IWSLT14.TED.dev2010.de-en.en.xml"
    lines = short.read_text(encoding="utf-8").splitlines(keepends=True)
    short.unlink()
    drop = next(i for i, x in enumerate(lines) if '<seg id="5">' in x)
    short.write_text("".join(lines[:drop] + lines[drop + 1:]), encoding="utf-8")
    with pytest.raises(InputError, match="has 887 <seg> lines, .* has 886"):
        prepare(orig, tmp_path / "out", ["test"], codes=iwslt / "fairseq_prepared" / "code")
    assert not (tmp_path / "out").exists()


def test_compat_rule_is_what_makes_the_difference(iwslt):
    """DATA.md: plain sacremoses misses 31 of the 13500 lines; --fairseq-compat gets all of them."""
    from synprep.recipes.iwslt14 import extract_segments
    from synprep.textio import iter_lines

    plain = compat = 0
    for ts in TEST_SETS:
        for lang in ("de", "en"):
            segs = extract_segments(iter_lines(iwslt / "orig" / f"{ts}.de-en.{lang}.xml"))
            ref = iter_lines(iwslt / "fairseq_prepared" / "tmp" / f"{ts}.de-en.{lang}")
            for s, r in zip(segs, ref, strict=True):
                plain += tokenize_line(s, lang, lowercase=True) != r
                compat += tokenize_line(s, lang, lowercase=True, fairseq_compat=True) != r
    assert (plain, compat) == (31, 0)
