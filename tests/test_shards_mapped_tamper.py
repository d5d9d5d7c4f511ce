"""Decoded arrays changed on disk (synprep.shards.mapped) are never served: every entry of a map's index
flipped, with or without its seal made to match again; ``arrays.bin`` changed and re-sealed; the maps of
another shard under the current shard's key; ``arrays.bin`` of another size (20 GB, never hashed); a map of
the previous layout. Each is decoded again from the shard, and the records read are the shard's;
``synprep check`` names what is wrong with a damaged one."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from synprep.shards import open_split
from synprep.shards.check import check_dir
from synprep.shards.mapped import map_key
from synprep.shards.schema import AXES, FIELDS
from synprep.shards.synthetic import random_records, write_folder_records

#: arrays whose index entries are flipped: the probe's four that served another array's bytes, and others
ARRAYS = ["gaps_cnf", "word_index", "ldd_head", "ldd_prob", "src_ids", "heads", "line", "offsets.word"]
#: another dtype of the same size for each dtype a map holds (a flipped kind, the worst case: same layout)
OTHER_KIND = {"<u2": "<i2", "<i2": "<u2", "|u1": "|i1", "<u4": "<i4", "<i4": "<u4", "<f2": "<i2", "<i8": "<u8"}


def _records() -> list:
    """200 synthetic pairs of lines 1..200."""
    recs = list(random_records(200, np.random.default_rng(5), vocab_size=1000))
    for i, r in enumerate(recs):
        r.line = i + 1
    return recs


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A folder of two train shards (100 pairs each) and their maps in ``arrays/``."""
    folder = tmp_path_factory.mktemp("tamper") / "shards"
    write_folder_records(folder, {"train": _records()}, shard_size=100)
    open_split(folder, "train", map_dir=folder / "arrays")
    return folder


@pytest.fixture()
def folder(base, tmp_path, monkeypatch) -> Path:
    """A copy of :func:`base`, opened as by a new process (no map verified yet)."""
    from synprep.shards import mapped

    monkeypatch.setattr(mapped, "_MAPS_OK", set())
    monkeypatch.setattr(mapped, "_MAPS_BAD", set())
    shutil.copytree(base, tmp_path / "shards")
    return tmp_path / "shards"


def _key(folder: Path, shard: int = 0) -> Path:
    return folder / "arrays" / map_key(folder / f"train.{shard:05d}.h5")


def _index(key: Path) -> dict:
    return json.loads((key / "index.json").read_text())


def _seal(key: Path, d: dict) -> None:
    """Write index ``d`` with its sha256 made to match it and ``arrays.bin`` again (the seal re-made)."""
    head = json.dumps({k: d[k] for k in ("version", "shard_sha256", "bytes", "arrays")}, sort_keys=True,
                      separators=(",", ":")).encode() + b"\n"
    d["sha256"] = hashlib.sha256(head + (key / "arrays.bin").read_bytes()).hexdigest()
    (key / "index.json").write_text(json.dumps(d))


def _assert_served_from_the_shard(folder: Path) -> None:
    """The split opened with maps serves the shard's arrays (compared with the shard decoded, no maps), and
    every map folder is now sound (rebuilt where it was not)."""
    from synprep.shards.map_truth import map_problem
    from synprep.shards.shard_reader import ShardReader

    plain = open_split(folder, "train", cache=True)
    got = open_split(folder, "train", map_dir=folder / "arrays")
    for p, m in zip(plain, got, strict=True):
        want, have = p.load()._data, m.load()._data
        assert want is not None and have is not None
        for fl in FIELDS:
            assert have[fl.name].dtype == want[fl.name].dtype and np.array_equal(have[fl.name], want[fl.name]), fl.name
        assert np.array_equal(m.lines, p.lines) and all(np.array_equal(m.offsets[a], p.offsets[a]) for a in AXES)
        for i in (0, len(p) - 1):
            assert m[i].line == p[i].line and np.array_equal(m[i].heads, p[i].heads)
    from synprep.shards.manifest import Manifest

    entry = Manifest.load(folder).splits["train"]
    for p, info in zip(plain, entry.shards, strict=True):
        assert map_problem(ShardReader(p.path, sha256=info.sha256, vocab_size=1000), folder / "arrays") is None


