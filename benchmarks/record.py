"""Run a benchmark that prints one JSON object and keep its figures as a row with its provenance.

    python benchmarks/record.py NAME --stage "GROUP: what" --data "..." [--libs stanza torch] [--note "..."]
                                -- python benchmarks/bench_shards.py

For the benchmarks that measure synprep alone (no peer): the JSON object the command prints on stdout
(its last line, when it prints one per line) becomes ``result`` of ``benchmarks/results/NAME.json``, with
this machine, commit, date and the versions of synprep and ``--libs`` (benchmarks/_provenance.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import _provenance as prov
from _cli import arg_parser


def figures(stdout: str) -> dict:
    """The JSON object of ``stdout``: all of it, else its last line that is one.

    Raises:
        ValueError: no JSON object in it.
    """
    try:
        out = json.loads(stdout)
    except ValueError:
        out = None
        for line in reversed(stdout.splitlines()):
            if line.startswith("{"):
                out = json.loads(line)
                break
    if not isinstance(out, dict):
        raise ValueError("the command printed no JSON object")
    return out


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if "--" not in args:
        raise SystemExit("record.py: give the benchmark's command after --")
    cut = args.index("--")
    ap = arg_parser(__doc__)
    ap.add_argument("name")
    ap.add_argument("--stage", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--libs", nargs="*", default=[])
    ap.add_argument("--note", default="the benchmark's own wall-clock timing; loaded")
    opts = ap.parse_args(args[:cut])
    cmd = args[cut + 1:]
    proc = subprocess.run(cmd, cwd=prov.ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"record.py: {' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    result = figures(proc.stdout)
    shown = " ".join(["python" if c == sys.executable or c.endswith("bin/python") else c for c in cmd])
    row = prov.make_row(stage=opts.stage, command=shown, data=opts.data, result=result,
                        versions=prov.versions(*opts.libs), note=opts.note)
    print(prov.write_row(opts.name, row))


if __name__ == "__main__":
    main()
