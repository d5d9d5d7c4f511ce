"""``synprep pipeline`` starts its parse workers before the text stage and kills them at its end, as
``annotate`` does (:mod:`synprep.parse.warming`, docs/parse-internals.md "`annotate` around the parse").

The command runs in this process (so that :data:`synprep.parse.warming.WARMED` can be read), with real German
stanza models (``stanza_dir``) on the first 40 raw lines of sample_data's train split, ``-j 2``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers import SAMPLE_DATA
from pipeline_runs import assert_same_folder, pipeline_args, run_ok
from test_annotate_stream import _alive

from synprep.cli import main
from synprep.parse import warming

#: two shards, BPE learned on the 40 lines, several parse batches per worker
FLAGS = ("--shard-size", "20", "--merges", "200", "--batch-size", "8")
LINES = 40


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> dict[str, Path]:
    """The first 40 raw pairs (``de``, ``en``), and ``short.en``: the English side without its last line."""
    d = tmp_path_factory.mktemp("raw")
    out = {}
    for side in ("de", "en"):
        lines = (SAMPLE_DATA / f"train.{side}").read_text(encoding="utf-8").splitlines(keepends=True)[:LINES]
        out[side] = d / f"a.{side}"
        out[side].write_text("".join(lines), encoding="utf-8")
    out["short.en"] = d / "short.en"
    out["short.en"].write_text("".join(out["en"].read_text(encoding="utf-8").splitlines(keepends=True)[:-1]),
                               encoding="utf-8")
    return out


def _in_process(args: list[str]) -> tuple[int, set[int]]:
    """Run ``synprep ARGS`` in this process: its exit status and the processes of joblib's pool (the parse's
    workers) when the command released them."""
    from synprep.loky_seam import reusable_executor

    pool: set[int] = set()
    release = warming.release_workers

    def spy() -> None:
        executor = reusable_executor()
        if executor is not None:
            pool.update(p for p in executor._processes if _alive(p))
        release()

    release()  # no pool left by an earlier test
    warming.WARMED.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(warming, "release_workers", spy)
        try:
            main(args)
            code = 0
        except SystemExit as e:
            code = int(e.code or 0)
    return code, pool


def _all_dead(pids: set[int]) -> bool:
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_alive(p) for p in pids)


@pytest.fixture(scope="module")
def warmed_run(tmp_path_factory, raw, stanza_dir) -> dict:
    """One ``synprep pipeline -j 2`` in this process: its folder, the warmed pids, the pool at release."""
    out = tmp_path_factory.mktemp("warm") / "out"
    code, pool = _in_process(pipeline_args(out, None, stanza_dir, "-j", "2", src=raw["de"], tgt=raw["en"],
                                           flags=FLAGS))
    return {"out": out, "code": code, "warmed": set(warming.WARMED), "pool": pool}


@pytest.mark.slow
def test_the_pipeline_parses_in_the_workers_it_warmed_and_they_are_dead_after_it(warmed_run):
    assert warmed_run["code"] == 0
    warmed = warmed_run["warmed"]
    assert len(warmed) == 2 and os.getpid() not in warmed  # both -j 2 workers loaded their parser first
    # the pool the text stage and the parse ran in held exactly those processes when the command ended
    assert warmed_run["pool"] == warmed
    assert _all_dead(warmed)


@pytest.mark.slow
def test_a_warmed_pipeline_writes_the_one_worker_folder(warmed_run, raw, stanza_dir, tmp_path):
    ref = tmp_path / "ref"
    proc = run_ok(pipeline_args(ref, None, stanza_dir, "-j", "1", src=raw["de"], tgt=raw["en"], flags=FLAGS))
    assert f"{LINES} input lines" in proc.stderr and "in 2 shard(s)" in proc.stderr
    assert_same_folder(warmed_run["out"], ref)  # shards, dict.txt, codes, manifest, text files: every byte
    # the pipeline's milestones (synprep.timeline), in the order they happen, the text stage's among them
    from synprep.timeline import parse_line

    marks = parse_line(proc.stderr)
    assert marks is not None and list(marks.values()) == sorted(marks.values())
    # the warm-up thread's marks (its end, its workers' phases): wherever they fall, in their own order
    warm = {k: marks.pop(k) for k in list(marks) if k.startswith("warm")}
    assert list(warm) == ["warm: processes started", "warm: calls begun", "warm: imports done",
                          "warm: parsers loaded", "warm-up done"] and warm["warm-up done"] <= marks["workers ready"]
    assert list(marks) == ["command", "inputs checked", "parser identity", "tokenized", "cleaned",
                           "subwords", "vocabulary", "workers ready", "parsed 1-20", "records train.00000.h5",
                           "shard train.00000.h5", "parsed 21-40", "records train.00001.h5", "shard train.00001.h5",
                           "check", "workers released"]


@pytest.mark.slow
def test_input_refused_before_the_parse_exits_2_with_its_message_and_no_worker_left(raw, stanza_dir, tmp_path,
                                                                                     capsys):
    out = tmp_path / "out"
    code, pool = _in_process(pipeline_args(out, None, stanza_dir, "-j", "2", src=raw["de"], tgt=raw["short.en"],
                                        flags=FLAGS))
    err = capsys.readouterr().err
    assert code == 2
    assert f"line counts differ: {raw['de']} has {LINES} lines, {raw['short.en']} has {LINES - 1}" in err
    # the warm-up was cancelled (its workers killed while loading, or done by then): none is left
    assert _all_dead(set(warming.WARMED) | pool)
    assert not out.exists()  # nothing written


@pytest.mark.slow
def test_imported_parses_warm_nothing_and_the_text_stage_pool_ends_with_the_command(shared_data, tmp_path):
    """``--parser conllu``: no parser runs, so no worker loads one; the ``-j 2`` pool (the records' chunks) is
    killed at the end all the same."""
    blocks = (shared_data / "ud" / "de_pud-ud-test.conllu").read_text(encoding="utf-8").split("\n\n")[:20]
    conllu = tmp_path / "de.conllu"
    conllu.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    english = [line[len("# text_en = "):] for b in blocks for line in b.splitlines() if line.startswith("# text_en = ")]
    tgt = tmp_path / "en.txt"
    tgt.write_text("\n".join(english) + "\n", encoding="utf-8")
    code, pool = _in_process(["pipeline", "--parser", "conllu", "--conllu", str(conllu), "--tgt", str(tgt), "-s", "de",
                              "-t", "en", "--out", str(tmp_path / "out"), *FLAGS[:4], "-j", "2"])
    assert code == 0 and len(english) == 20
    assert warming.WARMED == set()
    assert pool and _all_dead(pool)  # the records' workers (20 lines: one chunk to tokenize, done here)
