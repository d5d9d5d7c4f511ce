"""The forward stage apart from the decode stage, pipelined through a bounded queue.

Real German/English stanza models (``stanza_dir``). The split stages give stanza's own trees and the
LDD of the padded batch scores; a pipelined parse (forward here, decode in CPU processes) gives the
same parses and the same folder bytes as an unpipelined one with any ``-j``; the queue between the
stages really bounds what is in flight. A CUDA-only check runs where a GPU is visible.
"""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from pipeline_runs import assert_same_folder, pipeline_args, reference_run, run_ok

from synprep.errors import ConfigError
from synprep.parallel import STAGE_STATS, stage_map
from synprep.parse import run as parse_run
from synprep.parse.base import ParserSpec
from synprep.parse.options import Parallel, ParseRun
from synprep.parse.ssplit import split_sentences
from synprep.parse.stanza_decode import biaffine_ldd
from synprep.parse.stanza_parser import StanzaParser
from synprep.text.escape import unescape_tokens


def _iwslt_lines(shared: Path, n: int) -> list[list[str]]:
    with open(shared / "iwslt14_de-en" / "fairseq_prepared" / "tmp" / "test.de", encoding="utf-8") as f:
        return [unescape_tokens(line.split()) for line in itertools.islice(f, n)]


def _canon(lines) -> list:
    """Every field of every parsed line, the LDD arrays as (dtype, bytes): equal iff the shards' inputs are."""
    out = []
    for pl in lines:
        sents = [(s.words, s.upos, s.heads, s.deprels, s.tree, s.tree_source,
                  None if s.ldd is None else (s.ldd.dep.dtype.str, s.ldd.dep.tobytes(), s.ldd.head.dtype.str,
                                              s.ldd.head.tobytes(), s.ldd.rel, s.ldd.prob.dtype.str,
                                              s.ldd.prob.tobytes(), s.ldd.threshold))
                 for s in pl.sentences]
        out.append((pl.line, pl.error, sents))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("lang,constituency", [("de", False), ("en", True)])
def test_forward_then_decode_gives_stanzas_trees_and_the_batch_ldd(stanza_dir, shared_data, lang, constituency):
    """The decode stage, fed the forward's compact arrays through pickle (as a decode process gets them),
    gives stanza's own Pipeline's UPOS/heads/relations and the LDD of the padded batch scores (the same entries;
    the probabilities to float rounding: the relation scores are computed per sentence, synprep.parse.stanza_scores)."""
    from stanza.models.common.utils import unsort

    from synprep.parallel import limit_threads

    limit_threads(1)
    parser = StanzaParser(ParserSpec(lang=lang, dir=str(stanza_dir), package="synprep", constituency=constituency))
    if lang == "de":
        sents = [w[a:b] for w in _iwslt_lines(shared_data, 60) for a, b in split_sentences(w)][:80]
    else:
        from synprep.parse.conllu_io import read_conllu

        sents = [pl.words for pl in read_conllu(shared_data / "ud" / "en_pud-ud-test.conllu", words="syntactic")][:40]
    fwd = pickle.loads(pickle.dumps(parser.forward(sents)))
    ctx = pickle.loads(pickle.dumps(parser.decode_context()))
    got = [ctx.decode(s) for s in fwd]
    doc = parser.nlp([list(s) for s in sents])  # stanza's whole Pipeline: its POS, its tree decoder
    for s, p in zip(doc.sentences, got, strict=True):
        assert p.words == [w.text for w in s.words]
        assert (p.upos, p.heads, p.deprels) == ([w.upos for w in s.words], [w.head for w in s.words],
                                                 [w.deprel for w in s.words])
    assert all((p.tree is not None) == constituency for p in got)
    # the LDD the padded batch gives (the arrays the model returned, before the forward cut them out)
    ldds: list = []
    for scores, sentlens, orig_idx in parser.depparse_batches(parser.nlp(doc, processors="depparse")):
        ldds += unsort([biaffine_ldd(scores[0][i], scores[2][i], m - 1, parser.relations, parser.spec.ldd_threshold)
                        for i, m in enumerate(sentlens)], orig_idx)
    if parser.last_loader.data_orig_idx is not None:
        ldds = unsort(ldds, parser.last_loader.data_orig_idx)
    for want, p in zip(ldds, got, strict=True):
        assert p.ldd is not None and len(p.ldd.dep) >= len(p.words)
        assert (p.ldd.dep.tobytes(), p.ldd.head.tobytes(), p.ldd.rel) == (
            want.dep.tobytes(), want.head.tobytes(), want.rel)
        assert p.ldd.prob.dtype == want.prob.dtype
        np.testing.assert_allclose(p.ldd.prob, want.prob, rtol=1e-4)


