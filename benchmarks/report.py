"""The benchmarks page: ``python benchmarks/report.py > docs/benchmarks.md``.

One row per file of ``benchmarks/results/`` (a JSON object: ``stage``, ``device``, ``command``, ``machine``,
``commit``, ``date``, and ``result``, the JSON line the benchmark printed, or ``null`` with a ``note`` where the
figure was not measured). A new measurement replaces its file; the page shows the current figure of each row
only (the older ones live in git). ``make docs`` fails when the page is not this script's output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

HEAD = """# Benchmarks

The current figure of each stage on the CPU and on a GPU. Each row names the command that reproduces it,
the machine, the commit and the date of the measurement ("not recorded" where the measurement did not
record it). A row without a figure was not measured. Speed and memory targets live in `benchmarks/`, not
in the tests.

This page is generated: `python benchmarks/report.py > docs/benchmarks.md` turns the JSON files of
`benchmarks/results/` (one per row: the JSON line the benchmark printed, with where it ran) into it.
A new measurement replaces its file; `make docs` fails when the page is out of date.
"""


def _value(v: object) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1 else f"{v:,.2f}".rstrip("0").rstrip(".")
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _figure(result: dict | None, note: str) -> str:
    if result is None:
        return f"*{note or 'not measured'}*"
    return "; ".join(f"{k} {_value(v)}" for k, v in result.items() if k != "figure")


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|")


def render(results: Path = RESULTS) -> str:
    """The page's Markdown, rows ordered by device (CPU, then GPU) and stage."""
    rows = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(results.glob("*.json"))]
    lines = [HEAD]
    for device, title in (("cpu", "CPU"), ("gpu", "GPU")):
        lines += [f"## {title}", "", "| stage | figure | command | machine | commit | date |",
                  "|---|---|---|---|---|---|"]
        for r in sorted((r for r in rows if r["device"] == device), key=lambda r: r["stage"]):
            cmd = f"`{r['command']}`" if r["command"] not in ("", "—") else "—"
            lines.append(f"| {_cell(r['stage'])} | {_cell(_figure(r.get('result'), r.get('note', '')))} | {_cell(cmd)} "
                         f"| {_cell(r['machine'])} | {_cell(r['commit'])} | {_cell(r['date'])} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
