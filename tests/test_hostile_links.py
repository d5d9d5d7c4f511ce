"""Symbolic links in a folder a command writes: a link that leads out of it is refused before anything is
written (exit 2, one line naming the link), so no file outside the folder is created or overwritten; a link the
docs offer (``arrays/`` on another disk) and one that stays inside the folder are used as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders import one_line
from helpers import run_cli

from synprep.shards.synthetic import write_folder


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("links") / "shards"
    write_folder(out, {"train": 30, "valid": 6}, shard_size=20)
    return out


def _victim(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """``tmp_path/outside``: a folder of the user's files a command must never touch."""
    outside = tmp_path / "outside"
    (outside / "data").mkdir(parents=True)
    files = {"data/keep.txt": b"mine\n", "__init__.py": b"# mine\n", "metrics.jsonl": b"{}\n", "README.md": b"x\n"}
    for name, data in files.items():
        (outside / name).write_bytes(data)
    return outside, files


def _untouched(outside: Path, files: dict[str, bytes]) -> None:
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*") if p.is_file()) == sorted(files)
    for name, data in files.items():
        assert (outside / name).read_bytes() == data, name


@pytest.mark.parametrize("fmt", ["hf", "fairseq", "parquet"])
def test_an_export_into_a_folder_holding_a_link_out_is_refused(shards, tmp_path, fmt):
    """A fresh --to holding only ``data -> ../outside`` (it counted as empty); with fairseq, a re-export whose
    ``synprep_fairseq/`` was made a link out."""
    outside, files = _victim(tmp_path)
    dest = tmp_path / "dest"
    dest.mkdir()
    if fmt == "fairseq":
        run_cli("export", str(shards), "--to", str(dest), "--format", fmt)
        import shutil

        shutil.rmtree(dest / "synprep_fairseq")
        os.symlink(outside, dest / "synprep_fairseq")
        link = dest / "synprep_fairseq"
    else:
        link = dest / "data"
        os.symlink(outside, link)
    proc = run_cli("export", str(shards), "--to", str(dest), "--format", fmt, check=False)
    one_line(proc, 2, f"{link} is a symbolic link to {outside}, outside --to {dest}", "remove the link", alone=True)
    _untouched(outside, files)


def test_a_link_inside_the_folder_is_no_refusal(shards, tmp_path):
    dest = tmp_path / "dest"
    (dest / "sub").mkdir(parents=True)
    os.symlink(dest / "sub", dest / "alias")
    run_cli("export", str(shards), "--to", str(dest), "--format", "hf")


def test_a_run_folder_holding_a_link_out_is_refused_before_the_lock_is_taken(shards, tmp_path):
    """A run folder holding only ``metrics.jsonl -> ../outside/metrics.jsonl``: refused before the run writes its
    lock, its config or a metrics row; ``arrays -> elsewhere`` (docs/train.md) is not refused."""
    outside, files = _victim(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(outside / "metrics.jsonl", run / "metrics.jsonl")
    proc = run_cli("train", "--shards", str(shards), "--preset", "tiny", "--out", str(run), "--max-steps", "1",
                   "--device", "cpu", check=False)
    one_line(proc, 2, f"{run / 'metrics.jsonl'} is a symbolic link to {outside / 'metrics.jsonl'}", alone=True)
    assert sorted(p.name for p in run.iterdir()) == ["metrics.jsonl"]
    _untouched(outside, files)
    from synprep.links import refuse_links_out

    (run / "metrics.jsonl").unlink()
    os.symlink(outside / "data", run / "arrays")
    refuse_links_out(run, "--out", allowed=("arrays",))


def test_a_pipeline_out_holding_a_link_out_is_refused(tmp_path):
    outside, files = _victim(tmp_path)
    out = tmp_path / "out"
    (out / "text").mkdir(parents=True)
    os.symlink(outside / "README.md", out / "text" / "train.tok.en")
    src = tmp_path / "s.txt"
    src.write_text("a b\n")
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(src), "-s", "de", "-t", "en", "--out", str(out),
                   check=False)
    one_line(proc, 2, f"{out / 'text' / 'train.tok.en'} is a symbolic link to {outside / 'README.md'}", alone=True)
    _untouched(outside, files)