@pytest.mark.slow
def test_pipelined_parse_equals_unpipelined_with_any_jobs(stanza_dir, shared_data, monkeypatch):
    lines = _iwslt_lines(shared_data, 40)
    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")
    ref = _canon(parse_run.parse_lines(lines, ParseRun(spec.with_config(batch_size=8), par=Parallel(jobs=1), pipeline=False)))
    before = STAGE_STATS.submitted
    for jobs in (1, 2):
        got = _canon(parse_run.parse_lines(lines, ParseRun(spec.with_config(batch_size=8), par=Parallel(jobs=jobs), pipeline=True)))
        assert got == ref, f"pipelined -j {jobs} differs"
    # the forward in 2 worker processes (as with 2 GPUs: scores pickled worker -> here -> decode process)
    monkeypatch.setenv("SYNPREP_PARSE_FORWARD_WORKERS", "2")
    assert _canon(parse_run.parse_lines(lines, ParseRun(spec.with_config(batch_size=8), par=Parallel(jobs=2), pipeline=True))) == ref
    monkeypatch.delenv("SYNPREP_PARSE_FORWARD_WORKERS")
    assert STAGE_STATS.submitted - before >= 3 * 5  # every batch went through the decode processes
    assert _canon(parse_run.parse_lines(lines, ParseRun(spec.with_config(batch_size=8), par=Parallel(jobs=2), pipeline=False))) == ref
    assert sum(len(x[2]) for x in ref) > 40 and all(x[1] is None for x in ref)


def _squares(pulled: list[int]):
    for k in itertools.count():  # endless: only a bounded consumer can stop it
        pulled.append(k)
        yield k


def test_the_queue_between_the_stages_is_bounded():
    pulled: list[int] = []
    STAGE_STATS.max_in_flight = 0
    got = list(itertools.islice(stage_map(abs, _squares(pulled), jobs=2, bound=3), 20))
    assert got == list(range(20))  # in order
    assert len(pulled) <= 20 + 3  # never more than `bound` drawn ahead of what was consumed
    assert STAGE_STATS.max_in_flight == 3  # the bound was reached, never passed
    with pytest.raises(ConfigError):
        next(stage_map(abs, [1], jobs=1, bound=0))


def test_a_stage_worker_does_not_import_torch_and_gets_one_thread_when_it_does():
    """The records' pool (alignment, features) never uses torch: its workers start without importing it (1-2 s
    of CPU each, paid 16 times beside the GPU workers' start-up); a worker that imports it later still gets the
    one intra-op thread :func:`synprep.parallel.limit_threads` promises."""
    from worker_probe import torch_state

    # 3 workers: a pool of its own (an earlier test's pool, of 2, whose workers may have imported torch, is shut
    # down by stage_map as any change of -j does), so the first result is a fresh worker's
    got = list(stage_map(torch_state, range(6), jobs=3))
    assert got[0] == (False, 1) and all(n == 1 for _, n in got)


def test_a_dead_decode_process_is_an_error_and_the_next_call_gets_a_new_pool():
    import os
    from concurrent.futures.process import BrokenProcessPool

    with pytest.raises(BrokenProcessPool):
        list(stage_map(os._exit, [3, 3], jobs=1))  # the worker process ends abruptly
    assert list(stage_map(abs, [-1, -2], jobs=1)) == [1, 2]


@pytest.mark.slow
def test_a_pipelined_parse_keeps_at_most_2_jobs_batches_in_flight(stanza_dir, shared_data):
    lines = _iwslt_lines(shared_data, 24)
    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep")
    STAGE_STATS.max_in_flight = 0
    before = STAGE_STATS.submitted
    list(parse_run.parse_lines(lines, ParseRun(spec.with_config(batch_size=2), par=Parallel(jobs=1), pipeline=True)))
    assert STAGE_STATS.submitted - before >= 10  # many more batches than the bound
    assert STAGE_STATS.max_in_flight == 2  # 2 * jobs


def test_pipelined_only_when_asked(monkeypatch):
    cpu, gpu = ParserSpec(lang="de"), ParserSpec(lang="de", device="cuda")
    monkeypatch.delenv("SYNPREP_PARSE_PIPELINE", raising=False)
    # off by default on both devices: on the H100 it was slower than unpipelined GPU workers (docs/parse.md)
    assert not parse_run.pipelined(gpu, "loky", None, None) and not parse_run.pipelined(cpu, "loky", None, None)
    monkeypatch.setenv("SYNPREP_PARSE_PIPELINE", "1")
    assert not parse_run.pipelined(gpu, "dask", None, None)  # a dask cluster's workers parse whole batches
    monkeypatch.delenv("SYNPREP_PARSE_PIPELINE")
    assert not parse_run.pipelined(gpu, "loky", None, False) and parse_run.pipelined(cpu, "loky", None, True)
    monkeypatch.setenv("SYNPREP_PARSE_PIPELINE", "1")
    assert parse_run.pipelined(cpu, "loky", None, None)
    monkeypatch.setenv("SYNPREP_PARSE_PIPELINE", "0")
    assert not parse_run.pipelined(gpu, "loky", None, None)
    monkeypatch.setenv("SYNPREP_PARSE_PIPELINE", "yes")
    with pytest.raises(ConfigError, match="SYNPREP_PARSE_PIPELINE"):
        parse_run.pipelined(cpu, "loky", None, None)


