"""Readers check a shard's values as ``synprep check`` does, even when the manifest vouches for the file.

A shard is damaged in place (h5py, same dtypes and shapes) and the manifest re-sealed (sha256 and
size updated), so only the values give it away. ``open_split`` (what ``train``, ``show``,
``export`` and ``translate`` read through) runs check's per-shard verification
(:func:`synprep.shards.check.check_shard`): the same violation ``check`` reports, as one line, exit
status 2 — never a traceback, never accepted data.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import h5py
import numpy as np
import pytest
from builders import copy_folder, one_line, reseal, small_folder
from helpers import run_cli

from synprep.errors import InputError
from synprep.shards import check_dir, open_split

VOCAB = 1000


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("valid") / "out"
    small_folder(base, drop_every=0, vocab_size=VOCAB)
    return base


@pytest.fixture
def folder(valid, tmp_path) -> Path:
    return copy_folder(valid, tmp_path)


def _set(f: h5py.File, name: str, k: int, value: int) -> None:
    a = f[name][()]
    a[k] = value
    f[name][...] = a


def _second_word_of_pair_1(f: h5py.File) -> int:
    return int(f["offsets/word"][1]) + 1


def _w(f: h5py.File) -> int:
    return int(f["offsets/word"][2] - f["offsets/word"][1])


def _root_under_a_dependent(f: h5py.File) -> None:
    """Pair 1's first root hangs from one of its own dependents: a sentence without a root, a cycle."""
    lo, hi = int(f["offsets/word"][1]), int(f["offsets/word"][2])
    heads = f["heads"][lo:hi]
    root = int(np.flatnonzero(heads == 0)[0])
    _set(f, "heads", lo + root, int(np.flatnonzero(heads == root + 1)[0]) + 1)


#: name → (damage of shard train.00001.h5, the violation's words): each breaks one invariant of check
DAMAGES = {
    "head_out_of_range": (lambda f: _set(f, "heads", _second_word_of_pair_1(f), _w(f) + 1), "is outside [0, W"),
    "head_cycle": (lambda f: _root_under_a_dependent(f), "roots"),
    "word_index_jump": (lambda f: _set(f, "word_index", int(f["offsets/src"][1]) + 1, 3), "word_index"),
    "gap_inside_sentence": (lambda f: _set(f, "gaps_cnf", int(f["offsets/gap"][1]), 0), "gaps_cnf"),
    "src_id_outside_vocab": (lambda f: _set(f, "src_ids", int(f["offsets/src"][1]), VOCAB + 5),
                             "outside the vocabulary"),
    "tgt_id_special": (lambda f: _set(f, "tgt_ids", int(f["offsets/tgt"][1]), 1), "special symbol"),
    "ldd_dep_out_of_range": (lambda f: _set(f, "ldd_dep", int(f["offsets/ldd"][1]), 200), "ldd_dep"),
    "deprel_label": (lambda f: _set(f, "deprel", int(f["offsets/word"][1]), 250), "not a valid id"),
}


def damage(folder: Path, name: str) -> Path:
    shard = folder / "train.00001.h5"
    with h5py.File(shard, "r+") as f:
        DAMAGES[name][0](f)
    reseal(folder)
    return shard


@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_the_reader_refuses_what_check_refuses(folder, name):
    shard = damage(folder, name)
    report = check_dir(folder)
    assert not report.ok and report.violation is not None
    assert report.violation.file == shard.name and DAMAGES[name][1] in report.violation.what
    with pytest.raises(InputError) as e:
        open_split(folder, "train")
    assert e.value.path == str(shard)
    assert report.violation.what in e.value.reason  # the same verification: the same words
    assert f"pair {report.violation.pair} (line {report.violation.line})" in e.value.reason
    open_split(folder, "valid")  # another split of the folder is fine


@pytest.mark.parametrize("name", ["head_out_of_range", "src_id_outside_vocab", "gap_inside_sentence", "head_cycle"])
def test_show_export_and_train_give_one_line(folder, tmp_path, name):
    damage(folder, name)
    what = DAMAGES[name][1]
    for args in (("show", str(folder), "--split", "train", "--index", "5"),
                 ("export", str(folder), "--format", "fairseq", "--to", str(tmp_path / "fs")),
                 ("train", "--shards", str(folder), "--preset", "tiny", "--out", str(tmp_path / "run"),
                  "--max-steps", "1")):
        proc = run_cli(*args, check=False)
        one_line(proc, 2, "train.00001.h5", what)
    assert not (tmp_path / "fs").exists() or not list((tmp_path / "fs").rglob("*.bin"))


