"""Named systems: ``synprep train --system NAME`` and ``make multi30k-seeds`` map every
system name to its syntax settings in one place (``config.system_overrides``), covering every
registered syntax source; an unknown name is refused; compare reads only the listed runs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli

from synprep.cli import cli
from synprep.train.config import SYNTAX_FIELDS, TrainConfig, preset_data, source_preset, system_names
from synprep.train.sources import SOURCES

ROOT = Path(__file__).resolve().parents[1]


def _print_config(*args: str) -> dict:
    res = CliRunner().invoke(cli, ["train", "--preset", "cpu_small", *args, "--print-config"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_every_registered_source_is_a_system():
    assert set(SOURCES) <= set(system_names())
    assert {"vanilla", "gated", "gated-pascal", "gated-sla"} <= set(system_names())
    assert "gated-lisa" not in system_names()  # LISA runs hard or pure only


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_source_system_is_its_paper_presets_syntax_on_the_base_preset(source):
    base = _print_config()
    got = _print_config("--system", source)
    paper = preset_data(source_preset(source))
    stated = {k: v for k, v in paper.items() if k in SYNTAX_FIELDS}
    assert stated["syntax_source"] == source and "syntax" in stated
    for key, value in stated.items():
        assert got[key] == value, (source, key)
    # the base preset's architecture and optimisation are kept
    for key in ("d_model", "ffn_dim", "heads", "encoder_layers", "lr", "warmup_updates", "max_tokens"):
        assert got[key] == base[key], key
    # cpu_small's CPU gate choices (syntax dropout 0.2, K = 2) do not leak into a paper's source
    assert got["syntax_dropout"] == 0.0


def test_distinctive_systems_resolve_to_their_papers_placement():
    lisa, sla, st, slr = (_print_config("--system", n) for n in ("lisa", "sla", "set", "slr"))
    assert (lisa["syntax"], lisa["syntax_layers"], lisa["syntax_heads"]) == ("hard", [0], [0])
    assert (sla["syntax"], sla["gate_batch_norm"], sla["gate_freeze_epochs"]) == ("gated", False, 0)
    assert (st["syntax"], st["syntax_layers"]) == ("pure", None)
    assert (slr["syntax"], slr["syntax_layers"], slr["syntax_dropout"]) == ("hard", [0], 0.0)


def test_vanilla_gated_and_gated_source_systems():
    base = _print_config()
    assert _print_config("--system", "vanilla")["syntax"] == "vanilla"
    gated = _print_config("--system", "gated")
    assert gated == base  # cpu_small is the gated SLR model: the same config, gate settings kept
    gp = _print_config("--system", "gated-pascal")
    assert (gp["syntax"], gp["syntax_source"], gp["syntax_dropout"], gp["gate_freeze_epochs"]) == ("gated", "pascal",
                                                                                                   0.2, 2)
    # --set applies after --system
    assert _print_config("--system", "lisa", "--set", "syntax_heads=[1]")["syntax_heads"] == [1]
    assert set(gated) == set(TrainConfig().to_dict())


def test_an_unknown_system_is_refused_with_the_known_names(tmp_path):
    proc = run_cli("train", "--preset", "cpu_small", "--system", "lisax", "--print-config", check=False)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("synprep: error: unknown system 'lisax': one of vanilla, gated, slr,")
    assert "ldd_parent" in proc.stderr and "gated-sla" in proc.stderr
    (tmp_path / "checkpoint_last.pt").write_bytes(b"")
    proc = run_cli("train", "--out", str(tmp_path), "--resume", "--system", "lisa", "--print-config", check=False)
    assert proc.returncode == 2 and "drop --config/--preset/--system" in proc.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_multi30k_seeds_trains_each_system_by_name_and_compares_only_the_listed_runs(tmp_path):
    out = tmp_path / "m30k"
    proc = subprocess.run(["make", "-n", "-C", str(ROOT), "multi30k-seeds", f"M30K_OUT={out}",
                           "M30K_SYSTEMS=vanilla lisa set", "M30K_SEEDS=1 2", "SYNPREP=synprep"],
                          capture_output=True, text=True, check=True)
    text = proc.stdout.replace("\\\n", " ")
    trains = re.findall(r"synprep train --shards \S+ .*?--seed (\d+)\s+--system (\S+) --out (\S+)", text)
    assert sorted(trains) == sorted((n, s, "$run") for s in ("vanilla", "lisa", "set") for n in ("1", "2"))
    checks = re.findall(r"synprep train .*--seed (\d+) --system (\S+) --print-config", text)
    assert sorted(checks) == sorted((n, s) for s in ("vanilla", "lisa", "set") for n in ("1", "2"))
    (compare,) = [line for line in text.splitlines() if "synprep compare" in line]
    dirs = re.findall(rf"{re.escape(str(out))}/seeds/(\S+?)/ ", compare)
    assert dirs == [f"{s}.seed{n}" for s in ("vanilla", "lisa", "set") for n in (1, 2)]
    assert "*" not in compare and "--baseline vanilla" in compare