@pytest.mark.parametrize("sealed", [False, True], ids=["as-flipped", "re-sealed"])
@pytest.mark.parametrize("field", ["start", "length", "dtype"])
@pytest.mark.parametrize("name", ARRAYS)
def test_a_flipped_index_entry_is_never_served(folder, name, field, sealed):
    """One entry of ``index.json`` changed (the start offset's bit 6, which keeps it aligned and inside the
    file: another array's bytes; the length's lowest bit; the dtype's kind, of the same size): the seal no
    longer holds, and where it is made to hold again, the index's range checks refuse it."""
    key = _key(folder)
    d = _index(key)
    spec = d["arrays"][name]
    if field == "start":
        spec[1] ^= 64
    elif field == "length":
        spec[2] ^= 1
    else:
        spec[0] = OTHER_KIND[spec[0]]
    if sealed:
        _seal(key, d)
    else:
        (key / "index.json").write_text(json.dumps(d))
    _assert_served_from_the_shard(folder)


@pytest.mark.parametrize("sealed", [False, True], ids=["as-flipped", "re-sealed"])
def test_random_bit_flips_of_an_index_are_never_served(folder, monkeypatch, sealed):
    """200 random single-bit flips of ``index.json`` (each alone, the seal re-made or not), each loaded as a
    new process would: refused, or, where re-sealing undid the flip (one in the seal itself), serving the shard's
    arrays."""
    from synprep.shards import ShardReader, mapped
    from synprep.shards.manifest import Manifest

    path = folder / "train.00000.h5"
    reader = ShardReader(path, sha256=Manifest.load(folder).splits["train"].shards[0].sha256, vocab_size=1000)
    want = reader._decode()
    key = _key(folder)
    raw = (key / "index.json").read_bytes()
    rng = np.random.default_rng(7 + sealed)
    refused = 0
    for _ in range(200):
        bit = int(rng.integers(len(raw) * 8))
        flipped = bytearray(raw)
        flipped[bit // 8] ^= 1 << (bit % 8)
        (key / "index.json").write_bytes(bytes(flipped))
        if sealed:
            try:
                _seal(key, json.loads(flipped))
            except (ValueError, KeyError, TypeError):  # no longer an index to seal
                pass
        monkeypatch.setattr(mapped, "_MAPS_OK", set())
        monkeypatch.setattr(mapped, "_MAPS_BAD", set())
        got = mapped._load(key, reader.offsets, reader.lines, reader.map_expect(), path)
        if got is None:
            refused += 1
            continue
        assert _index(key) == json.loads(raw), bit  # served only where the flip changed nothing (the seal re-made)
        for fl in FIELDS:
            a = got.data[fl.name]
            assert a.dtype == want[fl.name].dtype and np.array_equal(a, want[fl.name]), (bit, fl.name)
    assert refused >= (170 if sealed else 200)


def _set(key: Path, name: str, i: int, value) -> None:
    """Set element ``i`` of array ``name`` in ``arrays.bin`` and re-seal the index."""
    d = _index(key)
    dtype, start, n = d["arrays"][name]
    raw = bytearray((key / "arrays.bin").read_bytes())
    a = np.frombuffer(bytes(raw[start:start + n * np.dtype(dtype).itemsize]), dtype=dtype).copy()
    a[i] = value
    raw[start:start + a.nbytes] = a.tobytes()
    (key / "arrays.bin").write_bytes(bytes(raw))
    _seal(key, d)


@pytest.mark.parametrize(("name", "i", "value"), [
    ("heads", 0, 250),           # a head outside the line
    ("heads", 1, 2),             # a word its own head (a cycle)
    ("src_ids", 0, 2),           # </s> stored
    ("tgt_ids", 3, 1200),        # outside the vocabulary
    ("word_index", 1, 7),        # a step of 7
    ("deprel", 0, 250),          # no such label
    ("gaps_cnf", 0, 0),          # a gap of 0
    ("ldd_prob", 0, 2.0),        # not a probability
    ("ldd_dep", 0, 0),           # a dependent 0
    ("offsets.word", 1, 3),      # the header, not the shard's
    ("line", 0, 0),              # a line 0
], ids=lambda v: str(v))
def test_a_resealed_arrays_bin_gets_the_shards_value_checks(folder, name, i, value):
    """``arrays.bin`` changed and its seal made to match: the values pass the checks the shard's own values
    pass (and the header must be the shard's), else the shard is decoded again."""
    _set(_key(folder), name, i, value)
    _assert_served_from_the_shard(folder)


def test_the_maps_of_another_shard_under_this_shards_key_are_decoded_again(folder, tmp_path):
    """A shard replaced by another of equal size and modification time keeps its map key: the maps under it
    are the old shard's. Here the new shard has the old one's header (the same pairs' lengths and lines) and
    other, valid, ids, so only the shard's sha256, which the maps record, tells them apart."""
    from synprep.signature import file_sha256

    other = tmp_path / "other"
    recs = _records()
    for r in recs[:100]:  # shard 0's
        r.src_ids = np.where(r.src_ids == 999, 4, r.src_ids + 1)  # other valid ids, the same lengths
    write_folder_records(other, {"train": recs}, shard_size=100)
    old = _key(folder)
    shutil.copy(other / "train.00000.h5", folder / "train.00000.h5")
    shutil.copy(other / "manifest.json", folder / "manifest.json")
    old.rename(_key(folder))  # the old shard's maps under the new shard's key (its size and mtime)
    assert _index(_key(folder))["shard_sha256"] != file_sha256(folder / "train.00000.h5")
    _assert_served_from_the_shard(folder)


@pytest.mark.parametrize("how", ["a byte more", "a byte more, bytes and seal updated", "20 GB"])
def test_arrays_bin_of_another_size_is_refused_before_it_is_hashed(folder, monkeypatch, how):
    """``arrays.bin`` of another size than its index says, and than its index's layout ends at, is refused
    from its size: never hashed (a 20 GB file, sparse here, took minutes to hash before it was refused)."""
    from synprep.shards import mapped

    key = _key(folder)
    d = _index(key)
    if how == "20 GB":
        os.truncate(key / "arrays.bin", 20 << 30)
    else:
        with open(key / "arrays.bin", "ab") as f:
            f.write(b"\0")
        if "seal" in how:
            d["bytes"] += 1
            _seal(key, d)
    seen = []
    real = mapped._sealed

    def sealed(folder, *a, **k):
        seen.append(folder.name)
        return real(folder, *a, **k)

    monkeypatch.setattr(mapped, "_sealed", sealed)
    started = time.monotonic()
    got = open_split(folder, "train", map_dir=folder / "arrays")
    assert time.monotonic() - started < 10
    assert key.name not in seen  # refused from its size, before any hash
    assert (key / "arrays.bin").stat().st_size == _index(key)["bytes"] < 1 << 20  # decoded again
    assert got[0][0].line == open_split(folder, "train")[0][0].line
    _assert_served_from_the_shard(folder)


def test_a_map_of_the_previous_layout_is_decoded_again(folder):
    """The previous layout (its index without the shard's sha256, its sha256 of ``arrays.bin`` alone) is not
    read: written anew in this one."""
    key = _key(folder)
    d = _index(key)
    (key / "index.json").write_text(json.dumps({"version": 2, "sha256": hashlib.sha256(
        (key / "arrays.bin").read_bytes()).hexdigest(), "arrays": d["arrays"]}))
    _assert_served_from_the_shard(folder)
    assert _index(key)["version"] == 3 and "shard_sha256" in _index(key)


# --- synprep check -----------------------------------------------------------------------------------
def _flip_start(key: Path) -> str:
    d = _index(key)
    d["arrays"]["gaps_cnf"][1] ^= 64
    (key / "index.json").write_text(json.dumps(d))
    return "index.json"


def _resealed_head(key: Path) -> str:
    _set(key, "heads", 0, 250)
    return "arrays.bin"


def _other_shard(key: Path) -> str:
    d = _index(key)
    d["shard_sha256"] = "0" * 64
    _seal(key, d)
    return "index.json"


@pytest.mark.parametrize("damage", [_flip_start, _resealed_head, _other_shard], ids=lambda f: f.__name__[1:])
def test_check_names_a_damaged_map_and_the_fix(folder, damage):
    """``synprep check`` verifies the shard folder's ``arrays/`` as a reader does: a damaged map is a
    violation naming its file, saying it is never read and that deleting ``arrays/`` removes it."""
    assert check_dir(folder).ok
    key = _key(folder, 1)
    file = damage(key)
    report = check_dir(folder)
    assert not report.ok and report.violation is not None
    assert report.violation.file == f"arrays/{key.name}/{file}", report.violation
    assert "delete arrays/" in report.violation.what and "decodes the shard again" in report.violation.what


def test_check_passes_sound_maps_and_ignores_maps_of_another_layout(folder):
    """Sound maps pass; a map of another layout is no violation (a reader decodes it again, never reads it)."""
    assert check_dir(folder).ok
    key = _key(folder)
    (key / "index.json").write_text(json.dumps({"version": 2, "sha256": "0" * 64, "arrays": {}}))
    assert check_dir(folder).ok


def test_the_check_command_reports_a_damaged_map(folder):
    """The command's verdict names the map's file and the fix, exit 1."""
    from helpers import run_cli

    _flip_start(_key(folder))
    proc = run_cli("check", str(folder), check=False)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert f"arrays/{_key(folder).name}/index.json" in out and "delete arrays/" in out, out


def _forge(key: Path, name: str) -> None:
    """Change every value of array ``name`` in ``arrays.bin`` to another valid one and re-seal: deprels shifted
    by one label, LDD probabilities halved, target ids rotated by one."""
    d = _index(key)
    dtype, start, n = d["arrays"][name]
    raw = bytearray((key / "arrays.bin").read_bytes())
    a = np.frombuffer(bytes(raw[start:start + n * np.dtype(dtype).itemsize]), dtype=dtype).copy()
    if name == "ldd_prob":
        a = (a / 2).astype(a.dtype)
    elif name == "deprel":
        a = np.where(a == a.max(), a.min(), a + 1).astype(a.dtype)
    else:
        a = np.roll(a, 1)
    raw[start:start + a.nbytes] = a.tobytes()
    (key / "arrays.bin").write_bytes(bytes(raw))
    _seal(key, d)


@pytest.mark.parametrize("name", ["deprel", "ldd_prob", "tgt_ids"])
def test_a_resealed_forgery_of_valid_values_is_never_served_and_check_names_it(folder, name):
    """Every value of one array replaced by another valid one and the seal re-made, as anyone who can write the
    folder can: the maps pass the shard's value checks, so only the shard's own values tell them apart. check
    names the map; a reader (``train``'s) decodes the shard again and serves its values."""
    key = _key(folder, 1)
    _forge(key, name)
    report = check_dir(folder)
    assert not report.ok and report.violation is not None
    assert report.violation.file == f"arrays/{key.name}/arrays.bin", report.violation
    assert f"{name} differs from the shard's values" in report.violation.what
    _assert_served_from_the_shard(folder)
