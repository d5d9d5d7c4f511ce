"""The benchmarks page: ``python benchmarks/report.py [RESULTS_DIR] > docs/benchmarks.md``.

One row per file of ``benchmarks/results/``, in the format of ``benchmarks/_provenance.py``: ``stage``
(``"GROUP: what"``), ``device``, ``command``, ``machine``, ``commit``, ``date``, ``versions``, ``data``,
``note`` and ``result``: synprep's figure beside its peer's (``_provenance.peer_result``), the figures of a
row without a peer, or ``null`` with a ``note`` where the row was not measured. A measured row without
machine, commit, date or versions is refused (exit status 2, naming the file). The page groups the rows
by device, then by the stage's group. A new measurement replaces its file; ``make docs`` fails when the
page is not this script's output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # also when run by runpy (docs/gen_reference.py)

from _provenance import check_row  # noqa: E402

RESULTS = HERE / "results"

HEAD = """# Benchmarks

Every stage measured beside what a user would run instead, on the same data and machine, in the same
run: synprep's figure, the peer's, their ratio (synprep / peer: above 1 is faster for a rate, slower for a
time) and whether both wrote the same bytes. Each row names the command that measures it again and where,
when and with which library versions it was measured. A row without a figure was not measured, and says
why. The rows beside a peer time whole processes (start-up included) in CPU time, best of 3, the two
sides interleaved: the development machine is shared with other work ("loaded"), which moves CPU time less
than wall time; every other row says in its note how it was measured. Speed and memory targets live in
`benchmarks/`, not in the tests.

`make bench` measures every row beside its peer at a small size (a few minutes on 2 cores) into
`build/bench/results/` and shows that table; `make bench BENCH=--full` measures these published rows
again. This page is generated: `python
benchmarks/report.py > docs/benchmarks.md` turns the JSON files of `benchmarks/results/` into it, and
refuses a measured row without its machine, commit, date and versions. `make docs` fails when the page is
out of date.
"""


class Refused(ValueError):
    """A results file that cannot be shown (no provenance, not JSON)."""


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1 else f"{v:,.2f}".rstrip("0").rstrip(".")
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


PEER_KEYS = ("unit", "synprep", "peer", "peer_name", "ratio", "higher_is_better", "identical")


def _figures(result: dict[str, Any], skip: tuple[str, ...] = ()) -> str:
    return "; ".join(f"{k} {_value(v)}" for k, v in result.items() if k not in skip and k not in ("figure", "data"))


def _versions(v: dict[str, str]) -> str:
    return ", ".join(f"{k} {x}" for k, x in v.items())


def _where(r: dict[str, Any]) -> str:
    if r.get("result") is None:
        return "—"
    return f"{r['machine']}; {r['commit']}; {r['date']}; {_versions(r['versions'])}"


def _row(r: dict[str, Any]) -> str:
    res, name = r.get("result"), r["stage"].split(":", 1)[-1].strip()
    cmd = f"`{r['command']}`" if r.get("command") not in (None, "", "—") else "—"
    data = r.get("data") or (res or {}).get("data", "")
    note = r.get("note", "")
    if res is None:
        cells = [name, f"*{note or 'not measured'}*", "—", "—", "—", "—"]
    elif "peer" in res and "synprep" in res:
        unit, arrow = res["unit"], "higher is better" if res.get("higher_is_better", True) else "lower is better"
        identical = {True: "yes", False: "**no**", None: "—"}[res.get("identical")]
        ratio = "—" if res.get("ratio") is None else f"**{res['ratio']:.2f}x**"
        cells = [name, f"{_value(res['synprep'])} {unit}", f"{_value(res['peer'])} {unit} ({res['peer_name']})",
                 f"{ratio} ({arrow})", identical, _figures(res, PEER_KEYS)]
    else:
        cells = [name, _figures(res), "—", "—", "—", ""]
    details = "; ".join(x for x in (data, note if res is not None else "") if x)
    return "| " + " | ".join(_cell(c) for c in [*cells, details, cmd, _where(r)]) + " |"


def load(results: Path = RESULTS) -> list[dict[str, Any]]:
    """Every row of ``results``, checked.

    Raises:
        Refused: ``FILE: REASON`` of the first file that is not JSON or lacks its provenance.
    """
    rows = []
    for p in sorted(results.glob("*.json")):
        try:
            row = json.loads(p.read_text(encoding="utf-8"))
        except ValueError as e:
            raise Refused(f"{p}: not JSON: {e}") from None
        try:
            check_row(row, str(p))
        except ValueError as e:
            raise Refused(str(e)) from None
        rows.append(row)
    return rows


def render(results: Path = RESULTS) -> str:
    """The page's Markdown: rows by device (CPU, then GPU), grouped by the stage's group.

    Raises:
        Refused: see :func:`load`.
    """
    rows = load(results)
    lines = [HEAD]
    for device, title in (("cpu", "CPU"), ("gpu", "GPU")):
        mine = sorted((r for r in rows if r["device"] == device), key=lambda r: r["stage"])
        lines += [f"## {title}", ""]
        for group in dict.fromkeys(r["stage"].split(":", 1)[0] for r in mine):
            lines += [f"### {group}", "",
                      "| row | synprep | peer | ratio | same output | other figures | data and how | command "
                      "| machine; commit; date; versions |", "|---|---|---|---|---|---|---|---|---|"]
            lines += [_row(r) for r in mine if r["stage"].split(":", 1)[0] == group]
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``report.py [RESULTS_DIR]``: the page on stdout; exit status 2 and one line for a refused file."""
    args = sys.argv[1:] if argv is None else argv
    try:
        page = render(Path(args[0]) if args else RESULTS)
    except Refused as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
