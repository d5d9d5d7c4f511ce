"""Where, when and with what a benchmark row was measured, how it was measured, and its JSON file.

One row is one JSON object in ``benchmarks/results/NAME.json`` (:func:`write_row`), read by
``benchmarks/report.py`` into docs/benchmarks.md:

- ``stage``: the page's group and row name, ``"STAGE: what"`` (``"parse: stanza"``);
- ``device``: ``"cpu"`` or ``"gpu"``;
- ``command``: the command that measures it again, from the project root;
- ``machine``: :func:`machine` (CPU model, cores, and ``loaded`` when other work shared them);
- ``commit``: :func:`commit` (the measured tree; ``+dirty`` when it had uncommitted changes);
- ``date``: :func:`today` (UTC, ``YYYY-MM-DD``);
- ``versions``: :func:`versions` (``{"synprep": ..., "stanza": ..., ...}``, every library either side ran);
- ``data``: what was measured on (corpus, split, lines);
- ``result``: for a row beside a peer :func:`peer_result` (synprep's figure, the peer's, their ratio,
  whether the outputs were identical); else the JSON object the benchmark printed. ``null`` with a
  ``note`` where the row was not measured (a GPU row on a machine without one);
- ``note``: how it was measured (``CPU time, best of 3, interleaved; loaded``), or why not.

A row with a result and without machine, commit, date or versions is refused (:func:`check_row`).
Timing: :func:`interleaved` runs whole commands in turn, ``repeat`` rounds, and keeps each one's least
CPU time (user + system of the process and the children it waited for, from ``os.wait4``) and its
peak RSS: CPU time, not wall time, because the machine is shared.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from _rss import PeakRSS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

#: the keys a measured row must have, each non-empty and not "not recorded"
PROVENANCE = ("machine", "commit", "date", "versions")
UNRECORDED = ("", "not recorded", None)


def machine(*, loaded: bool = True) -> str:
    """The CPU this process runs on, in words: model, cores it may use, and whether other work shared them."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    words = f"{cores}-core CPU machine ({model}), {platform.system()}, Python {platform.python_version()}"
    return words + (", loaded by parallel work" if loaded else "")


def commit(root: Path = ROOT) -> str:
    """The short hash of ``root``'s HEAD, ``+dirty`` when synprep's or the benchmarks' tracked files differ from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "synprep", "benchmarks",
                            ":(exclude)benchmarks/results"], cwd=root).returncode != 0
    return head + ("+dirty" if dirty else "")


def today() -> str:
    """Today's date in UTC, ``YYYY-MM-DD``."""
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def versions(*names: str, python: str | None = None) -> dict[str, str]:
    """``{name: version}`` of synprep and the distributions ``names``, as installed for this interpreter, or
    for ``python`` (another virtual environment's interpreter: fairseq's). A missing one is ``"absent"``."""
    names = ("synprep", *names) if python is None else names
    if python is not None:
        code = ("import json, sys\nfrom importlib import metadata\nout = {}\nfor n in sys.argv[1:]:\n"
                "    try: out[n] = metadata.version(n)\n    except metadata.PackageNotFoundError: out[n] = 'absent'\n"
                "print(json.dumps(out))")
        return json.loads(subprocess.run([python, "-c", code, *names], capture_output=True, text=True,
                                         check=True).stdout)
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = "absent"
    return out


@dataclass
class Run:
    """One command's best of its rounds: least CPU seconds and least wall seconds, greatest peak RSS (MB)."""

    cpu_s: float = float("inf")
    wall_s: float = float("inf")
    peak_rss_mb: float = 0.0
    rounds: int = 0


def run_once(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
             stdin: Path | None = None, stdout: Path | None = None) -> tuple[float, float, float]:
    """Run ``cmd`` to its end: CPU seconds of it and the children it waited for, wall seconds, and the peak
    summed RSS (MB, sampled every 0.05 s) of its process tree.

    Raises:
        subprocess.CalledProcessError: the command exited non-zero (the end of its stderr in ``stderr``, shown
            by :func:`interleaved`).
    """
    fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
    fout = open(stdout, "wb") if stdout else subprocess.DEVNULL
    try:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=fin, stdout=fout, stderr=subprocess.PIPE)
        with PeakRSS(proc.pid) as peak:  # sampled: ru_maxrss would count the forked copy of this process
            err = proc.stderr.read() if proc.stderr else b""
            _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        for f in (fin, fout):
            if f is not subprocess.DEVNULL:
                f.close()
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd, stderr=err.decode(errors="replace")[-3000:])
    return ru.ru_utime + ru.ru_stime, wall, peak.peak / 2**20


