"""Readers check a shard's values as ``synprep check`` does, even when the manifest vouches for the file
(issue 21, item 3).

A shard is damaged in place (h5py, same dtypes and shapes) and the manifest re-sealed (sha256 and
size updated), so only the values give it away. ``open_split`` (what ``train``, ``show``,
``export`` and ``translate`` read through) runs check's per-shard verification
(:func:`synprep.shards.check.check_shard`): the same violation ``check`` reports, as one line, exit
status 2 — never a traceback, never accepted data.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from builders import copy_folder, one_line, reseal, small_folder
from conftest import run_cli

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