def test_an_id_check_needs_the_real_vocabulary_size(folder):
    """The ids are checked against dict.txt's size, not a size the manifest could be edited to claim."""
    from synprep.shards import Manifest

    damage(folder, "src_id_outside_vocab")
    m = Manifest.load(folder)
    m.vocab = {**m.vocab, "size": VOCAB + 100}
    m.save(folder)
    with pytest.raises(InputError, match="outside the vocabulary"):
        open_split(folder, "train")


# --- a large split's shards verified in worker processes first (verified._verify_in_workers) ---------------


@pytest.fixture
def in_workers(monkeypatch):
    """Every split counts as large, two workers, this process's caches empty: what ``open_split`` verifies
    without the workers, this process does itself."""
    from synprep.shards import verified

    monkeypatch.setattr(verified, "PARALLEL_VERIFY_BYTES", 0)
    monkeypatch.setattr(verified, "verify_workers", lambda: 2)
    monkeypatch.setattr(verified, "_VERIFIED", set())
    monkeypatch.setattr(verified, "_VALUES_OK", set())
    return verified


def test_the_workers_verify_a_large_split(folder, in_workers, monkeypatch):
    """Every shard's values verified in the workers: this process's check_shard never runs (it would fail
    here), and the readers are those of the serial pass."""
    import synprep.shards.check as check

    want = [r.lines.tolist() for r in open_split(folder, "train", cache=False)]  # serial: caches filled
    monkeypatch.setattr(in_workers, "_VERIFIED", set())
    monkeypatch.setattr(in_workers, "_VALUES_OK", set())

    def not_here(*a, **k):
        raise AssertionError("verified in this process, not in the workers")

    monkeypatch.setattr(check, "check_shard", not_here)
    got = open_split(folder, "train", cache=False)
    assert [r.lines.tolist() for r in got] == want and len(got) == 3
    assert len(in_workers._VALUES_OK) == 3 and len(in_workers._VERIFIED) == 3


def test_the_workers_write_a_large_splits_maps(folder, in_workers, monkeypatch, tmp_path):
    """With a map folder (``train``'s ``arrays/``) the workers also write every shard's maps: this process
    decodes none, and its readers hold maps of what it would have decoded, header included."""
    from synprep.shards import ShardReader
    from synprep.shards.mapped import map_key

    want = [[r[i] for i in range(len(r))] for r in open_split(folder, "train")]
    monkeypatch.setattr(in_workers, "_VERIFIED", set())
    monkeypatch.setattr(in_workers, "_VALUES_OK", set())

    def not_here(self):
        raise AssertionError(f"{self.path.name} decoded in this process, not in the workers")

    monkeypatch.setattr(ShardReader, "_decode", not_here)
    got = open_split(folder, "train", map_dir=tmp_path / "arrays")
    for r, recs in zip(got, want, strict=True):
        assert r._data is not None and (tmp_path / "arrays" / map_key(r.path) / "arrays.bin").is_file()
        assert not r.lines.flags.writeable  # the map of the header, not a copy
        for i, rec in enumerate(recs):
            assert r[i].line == rec.line and np.array_equal(r[i].heads, rec.heads)


def test_the_workers_hash_a_large_splits_maps_and_replace_a_changed_one(folder, in_workers, monkeypatch, tmp_path):
    """Maps written before (another run's): the workers hash them against their sums and decode again the one
    whose bytes changed; this process hashes and decodes none, and reads the shard's records."""
    from synprep.shards import ShardReader, mapped

    want = [[r[i] for i in range(len(r))] for r in open_split(folder, "train", map_dir=tmp_path / "arrays")]
    changed = tmp_path / "arrays" / mapped.map_key(folder / "train.00001.h5") / "arrays.bin"
    _, start, _ = json.loads(changed.with_name("index.json").read_text())["arrays"]["heads"]
    raw = bytearray(changed.read_bytes())
    raw[start] ^= 0x01  # the first head of the first pair
    changed.write_bytes(bytes(raw))
    monkeypatch.setattr(in_workers, "_VERIFIED", set())
    monkeypatch.setattr(in_workers, "_VALUES_OK", set())
    monkeypatch.setattr(mapped, "_MAPS_OK", set())

    def not_here(*a, **k):
        raise AssertionError("hashed or decoded in this process, not in the workers")

    monkeypatch.setattr(ShardReader, "_decode", not_here)
    monkeypatch.setattr(mapped, "_sealed", not_here)
    got = open_split(folder, "train", map_dir=tmp_path / "arrays")
    for r, recs in zip(got, want, strict=True):
        for i, rec in enumerate(recs):
            assert r[i].line == rec.line and np.array_equal(r[i].heads, rec.heads)
    assert changed.read_bytes() != bytes(raw) and len(mapped._MAPS_OK) == 3


