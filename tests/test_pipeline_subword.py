"""``synprep pipeline --subword spm|hf`` on sample_data: shards that pass check, and word-level features
(distances, SLR inputs, heads for PASCAL parents, LDD) identical to ``--subword bpe`` on the same words."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import SAMPLE_DATA, run_cli

from synprep.shards import ShardReader
from synprep.shards.check import check_dir

SP = "\u2581"
FLAGS = ("--lowercase", "--shard-size", "100", "--batch-size", "32", "-j", "1")


#: the first lines of sample_data's train split (a small parse keeps the test fast)
N_LINES = 120


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("subword_data")
    for lang in ("de", "en"):
        lines = (SAMPLE_DATA / f"train.{lang}").read_text("utf-8").splitlines(keepends=True)[:N_LINES]
        (d / f"train.{lang}").write_text("".join(lines), encoding="utf-8")
    return d


def _run(data, out, cache, stanza_dir, *extra, check=True):
    return run_cli("pipeline", "--src", str(data / "train.de"), "--tgt", str(data / "train.en"),
                   "-s", "de", "-t", "en", "--out", str(out), *FLAGS, "--cache", str(cache),
                   "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", *extra, check=check)


@pytest.fixture(scope="module")
def hf_file(tmp_path_factory, data):
    """A byte-level BPE tokenizer.json trained here with the tokenizers library on sample_data."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    text = [line for lang in ("de", "en") for line in (data / f"train.{lang}").read_text("utf-8").splitlines()]
    tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=500, show_progress=False,
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, stanza_dir, hf_file, data):
    d = tmp_path_factory.mktemp("subword_runs")
    cache = d / "cache.sqlite"  # one parse of each sentence serves all three runs
    outs = {"bpe": d / "bpe", "spm": d / "spm", "hf": d / "hf"}
    _run(data, outs["bpe"], cache, stanza_dir, "--merges", "500")
    _run(data, outs["spm"], cache, stanza_dir, "--subword", "spm", "--vocab-size", "400")
    _run(data, outs["hf"], cache, stanza_dir, "--subword", "hf", "--hf-tokenizer", str(hf_file))
    return outs


def _pairs(out):
    records = {}
    for path in sorted(out.glob("train.*.h5")):
        r = ShardReader(path)
        for rec in r:
            records[rec.line] = rec
    return records


def _word_gaps(rec, name):
    wi = np.asarray(rec.word_index)
    at = np.flatnonzero(wi[1:] != wi[:-1])  # piece gaps between two words
    return np.asarray(getattr(rec, name))[at]


@pytest.mark.parametrize("scheme", ["spm", "hf"])
def test_pipeline_with_a_raw_text_scheme_passes_check_and_names_it(runs, scheme):
    out = runs[scheme]
    report = check_dir(out)
    assert report.ok, report.summary()
    manifest = json.loads((out / "manifest.json").read_text())
    assert f"|sub:{scheme}-" in manifest["signature"] and "|bpe:" not in manifest["signature"]
    assert manifest["config"]["subword"] == scheme
    for path in out.glob("train.*.h5"):
        assert ShardReader(path).attrs["subword"] == scheme
    total = manifest["splits"]["train"]["subword_alignment"]["total"]
    assert set(total) == {"pieces_split", "parts_added", "lines_with_split", "pieces_to_next_word",
                          "pieces_overlapping"}
    # the stored source pieces: one word index per piece, every word of the parser covered
    pieces = (out / "text" / f"train.{scheme}.de").read_text("utf-8").splitlines()
    index = (out / "text" / f"train.{scheme}.wi").read_text("utf-8").splitlines()
    words = (out / "text" / "train.words.de").read_text("utf-8").splitlines()
    assert len(pieces) == len(index) == len(words)
    for p, i, w in zip(pieces, index, words, strict=True):
        wi = [int(x) for x in i.split("\t")[0].split()]
        assert len(wi) == len(p.split()) and wi[-1] == len(w.split()) - 1


def test_running_again_resumes_without_rewriting(runs, tmp_path_factory, stanza_dir, data):
    out = runs["spm"]
    before = {p.name: p.read_bytes() for p in out.glob("*") if p.is_file()}
    cache = tmp_path_factory.mktemp("again") / "cache.sqlite"  # an empty cache: nothing may need a parse
    _run(data, out, cache, stanza_dir, "--subword", "spm", "--vocab-size", "400")
    assert {p.name: p.read_bytes() for p in out.glob("*") if p.is_file()} == before


