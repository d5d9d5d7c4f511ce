"""``export`` and ``train`` refuse a split that ``check`` reports incomplete.

A real ``synprep shard`` run writes the train split in shards of 4 pairs: stopped (SIGSTOP) after
its first shards it is a split still being written; killed (SIGKILL) it is an interrupted one. Both
commands exit 2 with one line
naming the split and, for the killed run, the command that resumes it; after that command they go ahead.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import time
from pathlib import Path

import pytest
from builders import one_line, write_corpus
from helpers import run_cli
from test_lock import shard_args, start

from synprep.shards import check_dir


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("corpus")
    write_corpus(d, "train", 400, 1)
    return d


def listed_shards(out: Path) -> int:
    try:
        return len(json.loads((out / "manifest.json").read_text())["splits"]["train"]["shards"])
    except (OSError, ValueError, KeyError):
        return 0


def commands(out: Path, tmp_path: Path) -> dict[str, tuple[str, ...]]:
    return {"export": ("export", str(out), "--format", "fairseq", "--to", str(tmp_path / "fs")),
            "train": ("train", "--shards", str(out), "--preset", "tiny", "--out", str(tmp_path / "run"),
                      "--max-steps", "1", "--valid-split", "train")}


def test_export_and_train_refuse_a_split_being_written_or_killed(corpus, tmp_path):
    out = tmp_path / "out"
    proc = start(shard_args(corpus, "train", out))
    try:
        while proc.poll() is None and listed_shards(out) < 3:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGSTOP)  # a writer in the middle of the split: alive, its lock held
        assert proc.poll() is None, "the run ended before it could be stopped mid-split"
        assert not check_dir(out).ok
        for args in commands(out, tmp_path).values():
            p = run_cli(*args, check=False)
            one_line(p, 2, "the train split is still being written by pid", str(proc.pid))
        os.kill(proc.pid, signal.SIGKILL)  # now an interrupted run
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not check_dir(out).ok  # a stray temporary file, or the split is incomplete
    resume = shlex.join(["synprep", *shard_args(corpus, "train", out)])
    for args in commands(out, tmp_path).values():
        p = run_cli(*args, check=False)
        one_line(p, 2, "the train split is incomplete", "its run was interrupted", f"resume it by running `{resume}`")
    assert not (tmp_path / "fs").exists() and not (tmp_path / "run" / "checkpoint_last.pt").exists()
    run_cli(*shard_args(corpus, "train", out))  # the command the message names
    assert check_dir(out).ok
    run_cli(*commands(out, tmp_path)["export"])
    assert (tmp_path / "fs").is_dir()


def test_a_killed_run_before_its_record_names_the_generic_command(corpus, tmp_path):
    """No owner record (an empty lock file, as a finished or never-started run leaves): the advice names
    the split and the folder."""
    out = tmp_path / "out"
    run_cli(*shard_args(corpus, "train", out))
    m = json.loads((out / "manifest.json").read_text())
    m["splits"]["train"]["input_lines"] += 5  # five more input lines than the shards and drops account for
    (out / "manifest.json").write_text(json.dumps(m))
    p = run_cli(*commands(out, tmp_path)["export"], check=False)
    one_line(p, 2, "the train split is incomplete (5 of its 405 input lines", "--split train", str(out))


def test_the_resume_command_is_shell_quoted(tmp_path):
    from synprep.shards.reader import resume_command

    argv = ["/x/synprep/__main__.py", "annotate", "--src", "a b.txt", "--split", "train"]
    (tmp_path / ".train.lock").write_text(json.dumps({"pid": 1, "host": "h", "started": "x",
                                                      "command": shlex.join(argv)}))
    assert resume_command(tmp_path, "train") == "`synprep annotate --src 'a b.txt' --split train`"


def test_a_run_killed_between_a_shards_rename_and_its_listing_is_incomplete_not_unlisted(corpus, tmp_path):
    """A writer renames a shard into place, then lists it in manifest.json: a run killed between the two
    leaves a shard file the manifest does not list. export and train name the interrupted split and the
    command that resumes it (they said "train.00003.h5 is not listed", which hid both); the command repairs it."""
    out = tmp_path / "out"
    run_cli(*shard_args(corpus, "train", out))
    m = json.loads((out / "manifest.json").read_text())
    entry = m["splits"]["train"]
    for s in entry["shards"][4:]:  # shards 0-2 listed, shard 3 on disk but not listed, nothing after
        (out / s["file"]).unlink()
    entry["shards"] = entry["shards"][:3]
    entry["pairs"] = sum(s["pairs"] for s in entry["shards"])
    (out / "manifest.json").write_text(json.dumps(m))
    assert (out / "train.00003.h5").exists() and not check_dir(out).ok
    for args in commands(out, tmp_path).values():
        p = run_cli(*args, check=False)
        one_line(p, 2, "the train split is incomplete (388 of its 400 input lines", "its run was interrupted")
    run_cli(*shard_args(corpus, "train", out))  # what the message advises (--split train --out OUT)
    assert check_dir(out).ok