@pytest.mark.parametrize("maps", [False, True], ids=["held", "mapped"])
def test_the_asking_process_reads_no_header_the_workers_read(folder, in_workers, monkeypatch, tmp_path, maps):
    """The workers hand back the header they read and checked (attributes; offsets and lines, or with maps the
    folder they compared with them): this process opens no shard to build its readers, and they are the
    serial pass's, attributes, header and records."""
    from synprep.shards import ShardReader, mapped

    map_dir = tmp_path / "arrays" if maps else None
    want = open_split(folder, "train")
    monkeypatch.setattr(in_workers, "_VERIFIED", set())
    monkeypatch.setattr(in_workers, "_VALUES_OK", set())
    monkeypatch.setattr(mapped, "_MAPS_OK", set())

    def not_here(self):
        raise AssertionError(f"{self.path.name}'s header read in this process, not in the workers")

    with monkeypatch.context() as m:
        m.setattr(ShardReader, "_open_header", not_here)
        got = open_split(folder, "train", map_dir=map_dir)
    for r, w in zip(got, want, strict=True):
        assert r.attrs == w.attrs and np.array_equal(r.lines, w.lines)
        assert all(np.array_equal(r.offsets[a], w.offsets[a]) for a in w.offsets)
        assert r.lines.flags.writeable is not maps  # mapped: the map of the header, not a copy
        for i in range(len(w)):
            assert r[i].line == w[i].line and np.array_equal(r[i].ldd_prob, w[i].ldd_prob)


def test_a_header_of_a_file_that_changed_since_the_workers_is_read_again(folder, tmp_path):
    """The workers' header serves only the file version (size, modification time) and maps they verified."""
    from synprep.shards import ShardReader
    from synprep.shards.verified import Verified, _file_key, _reader

    path = folder / "train.00000.h5"
    plain = ShardReader(path)
    verified = Verified(_file_key(path, path.stat(), "x"), None, {"made": "up"}, plain.offsets, plain.lines)
    assert _reader(path, True, None, "x", verified).attrs == {"made": "up"}  # taken as given
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))
    assert _reader(path, True, None, "x", verified).attrs == plain.attrs  # read again
    mapped = Verified(verified.file, ("no", "such", "maps"), {"made": "up"}, None, None)
    assert _reader(path, True, tmp_path / "arrays", "x", mapped).attrs == plain.attrs


def test_a_damaged_shard_is_refused_as_without_workers(folder, in_workers, monkeypatch):
    """Shards 1 and 2 damaged: the workers pass shard 0 and nothing else, and the error is the serial
    pass's, word for word (shard 1, the first in shard order)."""
    damage(folder, "head_out_of_range")
    with h5py.File(folder / "train.00002.h5", "r+") as f:
        _set(f, "src_ids", 0, VOCAB + 5)
    reseal(folder)
    with pytest.raises(InputError) as parallel:
        open_split(folder, "train")
    assert len(in_workers._VALUES_OK) == 1  # shard 0, from a worker; 1 failed, 2 was never reached here
    monkeypatch.setattr(in_workers, "PARALLEL_VERIFY_BYTES", 1 << 60)  # serial only
    monkeypatch.setattr(in_workers, "_VERIFIED", set())
    monkeypatch.setattr(in_workers, "_VALUES_OK", set())
    with pytest.raises(InputError) as serial:
        open_split(folder, "train")
    assert str(parallel.value) == str(serial.value) and parallel.value.path == str(folder / "train.00001.h5")


def test_no_pool_is_the_serial_pass(folder, in_workers, monkeypatch):
    """A pool that cannot start (no processes allowed) changes nothing but the time; a small split starts none."""
    from synprep import loky_seam

    def no_pool(*a, **k):
        raise OSError("no processes here")

    monkeypatch.setattr(loky_seam, "process_pool_executor", lambda: no_pool)
    assert len(open_split(folder, "train")) == 3 and len(in_workers._VALUES_OK) == 3
    monkeypatch.setattr(in_workers, "_VALUES_OK", set())
    monkeypatch.setattr(in_workers, "PARALLEL_VERIFY_BYTES", 1 << 60)
    started = []
    monkeypatch.setattr(loky_seam, "process_pool_executor", lambda: lambda *a, **k: started.append(1))
    assert in_workers._verify_in_workers([(p, p.stat().st_size, "0" * 64, None, 0, None)
                                          for p in sorted(folder.glob("train.*.h5"))]) == {} and not started


def test_the_workers_share_the_cores_of_a_torchrun_node(monkeypatch):
    import synprep.parallel as parallel
    from synprep.shards.verified import verify_workers

    monkeypatch.setattr(parallel, "usable_cpus", lambda: 16)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert verify_workers() == 16
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert verify_workers() == 2
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "32")
    assert verify_workers() == 1
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "x")
    assert verify_workers() == 16
