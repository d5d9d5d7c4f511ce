"""The main job end to end on real input: sample_data, fairseq's prepared IWSLT14 test, PUD.

Every run goes through a real stanza parse (the offline models in ../shared/data) or a real
CoNLL-U import, writes shards, and must pass ``synprep check``.
"""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from helpers import ROOT, run_cli

from synprep.config import DataConfig
from synprep.errors import ConfigError, InputError
from synprep.parse.conllu_io import read_conllu
from synprep.pipeline import Runtime, SplitInputs, run_annotate, run_pipeline
from synprep.shards import check_dir, open_split
from synprep.vocab import Vocab

SAMPLE = ROOT / "sample_data"


def stanza_runtime(stanza_dir, cache) -> Runtime:
    return Runtime(cache=str(cache), parser={"dir": str(stanza_dir)})


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory, stanza_dir):
    """sample_data train (de→en) through the CLI, lowercased, shards of 100 pairs."""
    tmp = tmp_path_factory.mktemp("sample")
    out = tmp / "out"
    args = ["pipeline", "--src", str(SAMPLE / "train.de"), "--tgt", str(SAMPLE / "train.en"), "-s", "de", "-t", "en",
            "--out", str(out), "--lowercase", "--merges", "1000", "--shard-size", "100",
            "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "--cache", str(tmp / "cache.sqlite")]
    proc = run_cli(*args)
    return out, args, proc


def test_sample_main_job_passes_check_and_accounts_for_every_line(sample_run):
    out, _, proc = sample_run
    assert check_dir(out).ok
    manifest = json.loads((out / "manifest.json").read_text())
    train = manifest["splits"]["train"]
    assert train["input_lines"] == 300
    assert train["pairs"] == 294
    assert train["input_lines"] == train["pairs"] + sum(train["dropped"].values())
    assert [(line, reason) for line, reason, _ in train["dropped_lines"]] == [
        (38, "clean:empty"), (82, "clean:empty"), (141, "clean:ratio"), (200, "clean:ratio"), (231, "clean:ratio"),
        (269, "clean:too_long")]
    assert [s["file"] for s in train["shards"]] == ["train.00000.h5", "train.00001.h5", "train.00002.h5"]
    # the signature is printed at the end and stored in every shard
    assert manifest["signature"] in proc.stderr
    assert "parser:stanza-" in manifest["signature"] and "lc:yes" in manifest["signature"]


def test_one_summary_line_and_the_signature_last(sample_run):
    out, _, proc = sample_run
    lines = proc.stderr.strip().splitlines()
    summaries = [line for line in lines if "300 input lines" in line]
    assert summaries == ["synprep: train: 300 input lines, 294 pairs in 3 shard(s); dropped: clean:empty 2, "
                         "clean:ratio 3, clean:too_long 1; check OK"]
    assert [line for line in lines if line.startswith("synprep:0.")] == [lines[-1]]
    # the merges learned are what is logged and stored with the shards
    from synprep.text.bpe import count_merges

    n = count_merges(out / "code")
    assert f"synprep: learned {n} BPE merges on train.clean.{{de,en}}" in lines
    with h5py.File(out / "train.00000.h5") as f:
        assert json.loads(f.attrs["config"])["bpe_merges"] == n


def test_sample_shards_hold_the_right_pairs(sample_run):
    out, _, _ = sample_run
    vocab = Vocab.load(out / "dict.txt")
    readers = open_split(out, "train")
    lines = np.concatenate([r.lines for r in readers])
    dropped = {38, 82, 141, 200, 231, 269}
    assert lines.tolist() == [n for n in range(1, 301) if n not in dropped]
    bpe = (out / "text" / "train.bpe.de").read_text().splitlines()
    first = readers[0][0]
    assert vocab.decode(first.src_ids) == bpe[0].split()
    # German has no constituency model here: dependency-derived trees, recorded as such
    assert readers[0].attrs["tree_source"] == "dependency"
    assert "tau" not in readers[0].attrs["config"]


def test_rerun_skips_finished_shards_and_changes_nothing(sample_run):
    out, args, _ = sample_run
    before = {p.name: p.read_bytes() for p in out.glob("*.h5")}
    manifest = (out / "manifest.json").read_bytes()
    proc = run_cli(*args)
    assert "train.00000.h5: " not in proc.stderr  # nothing re-written
    assert {p.name: p.read_bytes() for p in out.glob("*.h5")} == before
    assert (out / "manifest.json").read_bytes() == manifest


def test_other_configuration_into_same_folder_is_refused(sample_run):
    out, args, _ = sample_run
    changed = [("2000" if a == "1000" else a) for a in args]  # --merges 1000 → 2000
    proc = run_cli(*changed, check=False)
    assert proc.returncode == 2
    assert "another configuration (merges: the folder has 1000, this run 2000)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_valid_split_reuses_codes_and_vocab(sample_run, stanza_dir, tmp_path):
    out, args, _ = sample_run
    vocab = (out / "dict.txt").read_bytes()
    valid = [a.replace("train.", "valid.") for a in args] + ["--split", "valid"]
    run_cli(*valid)
    assert (out / "dict.txt").read_bytes() == vocab
    report = check_dir(out)
    assert report.ok, report.violation
    m = json.loads((out / "manifest.json").read_text())
    assert m["splits"]["valid"]["pairs"] == 40  # valid is not cleaned by default


def test_annotate_fairseq_prepared_test(shared_data, stanza_dir, tmp_path):
    """The researcher's usual start: fairseq's prepared (tokenized, lowercased, BPE'd) data."""
    prep = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    src, tgt = tmp_path / "test.de", tmp_path / "test.en"
    src.write_text("".join((prep / "test.de").read_text().splitlines(keepends=True)[:150]))
    tgt.write_text("".join((prep / "test.en").read_text().splitlines(keepends=True)[:150]))
    out = tmp_path / "out"
    cfg = DataConfig.of(src_lang="de", tgt_lang="en", stanza_package="synprep", shard_size=64, vocab_split="test")
    m = run_annotate(SplitInputs(split="test", src=str(src), tgt=str(tgt)), out, cfg,  # a test-only folder: its vocabulary is the test split's
                     runtime=stanza_runtime(stanza_dir, tmp_path / "c.sqlite"))  # a test-only folder: its vocabulary comes from the test split
    assert check_dir(out).ok
    assert m.split("test").pairs == 150
    rec = open_split(out, "test")[0][0]
    assert Vocab.load(out / "dict.txt").decode(rec.src_ids) == src.read_text().splitlines()[0].split()
    # German dev/test lines often hold several sentences: sentence starts are recorded, and the
    # piece-level gaps carry 999 exactly between them
    multi = [r for shard in open_split(out, "test") for r in shard if len(r.sent_start) > 1]
    assert multi
    r = multi[0]
    boundary_words = set(r.sent_start[1:].tolist())
    at = np.flatnonzero(r.gaps_cnf == 999)
    assert {int(r.word_index[i + 1]) for i in at} == boundary_words


def _pud_texts(conllu_path, n):
    texts = [line[len("# text = "):] for line in conllu_path.read_text().splitlines() if line.startswith("# text = ")]
    return texts[:n]


def _head_n_sentences(path, out, n):
    blocks = path.read_text().split("\n\n")
    out.write_text("\n\n".join(blocks[:n]) + "\n\n")
    return out


@pytest.mark.parametrize("src_lang,tgt_lang", [("en", "de"), ("de", "en")])
def test_pud_through_conllu_import(shared_data, tmp_path, src_lang, tgt_lang):
    """Gold PUD trees imported: the source tokens are the CoNLL-U surface tokens (MWT units)."""
    n = 60
    gold = _head_n_sentences(shared_data / "ud" / f"{src_lang}_pud-ud-test.conllu", tmp_path / "gold.conllu", n)
    tgt = tmp_path / f"pud.{tgt_lang}"
    tgt.write_text("\n".join(_pud_texts(shared_data / "ud" / f"{tgt_lang}_pud-ud-test.conllu", n)) + "\n")
    out = tmp_path / "out"
    cfg = DataConfig.of(src_lang=src_lang, tgt_lang=tgt_lang, parser="conllu", shard_size=25, vocab_split="test")
    m = run_pipeline(SplitInputs(split="test", tgt=str(tgt), codes=_learn_codes(tmp_path, gold, tgt), conllu=str(gold)),
                     out, cfg)
    report = check_dir(out)
    assert report.ok, report.violation
    assert m.split("test").pairs == n
    # gold heads survive unchanged (the import maps multiword tokens to their surface token)
    parsed = list(read_conllu(gold))
    recs = [r for shard in open_split(out, "test") for r in shard]
    for p, r in zip(parsed, recs, strict=True):
        assert r.heads.tolist() == [h for s in p.sentences for h in s.heads]
        assert np.all(r.ldd_prob == 1.0)  # gold parses: one-hot LDD


def _learn_codes(tmp_path, gold, tgt):
    """A small joint BPE on the PUD text itself (the test split has no train split to learn from)."""
    from synprep.text.bpe import learn_bpe

    words = tmp_path / "words.txt"
    words.write_text("\n".join(" ".join(s.words) for s in read_conllu(gold)) + "\n")
    codes = tmp_path / "codes"
    learn_bpe([words, tgt], 500, codes)
    return str(codes)


def test_pud_english_through_stanza(shared_data, stanza_dir, tmp_path):
    """English PUD raw text → Moses → stanza (with constituency trees) → shards."""
    n = 40
    src, tgt = tmp_path / "pud.en", tmp_path / "pud.de"
    src.write_text("\n".join(_pud_texts(shared_data / "ud" / "en_pud-ud-test.conllu", n)) + "\n")
    tgt.write_text("\n".join(_pud_texts(shared_data / "ud" / "de_pud-ud-test.conllu", n)) + "\n")
    out = tmp_path / "out"
    cfg = DataConfig.of(src_lang="en", tgt_lang="de", merges=300, stanza_package="synprep", shard_size=20)
    m = run_pipeline(SplitInputs(split="train", src=str(src), tgt=str(tgt)), out, cfg, runtime=stanza_runtime(stanza_dir, tmp_path / "c.sqlite"))
    assert check_dir(out).ok
    entry = m.split("train")
    assert entry.input_lines == n == entry.pairs + sum(entry.dropped.values())
    shard = open_split(out, "train")[0]
    assert shard.attrs["tree_source"] == "constituency"
    assert shard.attrs["ldd_threshold"] == pytest.approx(0.01)
    # real parser scores: probabilities below 1, and each word keeps at least one entry
    rec = shard[0]
    assert (rec.ldd_prob < 1.0).any()
    assert set(np.unique(rec.ldd_dep).tolist()) == set(range(1, len(rec.heads) + 1))


def test_conllu_words_must_match_the_pieces(shared_data, tmp_path):
    """A parse whose words differ from the BPE'd source is an error naming the line (SPEC §1)."""
    gold = _head_n_sentences(shared_data / "ud" / "en_pud-ud-test.conllu", tmp_path / "g.conllu", 3)
    words = [" ".join(s.words) for s in read_conllu(gold)]
    words[1] = words[1].replace(words[1].split()[0], "Changed", 1)
    src, tgt = tmp_path / "s.en", tmp_path / "t.de"
    src.write_text("\n".join(words) + "\n")
    tgt.write_text("a\nb\nc\n")
    with pytest.raises(InputError, match=r":2: .*"):
        run_annotate(SplitInputs(src=str(src), tgt=str(tgt), conllu=str(gold)), tmp_path / "out",
                     DataConfig.of(src_lang="en", tgt_lang="de", parser="conllu"))
    assert not list((tmp_path / "out").glob("*.h5"))


def test_mismatched_sides_name_both_counts(tmp_path):
    src, tgt = tmp_path / "a.de", tmp_path / "a.en"
    src.write_text("eins\nzwei\ndrei\n")
    tgt.write_text("one\ntwo\n")
    with pytest.raises(InputError, match="has 3 lines, .* has 2"):
        run_pipeline(SplitInputs(src=str(src), tgt=str(tgt)), tmp_path / "out", DataConfig.of(src_lang="de", tgt_lang="en"))


def test_conllu_parser_needs_a_file(tmp_path):
    tgt = tmp_path / "t.en"
    tgt.write_text("x\n")
    with pytest.raises(ConfigError, match="--conllu"):
        run_pipeline(SplitInputs(tgt=str(tgt)), tmp_path / "out", DataConfig.of(src_lang="en", tgt_lang="de", parser="conllu"))
    assert not (tmp_path / "out").exists()


def test_annotate_conllu_parser_needs_a_file_and_writes_nothing(tmp_path):
    """The missing --conllu is refused before OUT exists: the corrected command then runs there."""
    src, tgt = tmp_path / "s.en", tmp_path / "t.de"
    src.write_text("x\n")
    tgt.write_text("y\n")
    with pytest.raises(ConfigError, match="--conllu"):
        run_annotate(SplitInputs(src=str(src), tgt=str(tgt)), tmp_path / "out",
                     DataConfig.of(src_lang="en", tgt_lang="de", parser="conllu"))
    assert not (tmp_path / "out").exists()


def test_an_input_of_the_other_command_is_refused_and_writes_nothing(tmp_path):
    """A SplitInputs field the entry point does not read is an error, named, before OUT exists."""
    src, tgt = tmp_path / "s.en", tmp_path / "t.de"
    src.write_text("x\n")
    tgt.write_text("y\n")
    cfg = DataConfig.of(src_lang="en", tgt_lang="de")
    with pytest.raises(ConfigError, match=r"^codes, subword_model: no effect in annotate .* they are synprep pipeline's"):
        run_annotate(SplitInputs(src=str(src), tgt=str(tgt), codes=str(src), subword_model=str(src)), tmp_path / "out", cfg)
    with pytest.raises(ConfigError, match=r"^annotate needs the BPE'd source"):
        run_annotate(SplitInputs(tgt=str(tgt)), tmp_path / "out", cfg)
    with pytest.raises(ConfigError, match=r"^parse_src has no effect in pipeline .*--parse-src"):
        run_pipeline(SplitInputs(src=str(src), tgt=str(tgt), parse_src=str(src)), tmp_path / "out", cfg)
    assert not (tmp_path / "out").exists()


def test_resuming_from_edited_input_is_refused(sample_run, tmp_path):
    """A resumed split reuses finished steps: an input edited in between must not be mixed in."""
    out, args, _ = sample_run
    edited = tmp_path / "train.en"
    edited.write_text((SAMPLE / "train.en").read_text().replace("the", "a", 1))
    changed = [str(edited) if a == str(SAMPLE / "train.en") else a for a in args]
    proc = run_cli(*changed, check=False)
    assert proc.returncode == 2
    assert (f"made from other input (--tgt: the folder has {SAMPLE / 'train.en'}, this run {edited} (other content)) "
            f"and its shards hold what was made from them") in proc.stderr


def test_later_splits_inherit_the_folder_settings(sample_run, stanza_dir):
    """--split valid without the train split's --merges/--lowercase/--shard-size inherits them from the folder."""
    out, args, _ = sample_run
    cfg = json.loads((out / "pipeline.json").read_text())
    assert cfg["merges"] == 1000 and cfg["lowercase"] is True and cfg["shard_size"] == 100
    proc = run_cli("pipeline", "--split", "test", "--src", str(SAMPLE / "test.de"), "--tgt", str(SAMPLE / "test.en"),
                   "--out", str(out), "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep",
                   "--cache", args[args.index("--cache") + 1])
    assert "Traceback" not in proc.stderr
    report = check_dir(out)
    assert report.ok, report.violation
    assert json.loads((out / "pipeline.json").read_text()) == cfg

