"""The release surface: ``synprep info``, ``check --json``, ``show --json``, extras, licence files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import ROOT, run_cli

from synprep.shards import SplitReader, open_split
from synprep.shards.synthetic import write_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release") / "out"
    write_folder(out, {"train": 12}, shard_size=5)
    return out


def test_info_names_versions_cache_gpus_parsers(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    cache.write_bytes(b"x" * 2048)
    info = json.loads(run_cli("info", "--json", env={"SYNPREP_CACHE": str(cache)}).stdout)
    from importlib.metadata import version

    assert info["synprep"] == "0.1.0"
    assert info["libraries"]["stanza"] == version("stanza") and info["libraries"]["sacremoses"] == version("sacremoses")
    assert info["parse_cache"] == {"path": str(cache), "bytes": 2048}
    assert isinstance(info["gpus"], list) and info["parsers"]["stanza"]["installed"] is True
    text = run_cli("info", env={"SYNPREP_CACHE": str(cache)}).stdout
    assert f"parse cache: {cache} (0.0 MiB)" in text and f"  torch: {version('torch')}" in text


def test_check_json(folder: Path, tmp_path: Path) -> None:
    got = json.loads(run_cli("check", "--json", str(folder)).stdout)
    assert got["ok"] and got["pairs"] == {"train": 12} and got["shards"] == 3 and got["violation"] is None
    broken = tmp_path / "broken"
    write_folder(broken, {"train": 12}, shard_size=5)
    with h5py.File(broken / "train.00001.h5", "r+") as f:
        f["line"][0] = 1  # not increasing across shards; the sha256 check fires first
    proc = run_cli("check", "--json", str(broken), check=False)
    got = json.loads(proc.stdout)
    assert proc.returncode == 1 and not got["ok"] and got["violation"]["file"] == "train.00001.h5"
    assert "sha256" in got["violation"]["what"]


def test_show_json_is_the_stored_pair(folder: Path) -> None:
    got = json.loads(run_cli("show", str(folder), "--index", "7", "--json").stdout)
    rec = list(SplitReader(open_split(folder, "train")))[7]
    assert got["index"] == 7 and got["shard"] == "train.00001.h5" and got["position"] == 2 and got["line"] == rec.line
    assert got["heads"] == rec.heads.tolist() and np.allclose(got["ldd_prob"], rec.ldd_prob)
    assert len(got["src"]) == len(rec.src_ids) and len(got["words"]) == len(rec.heads)
    proc = run_cli("show", str(folder), "--index", "7", "--json", "--ldd-top", "2", check=False)
    assert proc.returncode == 2 and "--ldd-top" in proc.stderr


def test_show_png_without_matplotlib_names_the_extra(folder: Path, tmp_path: Path) -> None:
    import subprocess

    png = tmp_path / "x.png"
    code = ("import sys; sys.modules['matplotlib'] = None; from synprep.cli import main; "
            f"main(['show', {str(folder)!r}, '--index', '0', '--png', {str(png)!r}])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "pip install 'synprep[plot]'" in proc.stderr and not png.exists()
    assert "train pair 0" in proc.stdout  # the text is printed before the figure is attempted


def test_release_files() -> None:
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    cff = (ROOT / "CITATION.cff").read_text()
    assert "cff-version: 1.2.0" in cff and "version: 0.1.0" in cff
    assert "## [0.1.0]" in (ROOT / "CHANGELOG.md").read_text()
    cite = (ROOT / "docs" / "cite.md").read_text()
    papers = sorted((ROOT.parent / "shared" / "papers").glob("*.txt"))
    assert cite.count("\n| ") >= 6 and (not papers or len(papers) == 5)


def test_trainer_skips_gates_png_without_matplotlib(monkeypatch, caplog, tmp_path: Path) -> None:
    import logging
    import types

    from synprep.train.loop import Trainer

    monkeypatch.setattr("synprep.extras.available", lambda module: module != "matplotlib")
    fake = types.SimpleNamespace(out=tmp_path, cfg=types.SimpleNamespace(uses_syntax=True))  # a model with gates
    with caplog.at_level(logging.WARNING, logger="synprep.train"):
        Trainer._draw(fake, 1)  # type: ignore[arg-type]
        Trainer._draw(fake, 1)  # type: ignore[arg-type]
    assert caplog.text.count("gates.png not drawn") == 1 and "pip install 'synprep[plot]'" in caplog.text
    assert not (tmp_path / "gates.png").exists()


@pytest.mark.parametrize(("planted", "rule"), [("import hypothesis", "DEP004"), ("import yaml", "DEP003"),
                                               ("import not_a_package_anywhere", "DEP001")])
def test_the_dependency_check_fails_on_an_undeclared_import(tmp_path: Path, planted: str, rule: str) -> None:
    """``make lint``'s deptry over a copy of the package with one planted import: a development-only package
    (hypothesis, in the ``dev`` extra), one installed only as another's dependency (PyYAML, through mkdocs) and
    one declared nowhere each fail it; the package as it is passes."""
    import shutil
    import subprocess

    shutil.copytree(ROOT / "synprep", tmp_path / "synprep", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    deptry = [sys.executable, "-m", "deptry", "synprep"]
    clean = subprocess.run(deptry, capture_output=True, text=True, cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    timeline = tmp_path / "synprep" / "timeline.py"
    timeline.write_text(timeline.read_text(encoding="utf-8") + f"\n{planted}  # noqa\n", encoding="utf-8")
    proc = subprocess.run(deptry, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 1 and rule in proc.stdout + proc.stderr, proc.stdout + proc.stderr
