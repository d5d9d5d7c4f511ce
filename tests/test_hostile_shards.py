"""Hostile and damaged shards through the readers of ``train``, ``show`` and ``check``.

Every case is one line (``InputError`` naming the shard; exit status 2 through the CLI, 1 for
``check``'s violation), never a traceback, never memory exhaustion: a shard of a few KB that
declares 2^28 offsets is refused from its declared shapes before anything is read (peak RSS of the
whole command measured). The damage helpers live in tests/fuzz_strategies.py, shared with
benchmarks/fuzz.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from builders import one_line, reseal, small_folder_fixtures, write_folder
from fuzz_strategies import (
    damage_attribute_metadata,
    damage_gzip_chunk,
    declare_huge,
    deflate_bomb,
    shift_heap_range,
)
from helpers import ROOT

from synprep.errors import InputError
from synprep.shards import SplitReader, check_dir, open_split

#: a synprep command on a hostile shard may use at most this much memory (the interpreter, h5py,
#: numpy and the readers take ~150 MB; read as declared, the hostile shard would take 10 GB)
PEAK_LIMIT_MB = 600


valid, folder = small_folder_fixtures()  # a small valid folder per module, a copy of it per test


def run_measured(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    """``python -m synprep ARGS`` in a child with a 3 GB address-space cap; (process, its peak RSS in MB).

    The peak is the child's own ``VmHWM`` (read at exit from /proc/self/status): ``ru_maxrss`` of a
    child keeps the RSS its forked copy of this (large) pytest process had before exec, and
    ``RUSAGE_CHILDREN`` is the largest child of the whole test session so far.
    """
    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "vmhwm"
        code = ("import atexit, resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
                f"atexit.register(lambda: open({str(peak_file)!r}, 'w').write(open('/proc/self/status').read())); "
                "sys.argv = ['synprep', *sys.argv[1:]]; runpy.run_module('synprep', run_name='__main__')")
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        status = peak_file.read_text()
    [kb] = [line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")]
    return proc, int(kb) / 1024


def test_a_shard_that_differs_from_the_manifest_is_refused_by_train_and_show(folder):
    """One /offsets/tgt entry shifted: the pair's target would gain the next pair's first word."""
    shard = folder / "train.00001.h5"
    with h5py.File(shard, "r+") as f:
        f["offsets/tgt"][2] += 1
    from synprep.train.data import ShardDataset

    with pytest.raises(InputError, match="sha256 .* does not match manifest.json's") as e:
        ShardDataset(folder, "train")
    assert e.value.path == str(shard)
    proc, _ = run_measured("show", str(folder), "--split", "train", "--index", "5")  # the damaged pair's shard
    one_line(proc, 2, "train.00001.h5", "does not match manifest.json")


def test_shard_list_must_match_the_manifest(folder):
    shutil.copy(folder / "valid.00000.h5", folder / "valid.00001.h5")
    with pytest.raises(InputError, match="valid.00001.h5 is not listed in manifest.json"):
        open_split(folder, "valid")


@pytest.mark.parametrize("n_pairs", [1 << 28, 1 << 22])
def test_declared_sizes_are_checked_before_reading(folder, n_pairs):
    """A shard declaring 2^28 (or, within the pairs cap, 2^22) pairs: one line, bounded memory, every reader."""
    shard = folder / "train.00000.h5"
    declare_huge(shard, n_pairs)
    assert shard.stat().st_size < 100_000
    reseal(folder)  # the manifest vouches for it: only the declared shapes give it away
    with pytest.raises(InputError, match="train.00000.h5") as e:
        open_split(folder, "train")
    assert "n_pairs" in e.value.reason or "declares" in e.value.reason
    for args, status in ((("show", str(folder), "--split", "train", "--index", "0"), 2), (("check", str(folder)), 1)):
        proc, peak = run_measured(*args)
        one_line(proc, status, "train.00000.h5")
        assert peak < PEAK_LIMIT_MB, f"synprep {args[0]} peaked at {peak:.0f} MB"


def test_a_deflate_bomb_is_refused_before_reading(folder):
    """Real gzip chunks of zeros (~1000:1) declaring 16 MiB more than MAX_SHARD_BYTES: within what
    the file size allows (MAX_EXPANSION), consistent offsets, re-sealed manifest; only the absolute
    cap refuses it. Before, ``show`` read it whole and ``check`` widened it to int64 (GBs)."""
    from synprep.constants import MAX_SHARD_BYTES
    from synprep.shards.reader import EXPANSION_SLACK, MAX_EXPANSION, declared_bytes

    shard = folder / "train.00000.h5"
    deflate_bomb(shard, MAX_SHARD_BYTES + (16 << 20))
    reseal(folder)
    with h5py.File(shard, "r") as f:
        declared = declared_bytes(f)
    assert MAX_SHARD_BYTES < declared < MAX_EXPANSION * shard.stat().st_size + EXPANSION_SLACK
    assert shard.stat().st_size < 300_000
    message = f"declares {declared} bytes of data, more than a shard may hold (MAX_SHARD_BYTES = {MAX_SHARD_BYTES}"
    with pytest.raises(InputError, match=message.replace("(", r"\(")) as e:
        open_split(folder, "train", verify=False)
    assert e.value.path == str(shard)
    for args, status in ((("show", str(folder), "--split", "train", "--index", "0"), 2),
                         (("check", str(folder)), 1),
                         (("train", "--shards", str(folder), "--preset", "tiny", "--out", str(folder.parent / "run"),
                           "--max-steps", "1"), 2)):
        proc, peak = run_measured(*args)
        one_line(proc, status, "train.00000.h5", "more than a shard may hold")
        assert peak < PEAK_LIMIT_MB, f"synprep {args[0]} peaked at {peak:.0f} MB"


def test_the_writer_refuses_a_shard_above_the_cap(tmp_path, monkeypatch):
    """What a reader would refuse is never written: a one-line ConfigError naming the shard, nothing on disk."""
    import synprep.shards.writer as writer
    from synprep.errors import ConfigError

    write_folder(tmp_path / "ok", {"train": 4}, shard_size=4, seed=1, words=6, tgt_len=5)
    with h5py.File(tmp_path / "ok" / "train.00000.h5", "r") as f:
        from synprep.shards.reader import declared_bytes

        size = declared_bytes(f)
    monkeypatch.setattr(writer, "MAX_SHARD_BYTES", size - 1)
    with pytest.raises(ConfigError, match=rf"train.00000.h5: 4 pairs make {size} bytes of data, more than a shard "
                                          rf"may hold \(MAX_SHARD_BYTES = {size - 1}\): use a smaller --shard-size"):
        write_folder(tmp_path / "big", {"train": 4}, shard_size=4, seed=1, words=6, tgt_len=5)
    assert not list((tmp_path / "big").glob("*.h5")) and not list((tmp_path / "big").glob(".*tmp"))
    monkeypatch.setattr(writer, "MAX_SHARD_BYTES", size)
    write_folder(tmp_path / "fits", {"train": 4}, shard_size=4, seed=1, words=6, tgt_len=5)


def test_damaged_attribute_metadata_is_one_line(folder):
    shard = folder / "train.00000.h5"
    damage_attribute_metadata(shard)
    with pytest.raises(RuntimeError):  # what h5py itself says
        with h5py.File(shard, "r") as f:
            dict(f.attrs.items())
    reseal(folder)
    with pytest.raises(InputError, match="cannot read shard .*Error iterating over attributes") as e:
        open_split(folder, "train")
    assert e.value.path == str(shard)
    proc, _ = run_measured("show", str(folder), "--split", "train", "--index", "0")
    one_line(proc, 2, "train.00000.h5", "damaged HDF5")


@pytest.mark.parametrize("command", ["check", "show", "train"])
def test_a_shifted_heap_range_is_one_line_not_a_hang(folder, tmp_path, command):
    """One byte range of a shard's attribute heap shifted by one (same size), the manifest re-sealed: HDF5 would
    load the heap forever, ignoring SIGTERM; every reader names the shard in one line within seconds."""
    shard = folder / "train.00000.h5"
    shift_heap_range(shard)
    reseal(folder)
    args = {"check": ["check", str(folder)],
            "show": ["show", str(folder), "--split", "train", "--index", "0"],
            "train": ["train", "--shards", str(folder), "--preset", "tiny", "--out", str(tmp_path / "run"),
                      "--max-steps", "1", "--device", "cpu"]}[command]
    proc = subprocess.run([sys.executable, "-m", "synprep", *args], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    one_line(proc, 1 if command == "check" else 2, "train.00000.h5", "damaged HDF5 global heap at byte")


def test_a_gzip_chunk_that_does_not_decode_names_the_shard(folder):
    shard = folder / "train.00001.h5"
    damage_gzip_chunk(shard, "src_ids")
    reseal(folder)
    with pytest.raises(InputError, match="dataset /src_ids cannot be read") as e:
        open_split(folder, "train")  # the verified opener reads every value once (check's per-shard verification)
    assert e.value.path == str(shard)
    for cache in (True, False):
        split = SplitReader(open_split(folder, "train", cache=cache, verify=False))  # offsets and shapes are fine
        with pytest.raises(InputError, match="dataset /src_ids cannot be read") as e:
            list(split)
        assert e.value.path == str(shard)
    proc, _ = run_measured("show", str(folder), "--split", "train", "--index", "5")
    one_line(proc, 2, "train.00001.h5", "/src_ids cannot be read")


def test_offsets_are_checked_against_dataset_lengths(folder):
    shard = folder / "valid.00000.h5"
    with h5py.File(shard, "r+") as f:
        o = f["offsets/ldd"][()]
        del f["offsets/ldd"]
        f["offsets/ldd"] = np.concatenate([o[:-1], [o[-1] + 5]])
    reseal(folder)
    with pytest.raises(InputError, match=r"/offsets/ldd ends at \d+ but /ldd_dep declares"):
        open_split(folder, "valid")


@pytest.mark.parametrize("manifest_vocab", [True, False])
@pytest.mark.parametrize("where", ["../outside/dict.txt", "/ABS/outside/dict.txt"])
def test_a_shard_vocab_path_outside_the_folder_is_refused(folder, manifest_vocab, where):
    """Every reader and ``check`` refuse a shard naming a vocabulary outside its folder, also when the
    manifest names none (``"vocab": null``, which must not skip the comparison): a real vocabulary
    waits there, so following the path would succeed."""
    import json

    from synprep.shards import ShardReader
    from synprep.shards.check import check_shard
    from synprep.show import load_pair
    from synprep.train.data import ShardDataset, load_symbols

    outside = folder.parent / "outside"
    outside.mkdir()
    shutil.copy(folder / "dict.txt", outside / "dict.txt")
    where = where.replace("/ABS", str(folder.parent))
    for shard in sorted(folder.glob("valid.*.h5")):
        with h5py.File(shard, "r+") as f:
            f.attrs["vocab_path"] = where
    if not manifest_vocab:
        m = json.loads((folder / "manifest.json").read_text())
        m["vocab"] = None
        (folder / "manifest.json").write_text(json.dumps(m))
    reseal(folder)
    shard = folder / "valid.00000.h5"
    message = f"vocab_path attribute {where!r} is not a file name inside the shard's folder"
    for read in (lambda: ShardReader(shard), lambda: open_split(folder, "valid"),
                 lambda: open_split(folder, "valid", verify=False), lambda: ShardDataset(folder, "valid"),
                 lambda: load_pair(folder, "valid", index=0)):
        with pytest.raises(InputError, match=message.replace("(", r"\(")) as e:
            read()
        assert e.value.path == str(shard)
    with pytest.raises(InputError, match="not a file name inside"):  # the trainer's own vocabulary reader
        load_symbols(folder, {"vocab_path": where})
    violation, _, _ = check_shard(shard)
    assert violation is not None and message in violation.what
    report = check_dir(folder)
    assert not report.ok
    if manifest_vocab:  # without one, check stops at the manifest ("vocab entry … is missing")
        assert report.violation is not None and message in report.violation.what
    proc, _ = run_measured("show", str(folder), "--split", "valid", "--index", "0")
    one_line(proc, 2, "valid.00000.h5", "is not a file name inside")


def test_verification_hashes_each_shard_once_per_process(folder, monkeypatch):
    import synprep.signature as signature

    calls = []
    real = signature.file_sha256
    monkeypatch.setattr(signature, "file_sha256", lambda p: calls.append(p) or real(p))
    open_split(folder, "valid")
    open_split(folder, "valid")
    assert len(calls) == 1


def test_a_manifest_signature_the_shards_do_not_carry_is_refused_by_train_and_export(folder, tmp_path):
    """manifest.json's signature edited: check rejects it, and so do the readers of train and export (export
    copied the false signature into export.json)."""
    import json

    from synprep.shards.manifest import Manifest
    from synprep.train.data import ShardDataset

    path = folder / "manifest.json"
    m = json.loads(path.read_text())
    m["signature"] = m["signature"].replace("synthetic", "stanza-1.9")
    for entry in m["splits"].values():
        entry.pop("signature", None)
    path.write_text(json.dumps(m))
    Manifest.load(folder)  # still a readable manifest
    assert not check_dir(folder).ok
    with pytest.raises(InputError, match="signature attribute .* is not manifest.json's") as e:
        ShardDataset(folder, "train")
    assert e.value.path == str(folder / "train.00000.h5")
    proc, _ = run_measured("export", str(folder), "--to", str(tmp_path / "hf"), "--format", "hf")
    one_line(proc, 2, "train.00000.h5", "is not manifest.json's")
    assert not (tmp_path / "hf" / "export.json").exists()
