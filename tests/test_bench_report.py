"""benchmarks/report.py: the benchmarks page from benchmarks/results/, refusing a measured row without its
provenance (machine, commit, date, versions). No benchmark runs here: rows are written by hand."""

from __future__ import annotations

import copy
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

REPORT = runpy.run_path(str(ROOT / "benchmarks" / "report.py"))

ROW = {
    "stage": "tokenize: Moses, English", "device": "cpu", "command": "python benchmarks/bench_peers.py --only tokenize",
    "machine": "2-core CPU machine, loaded by parallel work", "commit": "abc1234", "date": "2030-01-02",
    "versions": {"synprep": "0.1.0", "sacremoses": "0.2.0"}, "data": "2000 lines", "note": "CPU time, best of 3",
    "result": {"unit": "sentences/s", "synprep": 5000.0, "peer": 4000.0, "peer_name": "sacremoses tokenize",
               "ratio": 1.25, "higher_is_better": True, "identical": True, "synprep_peak_rss_mb": 57.5},
}


def write(folder: Path, name: str, row: dict) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(row), encoding="utf-8")


def test_a_row_beside_its_peer_shows_both_figures_the_ratio_and_where_it_was_measured(tmp_path: Path) -> None:
    write(tmp_path, "tok", ROW)
    page = REPORT["render"](tmp_path)
    line = next(x for x in page.splitlines() if x.startswith("| Moses, English |"))
    cells = [c.strip() for c in line.strip("|").split(" | ")]
    assert cells[:5] == ["Moses, English", "5,000 sentences/s", "4,000 sentences/s (sacremoses tokenize)",
                         "**1.25x** (higher is better)", "yes"]
    assert cells[5] == "synprep_peak_rss_mb 57.5"
    assert cells[-1] == "2-core CPU machine, loaded by parallel work; abc1234; 2030-01-02; synprep 0.1.0, sacremoses 0.2.0"
    assert "### tokenize" in page.split("## GPU")[0]


@pytest.mark.parametrize("key", ["machine", "commit", "date", "versions"])
def test_a_measured_row_without_provenance_is_refused_naming_its_file(tmp_path: Path, key: str) -> None:
    write(tmp_path, "good", ROW)
    bad = copy.deepcopy(ROW)
    bad[key] = "not recorded" if key != "versions" else {}
    write(tmp_path, "old-row", bad)
    with pytest.raises(REPORT["Refused"], match=rf"old-row\.json: a measured row without {key}"):
        REPORT["render"](tmp_path)
    del bad[key]
    write(tmp_path, "old-row", bad)
    with pytest.raises(REPORT["Refused"], match=rf"old-row\.json: a measured row without {key}"):
        REPORT["render"](tmp_path)


def test_a_row_that_was_not_measured_says_so_without_provenance(tmp_path: Path) -> None:
    write(tmp_path, "gpu", {"stage": "export: fairseq binaries", "device": "gpu", "command": "—", "result": None,
                            "note": "not measured: export runs on the CPU only"})
    page = REPORT["render"](tmp_path)
    assert "| fairseq binaries | *not measured: export runs on the CPU only* | — |" in page.split("## GPU")[1]


def test_the_script_exits_2_with_one_line_for_a_refused_row(tmp_path: Path) -> None:
    write(tmp_path, "old-row", {k: v for k, v in ROW.items() if k != "date"})
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "report.py"), str(tmp_path)],
                          capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"report.py: {tmp_path / 'old-row.json'}: a measured row without date (re-measure it with " \
                          "benchmarks/_provenance.py)\n"


def test_every_committed_row_has_its_provenance_and_the_page_is_their_rendering() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "report.py")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")


def test_a_row_made_here_carries_its_own_provenance(tmp_path: Path) -> None:
    prov = runpy.run_path(str(ROOT / "benchmarks" / "_provenance.py"))
    row = prov["make_row"](stage="tokenize: Moses, English", command="python benchmarks/bench_peers.py", data="2 lines",
                           result=prov["peer_result"](unit="sentences/s", synprep=3.0, peer=2.0, peer_name="sacremoses",
                                                      identical=True),
                           versions=prov["versions"]("sacremoses"), note="")
    assert row["result"]["ratio"] == 1.5 and row["versions"]["sacremoses"] != "absent"
    assert len(row["date"]) == 10 and row["commit"] and "CPU machine" in row["machine"]
    prov["write_row"]("tok", row, tmp_path)
    assert "| Moses, English | 3 sentences/s | 2 sentences/s (sacremoses) | **1.50x**" in REPORT["render"](tmp_path)