def test_bpe_pipeline_shards_say_bpe(runs):
    for path in runs["bpe"].glob("train.*.h5"):
        assert ShardReader(path).attrs["subword"] == "bpe"
    assert "subword_alignment" not in json.loads((runs["bpe"] / "manifest.json").read_text())["splits"]["train"]


@pytest.mark.parametrize("scheme", ["spm", "hf"])
def test_word_level_features_are_the_same_whatever_the_scheme(runs, scheme):
    bpe, other = _pairs(runs["bpe"]), _pairs(runs[scheme])
    assert sorted(bpe) == sorted(other) and len(bpe) > 100
    differs = 0
    for line, a in bpe.items():
        b = other[line]
        for name in ("heads", "deprel", "upos", "sent_start", "ldd_dep", "ldd_head", "ldd_rel", "ldd_prob"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=f"line {line} {name}")
        for name in ("gaps_cnf", "gaps_nary"):
            np.testing.assert_array_equal(_word_gaps(a, name), _word_gaps(b, name), err_msg=f"line {line} {name}")
        differs += len(a.src_ids) != len(b.src_ids)
    assert differs > 0  # the pieces themselves do differ


def test_options_of_another_scheme_are_errors(tmp_path, stanza_dir, data):
    cache = tmp_path / "c.sqlite"
    r = _run(data, tmp_path / "a", cache, stanza_dir, "--spm-model", "x.model", check=False)
    assert r.returncode == 2 and "--spm-model has no effect with --subword bpe" in r.stderr
    r = _run(data, tmp_path / "b", cache, stanza_dir, "--subword", "spm", "--merges", "100", check=False)
    assert r.returncode == 2 and "--merges has no effect with --subword spm" in r.stderr
    r = _run(data, tmp_path / "c", cache, stanza_dir, "--subword", "hf", check=False)
    assert r.returncode == 2 and "cannot learn a model: give --hf-tokenizer" in r.stderr
    assert not (tmp_path / "c").exists()  # refused before anything was written


def test_check_verifies_the_alignment_counts(runs, tmp_path):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(runs["spm"], out)
    manifest = json.loads((out / "manifest.json").read_text())
    counts = manifest["splits"]["train"]["subword_alignment"]
    counts["total"]["pieces_to_next_word"] += 1
    (out / "manifest.json").write_text(json.dumps(manifest))
    report = check_dir(out)
    assert not report.ok and "is not the sum of its shards' counts" in report.summary()
    counts["total"]["pieces_to_next_word"] -= 1
    counts["shards"]["train.00099.h5"] = {"pieces_split": 0}
    (out / "manifest.json").write_text(json.dumps(manifest))
    report = check_dir(out)
    assert not report.ok and "which the split does not list" in report.summary()


def test_a_given_spm_model_segments_like_the_learned_one(runs, tmp_path, stanza_dir, data):
    model = tmp_path / "given.model"
    model.write_bytes((runs["spm"] / "spm.model").read_bytes())
    out = tmp_path / "out"
    _run(data, out, runs["spm"].parent / "cache.sqlite", stanza_dir, "--subword", "spm", "--spm-model", str(model))
    assert check_dir(out).ok
    for name in ("text/train.spm.de", "text/train.spm.wi", "text/train.spm.en", "dict.txt", "spm.model"):
        assert (out / name).read_bytes() == (runs["spm"] / name).read_bytes(), name
    r = _run(data, tmp_path / "x", tmp_path / "c.sqlite", stanza_dir, "--subword", "spm", "--spm-model", str(model),
             "--vocab-size", "100", check=False)
    assert r.returncode == 2 and "--vocab-size has no effect with --spm-model" in r.stderr


# --- pieces that span two words: the split rule through the whole pipeline ------------------------
#: ``."`` ``),`` ``,"`` are frequent in these lines, so SentencePiece learns them as single pieces,
#: each over two of the parser's words (Moses splits ``."`` into ``.`` and ``"``)
SPANNING = ('."', '),', ',"')


def _quoted(line: str, i: int, said: str, aside: str, tail: str) -> str:
    core = line.rstrip(".!?")
    return f'"{core}."' if i % 2 == 0 else f'"{core}," {said} ({aside}), {tail}.'


