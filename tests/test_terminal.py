"""What a user sees on the terminal: progress (bar or periodic log line), -q/-v after the
subcommand, subword-nmt's own lines through synprep's log."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

from synprep.progress import Progress, format_duration


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_format_duration() -> None:
    assert [format_duration(s) for s in (0, 12.9, 65, 3600 * 3 + 125)] == ["0s", "12s", "1m05s", "3h02m"]


def test_log_line_every_period_with_rate_and_eta(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    caplog.set_level(logging.INFO, logger="synprep")
    with Progress(1000, "parse train", every=30, clock=clock, file=io.StringIO()) as p:
        p.skip_to(200)  # finished shards of a resumed run: not counted in the rate
        p.update_to(250)  # t = 0: work starts here (from 200)
        clock.t = 10
        p.update_to(300)  # inside the period: no line
        clock.t = 30
        p.update_to(500)  # 300 lines of work in 30 s
        clock.t = 45
        p.update_to(600)  # 15 s after the last line: none
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["parse train: 500/1000 lines (50%), 10.0 lines/s, ETA 50s"]


def test_bar_with_eta_on_a_terminal(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="synprep")
    term = Terminal()
    clock = Clock()
    with Progress(1000, "parse train", every=0, clock=clock, file=term) as p:
        p.update_to(400)
        block = p.block(400, 600)  # a parse block of input lines 401..600, 50 sentences
        block(25, 50)
        assert p.n == 500
        meter = str(p._bar)  # what the bar shows now (tqdm redraws at most every 0.1 s)
    assert meter.startswith("parse train:  50%") and "500/1000 [" in meter
    assert "<" in meter  # tqdm's elapsed<remaining (the ETA)
    assert term.getvalue().startswith("\rparse train:")
    assert caplog.records == []  # a bar, no log lines


def test_quiet_shows_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="synprep")
    term, clock = Terminal(), Clock()
    with Progress(10, "parse", every=0, clock=clock, file=term) as p:
        clock.t = 1
        p.update_to(5)
    assert term.getvalue() == "" and caplog.records == []


TEXT = "the river is old .\nthe old man saw the river .\nthe river is wide .\n"


def test_log_options_after_the_subcommand_and_subword_nmt_lines(tmp_path: Path) -> None:
    src = tmp_path / "text.txt"
    src.write_text(TEXT)
    codes = tmp_path / "codes"
    args = ["bpe", "learn", "-s", "50", str(src), "-o", str(codes)]
    plain = run_cli(*args).stderr.splitlines()
    # subword-nmt stops early: its own line goes through synprep's log, the count is what was learned
    assert plain[0] == "synprep: subword-nmt: no pair has frequency >= 2. Stopping"
    assert "synprep: bpe learn: 9 merges -> " in plain[2]
    assert sum(1 for line in codes.read_text().splitlines() if not line.startswith("#")) == 9
    # -q after the subcommand: only the signature line; before it, the same
    assert run_cli(*args, "-q").stderr.splitlines() == plain[-1:]
    assert run_cli("-q", *args).stderr.splitlines() == plain[-1:]
    assert run_cli(*args, "--verbose").stderr.splitlines() == plain


CONLLU = """# text = i swim .
1\ti\ti\tPRON\t_\t_\t2\tnsubj\t_\t_
2\tswim\tswim\tVERB\t_\t_\t0\troot\t_\t_
3\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_

# text = it works .
1\tit\tit\tPRON\t_\t_\t2\tnsubj\t_\t_
2\tworks\twork\tVERB\t_\t_\t0\troot\t_\t_
3\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_

"""


def test_annotate_reports_parse_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         caplog: pytest.LogCaptureFixture) -> None:
    """The split's shards move the progress over the input lines (a log line when not on a terminal)."""
    from synprep import progress
    from synprep.config import DataConfig
    from synprep.pipeline import SplitInputs, run_annotate

    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)
    src, tgt, gold = tmp_path / "s.en", tmp_path / "t.de", tmp_path / "g.conllu"
    src.write_text("i swim .\nit works .\n")
    tgt.write_text("ich schwimme .\nes geht .\n")
    gold.write_text(CONLLU)
    caplog.set_level(logging.INFO, logger="synprep")
    run_annotate(SplitInputs(split="test", src=str(src), tgt=str(tgt), conllu=str(gold)), tmp_path / "out",
                 DataConfig.of(src_lang="en", tgt_lang="de", parser="conllu", shard_size=1, vocab_split="test"))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("parse test: ")]
    assert [x.split(",")[0] for x in lines] == ["parse test: 1/2 lines (50%)", "parse test: 2/2 lines (100%)"]


def test_other_libraries_info_lines_stay_out_of_the_log(tmp_path: Path) -> None:
    """Only synprep's own loggers log INFO. torch logs its FakeTensor cache statistics at INFO from an atexit
    hook, registered early in ``import torch``; the import's end sets torch's loggers to WARNING. A SIGTERM
    that lands inside the import leaves them unset, and in CI those lines came after "synprep: terminated
    (SIGTERM)" (tests/test_parent_death.py). Simulated here by unsetting torch's level after the import.
    Another library's warnings still show."""
    src = tmp_path / "text.txt"
    src.write_text(TEXT)
    code = ("import atexit, logging, sys\n"
            "import torch\n"
            "logging.getLogger('torch').setLevel(logging.NOTSET)  # as when the import was cut short\n"
            "atexit.register(lambda: logging.getLogger('somelib').warning('a warning of somelib'))\n"
            "atexit.register(lambda: logging.getLogger('somelib').info('an info line of somelib'))\n"
            "from synprep.cli import main\n"
            "main(sys.argv[1:])\n")
    proc = subprocess.run([sys.executable, "-c", code, "bpe", "learn", "-s", "50", str(src), "-o",
                           str(tmp_path / "codes")], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert any(x.startswith("synprep: bpe learn: 9 merges -> ") for x in lines), lines
    assert lines[-1] == "synprep: a warning of somelib", lines
    assert "FakeTensor" not in proc.stderr and "an info line" not in proc.stderr, lines
