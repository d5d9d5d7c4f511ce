"""A shard's decoded arrays mapped from a folder (synprep.shards.mapped): the same records as the decoded
shard, decoded once for every process, decoded again when the shard or the map changes, a clear error
when the folder cannot be written, hashed against their sums where a split is opened; ``train`` maps its
splits from the shard folder's ``arrays/``, shared by every run on it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import pickle
import resource
import signal

import numpy as np
import pytest

from synprep.shards import ShardReader, open_split
from synprep.shards.mapped import map_key
from synprep.shards.schema import AXES, FIELDS
from synprep.shards.synthetic import write_folder


def _records_equal(a, b) -> None:
    assert a.line == b.line
    for fl in FIELDS:
        x, y = getattr(a, fl.name), getattr(b, fl.name)
        assert x.dtype == y.dtype and np.array_equal(x, y), fl.name


@pytest.fixture()
def folder(tmp_path):
    write_folder(tmp_path / "shards", {"train": 250, "valid": 30}, shard_size=100, seed=3)
    return tmp_path / "shards"


def _mapped(folder, map_dir, split="train"):
    return open_split(folder, split, map_dir=map_dir)


def test_mapped_records_are_the_decoded_records_and_the_arrays_are_maps(folder, tmp_path):
    plain = open_split(folder, "train")
    mapped = _mapped(folder, tmp_path / "map")
    for p, m in zip(plain, mapped, strict=True):
        assert len(p) == len(m)
        for i in range(len(p)):
            _records_equal(m[i], p[i])
        here = tmp_path / "map" / map_key(m.path)
        assert sorted(x.name for x in here.iterdir()) == ["arrays.bin", "index.json"]
        index = json.loads((here / "index.json").read_text())
        sealed = json.dumps({k: index[k] for k in ("version", "shard_sha256", "bytes", "arrays")}, sort_keys=True,
                            separators=(",", ":")).encode() + b"\n"
        assert index["version"] == 3 and index["bytes"] == (here / "arrays.bin").stat().st_size
        assert index["shard_sha256"] == hashlib.sha256(m.path.read_bytes()).hexdigest()
        assert index["sha256"] == hashlib.sha256(sealed + (here / "arrays.bin").read_bytes()).hexdigest()
        assert sorted(index["arrays"]) == sorted([fl.name for fl in FIELDS] + ["line"] + [f"offsets.{a}" for a in AXES])
        assert all(start % 64 == 0 for _, start, _ in index["arrays"].values())
        arrays = m.load()._data
        assert arrays is not None
        assert np.array_equal(m.lines, p.lines) and all(np.array_equal(m.offsets[a], p.offsets[a]) for a in AXES)
        _assert_maps(here, {**arrays, "line": m.lines, **{f"offsets.{a}": m.offsets[a] for a in AXES}})
    assert not list((tmp_path / "map").glob(".*.tmp"))  # no temporary left


def test_a_process_holds_one_memory_map_a_shard(folder, tmp_path):
    """Linux limits a process's memory maps (``vm.max_map_count``, 65,530 by default): the first layout's 20
    files a shard reached it at ~3,000 shards. Now each mapped shard is one map in ``/proc/self/maps``."""
    readers = _mapped(folder, tmp_path / "map") + _mapped(folder, tmp_path / "map", "valid")
    root = str(tmp_path / "map")
    with open("/proc/self/maps") as f:
        files = [line.split(maxsplit=5)[-1].strip() for line in f if root in line]
    assert sorted(files) == sorted(str(tmp_path / "map" / map_key(r.path) / "arrays.bin") for r in readers)


def _map_base(a: np.ndarray) -> np.memmap | None:
    """The ``numpy.memmap`` that ``a`` is a view of, or None (a copy in this process's memory)."""
    base = a
    while base is not None and not isinstance(base, np.memmap):
        base = base.base
    return base


def _assert_maps(folder, arrays: dict) -> None:
    """Each array is a read-only view of the one map of ``folder/arrays.bin``, not a copy in this process's
    memory, at its place in the index."""
    index = json.loads((folder / "index.json").read_text())["arrays"]
    for name, a in arrays.items():
        base = _map_base(a)
        assert base is not None and not a.flags.writeable and np.shares_memory(a, base), name
        assert os.path.samefile(base.filename, folder / "arrays.bin"), name
        dtype, start, n = index[name]
        assert a.dtype == np.dtype(dtype) and len(a) == n, name
        assert a.__array_interface__["data"][0] - base.__array_interface__["data"][0] == start, name


def _patch(folder, name: str, change) -> None:
    """Replace array ``name`` of map folder ``folder`` by ``change(array)`` (same size) in ``arrays.bin``."""
    dtype, start, n = json.loads((folder / "index.json").read_text())["arrays"][name]
    raw = bytearray((folder / "arrays.bin").read_bytes())
    a = np.frombuffer(bytes(raw[start:start + n * np.dtype(dtype).itemsize]), dtype=dtype).copy()
    raw[start:start + a.nbytes] = change(a).astype(dtype).tobytes()
    (folder / "arrays.bin").write_bytes(bytes(raw))


def _read(folder, name: str) -> np.ndarray:
    """Array ``name`` of map folder ``folder`` as its index places it (not verified)."""
    dtype, start, n = json.loads((folder / "index.json").read_text())["arrays"][name]
    raw = (folder / "arrays.bin").read_bytes()
    return np.frombuffer(raw[start:start + n * np.dtype(dtype).itemsize], dtype=dtype).copy()


def test_a_reader_opened_where_the_maps_exist_maps_its_header(folder, tmp_path, monkeypatch):
    """A DataLoader worker's reader (unpickled: opened anew) of a shard another process mapped holds the
    maps of its lines and offsets from the start, before any record is read: a worker's own memory does
    not grow by N·56 bytes per shard. Equal to the shard's header, which is still read and checked."""
    first = _mapped(folder, tmp_path / "map")
    for r in first:
        r.load()
    for r, plain in zip([pickle.loads(pickle.dumps(r)) for r in first], open_split(folder, "train"), strict=True):
        assert np.array_equal(r.lines, plain.lines)
        key = tmp_path / "map" / map_key(r.path)
        _assert_maps(key, {"line": r.lines, **{f"offsets.{a}": r.offsets[a] for a in AXES}})
        assert all(np.array_equal(r.offsets[a], plain.offsets[a]) for a in AXES)
    # a map whose header is not the shard's (damaged, or another shard's) is not used: decoded again
    victim = tmp_path / "map" / map_key(first[0].path)

    def bump(off):
        off[1] += 1
        return off

    _patch(victim, "offsets.word", bump)
    r = ShardReader(first[0].path, map_dir=tmp_path / "map")
    assert _map_base(r.offsets["word"]) is None and _map_base(r.lines) is None  # the shard's own header, held
    plain = open_split(folder, "train")[0]
    for i in range(len(plain)):
        _records_equal(r[i], plain[i])
    assert np.array_equal(_read(victim, "offsets.word"), plain.offsets["word"])  # rewritten


def test_a_map_of_the_first_layout_is_decoded_again(folder, tmp_path):
    """The first layout (a ``.npy`` file a dataset, the header's too, no index: a run folder's ``arrays/`` from
    before): its folder does not load, and is written anew in this one."""
    r = _mapped(folder, tmp_path / "map")[0]
    r.load()
    key = tmp_path / "map" / map_key(r.path)
    views = {name: _read(key, name) for name in json.loads((key / "index.json").read_text())["arrays"]}
    for f in key.iterdir():
        f.unlink()
    for name, a in views.items():
        np.save(key / f"{name}.npy", a)
    again = ShardReader(r.path, map_dir=tmp_path / "map")
    plain = open_split(folder, "train")[0]
    for i in range(len(plain)):
        _records_equal(again[i], plain[i])
    assert sorted(x.name for x in key.iterdir()) == ["arrays.bin", "index.json"]


def test_a_shard_is_decoded_once_for_every_process_that_maps_it(folder, tmp_path, monkeypatch):
    first = _mapped(folder, tmp_path / "map")
    expected = [r[i] for r in first for i in range(len(r))]

    def refuse(self):
        raise AssertionError(f"{self.path.name} decoded again")

    monkeypatch.setattr(ShardReader, "_decode", refuse)
    again = [pickle.loads(pickle.dumps(r)) for r in _mapped(folder, tmp_path / "map")]  # as a DataLoader worker
    assert all(r.map_dir == tmp_path / "map" for r in again)
    for want, got in zip(expected, (r[i] for r in again for i in range(len(r))), strict=True):
        _records_equal(got, want)


_HOLDER = """
import fcntl, os, sys, time
from pathlib import Path
from synprep.shards import open_split
from synprep.shards.mapped import map_key, write_arrays
from synprep.signature import file_sha256
folder, map_dir, ready = map(Path, sys.argv[1:])
r = open_split(folder, "train")[0]
map_dir.mkdir(parents=True, exist_ok=True)
fd = os.open(map_dir / f".{r.path.name}.lock", os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
ready.write_text("locked")
time.sleep(1.0)
write_arrays(map_dir / map_key(r.path), r._decode(), r.offsets, r.lines, file_sha256(r.path))
os.close(fd)
"""


def test_a_process_waits_for_the_one_decoding_a_shard_and_maps_its_arrays(folder, tmp_path, monkeypatch):
    """Processes that read a shard at once (DataLoader workers, DDP ranks) decode it once: another process
    holds the shard's lock and writes its arrays a second later; this one waits, then maps them."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    ready = tmp_path / "ready"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(folder), str(tmp_path / "map"), str(ready)],
                              env={**os.environ, "PYTHONPATH": str(root)})
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert holder.poll() is None and time.monotonic() < deadline, "the holder did not take the lock"
            time.sleep(0.02)
        plain = open_split(folder, "train")[0]
        want = [plain[i] for i in range(len(plain))]

        real = ShardReader._decode

        def refuse(self):
            if self.path.name == plain.path.name:  # the holder's shard (open_split maps the others now)
                raise AssertionError(f"{self.path.name} decoded while another process was writing it")
            return real(self)

        monkeypatch.setattr(ShardReader, "_decode", refuse)
        r = _mapped(folder, tmp_path / "map")[0]
        for i, rec in enumerate(want):
            _records_equal(r[i], rec)
    finally:
        assert holder.wait(timeout=60) == 0


def test_a_rewritten_shard_is_decoded_again_and_its_old_arrays_deleted(folder, tmp_path):
    old = _mapped(folder, tmp_path / "map")[0]
    old_key = map_key(old.path)
    old[0]
    write_folder(folder, {"train": 250, "valid": 30}, shard_size=100, seed=4)  # the same names, other pairs
    st = old.path.stat()
    os.utime(old.path, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))  # a later version, whatever the clock
    new = _mapped(folder, tmp_path / "map")[0]
    assert map_key(new.path) != old_key
    plain = open_split(folder, "train")[0]
    for i in range(len(plain)):
        _records_equal(new[i], plain[i])
    assert [p.name for p in (tmp_path / "map").iterdir() if p.name.startswith(new.path.name)] == [map_key(new.path)]


def test_a_damaged_map_is_decoded_again(folder, tmp_path):
    r = _mapped(folder, tmp_path / "map")[0]
    want = r[5]
    r.close()
    key = tmp_path / "map" / map_key(r.path)
    index = json.loads((key / "index.json").read_text())
    index["arrays"]["ldd_prob"][2] -= 3  # an index that fits the file, of a shorter array
    (key / "index.json").write_text(json.dumps(index))
    _records_equal(ShardReader(r.path, map_dir=tmp_path / "map")[5], want)
    assert len(_read(key, "ldd_prob")) == int(r.offsets["ldd"][-1])
    (key / "arrays.bin").write_bytes((key / "arrays.bin").read_bytes()[:100])  # an index beyond the file's end
    _records_equal(ShardReader(r.path, map_dir=tmp_path / "map")[5], want)
    assert len(_read(key, "ldd_prob")) == int(r.offsets["ldd"][-1])


def test_a_dead_process_temporary_is_swept_and_a_live_one_kept(folder, tmp_path):
    r = ShardReader(open_split(folder, "train")[0].path, map_dir=tmp_path / "map")  # maps at its first read
    (tmp_path / "map").mkdir()
    dead = tmp_path / "map" / f".{r.path.name}.pid999999999.arrays.tmp"
    live = tmp_path / "map" / f".{r.path.name}.pid{os.getppid()}.arrays.tmp"
    for p in (dead, live):
        p.mkdir()
        (p / "src_ids.npy").write_bytes(b"partial")
    r[0]
    assert not dead.exists() and live.exists()


@contextlib.contextmanager
def _file_size_limit(limit: int):
    """Writes of this process past ``limit`` bytes of a file fail with EFBIG (an OSError, as a full disk's ENOSPC)."""
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
        signal.signal(signal.SIGXFSZ, handler)


@pytest.mark.parametrize("why", ["a file in its place", "a write that fails"])
def test_a_map_folder_that_cannot_be_written_holds_the_arrays_and_warns_once(folder, tmp_path, caplog, why):
    """A map folder that cannot be written (its ``mkdir`` refused; ``arrays.bin`` cut short by a failing write, as
    a full disk does) is no error: every shard's arrays are held in memory, as without a map folder, the records
    are the shard's, one warning names the folder, and no temporary is left."""
    from synprep.shards import mapped

    plain = open_split(folder, "train")
    want = [[r[i] for i in range(len(r))] for r in plain]
    if why == "a file in its place":
        (tmp_path / "map").write_text("a file, not a folder")
    caplog.set_level(logging.WARNING, logger="synprep")
    with _file_size_limit(4096) if why == "a write that fails" else contextlib.nullcontext():
        got = _mapped(folder, tmp_path / "map")  # open_split maps every shard before it returns
    for r, recs in zip(got, want, strict=True):
        assert r._data is not None and _map_base(r._data["src_ids"]) is None  # held, not mapped
        for i, rec in enumerate(recs):
            _records_equal(r[i], rec)
    warned = [rec.getMessage() for rec in caplog.records if "decoded arrays" in rec.getMessage()]
    assert len(warned) == 1 and str(tmp_path / "map") in warned[0], warned
    assert str(tmp_path / "map") in mapped._UNWRITABLE
    if why == "a write that fails":
        assert not [p for p in (tmp_path / "map").iterdir() if p.is_dir()]  # no map folder, no temporary


def _tiny_cfg(steps: int):
    from synprep.train.config import load_preset, with_overrides

    return with_overrides(load_preset("tiny"), {"max_steps": steps, "max_epochs": 0, "max_tokens": 512, "threads": 1,
                                                "num_workers": 1, "log_interval": 1})


def _npy_stamps(folder):
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("arrays.bin")}


def test_train_maps_both_splits_from_the_shard_folder_once_for_every_run(folder, tmp_path):
    """``train`` maps from the shard folder's ``arrays/``: the first run (with a DataLoader worker) writes every
    shard of both splits there, a second run on the same shards and a resumed run decode nothing (the same
    files, untouched), and no run folder holds a copy."""
    from synprep.train.run import MAP_DIR, train

    train(folder, tmp_path / "a", _tiny_cfg(3), device="cpu", progress=False)
    shards = sorted(p for p in folder.iterdir() if p.suffix == ".h5")
    assert sorted(p.name for p in (folder / MAP_DIR).iterdir() if p.is_dir()) == sorted(map_key(p) for p in shards)
    stamp = _npy_stamps(folder / MAP_DIR)
    assert len(stamp) == len(shards)
    train(folder, tmp_path / "b", _tiny_cfg(2), device="cpu", progress=False)
    summary = train(folder, tmp_path / "a", resume=True, overrides={"max_steps": 4}, device="cpu", progress=False)
    assert summary["step"] == 4
    assert _npy_stamps(folder / MAP_DIR) == stamp
    assert not (tmp_path / "a" / MAP_DIR).exists() and not (tmp_path / "b" / MAP_DIR).exists()


def test_a_run_folder_with_arrays_keeps_them_and_an_unwritable_shard_folder_leaves_them_in_the_run(folder, tmp_path):
    """Where the arrays go when the shard folder's cannot serve: a run folder that has ``arrays/`` (a run begun
    before they moved, or the user's link to another disk) keeps mapping from it; a shard folder whose
    ``arrays`` cannot be made (taken by a file, as a read-only filesystem refuses it) leaves them in the run
    folder, and the run trains."""
    from synprep.train.run import MAP_DIR, arrays_folder, train

    (tmp_path / "old" / MAP_DIR).mkdir(parents=True)
    assert arrays_folder(folder, tmp_path / "old") == tmp_path / "old" / MAP_DIR
    assert arrays_folder(folder, tmp_path / "new") == folder / MAP_DIR
    (folder / MAP_DIR).rmdir()
    (folder / MAP_DIR).write_text("a file, not a folder")
    summary = train(folder, tmp_path / "run", _tiny_cfg(2), device="cpu", progress=False)
    assert summary["step"] == 2 and (folder / MAP_DIR).is_file()
    shards = sorted(p for p in folder.iterdir() if p.suffix == ".h5")
    assert sorted(p.name for p in (tmp_path / "run" / MAP_DIR).iterdir() if p.is_dir()) == sorted(map_key(p) for p in shards)


def test_maps_the_shard_folder_cannot_take_later_go_to_the_run_folder(folder, tmp_path, caplog):
    """The shard folder's ``arrays/`` is writable when the run starts, but one shard's maps cannot be written
    there (its lock taken by a folder: an OSError as a full disk's or a quota's): that shard's maps are
    written in the run folder's ``arrays/``, as a read-only shard folder's all are, the others stay shared,
    the run trains on the shard's records, and nothing warns of arrays held in memory."""
    from synprep.train.run import MAP_DIR, train

    shards = sorted(p for p in folder.iterdir() if p.suffix == ".h5" and p.name.startswith("train"))
    blocked = shards[1]
    (folder / MAP_DIR / f".{blocked.name}.lock").mkdir(parents=True)
    caplog.set_level(logging.INFO, logger="synprep")
    summary = train(folder, tmp_path / "run", _tiny_cfg(2), device="cpu", progress=False)
    assert summary["step"] == 2
    assert (tmp_path / "run" / MAP_DIR / map_key(blocked)).is_dir()
    assert not (folder / MAP_DIR / map_key(blocked)).exists()
    assert all((folder / MAP_DIR / map_key(p)).is_dir() for p in shards if p != blocked)
    messages = [rec.getMessage() for rec in caplog.records]
    assert not [m for m in messages if "own memory" in m], messages
    assert [m for m in messages if "they go to" in m and str(tmp_path / "run" / MAP_DIR) in m]
    mapped = ShardReader(blocked, map_dir=folder / MAP_DIR).load()  # this process knows the fallback: found there
    assert _map_base(mapped._data["src_ids"]) is not None
    plain = ShardReader(blocked)
    for i in range(len(plain)):
        _records_equal(mapped[i], plain[i])


def test_maps_that_changed_on_disk_are_decoded_again_where_a_split_is_opened(folder, tmp_path):
    """Maps another process wrote are hashed against their index's sha256 when a split is opened: maps whose
    bytes changed (their header and lengths intact, so nothing else would notice) and a folder without an index
    (another layout) are decoded again, and the records read are the shard's."""
    from synprep.shards import mapped

    plain = open_split(folder, "train")
    _mapped(folder, tmp_path / "map")
    first, second = (tmp_path / "map" / map_key(r.path) for r in plain[:2])

    def flip(ids):
        ids[-1] ^= 1  # the last id of the last pair
        return ids

    _patch(first, "src_ids", flip)
    changed = (first / "arrays.bin").read_bytes()
    (second / "index.json").unlink()
    again = _mapped(folder, tmp_path / "map")
    for p, m in zip(plain, again, strict=True):
        for i in range(len(p)):
            _records_equal(m[i], p[i])
    assert (first / "arrays.bin").read_bytes() != changed and (second / "index.json").is_file()
    assert mapped.folder_key(first) in {key[:3] for key in mapped._MAPS_OK}


def test_the_memory_benchmark_runs_and_maps(tmp_path):
    """benchmarks/bench_loader_memory.py's machinery (seconds): its figures, the mapped run's arrays mapped."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_loader_memory.py"), "--pairs", "300", "600",
                          "--workers", "1", "--small-shards", "--map-dir"], capture_output=True, text=True,
                         check=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)})
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["figure"] for r in rows] == ["loader_memory", "loader_memory", "loader_memory_growth"]
    assert [r["pairs"] for r in rows[:2]] == [300, 600] and all(r["mapped"] and r["batches"] > 0 for r in rows[:2])
    assert rows[0]["per_worker"][0]["Private_Dirty"] > 0 and "private_bytes_per_pair" in rows[2]


def test_train_with_a_map_folder_that_cannot_be_written_trains_and_warns_once(folder, tmp_path):
    """``synprep train`` with a DataLoader worker, its run folder's ``arrays`` a file: the run trains on the
    arrays held in memory (exit 0), and says so in one warning naming the folder, no traceback."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "arrays").write_text("a file, not a folder")
    proc = subprocess.run([sys.executable, "-m", "synprep", "train", "--shards", str(folder), "--out",
                           str(tmp_path / "run"), "--preset", "tiny", "--max-steps", "1", "--num-workers", "1",
                           "--device", "cpu"], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    warned = [line for line in proc.stderr.splitlines() if "decoded arrays" in line]
    assert len(warned) == 1 and str(tmp_path / "run" / "arrays") in warned[0], proc.stderr[-2000:]


def test_training_on_mapped_shards_gives_the_losses_of_training_on_held_shards(folder, tmp_path):
    """The real consumer: the same run (the tiny gated SLR preset, with a DataLoader worker, 6 updates) on the
    split held in memory and on the split mapped from decoded arrays logs the same losses, update by update."""
    import json

    import torch

    from synprep.train.config import load_preset, with_overrides
    from synprep.train.data import ShardDataset, load_symbols
    from synprep.train.loop import Trainer

    cfg = with_overrides(load_preset("tiny"), {"max_steps": 6, "max_epochs": 0, "max_tokens": 512, "threads": 1,
                                               "num_workers": 1, "log_interval": 1})
    losses = {}
    for name, arrays in (("held", None), ("mapped", tmp_path / "arrays")):
        train, valid = (ShardDataset(folder, s, map_dir=arrays) for s in ("train", "valid"))
        Trainer(cfg, train, valid, load_symbols(folder, train.attrs), tmp_path / name, torch.device("cpu"),
                progress=False).run()
        rows = [json.loads(x) for x in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
        losses[name] = [(r["step"], r["train_loss"]) for r in rows if "valid_loss" not in r]
    assert len(losses["held"]) == 6 and losses["mapped"] == losses["held"]
    assert len(list((tmp_path / "arrays").glob("train.*"))) == 3