@pytest.fixture(scope="module")
def quoted(tmp_path_factory):
    """60 sample_data lines in quotes and with an aside, and a SentencePiece model (BPE type: it learns
    the punctuation pairs on this little text, the unigram type learns ``."`` only) trained on them."""
    import sentencepiece as spm

    d = tmp_path_factory.mktemp("quoted")
    src = (SAMPLE_DATA / "train.de").read_text("utf-8").splitlines()[:60]
    tgt = (SAMPLE_DATA / "train.en").read_text("utf-8").splitlines()[:60]
    src = [_quoted(x, i, "sagte sie", "leise", "und ging") for i, x in enumerate(src)]
    tgt = [_quoted(x, i, "she said", "quietly", "and left") for i, x in enumerate(tgt)]
    (d / "train.de").write_text("\n".join(src) + "\n", encoding="utf-8")
    (d / "train.en").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(d / "train.de") + "," + str(d / "train.en"),
                                   model_prefix=str(d / "spans"), vocab_size=400, model_type="bpe",
                                   character_coverage=1.0, num_threads=1, normalization_rule_name="nmt_nfkc_cf",
                                   minloglevel=2)  # nfkc_cf: case-folded, as --lowercase makes the raw lines
    return d


@pytest.fixture(scope="module")
def split_runs(tmp_path_factory, stanza_dir, quoted):
    d = tmp_path_factory.mktemp("split_runs")
    cache = d / "cache.sqlite"
    outs = {"bpe": d / "bpe", "spm": d / "spm"}
    small = ("--shard-size", "25")  # three shards: the counts are checked per shard
    _run(quoted, outs["bpe"], cache, stanza_dir, *small, "--merges", "500")
    _run(quoted, outs["spm"], cache, stanza_dir, *small, "--subword", "spm", "--spm-model", str(quoted / "spans.model"))
    return outs


def _recount(out):
    """Per shard, the split rule's counts recomputed from the stored data: SentencePiece's own pieces of
    each raw line (text/train.raw.de) against the stored pieces (dict.txt symbols of src_ids) and their
    words (word_index). A stored run of k >= 2 pieces in k different words that joins to one segmenter
    piece is one split piece with k - 1 parts added. Also checks that every word's pieces rebuild it."""
    import sentencepiece as spm

    from synprep.text.escape import unescape_tokens
    from synprep.vocab import Vocab

    sp = spm.SentencePieceProcessor(model_file=str(out / "spm.model"))
    vocab = Vocab.load(out / "dict.txt")
    text = out / "text"
    kept = [int(x) for x in (text / "train.lines").read_text("utf-8").split()]
    raw = dict(zip(kept, (text / "train.raw.de").read_text("utf-8").splitlines(), strict=True))
    words = dict(zip(kept, (text / "train.words.de").read_text("utf-8").splitlines(), strict=True))
    counts, spanning = {}, set()
    for path in sorted(out.glob("train.*.h5")):
        c = {"pieces_split": 0, "parts_added": 0, "lines_with_split": 0}
        for rec in ShardReader(path):
            stored = [vocab[int(i)] for i in rec.src_ids]
            wi = np.asarray(rec.word_index).tolist()
            ws = unescape_tokens(words[rec.line].split())  # the parser's words (text/ keeps them Moses-escaped)
            assert wi[-1] == len(ws) - 1
            for k, w in enumerate(ws):  # every word's stored pieces rebuild it
                assert "".join(p for p, j in zip(stored, wi, strict=True) if j == k).replace(SP, "") == w.lower(), \
                    (rec.line, w)
            j, split = 0, 0
            for piece in sp.encode(raw[rec.line], out_type=str):
                if stored[j] == piece:
                    j += 1
                    continue
                k, joined = j, ""
                while joined != piece:
                    joined += stored[k]
                    assert piece.startswith(joined), (rec.line, piece, stored[j:k + 1])
                    k += 1
                assert k - j >= 2 and wi[j:k] == list(range(wi[j], wi[j] + k - j)), (rec.line, piece, wi[j:k])
                spanning.add(piece)
                split += 1
                c["parts_added"] += k - j - 1
                j = k
            assert j == len(stored)
            c["pieces_split"] += split
            c["lines_with_split"] += split > 0
        counts[path.name] = c
    return counts, spanning



def test_pieces_spanning_two_words_are_split_and_counted_exactly(split_runs):
    out = split_runs["spm"]
    report = check_dir(out)
    assert report.ok, report.summary()
    recount, spanning = _recount(out)
    assert len(recount) == 3 and all(c["pieces_split"] > 0 for c in recount.values())
    assert set(SPANNING) <= spanning  # the data does hold pieces over two words, of each kind
    recorded = json.loads((out / "manifest.json").read_text())["splits"]["train"]["subword_alignment"]
    for file, c in recount.items():
        assert {k: recorded["shards"][file][k] for k in c} == c, file
    total = {k: sum(c[k] for c in recount.values()) for k in ("pieces_split", "parts_added", "lines_with_split")}
    assert total["pieces_split"] >= 40 and total["lines_with_split"] >= 30  # 60 lines, >= 1 such piece in most
    assert {k: recorded["total"][k] for k in total} == total


