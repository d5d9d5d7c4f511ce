"""``annotate`` builds a shard's records while its parse runs (the GPU never waits for the CPU).

A parse hands out each line as soon as its batches are parsed (:func:`synprep.parse.run.parse_block_stream`:
the same batches and parses as the whole block); the records of the first lines go to worker processes
before the parse has given its last line, and the records, drops and folder bytes are those of building
them after the parse, with any chunk size, ``-j``, cache and resume. Real German stanza models
(``stanza_dir``) on IWSLT14 test lines and sample_data.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import pickle
import time
from pathlib import Path

import numpy as np
import pytest
from pipeline_runs import assert_same_folder, pipeline_args, reference_run, run_ok
from test_parse_pipeline import _canon as parse_canon

from synprep import timeline
from synprep.annotate import RecordRules, build_records, build_records_streamed
from synprep.errors import ConfigError
from synprep.parallel import STAGE_STATS
from synprep.parse import run as parse_run
from synprep.parse.base import ParserSpec
from synprep.parse.options import Item, Parallel, ParseRun
from synprep.parse.pipelining import records_while_parsing
from synprep.subword.offsets import AlignStats
from synprep.text.escape import escape, unescape_tokens
from synprep.vocab import Vocab


def _iwslt(shared: Path, n: int) -> tuple[list[list[str]], list[list[str]]]:
    """The first ``n`` line pairs of IWSLT14 test (fairseq's tokenized text): German words, English tokens."""
    base = shared / "iwslt14_de-en" / "fairseq_prepared" / "tmp"
    with open(base / "test.de", encoding="utf-8") as f, open(base / "test.en", encoding="utf-8") as g:
        pairs = list(itertools.islice(zip(f, g, strict=True), n))
    return [unescape_tokens(d.split()) for d, _ in pairs], [e.split() for _, e in pairs]


def _items(words: list[list[str]], tgt: list[list[str]]) -> list[Item]:
    out = [Item(line=k + 1, words=w, src=[escape(x) for x in w], tgt=t) for k, (w, t) in enumerate(zip(words, tgt,
                                                                                                      strict=True))]
    out[5] = dataclasses.replace(out[5], tgt=[])  # a pair with an empty target: dropped with its reason
    return out


def _value(x: object) -> object:
    """A field as comparable data: an array by dtype, shape and bytes (what a shard stores)."""
    if isinstance(x, np.ndarray):
        return x.dtype.str, x.shape, x.tobytes()
    if isinstance(x, (list, tuple)):
        return [_value(y) for y in x]
    return x


def _canon(built: tuple, stats: AlignStats) -> list:
    records, drops, sources, words = built
    return [[{k: _value(v) for k, v in vars(r).items()} for r in records], drops, sorted(sources), words,
            stats.as_dict()]


@pytest.mark.slow
def test_a_blocks_lines_come_out_as_their_batches_are_parsed_and_equal_the_whole_block(stanza_dir, shared_data):
    words, _ = _iwslt(shared_data, 30)
    words[3] = []  # an empty line: an error line, handed out in its place
    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")
    batches_done: list[int] = []
    seen: list[int] = []  # batches parsed when each line came out
    stream = parse_run.parse_block_stream(words, ParseRun(spec.with_config(batch_size=4)), progress=lambda d, t: batches_done.append(d))
    got = []
    for pl in stream:
        seen.append(len(batches_done))
        got.append(pl)
    assert seen[0] == 1 and seen[-1] == len(batches_done) > 5  # line 1 after the first batch, not after all
    assert seen == sorted(seen)
    want = parse_run.parse_block(words, ParseRun(spec.with_config(batch_size=4)))
    assert pickle.dumps(got) == pickle.dumps(want)
    assert [pl.line for pl in got] == list(range(1, 31)) and got[3].error == "empty line"


@pytest.mark.slow
def test_streamed_records_equal_the_records_built_after_the_parse(stanza_dir, shared_data):
    words, tgt = _iwslt(shared_data, 40)
    items = _items(words, tgt)
    vocab = Vocab.from_counts({p: 1 for it in items for p in [*it.src, *it.tgt]})
    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")
    parses = parse_run.parse_block(words, ParseRun(spec.with_config(batch_size=8)))
    kw = {"ldd_threshold": 0.05, "lowercase": False, "path": "test.de"}
    want_stats = AlignStats()
    want = _canon(build_records(items, parses, vocab, alignment=want_stats, **kw), want_stats)
    assert [d[:2] for d in want[1]] == [(6, "annotate:empty_target")] and len(want[0]) == 39
    for jobs, chunk in ((2, 1), (2, 7), (3, None), (2, 1000)):
        submitted_before_the_end: list[int] = []

        def watched(submitted_before_the_end=submitted_before_the_end):
            before = STAGE_STATS.submitted
            for k, pl in enumerate(parse_run.parse_block_stream(words, ParseRun(spec.with_config(batch_size=8)))):
                if k == len(words) - 1:  # the parse's last line: what reached the workers before it
                    submitted_before_the_end.append(STAGE_STATS.submitted - before)
                yield pl

        stats = AlignStats()
        got = build_records_streamed(items, watched(), RecordRules(vocab, **kw), Parallel(jobs=jobs), alignment=stats,
                                     chunk_lines=chunk)
        assert _canon(got, stats) == want, f"-j {jobs}, chunks of {chunk} lines"
        if chunk != 1000:
            assert submitted_before_the_end[0] >= 1  # records were being built while the parse went on
    with pytest.raises(ConfigError, match="chunk_lines"):
        build_records_streamed(items, iter(parses), RecordRules(vocab, **kw), Parallel(jobs=2), chunk_lines=0)


def test_records_while_parsing_on_the_gpu_or_when_asked(monkeypatch):
    monkeypatch.delenv("SYNPREP_ANNOTATE_STREAM", raising=False)
    assert records_while_parsing("cuda", 16, "loky", None)  # GPU workers leave CPU cores free
    assert not records_while_parsing("cpu", 16, "loky", None)  # the parse workers take the cores
    assert not records_while_parsing("cuda", 1, "loky", None)
    assert not records_while_parsing("cuda", 4, "dask", "tcp://127.0.0.1:8786")
    monkeypatch.setenv("SYNPREP_ANNOTATE_STREAM", "1")
    assert records_while_parsing("cpu", 2, "loky", None) and not records_while_parsing("cpu", 2, "threading", None)
    monkeypatch.setenv("SYNPREP_ANNOTATE_STREAM", "0")
    assert not records_while_parsing("cuda", 16, "loky", None)
    monkeypatch.setenv("SYNPREP_ANNOTATE_STREAM", "yes")
    with pytest.raises(ConfigError, match="SYNPREP_ANNOTATE_STREAM"):
        records_while_parsing("cpu", 2, "loky", None)


@pytest.mark.slow
def test_streamed_folder_bytes_equal_the_reference_with_cache_and_resume(tmp_path_factory, tmp_path, stanza_dir,
                                                                         monkeypatch):
    ref, ref_cache = reference_run(tmp_path_factory, stanza_dir)  # -j 1: records after the parse
    monkeypatch.setenv("SYNPREP_ANNOTATE_STREAM", "1")
    out, cache = tmp_path / "out", tmp_path / "cache.sqlite"
    proc = run_ok(pipeline_args(out, cache, stanza_dir, "-j", "2"))
    assert "sentences/s" in proc.stderr and "(0 from the cache)" in proc.stderr
    assert_same_folder(out, ref)
    # every line from the cache, records streamed all the same
    again = tmp_path / "again"
    proc = run_ok(pipeline_args(again, cache, stanza_dir, "-j", "2"))
    assert "(0 from the cache)" not in proc.stderr
    assert_same_folder(again, ref)
    # resume: a lost shard is written again, the same bytes
    shards = sorted(out.rglob("*.h5"))
    assert len(shards) >= 2
    shards[1].unlink()
    run_ok(pipeline_args(out, None, stanza_dir, "-j", "2"))
    assert_same_folder(out, ref)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_the_parse_runs_in_the_workers_warmed_before_it_and_they_are_killed_when_done(stanza_dir, shared_data):
    from synprep.parse import warming

    words, _ = _iwslt(shared_data, 12)
    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")
    warming.release_workers()  # no pool left by an earlier test
    warming.WARMED.clear()
    timeline.reset()
    warming.warm_parse_workers(spec, 2, "loky", None)
    warming.wait_for_warm_workers()
    warmed = set(warming.WARMED)
    assert warmed and os.getpid() not in warmed and all(_alive(p) for p in warmed)
    # the warm-up's phases, each at its last worker's time, in the order they happen, before its end
    phases = dict(timeline.marks())
    names = ["warm: processes started", "warm: calls begun", "warm: imports done", "warm: parsers loaded",
             "warm-up done"]
    assert [phases[n] for n in names] == sorted(phases[n] for n in names) and phases[names[0]] > 0
    got = parse_canon(parse_run.parse_block(words, ParseRun(spec.with_config(batch_size=4), par=Parallel(jobs=2))))
    assert got == parse_canon(parse_run.parse_block(words, ParseRun(spec.with_config(batch_size=4))))
    # the parse kept those workers (the same executor, not a new one): they still answer, with their parser
    from synprep.parallel import parallel_map

    again = parallel_map(warming.warm_work, [(spec, None)] * 6, jobs=2)
    assert {w.pid for w in again} <= warmed
    assert all(w.created <= w.begun <= w.imported <= w.loaded <= time.time() for w in again)
    warming.release_workers()
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in warmed) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in warmed)
    # one worker: the parser is loaded in this process
    warming.WARMED.clear()
    warming.warm_parse_workers(spec, 1, "loky", None)
    warming.wait_for_warm_workers()
    assert warming.WARMED == {os.getpid()} and parse_run._PARSER is not None and parse_run._PARSER[0] == spec