def test_forward_workers_one_per_gpu_or_as_told(monkeypatch):
    from synprep.parse import pipelining

    monkeypatch.delenv("SYNPREP_PARSE_FORWARD_WORKERS", raising=False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert pipelining.forward_workers(ParserSpec(lang="de", device="cuda")) == 3
    assert pipelining.forward_workers(ParserSpec(lang="de")) == 1  # the CPU: this process
    monkeypatch.setenv("SYNPREP_PARSE_FORWARD_WORKERS", "2")
    assert pipelining.forward_workers(ParserSpec(lang="de", device="cuda")) == 2
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("SYNPREP_PARSE_FORWARD_WORKERS", bad)
        with pytest.raises(ConfigError, match="SYNPREP_PARSE_FORWARD_WORKERS"):
            pipelining.forward_workers(ParserSpec(lang="de"))


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_pipelined_folder_bytes_equal_the_unpipelined_run(tmp_path_factory, tmp_path, stanza_dir, monkeypatch, jobs):
    ref, _ = reference_run(tmp_path_factory, stanza_dir)  # -j 1, unpipelined
    monkeypatch.setenv("SYNPREP_PARSE_PIPELINE", "1")
    proc = run_ok(pipeline_args(tmp_path / "out", None, stanza_dir, "-j", jobs))
    assert "decode processes" in proc.stderr  # the throughput line: the decode ran in the pool
    assert_same_folder(tmp_path / "out", ref)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_pipelined_equals_gpu_unpipelined(stanza_dir, shared_data):
    lines = _iwslt_lines(shared_data, 40)
    spec = ParserSpec(lang="de", dir=str(stanza_dir), package="synprep", device="cuda")
    ref = _canon(parse_run.parse_lines(lines, ParseRun(spec.with_config(batch_size=8), par=Parallel(jobs=1), pipeline=False)))
    assert _canon(parse_run.parse_lines(lines, ParseRun(spec.with_config(batch_size=8), par=Parallel(jobs=2), pipeline=True))) == ref
    assert sum(len(x[2]) for x in ref) > 40


def test_parse_ahead_parses_the_next_block_while_this_one_is_written_and_keeps_the_order():
    import threading

    from synprep.parse.pipelining import ParseAhead

    started = {k: threading.Event() for k in range(5)}
    pulled: list[int] = []

    def parse(block):
        started[block[0]].set()
        if block[0] == 3:
            raise ValueError("bad block 3")
        return [x * 10 for x in block]

    def blocks():
        for k in range(5):
            pulled.append(k)
            yield k, [k, k]

    ahead = ParseAhead(parse, enabled=True)
    got = []
    with pytest.raises(ValueError, match="bad block 3"):
        for k, block in ahead.blocks(blocks(), wanted=lambda k: k != 2):  # block 2 is done already: skipped
            assert len(pulled) <= k + 2  # at most one block read ahead
            if k == 2:
                continue
            got.append((k, ahead.parses(k, block)))
            if k == 0:  # "writing shard 0": block 1 is parsed meanwhile, without being asked for
                assert started[1].wait(30)
    assert got == [(0, [0, 0]), (1, [10, 10])]  # in order; block 3's error surfaced when block 3 was due
    assert not started[2].is_set()  # a skipped block is never parsed
    plain = ParseAhead(parse, enabled=False)
    assert [plain.parses(k, b) for k, b in plain.blocks(iter([(0, [0]), (1, [1])]), lambda k: True)] == [[0], [10]]


def test_an_in_process_parse_runs_with_one_thread_whoever_loaded_the_parser(stanza_dir, shared_data, tmp_path):
    """``pipeline -j 1`` in a process that imported torch already (a notebook; this test process) with every core
    as its threads: the warm-up's thread loads the parser and caps its own threads, and under OpenMP a thread's
    count is its own; the models must still run with the one thread a worker runs them with, so the folder is
    the bytes a separate ``-j 2`` run makes (they were not: one LDD probability in 1,671 differed)."""
    from helpers import run_cli

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        run_cli(*pipeline_args(tmp_path / "in", None, stanza_dir, "-j", "1"))
    finally:
        torch.set_num_threads(before)
    run_ok(pipeline_args(tmp_path / "apart", None, stanza_dir, "-j", "2"))
    assert_same_folder(tmp_path / "in", tmp_path / "apart")
