"""``synprep check``: a valid folder passes; each invariant, broken one at a time, is named."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from builders import reseal
from helpers import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synprep.shards.check import CheckError, check_dir
from synprep.shards.synthetic import make_record, random_records, write_folder_records

SHARD = 6  # pairs per shard; the broken pair is pair 2 of train.00001.h5 (line 9 of 14)


def _records(seed: int = 0) -> dict:
    """train: 14 pairs (3 shards); pair 8 (shard 1, pair 2, line 9) has two sentences [3, 4] words,
    pieces per word [1, 2, 1, 1, 3, 1, 1]; valid: 3 pairs."""
    rng = np.random.default_rng(seed)
    train = list(random_records(14, rng, words=8, vocab_size=1000))
    train[8] = make_record(0, [3, 4], [1, 2, 1, 1, 3, 1, 1], 5, rng, ldd_extra=1, vocab_size=1000)
    for i, r in enumerate(train):
        r.line = i + 1
    return {"train": train, "valid": list(random_records(3, rng, words=5, vocab_size=1000))}


def _write(folder, mutate=None, **kw):
    recs = _records()
    if mutate is not None:
        mutate(recs["train"][8])
    write_folder_records(folder, recs, shard_size=SHARD, drops={"train": [(15, "parse:failed", "x")]}, **kw)
    return recs


def _violation(folder) -> str:
    report = check_dir(folder)
    assert not report.ok, "check passed a broken folder"
    return str(report.violation)


def test_valid_folder_passes(tmp_path):
    _write(tmp_path)
    report = check_dir(tmp_path)
    assert report.ok, report.violation
    assert report.pairs == {"train": 14, "valid": 3} and report.shards == 4
    assert report.summary() == f"OK {tmp_path}: train 14 pairs, valid 3 pairs (4 shards)"
    assert report.raise_if_failed() is report


def _set(name, fn):
    def mutate(r):
        a = np.array(getattr(r, name))
        out = fn(a, r)
        setattr(r, name, a if out is None else out)
    return mutate


def _root_of_second_sentence(r):
    return 3 + int(np.flatnonzero(r.heads[3:] == 0)[0])


def _non_root(r, lo, hi):
    return [j for j in range(lo, hi) if r.heads[j] != 0]


def _cycle(r):
    a, b = _non_root(r, 3, 7)[:2]
    r.heads = r.heads.copy()
    r.heads[a], r.heads[b] = b + 1, a + 1


def _second_root(r):
    r.heads = r.heads.copy()
    r.heads[_non_root(r, 3, 7)[0]] = 0


def _no_root(r):
    r.heads = r.heads.copy()
    j = _root_of_second_sentence(r)
    r.heads[j] = 3 + 1 + (j - 3 + 1) % 4  # another word of the same sentence


def _cross_sentence(r):
    r.heads = r.heads.copy()
    r.heads[_non_root(r, 3, 7)[0]] = 1  # a word of sentence 0


def _gap_at(kind):
    # pieces: w0 | w1 w1 | w2 || w3 | w4 w4 w4 | w5 | w6  (gap 3 is the sentence boundary)
    return {"intra": 1, "boundary": 3, "inter": 4}[kind]


def _ldd_drop_word1(r):
    keep = r.ldd_dep != 1
    r.ldd_dep, r.ldd_head, r.ldd_rel, r.ldd_prob = r.ldd_dep[keep], r.ldd_head[keep], r.ldd_rel[keep], r.ldd_prob[keep]


def _ldd_sum(r):
    r.ldd_dep = np.concatenate([r.ldd_dep, [1, 1]])
    r.ldd_head = np.concatenate([r.ldd_head, [2, 3]])
    r.ldd_rel = np.concatenate([r.ldd_rel, [0, 1]])
    r.ldd_prob = np.concatenate([r.ldd_prob, [0.7, 0.7]]).astype(np.float32)


def _ldd_cross(r):
    r.ldd_dep = np.concatenate([r.ldd_dep, [5]])
    r.ldd_head = np.concatenate([r.ldd_head, [2]])
    r.ldd_rel = np.concatenate([r.ldd_rel, [0]])
    r.ldd_prob = np.concatenate([r.ldd_prob, [0.001]]).astype(np.float32)


PAIR = "train.00001.h5: pair 2 (line 9): "

RECORD_CASES = {
    "empty target": (_set("tgt_ids", lambda a, r: a[:0]), "no target pieces U (empty)"),
    "word without pieces": (_set("word_index", lambda a, r: np.minimum(a, 5)),
                            "word_index ends at 5 but the line has W = 7 words (every word needs >= 1 piece)"),
    "word_index start": (_set("word_index", lambda a, r: a + 1), "word_index starts at 1, not 0"),
    "word_index step": (_set("word_index", lambda a, r: np.concatenate([[0, 2], a[2:]])),
                        "word_index steps from 0 to 2 at pieces 0-1 (steps must be 0 or 1)"),
    "head range": (_set("heads", lambda a, r: np.concatenate([a[:1], [8], a[2:]])),
                   "heads[1] = 8 is outside [0, W = 7]"),
    "sent_start start": (_set("sent_start", lambda a, r: a + 1), "sent_start starts at 1, not 0"),
    "sent_start order": (_set("sent_start", lambda a, r: np.array([0, 0])),
                         "sent_start is not strictly increasing: sent_start[0] = 0, sent_start[1] = 0"),
    "sent_start range": (_set("sent_start", lambda a, r: np.array([0, 7])), "sent_start[1] = 7 is not < W = 7"),
    "two roots": (_second_root, "sentence 1 (words 3..6) has 2 roots (head 0); exactly 1 expected"),
    "no root": (_no_root, "sentence 1 (words 3..6) has 0 roots (head 0); exactly 1 expected"),
    "head outside sentence": (_cross_sentence, "points outside its sentence (words 3..6)"),
    "cycle": (_cycle, "does not reach the root (the heads form a cycle)"),
    "deprel id": (_set("deprel", lambda a, r: np.concatenate([[37], a[1:]])), "deprel[0] = 37 is not a valid id (37 deprel_labels)"),
    "upos id": (_set("upos", lambda a, r: np.concatenate([a[:2], [17], a[3:]])), "upos[2] = 17 is not a valid id (17 upos_labels)"),
    "ldd_rel id": (_set("ldd_rel", lambda a, r: np.concatenate([[200], a[1:]])), "ldd_rel[0] = 200 is not a valid id"),
    "src id beyond vocab": (_set("src_ids", lambda a, r: np.concatenate([a[:3], [1000], a[4:]])),
                            "src_ids[3] = 1000 is outside the vocabulary (size 1000)"),
    "tgt eos stored": (_set("tgt_ids", lambda a, r: np.concatenate([a[:-1], [2]])),
                       "tgt_ids[4] = 2 is a special symbol (<s>, <pad> or </s> are never stored)"),
    "gap < 1": (_set("gaps_nary", lambda a, r: np.concatenate([[0], a[1:]])), "gaps_nary[0] = 0 is not >= 1"),
    "intra-word gap": (_set("gaps_cnf", lambda a, r: _put(a, _gap_at("intra"), 3)),
                       "gaps_cnf[1] = 3 inside a word (pieces 1-2); expected 1"),
    "boundary gap": (_set("gaps_cnf", lambda a, r: _put(a, _gap_at("boundary"), 5)),
                     "gaps_cnf[3] = 5 at a sentence boundary (pieces 3-4); expected 999"),
    "999 inside a sentence": (_set("gaps_nary", lambda a, r: _put(a, _gap_at("inter"), 999)),
                              "gaps_nary[4] = 999 between two words of one sentence (pieces 4-5); expected d + 1 in [2, 998]"),
    "inter-word gap 1": (_set("gaps_cnf", lambda a, r: _put(a, 0, 1)),
                         "gaps_cnf[0] = 1 between two words of one sentence (pieces 0-1)"),
    "ldd dep 0": (_set("ldd_dep", lambda a, r: _put(a, 0, 0)), "ldd_dep[0] = 0 is outside [1, W = 7]"),
    "ldd head range": (_set("ldd_head", lambda a, r: _put(a, 1, 9)), "ldd_head[1] = 9 is outside [0, W = 7]"),
    "ldd prob 0": (_set("ldd_prob", lambda a, r: _put(a, 2, 0.0)), "ldd_prob[2] = 0.0 is not a probability in (0, 1]"),
    "ldd prob > 1": (_set("ldd_prob", lambda a, r: _put(a, 2, 1.5)), "ldd_prob[2] = 1.5 is not a probability"),
    "word without ldd": (_ldd_drop_word1, "word 1 has no LDD entry (every word needs >= 1)"),
    "ldd sums over 1": (_ldd_sum, "the LDD probabilities of word 1 sum to"),
    "ldd head outside sentence": (_ldd_cross, "is outside the sentence of ldd_dep"),
}


def _put(a, i, v):
    a = a.copy()
    a[i] = v
    return a


#: the checks' window (values checked at once): the default (a shard at once), one pair, a few pairs
WINDOWS = [1 << 18, 1, 40]


@pytest.fixture(params=WINDOWS, ids=lambda w: f"window{w}")
def window(request, monkeypatch):
    """A shard is checked a window of pairs at a time: each window size finds the same first violation."""
    from synprep.shards import invariants

    monkeypatch.setattr(invariants, "WINDOW_ELEMENTS", request.param)
    return request.param


@pytest.mark.parametrize("case", list(RECORD_CASES))
def test_each_record_invariant_is_named(tmp_path, case, window):
    mutate, message = RECORD_CASES[case]
    _write(tmp_path, mutate)
    got = _violation(tmp_path)
    assert got.startswith(PAIR) and message in got, got


def test_the_broken_pair_is_what_the_cases_assume(tmp_path):
    r = _records()["train"][8]
    assert r.word_index.tolist() == [0, 1, 1, 2, 3, 4, 4, 4, 5, 6]
    assert r.sent_start.tolist() == [0, 3] and (r.heads == 0).sum() == 2


def test_lines_must_increase_across_shards(tmp_path, window):
    recs = _records()
    for i, r in enumerate(recs["train"]):
        r.line = i + 1 if i < SHARD else i  # shard 1 starts at line 6 = shard 0's last line
    write_folder_records(tmp_path, recs, shard_size=SHARD)
    assert _violation(tmp_path) == ("train.00001.h5: pair 0 (line 6): line 6 is not greater than the previous "
                                    "shard's last line 6")


def test_lines_must_increase_within_a_shard_across_windows(tmp_path, window):
    write_folder_records(tmp_path, _records(), shard_size=SHARD)
    _edit(_set_item("line", 2, 8))(tmp_path)  # pair 2 of shard 1 repeats pair 1's line
    assert _violation(tmp_path) == ("train.00001.h5: pair 2 (line 8): line 8 is not greater than the previous "
                                    "pair's line 8")


def test_the_first_violating_pair_is_reported(tmp_path, window):
    recs = _records()
    recs["train"][9].heads = recs["train"][9].heads.copy()
    recs["train"][9].heads[0] = 250  # a range error in pair 3 ...
    recs["train"][8].gaps_cnf = _put(recs["train"][8].gaps_cnf, 1, 5)  # ... after a gap error in pair 2
    write_folder_records(tmp_path, recs, shard_size=SHARD)
    assert _violation(tmp_path).startswith(PAIR + "gaps_cnf[1] = 5 inside a word")


# --- corruption of the files themselves (the manifest is re-sealed so the content check is reached) ---
def _edit(fn):
    def run(folder):
        with h5py.File(folder / "train.00001.h5", "r+") as f:
            fn(f)
        reseal(folder)
    return run


def _replace(name, data):
    def fn(f):
        del f[name]
        f.create_dataset(name, data=data)
    return fn


def _set_item(name, i, v):
    def fn(f):
        a = f[name][()]
        a[i] = v
        del f[name]
        f.create_dataset(name, data=a)
    return fn


def _truncate(folder):
    p = folder / "train.00001.h5"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    reseal(folder)


FILE_CASES = {
    "truncated": (_truncate, "train.00001.h5: not a readable HDF5 file (truncated or corrupt?)"),
    "missing dataset": (_edit(lambda f: f.__delitem__("upos")), "train.00001.h5: dataset /upos is missing"),
    "wrong dtype": (_edit(lambda f: _replace("heads", f["heads"][()].astype(np.float32))(f)),
                    "train.00001.h5: dataset /heads has dtype float32, expected an unsigned integer type"),
    "label dtype": (_edit(lambda f: _replace("deprel", f["deprel"][()].astype(np.uint16))(f)),
                    "train.00001.h5: dataset /deprel has dtype uint16, expected uint8"),
    "2-D": (_edit(lambda f: _replace("tgt_ids", f["tgt_ids"][()].reshape(1, -1))(f)),
            "train.00001.h5: dataset /tgt_ids has shape (1, "),
    "version": (_edit(lambda f: f.attrs.__setitem__("format_version", 2)),
                "train.00001.h5: shard format_version 2 is not supported: this synprep reads version 1"),
    "format": (_edit(lambda f: f.attrs.__setitem__("format", "nope")), "train.00001.h5: not a synprep shard"),
    "missing attribute": (_edit(lambda f: f.attrs.__delitem__("tree_source")),
                          "train.00001.h5: root attribute tree_source is missing"),
    "bad config": (_edit(lambda f: f.attrs.__setitem__("config", "{oops")),
                   "train.00001.h5: attribute config is not JSON text"),
    "n_pairs": (_edit(lambda f: f.attrs.__setitem__("n_pairs", 7)),
                "train.00001.h5: n_pairs attribute is 7 but /line has 6 entries"),
    "shard_index": (_edit(lambda f: f.attrs.__setitem__("shard_index", 3)),
                    "train.00001.h5: attribute shard_index is 3, expected 1"),
    "signature": (_edit(lambda f: f.attrs.__setitem__("signature", "other")), "train.00001.h5: attribute signature is 'other'"),
    "vocab hash": (_edit(lambda f: f.attrs.__setitem__("vocab_sha256", "0" * 64)), "attribute vocab_sha256 is '000"),
    "offsets start": (_edit(_set_item("offsets/src", 0, 1)), "train.00001.h5: /offsets/src[0] = 1, expected 0"),
    "offsets decrease": (_edit(lambda f: _set_item("offsets/word", 3, int(f["offsets/word"][2]) - 1)(f)),
                         "train.00001.h5: pair 2 (line 9): /offsets/word decreases from"),
    "offsets end": (_edit(lambda f: _set_item("offsets/ldd", 6, int(f["offsets/ldd"][6]) + 1)(f)),
                    "/offsets/ldd ends at"),
    "offsets length": (_edit(lambda f: _replace("offsets/gap", f["offsets/gap"][:-1])(f)),
                       "/offsets/gap has 6 entries, expected N+1 = 7"),
    "gap count": (_edit(lambda f: _set_item("offsets/gap", 3, int(f["offsets/gap"][3]) + 1)(f)),
                  PAIR + "10 gaps for T = 10 pieces, expected T-1 = 9"),
    "line order": (_edit(_set_item("line", 3, 8)),
                   "train.00001.h5: pair 3 (line 8): line 8 is not greater than the previous pair's line 9"),
    "nan prob": (_edit(_set_item("ldd_prob", 0, np.nan)), "train.00001.h5: pair 0 (line 7): ldd_prob[0] = nan"),
}


@pytest.mark.parametrize("case", list(FILE_CASES))
def test_each_file_corruption_is_named_without_traceback(tmp_path, case):
    corrupt, message = FILE_CASES[case]
    _write(tmp_path)
    corrupt(tmp_path)
    got = _violation(tmp_path)
    assert message in got, got


def _manifest_edit(fn):
    def run(folder):
        d = json.loads((folder / "manifest.json").read_text())
        fn(d)
        (folder / "manifest.json").write_text(json.dumps(d))
    return run


MANIFEST_CASES = {
    "no manifest": (lambda f: (f / "manifest.json").unlink(), "manifest.json: missing"),
    "not json": (lambda f: (f / "manifest.json").write_text("{"), "manifest.json: not JSON"),
    "manifest version": (_manifest_edit(lambda d: d.update(format_version=9)), "manifest.json: manifest format"),
    "dict changed": (lambda f: (f / "dict.txt").write_text("x 1\n"), "dict.txt: sha256"),
    "vocab size": (_manifest_edit(lambda d: d["vocab"].update(size=8)), "dict.txt: 1000 symbols but the manifest says 8"),
    "stray temp": (lambda f: (f / ".train.00000.h5.k2j3.tmp").write_bytes(b""),
                   ".train.00000.h5.k2j3.tmp: stray temporary file"),
    "unlisted shard": (lambda f: (f / "train.00003.h5").write_bytes((f / "train.00000.h5").read_bytes()),
                       "train.00003.h5: shard file not listed in the manifest"),
    "missing shard": (lambda f: (f / "valid.00000.h5").unlink(), "valid.00000.h5: listed in the manifest but missing"),
    "sha256": (lambda f: _flip_byte(f / "train.00002.h5"), "train.00002.h5: sha256"),
    "shard order": (_manifest_edit(lambda d: d["splits"]["train"]["shards"].reverse()),
                    "manifest.json: shard 0 of split 'train' is 'train.00002.h5'"),
    "entry pairs": (_manifest_edit(lambda d: d["splits"]["train"]["shards"][1].update(pairs=5)),
                    "manifest.json: entry of train.00001.h5 says pairs/first_line/last_line = 5/7/12"),
    "split pairs": (_manifest_edit(lambda d: d["splits"]["valid"].update(pairs=4)),
                    "manifest.json: split 'valid': pairs is 4 but its shards hold 3"),
    "input_lines": (_manifest_edit(lambda d: d["splits"]["train"].update(input_lines=16)),
                    "manifest.json: split 'train': input_lines 16 != pairs 14 + dropped 1"),
    "dropped tally": (_manifest_edit(lambda d: (d["splits"]["train"]["dropped"].update({"clean:ratio": 1}),
                                                d["splits"]["train"].update(input_lines=16))),
                      "dropped['clean:ratio'] is 1 but dropped_lines lists 0 such lines"),
    "dropped and stored": (_manifest_edit(lambda d: d["splits"]["train"]["dropped_lines"][0].__setitem__(0, 4)),
                           "manifest.json: split 'train': line 4 is both stored in a shard and listed as dropped"),
    "dropped beyond input": (_manifest_edit(lambda d: d["splits"]["train"]["dropped_lines"][0].__setitem__(0, 99)),
                             "dropped_lines must be strictly increasing line numbers in [1, input_lines = 15]"),
}


def _flip_byte(p):
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0xFF
    p.write_bytes(bytes(b))


@pytest.mark.parametrize("case", list(MANIFEST_CASES))
def test_each_manifest_invariant_is_named(tmp_path, case):
    corrupt, message = MANIFEST_CASES[case]
    _write(tmp_path)
    corrupt(tmp_path)
    got = _violation(tmp_path)
    assert message in got, got


def test_truncated_file_without_reseal_is_a_checksum_violation(tmp_path):
    _write(tmp_path)
    p = tmp_path / "train.00001.h5"
    p.write_bytes(p.read_bytes()[:1000])
    assert _violation(tmp_path).startswith("train.00001.h5: 1000 bytes, the manifest says")
    with pytest.raises(CheckError, match="train.00001.h5: 1000 bytes"):
        check_dir(tmp_path).raise_if_failed()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), shard=st.integers(1, 7), words=st.integers(1, 30))
def test_consistent_synthetic_data_always_passes(tmp_path_factory, seed, shard, words):
    folder = tmp_path_factory.mktemp("ok")
    rng = np.random.default_rng(seed)
    recs = list(random_records(15, rng, words=words, multi_sentence=0.5, vocab_size=1000))
    stored = {r.line for r in recs}
    drops = [(i, "parse:failed", "") for i in range(1, recs[-1].line) if i not in stored]  # lines it skipped
    write_folder_records(folder, {"test": recs}, shard_size=shard, drops={"test": drops})
    report = check_dir(folder)
    assert report.ok, report.violation


def test_cli(tmp_path):
    _write(tmp_path)
    ok = run_cli("check", str(tmp_path))
    assert ok.stdout == f"synprep check: OK {tmp_path}: train 14 pairs, valid 3 pairs (4 shards)\n"
    assert "shard:v1" in ok.stderr
    _truncate(tmp_path)
    bad = run_cli("check", str(tmp_path), check=False)
    assert bad.returncode == 1 and bad.stdout == ""
    assert f"synprep check: FAILED {tmp_path}: train.00001.h5: not a readable HDF5 file" in bad.stderr
    assert "Traceback" not in bad.stderr
    missing = run_cli("check", str(tmp_path / "nope"), check=False)
    assert missing.returncode == 2 and "no such output folder" in missing.stderr
