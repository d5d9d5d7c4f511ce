"""``synprep.shards.reader.iter_pairs``: plain dicts of numpy arrays for any training loop (docs/export.md)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT

from synprep.shards import PAIR_KEYS, SplitReader, iter_pairs, open_split, pad_batch, pair_dict
from synprep.shards.synthetic import write_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("iter") / "out"
    write_folder(out, {"train": 230, "valid": 7}, shard_size=50, drop_every=9)
    return out


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_pairs_in_stored_order_equal_the_reader(folder: Path) -> None:
    got = list(iter_pairs(folder, "train"))
    want = [pair_dict(r) for r in SplitReader(open_split(folder, "train"))]
    assert len(got) == 230 and all(same(g, w) for g, w in zip(got, want, strict=True))
    assert tuple(got[0]) == PAIR_KEYS and isinstance(got[0]["line"], int)
    assert got[0]["src_ids"].dtype == np.int64 and got[0]["ldd_prob"].dtype == np.float32
    assert len(got[0]["gaps_cnf"]) == len(got[0]["src_ids"]) - 1


def test_shuffle_is_shard_local_deterministic_and_complete(folder: Path) -> None:
    lines = [p["line"] for p in iter_pairs(folder, "train", shuffle=True, seed=3, fields=["line"])]
    stored = SplitReader(open_split(folder, "train")).lines.tolist()
    assert sorted(lines) == sorted(stored) and lines != stored
    assert lines == [p["line"] for p in iter_pairs(folder, "train", shuffle=True, seed=3, fields=["line"])]
    assert lines != [p["line"] for p in iter_pairs(folder, "train", shuffle=True, seed=3, epoch=1, fields=["line"])]
    # shard-local: each run of 50 (the last of 30) comes from one shard
    shard_of = {line: i // 50 for i, line in enumerate(stored)}
    runs = [shard_of[x] for x in lines]
    assert sum(a != b for a, b in zip(runs, runs[1:], strict=False)) == 4


def test_workers_split_the_shards(folder: Path) -> None:
    parts = [[p["line"] for p in iter_pairs(folder, "train", fields=["line"], worker=(i, 3))] for i in range(3)]
    assert sorted(sum(parts, [])) == SplitReader(open_split(folder, "train")).lines.tolist()
    assert [len(p) for p in parts] == [100, 80, 50]  # shards 0+3, 1+4, 2 (the last shard has 30 pairs)
    with pytest.raises(ValueError, match="worker"):
        next(iter_pairs(folder, "train", worker=(3, 3)))
    with pytest.raises(ValueError, match="unknown field"):
        next(iter_pairs(folder, "train", fields=["src_ids", "nope"]))


def test_pad_batch() -> None:
    a, b = np.array([5, 6, 7]), np.array([8])
    assert pad_batch([a, b], 1).tolist() == [[5, 6, 7], [8, 1, 1]]
    assert pad_batch([a, b], -1, left=True).tolist() == [[5, 6, 7], [-1, -1, 8]]
    with pytest.raises(ValueError):
        pad_batch([], 0)


def test_the_docs_pytorch_example_loads_a_batch(folder: Path, capsys) -> None:
    text = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    code = re.search(r"## Any PyTorch training loop.*?```python\n(.*?)```", text, re.S)
    assert code is not None
    lines = code.group(1).splitlines()
    assert len(lines) <= 25
    exec(compile(code.group(1).replace('"build/sample"', repr(str(folder))), "docs/export.md", "exec"), {})
    shapes = capsys.readouterr().out
    assert re.fullmatch(r"\{'src_ids': \(32, \d+\), 'tgt_ids': \(32, \d+\), 'heads': \(32, \d+\), "
                        r"'gaps_cnf': \(32, \d+\)\}\n", shapes), shapes
