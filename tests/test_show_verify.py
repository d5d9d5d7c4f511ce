"""``show`` opens and verifies only the shard that holds the pair it shows (not every shard of
the split for one pair).

The guarantee holds: no byte of a shard is returned before that shard is verified against
``manifest.json`` (size, sha256) and by ``check``'s per-shard verification (values). A damaged shard
that is not read does not stop ``show`` of a pair in another shard; a damaged shard that is read
is refused, naming it; ``open_split`` (``train``, ``export``, ``translate``) refuses the whole split.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from builders import one_line, reseal, small_folder_fixtures
from helpers import run_cli

from synprep.errors import InputError
from synprep.shards import Manifest, SplitReader, check_dir, open_split
from synprep.show import load_pair

valid, folder = small_folder_fixtures()  # a small valid folder per module, a copy of it per test


def _same_record(a, b) -> None:
    assert a.line == b.line
    for name in ("src_ids", "tgt_ids", "word_index", "heads", "deprel", "upos", "sent_start", "gaps_cnf",
                 "gaps_nary", "ldd_dep", "ldd_head", "ldd_rel", "ldd_prob"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name


def test_every_pair_is_the_pair_open_split_reads(valid):
    """By index and by line, every pair of both splits is the one the verified split reader gives."""
    for split in ("train", "valid"):
        with SplitReader(open_split(valid, split)) as data:
            for i in range(-len(data), len(data)):
                view = load_pair(valid, split, index=i)
                assert view.index == i % len(data)
                _same_record(view.record, data[i % len(data)])
                by_line = load_pair(valid, split, line=int(data.lines[i % len(data)]))
                assert (by_line.index, by_line.shard, by_line.position) == (view.index, view.shard, view.position)
                _same_record(by_line.record, view.record)


def test_a_line_not_stored_says_why_as_before(valid):
    entry = Manifest.load(valid).splits["train"]
    lines = np.concatenate([r.lines for r in open_split(valid, "train")])
    stored = f"lines {lines.min()}..{lines.max()} stored"
    dropped = int(entry.dropped_lines[0][0])
    assert dropped not in lines and lines.min() < dropped < lines.max()  # a gap inside a shard's range
    with pytest.raises(InputError, match=rf"line {dropped} is not in split 'train' \({stored}\): it was dropped"):
        load_pair(valid, "train", line=dropped)
    beyond = entry.input_lines + 5
    with pytest.raises(InputError, match=rf"line {beyond} is not in split 'train' \({stored}\): the split's input "
                                         rf"has {entry.input_lines} lines"):
        load_pair(valid, "train", line=beyond)
    with pytest.raises(InputError, match=r"pair index 9 out of range: split 'train' has 9 pairs \(0..8\)"):
        load_pair(valid, "train", index=9)


def test_a_damaged_shard_that_is_not_read_does_not_stop_show(folder, valid):
    """train.00001.h5 differs from its manifest entry (one offset shifted, not re-sealed)."""
    with h5py.File(folder / "train.00001.h5", "r+") as f:
        f["offsets/tgt"][2] += 1
    with SplitReader(open_split(valid, "train")) as pristine:
        for index in (0, 3, 8, -1):
            _same_record(load_pair(folder, "train", index=index).record, pristine[index % 9])
        last = int(pristine.lines[8])
    assert load_pair(folder, "train", line=last).shard == "train.00002.h5"
    out = run_cli("show", str(folder), "--split", "train", "--index", "0").stdout
    assert out.startswith("train pair 0 (line ") and "train.00000.h5" in out.splitlines()[0]
    # the damaged shard itself is refused, naming it, by index and by line, before any of its bytes is shown
    for kw in ({"index": 4}, {"index": 7}, {"line": int(open_split(valid, "train")[1].lines[0])}):
        with pytest.raises(InputError, match="sha256 .* does not match manifest.json's") as e:
            load_pair(folder, "train", **kw)
        assert e.value.path == str(folder / "train.00001.h5")
    one_line(run_cli("show", str(folder), "--split", "train", "--index", "5", check=False), 2,
             "train.00001.h5", "does not match manifest.json")
    # the readers that read the whole split still refuse it
    with pytest.raises(InputError, match="does not match manifest.json's"):
        open_split(folder, "train")
    assert not check_dir(folder).ok


def test_a_resealed_shard_with_damaged_values_is_refused_when_read(folder):
    """A head out of range in train.00001.h5, the manifest re-sealed: sha256 passes, the values do not."""
    with h5py.File(folder / "train.00001.h5", "r+") as f:
        heads = f["heads"][()]
        heads[0] = 250
        f["heads"][...] = heads
    reseal(folder)
    load_pair(folder, "train", index=0)
    load_pair(folder, "train", index=8)
    with pytest.raises(InputError, match=r"pair 0 \(line \d+\): heads\[0\] = 250 is outside") as e:
        load_pair(folder, "train", index=4)
    assert e.value.path == str(folder / "train.00001.h5")