def interleaved(sides: dict[str, dict[str, Any]], repeat: int = 3) -> dict[str, Run]:
    """Run each side's command in turn, ``repeat`` rounds (A B A B ...): the best of each.

    Args:
        sides: ``{name: run_once keyword arguments, with "cmd"}``; their order is the order within a round.
        repeat: rounds.

    Returns:
        ``{name: Run}``.
    """
    best = {name: Run() for name in sides}
    for _ in range(repeat):
        for name, kw in sides.items():
            try:
                cpu, wall, rss = run_once(**kw)
            except subprocess.CalledProcessError as e:
                raise SystemExit(f"{name}: {' '.join(map(str, e.cmd))} exited {e.returncode}:\n{e.stderr}") from None
            b = best[name]
            b.cpu_s, b.wall_s, b.peak_rss_mb = min(b.cpu_s, cpu), min(b.wall_s, wall), max(b.peak_rss_mb, rss)
            b.rounds += 1
    return best


def peer_result(*, unit: str, synprep: float, peer: float, peer_name: str, identical: bool | None,
                higher_is_better: bool = True, **extra: Any) -> dict[str, Any]:
    """The ``result`` of a row beside a peer.

    Args:
        unit: the figure's unit (``"sentences/s"``, ``"CPU s"``).
        synprep: synprep's figure.
        peer: the peer's figure on the same data.
        peer_name: what the peer is (``"sacremoses tokenize"``).
        identical: whether both wrote the same bytes (``None``: not comparable, say why in ``extra``).
        higher_is_better: the figure's direction (rates: higher; times: lower).
        extra: further figures (``synprep_peak_rss_mb``, ``words_per_s`` ...), shown after the main ones.

    Returns:
        ``{"unit", "synprep", "peer", "peer_name", "ratio", "higher_is_better", "identical", **extra}``;
        ``ratio`` is synprep / peer (> 1 is faster for a rate, slower for a time).
    """
    return {"unit": unit, "synprep": _round(synprep), "peer": _round(peer), "peer_name": peer_name,
            "ratio": round(synprep / peer, 3) if peer else None, "higher_is_better": higher_is_better,
            "identical": identical, **{k: _round(v) for k, v in extra.items()}}


def _round(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 3 if abs(v) < 10 else 1)
    return v


def make_row(*, stage: str, command: str, data: str, result: dict[str, Any] | None, versions: dict[str, str],
             note: str, device: str = "cpu", loaded: bool = True) -> dict[str, Any]:
    """A whole row: ``result`` with this machine, this tree's commit, today and ``versions``."""
    return {"stage": stage, "device": device, "command": command, "machine": machine(loaded=loaded),
            "commit": commit(), "date": today(), "versions": versions, "data": data, "note": note,
            "result": result}


def check_row(row: dict[str, Any], source: str = "row") -> None:
    """Refuse a measured row without its provenance.

    Raises:
        ValueError: ``source: no KEY`` for a row with a result and without machine, commit, date or versions,
            or without stage/device.
    """
    for key in ("stage", "device"):
        if row.get(key) in UNRECORDED:
            raise ValueError(f"{source}: no {key}")
    if row.get("result") is None:
        return
    for key in PROVENANCE:
        if row.get(key) in UNRECORDED or (key == "versions" and not (isinstance(row[key], dict) and row[key])):
            raise ValueError(f"{source}: a measured row without {key} (re-measure it with benchmarks/_provenance.py)")


def write_row(name: str, row: dict[str, Any], results: Path = RESULTS) -> Path:
    """Write ``row`` (checked) to ``results/NAME.json``; the path written."""
    check_row(row, name)
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{name}.json"
    path.write_text(json.dumps(row, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
