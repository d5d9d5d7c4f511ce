"""Format version 1, described by its datasets and values (docs/FORMAT.md), independently of the writer.

Two pairs: line 3 "hello . i sw@@ im" (two sentences) and line 7 "the ri@@ ver".
A reader or writer change that misreads or miswrites version 1 fails here; change
``format_version`` (and this test's expectations only for the new version) when the layout changes.
"""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from synprep.shards import ShardReader, write_shard
from synprep.types import DEPRELS, UPOS_TAGS, PairRecord

ROOT, PUNCT, NSUBJ, DET = 34, 32, 26, 15
INTJ, PUNCT_U, PRON, VERB, DET_U, NOUN = 6, 12, 10, 15, 5, 7

V1_DATASETS = {
    "line": ("uint32", [3, 7]),
    "offsets/src": ("int64", [0, 5, 8]),
    "offsets/tgt": ("int64", [0, 4, 7]),
    "offsets/word": ("int64", [0, 4, 6]),
    "offsets/gap": ("int64", [0, 4, 6]),
    "offsets/sent": ("int64", [0, 2, 3]),
    "offsets/ldd": ("int64", [0, 4, 7]),
    "src_ids": ("uint16", [4, 5, 6, 7, 8, 9, 10, 11]),
    "word_index": ("uint8", [0, 1, 2, 3, 3, 0, 1, 1]),
    "tgt_ids": ("uint16", [12, 13, 14, 15, 16, 17, 3]),
    "heads": ("uint8", [0, 1, 4, 0, 2, 0]),
    "deprel": ("uint8", [ROOT, PUNCT, NSUBJ, ROOT, DET, ROOT]),
    "upos": ("uint8", [INTJ, PUNCT_U, PRON, VERB, DET_U, NOUN]),
    "gaps_cnf": ("int16", [2, 999, 2, 1, 2, 1]),
    "gaps_nary": ("int16", [2, 999, 3, 1, 2, 1]),
    "sent_start": ("uint8", [0, 2, 0]),
    "ldd_dep": ("uint8", [1, 2, 3, 4, 1, 1, 2]),
    "ldd_head": ("uint8", [0, 1, 4, 0, 2, 0, 0]),
    "ldd_rel": ("uint8", [ROOT, PUNCT, NSUBJ, ROOT, DET, DET, ROOT]),
    "ldd_prob": ("float16", [1.0, 1.0, 1.0, 1.0, 0.75, 0.125, 1.0]),
}
V1_ATTRS = {
    "format": "synprep-shard", "format_version": 1, "split": "test", "shard_index": 0, "n_pairs": 2,
    "src_lang": "en", "tgt_lang": "de", "signature": "synprep:0.1.0|shard:v1", "tree_source": "constituency",
    "ldd_threshold": 0.01, "vocab_path": "dict.txt", "vocab_sha256": "ab" * 32,
}
V1_CONFIG = {"lowercase": True, "parser": {"name": "stanza"}}

EXPECTED = [
    PairRecord(line=3, src_ids=[4, 5, 6, 7, 8], tgt_ids=[12, 13, 14, 15], word_index=[0, 1, 2, 3, 3],
               heads=[0, 1, 4, 0], deprel=[ROOT, PUNCT, NSUBJ, ROOT], upos=[INTJ, PUNCT_U, PRON, VERB],
               sent_start=[0, 2], gaps_cnf=[2, 999, 2, 1], gaps_nary=[2, 999, 3, 1], ldd_dep=[1, 2, 3, 4],
               ldd_head=[0, 1, 4, 0], ldd_rel=[ROOT, PUNCT, NSUBJ, ROOT], ldd_prob=[1.0, 1.0, 1.0, 1.0]),
    PairRecord(line=7, src_ids=[9, 10, 11], tgt_ids=[16, 17, 3], word_index=[0, 1, 1], heads=[2, 0],
               deprel=[DET, ROOT], upos=[DET_U, NOUN], sent_start=[0], gaps_cnf=[2, 1], gaps_nary=[2, 1],
               ldd_dep=[1, 1, 2], ldd_head=[2, 0, 0], ldd_rel=[DET, DET, ROOT], ldd_prob=[0.75, 0.125, 1.0]),
]


def _write_v1_by_hand(path):
    with h5py.File(path, "w") as f:
        for key, value in V1_ATTRS.items():
            f.attrs[key] = value
        f.attrs["config"] = json.dumps(V1_CONFIG)
        f.attrs["deprel_labels"] = json.dumps(list(DEPRELS))
        f.attrs["upos_labels"] = json.dumps(list(UPOS_TAGS))
        for name, (dtype, values) in V1_DATASETS.items():
            f.create_dataset(name, data=np.array(values, dtype=dtype))


def _records_equal(a: PairRecord, b: PairRecord) -> None:
    assert a.line == b.line
    for name in V1_DATASETS:
        if "/" not in name and name != "line":
            np.testing.assert_array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name)), err_msg=name)


@pytest.mark.parametrize("cache", [True, False])
def test_reader_reads_a_hand_written_v1_shard(tmp_path, cache):
    path = tmp_path / "test.00000.h5"
    _write_v1_by_hand(path)
    r = ShardReader(path, cache=cache)
    assert len(r) == 2 and r.lines.tolist() == [3, 7]
    assert r.src_lengths.tolist() == [5, 3] and r.tgt_lengths.tolist() == [4, 3]
    assert r.attrs["config"] == V1_CONFIG and r.attrs["deprel_labels"][ROOT] == "root"
    assert r.attrs["src_lang"] == "en" and r.attrs["n_pairs"] == 2
    assert r.attrs["subword"] == "bpe"  # written before the attribute existed: subword-nmt BPE
    for expected, got in zip(EXPECTED, r, strict=True):
        _records_equal(expected, got)