def test_word_level_features_are_the_same_with_split_pieces(split_runs):
    from synprep.constants import GAP_EOS
    from synprep.features.parents import parent_positions
    from synprep.features.slr import slr_mask

    bpe, spm_ = _pairs(split_runs["bpe"]), _pairs(split_runs["spm"])
    assert sorted(bpe) == sorted(spm_) and len(bpe) >= 55
    for line, a in bpe.items():
        b = spm_[line]
        for name in ("heads", "deprel", "upos", "sent_start", "ldd_dep", "ldd_head", "ldd_rel", "ldd_prob"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=f"line {line} {name}")
        heads = np.asarray(a.heads, dtype=np.int64)
        want_parent = np.where(heads == 0, np.arange(heads.size), heads - 1)
        for name in ("gaps_cnf", "gaps_nary"):
            ga, gb = _word_gaps(a, name), _word_gaps(b, name)
            np.testing.assert_array_equal(ga, gb, err_msg=f"line {line} {name}")
            for hard in ("strict", "nonstrict", None):  # the SLR masks over the words
                ma, mb = (slr_mask(np.append(g, GAP_EOS), hard=hard) for g in (ga, gb))
                np.testing.assert_array_equal(ma, mb, err_msg=f"line {line} {name} SLR {hard}")
        for mode in ("mean", "first"):  # PASCAL / LISA parents, read back as the parent word of each word
            for rec in (a, b):
                wi = np.asarray(rec.word_index, dtype=np.int64)
                parents = parent_positions(heads, wi, mode=mode)
                first = np.searchsorted(wi, np.arange(heads.size))
                last = np.searchsorted(wi, np.arange(heads.size), side="right") - 1
                at = first if mode == "first" else (first + last) / 2  # where each word's pieces point
                np.testing.assert_array_equal(parents, at[want_parent][wi], err_msg=f"line {line} {mode} parents")
                np.testing.assert_array_equal(wi[np.floor(parents[first]).astype(np.int64)], want_parent,
                                              err_msg=f"line {line} {mode} parent words")
    assert sum(len(a.src_ids) != len(spm_[n].src_ids) for n, a in bpe.items()) > 0


def test_check_refuses_inconsistent_split_counts(split_runs, tmp_path):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(split_runs["spm"], out)
    manifest = json.loads((out / "manifest.json").read_text())
    counts = manifest["splits"]["train"]["subword_alignment"]
    file = next(f for f, c in counts["shards"].items() if c["pieces_split"] > 0)
    for key, value in (("parts_added", 0), ("lines_with_split", 0), ("lines_with_split", 10**6)):
        broken = json.loads(json.dumps(manifest))
        c = broken["splits"]["train"]["subword_alignment"]
        delta = value - c["shards"][file][key]
        c["shards"][file][key] = value
        c["total"][key] += delta  # the total still adds up: only the shard's own counts disagree
        (out / "manifest.json").write_text(json.dumps(broken))
        report = check_dir(out)
        assert not report.ok and f"subword_alignment counts of {file} are inconsistent" in report.summary(), key
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert check_dir(out).ok


def test_what_needs_bpe_markers_refuses_other_pieces(runs, tmp_path, monkeypatch):
    """The parquet/hf export and translate --remove-bpe/--detok rebuild words from ``@@`` pieces: refused
    for a scheme without them (its ``bpe_markers``), accepted for bpe."""
    from types import SimpleNamespace

    from click.testing import CliRunner

    from synprep.cli import cli
    from synprep.errors import ConfigError

    r = run_cli("export", str(runs["spm"]), "--format", "parquet", "--to", str(tmp_path / "p"), check=False)
    assert r.returncode == 2 and "these are 'spm' pieces" in r.stderr
    monkeypatch.setattr("synprep.train.decode.load_model", lambda *a, **k: (None, SimpleNamespace(beam=1, lenpen=1.0), []))
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"")  # load_model is replaced: the refusal comes before any decoding
    for scheme, refused in (("spm", True), ("hf", True), ("bpe", False)):
        res = CliRunner().invoke(cli, ["translate", "--checkpoint", str(checkpoint), "--shards", str(runs[scheme]),
                                       "--split", "train", "--remove-bpe"])
        said = isinstance(res.exception, ConfigError) and "--remove-bpe and --detok undo subword-nmt BPE" in str(res.exception)
        assert said == refused, (scheme, res.exception)
