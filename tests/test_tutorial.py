"""docs/tutorial.md runs as written: each ```sh block of ``synprep`` commands is run in-process in a fresh
folder beside sample_data/, and what it prints must be the ```text block that follows it on the page, up to
what varies between runs (timings, rates, the timeline line). A command that fails, or whose output drifts
from the page, fails the test, naming the command and the lines that differ."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path

import pytest
from helpers import ROOT, SAMPLE_DATA, run_cli

pytestmark = pytest.mark.slow

PAGE = ROOT / "docs" / "tutorial.md"
#: the stanza folder the page names (relative to the clone), replaced by the shared data's
PAGE_STANZA = "../shared/data/stanza_resources"
#: what differs from run to run or machine to machine: (pattern, replacement), applied to the page's lines and
#: the output's alike (the report page's size: its PNG figures' bytes depend on the fonts installed)
MASKS = [
    (re.compile(r"^synprep: timeline: .*"), "synprep: timeline: …"),
    (re.compile(r"\(\d+ KiB;"), "(… KiB;"),
    (re.compile(r"\d+(\.\d+)? (s|sentences/s|words/s|pieces/s|tok/s)\b"), r"… \2"),
]


def steps(text: str) -> list[tuple[str, list[str]]]:
    """(command without the leading ``synprep``, expected output lines) for each ```sh block whose lines are
    ``synprep`` commands, with the ```text block right after it. Lines ending in ``\\`` continue."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)
    out = []
    for (kind, body), (next_kind, expected) in zip(blocks, [*blocks[1:], ("", "")], strict=True):
        command = body.replace("\\\n", " ").strip()
        if kind == "sh" and command.startswith("synprep "):
            assert "\n" not in command, f"one command per ```sh block: {body}"
            assert next_kind == "text", f"no ```text block of output after: {command}"
            out.append((command.removeprefix("synprep "), expected.splitlines()))
    return out


def masked(lines: list[str]) -> list[str]:
    for pattern, replacement in MASKS:
        lines = [pattern.sub(replacement, line) for line in lines]
    return sorted(line.rstrip() for line in lines if line.strip())  # stdout and stderr interleave on a terminal


def test_the_page_has_every_stage() -> None:
    commands = [c.split()[0] for c, _ in steps(PAGE.read_text(encoding="utf-8"))]
    assert commands[:3] == ["pipeline"] * 3
    for stage in ("check", "show", "report", "export", "train", "translate", "evaluate"):
        assert stage in commands


def test_the_tutorial_runs_as_written(stanza_dir: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "sample_data").symlink_to(SAMPLE_DATA)
    env = {"SYNPREP_CACHE": str(tmp_path / "parse.sqlite")}
    for command, expected in steps(PAGE.read_text(encoding="utf-8")):
        args = shlex.split(command.replace(PAGE_STANZA, str(stanza_dir)))
        start = time.perf_counter()
        proc = run_cli(*args, cwd=work, env=env, check=False)
        assert proc.returncode == 0, f"synprep {command} exited {proc.returncode}:\n{proc.stderr}"
        got = (proc.stderr + proc.stdout).replace(str(stanza_dir), PAGE_STANZA).splitlines()
        want, have = masked(expected), masked(got)
        assert have == want, (f"synprep {command} ({time.perf_counter() - start:.1f} s) printed, not as the page:\n"
                              + "\n".join(f"+ {x}" for x in sorted(set(have) - set(want)))
                              + "\n" + "\n".join(f"- {x}" for x in sorted(set(want) - set(have))))


#: the options through which the tutorial's commands write into the clone
WRITES = ("--out", "-o", "--to", "--ref-out")


def test_what_the_tutorial_writes_is_ignored_by_git() -> None:
    """Following the page in a clone leaves no untracked file behind: every path its commands write is ignored."""
    import subprocess

    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    written = sorted({args[i + 1].split("/")[0] for command, _ in steps(PAGE.read_text(encoding="utf-8"))
                      for args in [shlex.split(command)] for i, a in enumerate(args[:-1]) if a in WRITES})
    assert {"data", "runs", "hyp.txt", "ref.txt", "data.parquet", "report.html"} <= set(written)
    proc = subprocess.run(["git", "check-ignore", "--no-index", *written], cwd=ROOT, capture_output=True, text=True)
    assert sorted(proc.stdout.split()) == written, f"not ignored: {sorted(set(written) - set(proc.stdout.split()))}"