@pytest.mark.slow
def test_a_warm_up_released_while_its_workers_load_is_cancelled(stanza_dir):
    """A command that fails on its input before its parse releases the workers while they still load their parser
    (seconds: torch, stanza, the models): the release does not wait for that. It kills them as they load, the
    warm-up's thread ends with the error kept, nothing is warmed and no pool is left."""
    from synprep.loky_seam import reusable_executor
    from synprep.parse import warming

    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")
    warming.release_workers()  # no pool left by an earlier test
    warming.WARMED.clear()
    old = reusable_executor()
    warming.warm_parse_workers(spec, 2, "loky", None)
    deadline = time.monotonic() + 30  # the warm-up's pool exists (its workers start), they have not loaded yet
    # (loky replaces the shut-down executor ``old`` through ``_executor = None``: wait for the new one itself)
    while reusable_executor() in (old, None) and time.monotonic() < deadline:
        time.sleep(0.01)
    executor = reusable_executor()
    assert executor is not None and executor is not old, "the warm-up made no pool within 30 s"
    pids = set(executor._processes)
    warming.release_workers()
    assert warming._WARMING is None and warming.WARMED == set()  # killed before any had loaded its parser
    assert reusable_executor() is None or not any(_alive(p) for p in reusable_executor()._processes)
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


