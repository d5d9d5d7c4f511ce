from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from dataclasses import fields

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synprep.errors import InputError
from synprep.shards import (
    Manifest,
    ShardFormatError,
    ShardReader,
    SplitReader,
    open_split,
    shard_name,
    write_shard,
)
from synprep.shards import writer as writer_mod
from synprep.shards.synthetic import make_record, random_records, shard_attrs, write_folder
from synprep.types import PairRecord

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def assert_same(a: PairRecord, b: PairRecord) -> None:
    """b (read back) equals a (written), ldd_prob up to float16 rounding."""
    for f in fields(PairRecord):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "line":
            assert x == y
        elif f.name == "ldd_prob":
            assert y.dtype == np.float32
            np.testing.assert_array_equal(np.asarray(x, np.float16).astype(np.float32), y)
        else:
            assert y.dtype == np.int64, f.name
            np.testing.assert_array_equal(np.asarray(x, dtype=np.int64), y, err_msg=f.name)


@st.composite
def records(draw, max_sents=3, max_words=12):
    """A strictly increasing run of consistent PairRecords (multi-sentence lines included)."""
    n = draw(st.integers(1, 6))
    vocab_size = draw(st.sampled_from([40, 70_000]))  # > 65536: int32 ids
    out, line = [], draw(st.integers(1, 10))
    for _ in range(n):
        sents = draw(st.lists(st.integers(1, max_words), min_size=1, max_size=max_sents))
        ppw = draw(st.lists(st.integers(1, 3), min_size=sum(sents), max_size=sum(sents)))
        rec = make_record(line, sents, ppw, draw(st.integers(1, 15)), np.random.default_rng(draw(st.integers(0, 2**32))),
                          vocab_size=vocab_size, ldd_extra=draw(st.integers(0, 2)))
        if draw(st.booleans()) and draw(st.booleans()):  # empty LDD round-trips too
            rec.ldd_dep, rec.ldd_head = np.zeros(0, np.int64), np.zeros(0, np.int64)
            rec.ldd_rel, rec.ldd_prob = np.zeros(0, np.int64), np.zeros(0, np.float32)
        out.append(rec)
        line += draw(st.integers(1, 1000))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recs=records())
def test_round_trip(tmp_path, recs):
    path = tmp_path / "train.00000.h5"
    info = write_shard(path, recs, shard_attrs("train", 0))
    assert (info.file, info.pairs, info.first_line, info.last_line) == (path.name, len(recs), recs[0].line,
                                                                        recs[-1].line)
    assert info.bytes == path.stat().st_size
    for cache in (True, False):
        with ShardReader(path, cache=cache) as r:
            assert len(r) == len(recs)
            assert r.lines.tolist() == [x.line for x in recs]
            assert r.src_lengths.tolist() == [len(x.src_ids) for x in recs]
            assert r.tgt_lengths.tolist() == [len(x.tgt_ids) for x in recs]
            for a, b in zip(recs, r, strict=True):
                assert_same(a, b)
            assert_same(recs[-1], r[-1])


def test_long_line_and_big_vocab_dtypes(tmp_path):
    rng = np.random.default_rng(1)
    long = make_record(5, [200, 150], [1] * 350, 400, rng, vocab_size=70_000)  # W > 255, T > 255
    short = make_record(9, [3], [1, 2, 1], 2, rng, vocab_size=70_000)
    short.src_ids[:] = 70_000 + 5
    for r in (long, short):
        r.tgt_ids = np.minimum(r.tgt_ids, 65535)  # the target side of this shard fits uint16
    path = tmp_path / "x.h5"
    write_shard(path, [long, short], shard_attrs("train", 0))
    with h5py.File(path) as f:
        assert f["src_ids"].dtype == np.int32 and f["tgt_ids"].dtype == np.uint16
        assert f["heads"].dtype == np.uint16 and f["word_index"].dtype == np.uint16
        assert f["deprel"].dtype == np.uint8 and f["gaps_cnf"].dtype == np.int16
        assert f["ldd_prob"].dtype == np.float16 and f["sent_start"].dtype == np.uint8
        assert f["offsets/src"].dtype == np.int64 and f["line"].dtype == np.uint32
        assert f["src_ids"].compression == "gzip" and f["src_ids"].compression_opts == 4 and f["src_ids"].shuffle
        assert f["line"].chunks is None and f["offsets/src"].chunks is None
    r = ShardReader(path)
    assert_same(long, r[0])
    assert_same(short, r[1])