def test_writer_writes_exactly_v1(tmp_path):
    path = tmp_path / "test.00000.h5"
    attrs = {k: v for k, v in V1_ATTRS.items() if k not in ("format", "format_version", "n_pairs")}
    write_shard(path, EXPECTED, {**attrs, "config": V1_CONFIG})
    with h5py.File(path) as f:
        names = set()
        f.visit(lambda n: names.add(n) if isinstance(f[n], h5py.Dataset) else None)
        assert names == set(V1_DATASETS)
        for name, (dtype, values) in V1_DATASETS.items():
            assert f[name].dtype == np.dtype(dtype), name
            assert f[name][()].tolist() == values, name
        got = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        assert set(got) == set(V1_ATTRS) | {"config", "deprel_labels", "upos_labels", "subword"}
        assert got["subword"] == "bpe"
        for key, value in V1_ATTRS.items():
            assert got[key] == value, key
        assert json.loads(got["config"]) == V1_CONFIG
        assert json.loads(got["deprel_labels"]) == list(DEPRELS)
        assert json.loads(got["upos_labels"]) == list(UPOS_TAGS)


def test_subword_attribute_round_trip_and_check(tmp_path):
    """A shard names its subword scheme; an unknown one is refused by the writer."""
    from synprep.shards.check import check_shard

    attrs = {k: v for k, v in V1_ATTRS.items() if k not in ("format", "format_version", "n_pairs")}
    path = tmp_path / "test.00000.h5"
    write_shard(path, EXPECTED, {**attrs, "config": V1_CONFIG, "subword": "spm"})
    assert ShardReader(path).attrs["subword"] == "spm"
    violation, got, _ = check_shard(path)
    assert violation is None and got is not None and got["subword"] == "spm"
    with pytest.raises(ValueError, match="subword must be one of"):
        write_shard(tmp_path / "test.00001.h5", EXPECTED, {**attrs, "config": V1_CONFIG, "subword": "wordpiece"})


def test_check_accepts_a_v1_shard_without_subword(tmp_path):
    from synprep.shards.check import check_shard

    path = tmp_path / "test.00000.h5"
    _write_v1_by_hand(path)
    violation, got, _ = check_shard(path)
    assert violation is None and got is not None and got["subword"] == "bpe"


WORDS = [["Hallo", "!", "Sie", "gehen"], ["Das", "Haus"]]


def test_words_dataset_is_additive(tmp_path):
    """The words the parser read: one more dataset; every version-1 dataset and attribute is as
    before, byte for byte, so a reader of version 1 reads the shard as it always did."""
    from synprep.shards.check import check_shard

    attrs = {k: v for k, v in V1_ATTRS.items() if k not in ("format", "format_version", "n_pairs")}
    plain, with_words = tmp_path / "test.00000.h5", tmp_path / "w" / "test.00000.h5"
    write_shard(plain, EXPECTED, {**attrs, "config": V1_CONFIG})
    write_shard(with_words, EXPECTED, {**attrs, "config": V1_CONFIG}, words=WORDS)
    with h5py.File(plain) as a, h5py.File(with_words) as b:
        names = set()
        b.visit(lambda n: names.add(n) if isinstance(b[n], h5py.Dataset) else None)
        assert names == set(V1_DATASETS) | {"words"}
        for name in V1_DATASETS:
            assert a[name].dtype == b[name].dtype and a[name][()].tobytes() == b[name][()].tobytes(), name
        assert dict(a.attrs) == dict(b.attrs)
        assert b["words"].dtype == np.uint8
        assert b["words"][()].tobytes().decode("utf-8") == "Hallo\n!\nSie\ngehen\nDas\nHaus\n"
    r = ShardReader(with_words)
    assert [r.words(0), r.words(1), r.words(-1)] == [WORDS[0], WORDS[1], WORDS[1]]
    for expected, got in zip(EXPECTED, r, strict=True):
        _records_equal(expected, got)
    assert check_shard(with_words)[0] is None


def test_a_shard_without_words_reads_as_none(tmp_path):
    """A new reader reads a version-1 shard written before the words were stored: no words, nothing else lost."""
    path = tmp_path / "test.00000.h5"
    _write_v1_by_hand(path)
    r = ShardReader(path)
    assert r.words(0) is None and r.words(1) is None and not r.has_words


def test_words_must_match_the_word_axis(tmp_path):
    attrs = {k: v for k, v in V1_ATTRS.items() if k not in ("format", "format_version", "n_pairs")}
    with pytest.raises(ValueError, match="line 7: 3 words but 2 heads"):
        write_shard(tmp_path / "test.00000.h5", EXPECTED, {**attrs, "config": V1_CONFIG},
                    words=[WORDS[0], ["a", "b", "c"]])
    path = tmp_path / "test.00001.h5"
    _write_v1_by_hand(path)
    with h5py.File(path, "a") as f:
        f.create_dataset("words", data=np.frombuffer(b"eins\nzwei\n", dtype=np.uint8))
    from synprep.errors import InputError

    with pytest.raises(InputError, match="holds 2 words, the word axis 6"):
        ShardReader(path).words(0)
