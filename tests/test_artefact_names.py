"""File names read from artefacts (export.json, manifest.json) are plain names inside their folder, checked
before any file is read, written or deleted: a shipped folder's artefacts never reach a file outside it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import run_cli

from synprep.errors import InputError, checked_name, name_problem
from synprep.export import export
from synprep.shards import Manifest
from synprep.shards.synthetic import write_folder


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("names") / "shards"
    write_folder(out, {"train": 30, "valid": 9}, shard_size=20)
    return out


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name, ok", [
    ("dict.txt", True), ("data/train-00000-of-00001.parquet", True), ("../victim.txt", False),
    ("/etc/passwd", False), ("a/../../x", False), ("", False), (".", False), ("a//b", False), ("a/./b", False),
    ("x\x00y", False), ("..\\x", False), (None, False), (3, False), (["x"], False),
])  # fmt: skip
def test_a_plain_name_stays_inside_its_folder(name, ok) -> None:
    assert (name_problem(name) is None) == ok
    assert name_problem("data/x", subfolders=False) is not None


def test_a_symbolic_link_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "link").symlink_to(tmp_path)
    assert checked_name("link2/x", "a.json", folder=tmp_path / "dest") == "link2/x"
    with pytest.raises(InputError, match="symbolic link leads out") as e:
        checked_name("link/victim.txt", "a.json", folder=tmp_path / "dest")
    assert e.value.path == "a.json"


@pytest.mark.parametrize("fmt", ["fairseq", "hf"])
@pytest.mark.parametrize("bad", ["../victim.txt", "ABSOLUTE", "link/victim.txt"])
@pytest.mark.parametrize("unit", ["stale", "current"])
def test_export_never_touches_a_file_its_export_json_names_outside_dest(synthetic: Path, tmp_path: Path, fmt: str,
                                                                       bad: str, unit: str) -> None:
    """A re-run deleted a stale unit's files by the names export.json gives, and hashed a current unit's."""
    dest = tmp_path / "dest"
    export(str(synthetic), fmt, str(dest))
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    if bad.startswith("link/"):  # refused before export.json is read: a link in DEST that leads out of it
        (dest / "link").symlink_to(tmp_path)
    name = str(victim) if bad == "ABSOLUTE" else bad
    raw = json.loads((dest / "export.json").read_text(encoding="utf-8"))
    entry = {"sha256": "0" * 64, "bytes": 4}
    if unit == "stale":  # a unit the source no longer has: its files are deleted
        key = "valid.stale"
        raw["units"][key] = {"split": "valid", "sources": [], "files": {name: entry}, "pairs": 0}
    else:  # a unit the source has: its files are hashed to see whether it is done
        key = sorted(k for k in raw["units"] if raw["units"][k]["split"] == "valid")[0]
        raw["units"][key]["files"][name] = entry
    (dest / "export.json").write_text(json.dumps(raw), encoding="utf-8")
    before = tree(dest)
    proc = run_cli("export", str(synthetic), "--format", fmt, "--to", str(dest), check=False)
    assert proc.returncode == 2, proc.stderr
    if bad.startswith("link/"):
        assert re.fullmatch(rf"synprep: error: {re.escape(str(dest / 'link'))} is a symbolic link to "
                            rf"{re.escape(str(tmp_path))}[^\n]*: synprep writes only inside the folder it is given; "
                            rf"remove the link \(or give another folder\)\n", proc.stderr), proc.stderr
    else:
        assert re.fullmatch(rf"synprep: error: {re.escape(str(dest / 'export.json'))}: unit '{re.escape(key)}': "
                            rf"file {re.escape(repr(name))} is not a file name inside the folder \([^\n]+\)\n",
                            proc.stderr), proc.stderr
    assert victim.read_text() == "mine" and tree(dest) == before


@pytest.mark.parametrize("where", ["shard", "alignment"])
@pytest.mark.parametrize("bad", ["../x.h5", "/ABS/x.h5", "sub/valid.00000.h5"])
def test_a_manifest_naming_a_shard_outside_the_folder_is_refused_where_it_is_read(synthetic: Path, tmp_path: Path,
                                                                                  where: str, bad: str) -> None:
    import shutil

    src = tmp_path / "src"
    shutil.copytree(synthetic, src)
    bad = bad.replace("/ABS", str(tmp_path))
    raw = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    if where == "shard":
        raw["splits"]["valid"]["shards"][0]["file"] = bad
    else:
        raw["splits"]["valid"]["subword_alignment"] = {"total": {}, "shards": {bad: {"rule": 1}}}
    (src / "manifest.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(f"{bad!r} is not a file name inside the folder")) as e:
        Manifest.load(src)
    assert e.value.path == str(src / "manifest.json")
    dest = tmp_path / "out"
    proc = run_cli("export", str(src), "--format", "fairseq", "--to", str(dest), check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and repr(bad) in proc.stderr
    assert not dest.exists()


def test_a_malformed_file_entry_of_export_json_is_one_line(synthetic: Path, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    export(str(synthetic), "fairseq", str(dest), ["valid"])
    raw = json.loads((dest / "export.json").read_text(encoding="utf-8"))
    name = next(iter(raw["units"]["valid"]["files"]))
    raw["units"]["valid"]["files"][name] = 5
    (dest / "export.json").write_text(json.dumps(raw), encoding="utf-8")
    proc = run_cli("export", str(synthetic), "--format", "fairseq", "--to", str(dest), "--split", "valid", check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "not a synprep export manifest: unit 'valid': a file entry 5 is not {sha256, bytes}" in proc.stderr