def test_attrs_are_parsed(tmp_path):
    path = tmp_path / "valid.00003.h5"
    write_shard(path, random_records(3, np.random.default_rng(0)),
                shard_attrs("valid", 3, config={"bpe": {"codes_sha256": "ab"}, "lowercase": True}))
    a = ShardReader(path).attrs
    assert a["format"] == "synprep-shard" and a["format_version"] == 1 and a["n_pairs"] == 3
    assert a["config"] == {"bpe": {"codes_sha256": "ab"}, "lowercase": True}
    assert a["deprel_labels"][34] == "root" and a["upos_labels"][-1] == "X"
    assert a["split"] == "valid" and a["shard_index"] == 3 and a["ldd_threshold"] == 0.001
    with h5py.File(path) as f:  # plain h5py sees JSON text
        assert json.loads(f.attrs["config"]) == a["config"]


_WRITE_SNIPPET = """
import sys, numpy as np
from synprep.shards import write_shard
from synprep.shards.synthetic import random_records, shard_attrs
write_shard(sys.argv[1], random_records(300, np.random.default_rng(7)), shard_attrs("train", 0))
"""


def test_byte_identical_rewrite_across_processes(tmp_path):
    a, b, c = tmp_path / "a" / "train.00000.h5", tmp_path / "b" / "train.00000.h5", tmp_path / "c" / "train.00000.h5"
    ia = write_shard(a, random_records(300, np.random.default_rng(7)), shard_attrs("train", 0))
    ib = write_shard(b, random_records(300, np.random.default_rng(7)), shard_attrs("train", 0))
    subprocess.run([sys.executable, "-c", _WRITE_SNIPPET, str(c)], check=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert a.read_bytes() == b.read_bytes() == c.read_bytes()
    assert ia.sha256 == ib.sha256
    # and a different record gives a different file (the comparison can fail)
    recs = list(random_records(300, np.random.default_rng(7)))
    recs[100].gaps_cnf[0] += 1
    write_shard(b, recs, shard_attrs("train", 0))
    assert a.read_bytes() != b.read_bytes()


def _failing(recs, after):
    for i, r in enumerate(recs):
        if i == after:
            raise RuntimeError("parser died")
        yield r


def test_atomic_when_records_fail(tmp_path):
    path = tmp_path / "train.00000.h5"
    with pytest.raises(RuntimeError, match="parser died"):
        write_shard(path, _failing(list(random_records(10, np.random.default_rng(0))), 5), shard_attrs("train", 0))
    assert list(tmp_path.iterdir()) == []


def test_atomic_when_hdf5_write_fails_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "train.00000.h5"
    write_shard(path, random_records(5, np.random.default_rng(0)), shard_attrs("train", 0))
    before = path.read_bytes()
    real = writer_mod._create
    calls = []

    def boom(group, name, data, compressed):
        calls.append(name)
        if name == "heads":
            raise OSError("disk full")
        real(group, name, data, compressed)

    monkeypatch.setattr(writer_mod, "_create", boom)
    with pytest.raises(OSError, match="disk full"):
        write_shard(path, random_records(7, np.random.default_rng(1)), shard_attrs("train", 0))
    assert "src_ids" in calls  # it did fail in the middle of the file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.00000.h5"]
    assert path.read_bytes() == before


@pytest.mark.parametrize("mutate,msg", [
    (lambda r: setattr(r, "word_index", r.word_index[:-1]), "word_index has .* values but src_ids has"),
    (lambda r: setattr(r, "deprel", r.deprel[:-1]), "deprel has .* values but heads has"),
    (lambda r: setattr(r, "ldd_prob", r.ldd_prob[:-1]), "ldd_prob has"),
    (lambda r: setattr(r, "heads", r.heads - 5), "heads has a negative value"),
    (lambda r: setattr(r, "deprel", r.deprel + 300), "deprel id .* does not fit uint8"),
    (lambda r: setattr(r, "gaps_cnf", r.gaps_cnf * 0 + 40_000), "gaps_cnf value outside int16"),
    (lambda r: setattr(r, "heads", r.heads.astype(float)), "heads must be integers"),
    (lambda r: setattr(r, "ldd_prob", r.ldd_prob * np.nan), "ldd_prob is not finite"),
    (lambda r: setattr(r, "line", 1), "strictly increasing"),
])
def test_writer_refuses_inconsistent_records_naming_the_line(tmp_path, mutate, msg):
    recs = list(random_records(3, np.random.default_rng(0), first_line=10))
    mutate(recs[2])
    with pytest.raises(ValueError, match=msg):
        write_shard(tmp_path / "t.h5", recs, shard_attrs("train", 0))
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_bad_attrs(tmp_path):
    recs = list(random_records(1, np.random.default_rng(0)))
    with pytest.raises(ValueError, match="missing \\['signature'\\], unknown \\['signatur'\\]"):
        attrs = shard_attrs("train", 0)
        attrs["signatur"] = attrs.pop("signature")
        write_shard(tmp_path / "t.h5", recs, attrs)
    with pytest.raises(ValueError, match="tau"):
        write_shard(tmp_path / "t.h5", recs, shard_attrs("train", 0, config={"tau": 10}))
    with pytest.raises(ValueError, match="at least one pair"):
        write_shard(tmp_path / "t.h5", [], shard_attrs("train", 0))


def test_tiny_probabilities_stay_positive(tmp_path):
    rec = make_record(1, [2], [1, 1], 1, np.random.default_rng(0), ldd_extra=0)
    rec.ldd_prob = np.array([1e-9, 1.0], dtype=np.float32)
    write_shard(tmp_path / "t.h5", [rec], shard_attrs("train", 0))
    p = ShardReader(tmp_path / "t.h5")[0].ldd_prob
    assert p[0] == 2.0**-24 and p[1] == 1.0


def test_unknown_format_or_version_is_refused(tmp_path):
    path = tmp_path / "train.00000.h5"
    write_shard(path, random_records(2, np.random.default_rng(0)), shard_attrs("train", 0))
    with h5py.File(path, "r+") as f:
        f.attrs["format_version"] = 2
    with pytest.raises(ShardFormatError, match="format_version 2 is not supported: this synprep reads version 1"):
        ShardReader(path)
    with h5py.File(path, "r+") as f:
        f.attrs["format"] = "other"
    with pytest.raises(ShardFormatError, match="not a synprep shard: format attribute is 'other'"):
        ShardReader(path)
    (tmp_path / "junk.h5").write_bytes(b"not hdf5")
    with pytest.raises(InputError, match="cannot read shard"):
        ShardReader(tmp_path / "junk.h5")


def test_pickled_reader_reopens(tmp_path):
    path = tmp_path / "train.00000.h5"
    recs = list(random_records(20, np.random.default_rng(3)))
    write_shard(path, recs, shard_attrs("train", 0))
    for cache in (True, False):
        r = ShardReader(path, cache=cache)
        r[0]  # opens the file / fills the cache
        blob = pickle.dumps(r)
        assert len(blob) < 1000  # the path, not the data
        assert_same(recs[7], pickle.loads(blob)[7])


def test_dataloader_workers_read_through_their_own_handles(tmp_path):
    torch_data = pytest.importorskip("torch.utils.data")
    write_folder(tmp_path, {"train": 50}, shard_size=20)
    split = SplitReader(open_split(tmp_path, "train", cache=False))
    split[0]  # the parent opened a handle before the workers fork

    class DS(torch_data.Dataset):
        def __len__(self):
            return len(split)

        def __getitem__(self, i):
            return split[i].line, int(split[i].src_ids.sum())

    loader = torch_data.DataLoader(DS(), batch_size=8, num_workers=2, collate_fn=list)
    got = [x for batch in loader for x in batch]
    assert got == [(split[i].line, int(split[i].src_ids.sum())) for i in range(50)]


def test_open_split_orders_shards_and_indexes_globally(tmp_path):
    m = write_folder(tmp_path, {"train": 45, "valid": 5}, shard_size=20, drop_every=7)
    readers = open_split(tmp_path, "train")
    assert [r.path.name for r in readers] == ["train.00000.h5", "train.00001.h5", "train.00002.h5"]
    split = SplitReader(readers)
    assert len(split) == 45 and split.src_lengths.shape == (45,) and split.tgt_lengths.shape == (45,)
    assert split.locate(20) == (1, 0) and split.locate(-1) == (2, 4)
    assert split[44].line == readers[2][4].line == m.splits["train"].shards[2].last_line
    assert split.lines.tolist() == [r.line for r in split]
    assert all(np.diff(split.lines) > 0)
    with pytest.raises(IndexError):
        split[45]
    (tmp_path / "train.00001.h5").unlink()
    with pytest.raises(InputError, match="shard 1 of split 'train' is missing"):
        open_split(tmp_path, "train")


def test_manifest_is_stable_and_accounts_for_lines(tmp_path):
    m = write_folder(tmp_path, {"train": 30}, shard_size=10, drop_every=5)
    text = (tmp_path / "manifest.json").read_text()
    assert Manifest.load(tmp_path).to_json() == text
    d = json.loads(text)
    t = d["splits"]["train"]
    assert t["pairs"] == 30 and t["input_lines"] == t["pairs"] + sum(t["dropped"].values())
    assert t["dropped"]["parse:failed"] == 0 and t["dropped"]["clean:ratio"] == len(t["dropped_lines"]) > 0
    assert d["vocab"] == {"path": "dict.txt", "sha256": m.vocab["sha256"], "size": 1000}
    # the same run again gives the same bytes
    write_folder(tmp_path / "again", {"train": 30}, shard_size=10, drop_every=5)
    assert (tmp_path / "again" / "manifest.json").read_text() == text


def test_manifest_edits(tmp_path):
    m = Manifest("sig", {"a": 1})
    m.record_drop("test", 4, "clean:ratio", "9.0 > 1.5")
    m.record_drop("test", 2, "parse:failed", "too long")
    m.record_drop("test", 4, "clean:length", "")  # re-recorded: replaces, never double counts
    assert m.splits["test"].dropped == {"clean:ratio": 0, "parse:failed": 1, "clean:length": 1}
    assert m.splits["test"].dropped_lines == [[2, "parse:failed", "too long"], [4, "clean:length", ""]]
    info = write_shard(tmp_path / shard_name("test", 0), random_records(3, np.random.default_rng(0)),
                       shard_attrs("test", 0))
    m.add_shard("test", info)
    m.add_shard("test", info)
    assert len(m.splits["test"].shards) == 1 and m.splits["test"].pairs == 3
    assert m.is_done(tmp_path, "test.00000.h5")
    assert not m.is_done(tmp_path, "test.00001.h5")
    with h5py.File(tmp_path / "test.00000.h5", "r+") as f:
        f["gaps_cnf"][0] = 7  # same size, different bytes
    assert not m.is_done(tmp_path, "test.00000.h5")
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(InputError, match="manifest is not JSON"):
        Manifest.load(tmp_path)


def test_split_reader_caps_cached_shards(tmp_path):
    write_folder(tmp_path, {"train": 50}, shard_size=10)
    split = SplitReader(open_split(tmp_path, "train"), max_cached=2)
    assert [len(r) for r in split.shard_ranges()] == [10] * 5 and split.shard_ranges()[1].start == 10
    lines = [split[i].line for i in (0, 15, 25)]  # touches shards 0, 1, 2
    assert [r._data is not None for r in split.readers] == [False, True, True, False, False]
    assert lines == [split.lines[i] for i in (0, 15, 25)]
    assert split[3].line == split.lines[3]  # a dropped shard reloads
    assert [r._data is not None for r in split.readers] == [True, False, True, False, False]