@pytest.mark.slow
def test_annotate_command_streamed_and_warmed_gives_the_one_worker_bytes(shared_data, stanza_dir, tmp_path,
                                                                        monkeypatch):
    """``synprep annotate`` as a user runs it (workers warmed before the input is read, records built beside
    the parse, the pools killed at the end): the folder of a ``-j 1`` run, three shards of 50 pairs."""
    prep = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    for side in ("de", "en"):
        lines = (prep / f"test.{side}").read_text(encoding="utf-8").splitlines(keepends=True)[:130]
        (tmp_path / f"t.{side}").write_text("".join(lines), encoding="utf-8")

    def annotate(out: Path, *extra: str):
        return run_ok(["annotate", "--src", str(tmp_path / "t.de"), "--tgt", str(tmp_path / "t.en"), "-s", "de",
                       "-t", "en", "--out", str(out), "--split", "test", "--vocab-split", "test", "--no-cache",
                       "--shard-size", "50", "--no-language-check", "--stanza-dir", str(stanza_dir),
                       "--stanza-package", "synprep", *extra])

    annotate(tmp_path / "ref", "-j", "1")
    monkeypatch.setenv("SYNPREP_ANNOTATE_STREAM", "1")
    t0 = time.time()
    proc = annotate(tmp_path / "j2", "-j", "2")
    wall = time.time() - t0
    assert "130 input lines, 130 pairs in 3 shard(s)" in proc.stderr and "sentences/s" in proc.stderr
    assert_same_folder(tmp_path / "j2", tmp_path / "ref")
    # where the wall time went: the milestones in the order they happen, each shard's after its block's parse,
    # within the run's wall time; the line before the signature (still the last line)
    lines = proc.stderr.strip().splitlines()
    assert lines[-2].startswith("synprep: timeline: ") and lines[-1].startswith("synprep:0.1.0|")
    from synprep.timeline import parse_line

    marks = lines[-2].split("timeline: ", 1)[1].rsplit(" (s since", 1)[0].split(" · ")
    names = [m.rpartition(" ")[0] for m in marks]
    times = [float(m.rpartition(" ")[2]) for m in marks]
    shards = [f"test.{k:05d}.h5" for k in range(3)]
    assert "warm-up done" in names and names.index("warm-up done") < names.index("workers ready")
    # the warm-up's marks (its thread's, and its workers' phases): their places depend on the timing; their own
    # order is fixed, before the workers are taken
    # order is fixed, before the workers are taken; the records' pool (streamed: warmed too) beside them
    warm = [n for n in names if n.startswith("warm")]
    assert "warm: records pool ready" in warm and warm.index("warm: records pool ready") < warm.index("warm-up done")
    assert [n for n in warm if n != "warm: records pool ready"] == [
        "warm: processes started", "warm: calls begun", "warm: imports done", "warm: parsers loaded", "warm-up done"]
    assert names.index("warm-up done") < names.index("workers ready")
    times = [t for n, t in zip(names, times, strict=True) if not n.startswith("warm")]
    names = [n for n in names if not n.startswith("warm")]
    assert names == ["command", "inputs checked", "parser identity", "vocabulary", "workers ready",
                     *[x for k, (a, b) in enumerate([(1, 50), (51, 100), (101, 130)])
                       for x in (f"parsed {a}-{b}", f"records {shards[k]}", f"shard {shards[k]}")],
                     "check", "workers released"]
    assert times == sorted(times) and 0 < times[0] and times[-1] <= wall + 1.0  # +1: the exit; the boot time in whole seconds
    assert {k: v for k, v in parse_line(proc.stderr).items() if not k.startswith("warm")} == dict(zip(names, times,
                                                                                                   strict=True))
