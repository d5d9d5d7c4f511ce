"""The device kind is part of a folder's parse: a CPU-made split refuses a GPU resume.

CPU and GPU kernels give slightly different scores, so a folder mixing both would hold parses no
single run makes. No GPU is visible here: CUDA's presence is simulated as tests/test_parse_gpu_slots.py
does (torch's device count), which is enough since the refusal comes before any model is loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from helpers import ROOT, run_cli

from synprep.config import CONFIG_VERSION, DataConfig
from synprep.errors import ConfigError

SAMPLE = ROOT / "sample_data"


def test_a_version_2_configuration_was_made_on_the_cpu():
    old = {**DataConfig.of(src_lang="de", tgt_lang="en").to_dict(), "version": 2}
    del old["device"]
    assert DataConfig.from_dict(old).parse.device == "cpu"
    assert CONFIG_VERSION == 3 and DataConfig.of(device="cuda").to_dict()["device"] == "cuda"
    with pytest.raises(ConfigError, match="device must be cpu or cuda"):
        DataConfig.of(device="tpu")


@pytest.fixture(scope="module")
def cpu_split(tmp_path_factory, stanza_dir) -> tuple[Path, list[str], str]:
    out = tmp_path_factory.mktemp("device") / "out"
    args = ["pipeline", "--src", str(SAMPLE / "test.de"), "--tgt", str(SAMPLE / "test.en"), "-s", "de", "-t", "en",
            "--out", str(out), "--merges", "200", "--no-cache", "--stanza-dir", str(stanza_dir),
            "--stanza-package", "synprep"]
    proc = run_cli(*args)
    return out, args, proc.stderr


def _with_a_gpu(monkeypatch, args: list[str]):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    from synprep.cli import cli

    return CliRunner().invoke(cli, args)


def test_the_folder_records_the_device_kind(cpu_split):
    out, _, _ = cpu_split
    assert json.loads((out / "pipeline.json").read_text())["device"] == "cpu"
    manifest = json.loads((out / "manifest.json").read_text())
    assert "device=" not in manifest["config"]["parser"]["identity"]  # a CPU identity, as earlier versions wrote


@pytest.mark.parametrize("extra", [[], ["--split", "valid"]], ids=["resume", "another split"])
def test_a_cpu_split_refuses_a_gpu_run_naming_both(cpu_split, monkeypatch, extra):
    out, args, _ = cpu_split
    def files() -> dict[str, bytes]:  # the split lock files (empty, .SPLIT.lock) are taken before the check
        return {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file() and not p.name.endswith(".lock")}

    before = files()
    res = _with_a_gpu(monkeypatch, [*args, "--device", "cuda", *extra])
    assert isinstance(res.exception, ConfigError), res.output
    assert 'device: the folder has "cpu", this run "cuda"' in str(res.exception)
    assert files() == before  # nothing written


def test_the_device_kind_is_inherited_from_the_folder(cpu_split):
    out, args, _ = cpu_split
    proc = run_cli(*args)  # no --device: the folder's (cpu); the finished split is resumed, nothing redone
    assert proc.returncode == 0


def test_pipeline_and_parse_end_with_their_throughput(cpu_split, stanza_dir):
    """Sentences/s, words/s and the device kind of the parse stage."""
    import re

    _, _, stderr = cpu_split
    m = re.search(r"parse: (\d+) sentences, (\d+) words in [\d.]+ s: [\d.]+ sentences/s, \d+ words/s on cpu", stderr)
    assert m is not None, stderr
    assert int(m.group(1)) >= 40 and int(m.group(2)) > 5 * int(m.group(1))
    proc = run_cli("parse", "-l", "de", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "--no-cache",
                   input="das ist gut . wir gehen .\nhallo welt\n")
    assert re.search(r"parse: 3 sentences, 9 words in [\d.]+ s: [\d.]+ sentences/s, \d+ words/s on cpu", proc.stderr)
