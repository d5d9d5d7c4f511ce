"""Start a parse's workers before the parse, and end them when a command is done with them (docs/parse.md,
"`annotate` around the parse").

:func:`warm_parse_workers` starts the workers :func:`synprep.parse.run.parse_block` will use (each loading its
parser) in a background thread, :func:`wait_for_warm_workers` joins it, :func:`release_workers` kills the idle
pools. None of them changes the output.
"""

from __future__ import annotations

import logging
import os
from typing import Any, NamedTuple

from synprep import parallel
from synprep.loky_seam import import_loky, reusable_executor
from synprep.parallel import parallel_map, stage_map
from synprep.parse.backends import collector_paused
from synprep.parse.base import ParserSpec
from synprep.parse.pipelining import (
    gpu_parse_jobs,
    local_pool,
    pipelined,
    records_while_parsing,
    visible_gpus,
)
from synprep.parse.registry import PARSER_BACKENDS
from synprep.parse.run import gpu_slot_dir, worker_parser
from synprep.timeline import mark

log = logging.getLogger(__name__)

_WARMING: Any = None
#: set by :func:`release_workers` when a command ends before its parse: the warm-up starts nothing more
_CANCEL: Any = None
#: the processes :func:`warm_parse_workers` loaded a parser in (this process's pid with one worker)
WARMED: set[int] = set()


class Warmed(NamedTuple):
    """What :func:`warm_work` did in one worker: its pid, and when (``time.time()``, seconds since the epoch) the
    process was created, the warm-up's call reached it, its parser's libraries were imported (the backend's
    ``libraries``: torch and stanza for stanza), its parser was loaded;
    for a GPU parse the GPUs it sees (:func:`~synprep.parse.pipelining.visible_gpus`, which the main process need not import torch
    for)."""

    pid: int
    created: float
    begun: float
    imported: float
    loaded: float
    gpus: int = 0


def warm_work(item: tuple[ParserSpec, str | None]) -> Warmed | None:
    """Worker entry point of :func:`warm_parse_workers`: load this process's parser (imports, CUDA context, models);
    its :class:`Warmed` times, or None when loading failed.

    A failure is kept here, not raised: joblib would then kill the whole pool (``abort_everything``), and
    ``pipeline``'s text stage runs its own work in that pool meanwhile; the parse meets the same error, in its place.
    """
    import importlib
    import time

    import psutil

    begun = time.time()

    spec, slot_dir = item
    try:
        with collector_paused():  # worker_parser collects once, after the load
            for module in PARSER_BACKENDS.load(spec.name).libraries:  # timed apart from the models' load
                importlib.import_module(module)
            imported = time.time()
            worker_parser(spec, slot_dir)
    except Exception as e:
        log.debug("warming the parser failed in worker %d: %s", os.getpid(), e)
        return None
    loaded = time.time()
    gpus = visible_gpus() if spec.device == "cuda" else 0
    return Warmed(os.getpid(), psutil.Process().create_time(), begun, imported, loaded, gpus)


def _mark_phases(warmed: list[Warmed], started: float) -> None:
    """The warm-up's phases in the timeline, each at its last worker's time: the workers' processes created,
    the warm-up's call begun in them, their imports done, their parsers loaded (a worker that existed before
    this warm-up, or this process with one worker, counts from ``started``)."""
    if not warmed:
        return
    mark("warm: processes started", at=max(max(w.created, started) for w in warmed))
    for name, field in (("warm: calls begun", "begun"), ("warm: imports done", "imported"),
                        ("warm: parsers loaded", "loaded")):
        mark(name, at=max(getattr(w, field) for w in warmed))


def first_workers(spec: ParserSpec, jobs: int, backend: str, scheduler: str | None) -> tuple[int, bool]:
    """The workers :func:`warm_parse_workers` starts first, and whether more may follow once the GPUs are counted.

    A GPU parse with more than one worker per GPU: one GPU's share (``gpu_workers_per_device``, at most ``jobs``)
    at once, known without importing torch, and ``True``: the workers report the GPUs they see (:class:`Warmed`),
    and a machine with more GPUs gets the rest of its workers after them. Importing torch in this process to count
    the GPUs first held back every worker's start: by 3.6 s on the H100 machine without bytecode, and by 2.1 s
    with it while the count ran beside the workers' start (the import holds the GIL the pools' start-up needs).
    Otherwise :func:`~synprep.parse.pipelining.gpu_parse_jobs` (the count, torch imported for it where needed)
    and ``False``.

    Raises:
        ConfigError: ``$SYNPREP_GPU_WORKERS_PER_DEVICE`` is not a whole number >= 1.
    """
    one_gpu = gpu_parse_jobs(jobs, spec.device, backend, scheduler, gpus=1)
    if spec.device == "cuda" and one_gpu > 1:
        return one_gpu, True
    return gpu_parse_jobs(jobs, spec.device, backend, scheduler), False


def warm_parse_workers(spec: ParserSpec, jobs: int, backend: str, scheduler: str | None) -> None:
    """Start the parse's workers now, in a background thread, while this process still reads its input.

    ``annotate`` and ``pipeline`` call it as soon as their parse options are known: each worker's start-up
    (importing torch and stanza, a CUDA context, loading the models: seconds) then overlaps the main process's
    own (reading and checking the input, ``pipeline``'s text stage, the vocabulary) instead of following it.
    The workers are the parse's own (joblib's reusable loky executor, the same ``jobs`` as
    :func:`~synprep.parse.run.parse_block` gives it, the same GPU slots), or with one worker this process's
    parser; ``pipeline``'s text stage runs its work in the same pool meanwhile (after the warm-up's). :func:`wait_for_warm_workers` joins the thread before the
    parse starts. When the records will be built beside the parse (:func:`records_while_parsing`), their pool is
    started too, in a thread of its own, beside the parse workers. A GPU parse starts one GPU's share of workers
    first (:func:`first_workers`). The timeline gets the workers' phases (:func:`_mark_phases`). A failure here is left to the parse to report (the same error, in its place). Nothing is
    warmed for a dask or threading backend or a pipelined parse (their workers are others).
    """
    global _WARMING, _CANCEL
    import threading

    if not local_pool(backend, scheduler) or pipelined(spec, backend, scheduler, None) or _WARMING is not None:
        return
    # the modules this thread shares with the command's own work (synprep's own are imported at this module's
    # top), imported here first: two threads importing joblib and its loky at once deadlocked (Python's
    # _DeadlockError; `pipeline`'s text stage imports sacremoses, hence joblib, while the warm-up imported loky);
    # and the modules loky imports when it first starts a process, which the warm-up's two threads (the parse
    # workers, the records' pool) would otherwise import at once
    import_loky()

    cancel = _CANCEL = threading.Event()

    def records_pool() -> None:  # the records' pool, started beside the parse workers, not after them

        try:
            if not cancel.is_set():
                list(stage_map(abs, range(jobs), jobs=jobs))
                mark("warm: records pool ready")
        except Exception as e:  # its own start-up again in the parse, which reports any error
            log.debug("starting the records pool failed: %s", e)

    def warm() -> None:
        import time

        pool = None
        try:
            if records_while_parsing(spec.device, jobs, backend, scheduler):
                pool = threading.Thread(target=records_pool, name="synprep-warm-records", daemon=True)
                pool.start()
            started = time.time()
            n, later = first_workers(spec, jobs, backend, scheduler)
            if cancel.is_set():
                return
            if n <= 1:  # this process's parser, loaded in this thread
                done = warm_work((spec, None))
                WARMED.update([done.pid] if done is not None else [])
                _mark_phases([done] if done is not None else [], started)
                return
            slot_dir = gpu_slot_dir() if spec.device == "cuda" else None
            warmed = [w for w in parallel_map(warm_work, [(spec, slot_dir)] * n, jobs=n, backend=backend)
                      if w is not None]
            if later and warmed and not cancel.is_set():  # the GPUs the workers see: more get their workers now
                total = gpu_parse_jobs(jobs, spec.device, backend, scheduler, gpus=max(w.gpus for w in warmed))
                if total > n:
                    known = {w.pid for w in warmed}
                    more = parallel_map(warm_work, [(spec, slot_dir)] * total, jobs=total, backend=backend)
                    warmed += [w for w in more if w is not None and w.pid not in known]
            WARMED.update(w.pid for w in warmed)
            _mark_phases(warmed, started)
        except Exception as e:  # the parse meets the same error and reports it
            log.debug("warming the parse workers failed: %s", e)
        finally:
            if pool is not None:
                pool.join()
            mark("warm-up done")  # from this thread: later than "vocabulary", the workers held the parse back

    _WARMING = threading.Thread(target=warm, name="synprep-warm-parse", daemon=True)
    _WARMING.start()


def wait_for_warm_workers() -> None:
    """Wait for :func:`warm_parse_workers`' thread (if any) to finish: the parse then uses its workers alone."""
    global _WARMING
    if _WARMING is not None:
        _WARMING.join()
        _WARMING = None


def release_workers() -> None:
    """End this process's idle worker pools at once: joblib's reusable loky executor (the parse's workers) and
    :func:`synprep.parallel.stage_map`'s pool.

    For a command that is done with them (``annotate``'s and ``pipeline``'s end): left to the interpreter's
    exit, each worker is asked to stop and waited for while it unloads torch, stanza and its models (1.1 s of
    the 2-core machine's 600-line ``annotate -j 2``; 2.8 s with 8 GPU workers, CUDA contexts included);
    killed, 0.1 s. They hold
    nothing to write (the parse cache and the shards are this process's; a GPU slot's lock goes with its
    process). A later parse in this process starts new workers. A warm-up still in progress (a command that
    failed on its input before its parse) is cancelled: it starts nothing more, its workers are killed while
    they load, and once its thread has ended the pools are killed again (a pool it made meanwhile). The bad
    input's exit then no longer waits for the workers' start-up.
    """
    if _WARMING is not None and _CANCEL is not None:
        _CANCEL.set()
        while _WARMING.is_alive():  # its workers killed while they load (a pool made meanwhile too): its wait
            _kill_pools()           # for them ends with an error, kept in the thread
            _WARMING.join(0.1)
    wait_for_warm_workers()
    _kill_pools()


def _kill_pools() -> None:
    executor = reusable_executor()
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)
    stage = parallel._STAGE_POOL
    if stage is not None:
        parallel._STAGE_POOL = None
        stage[1].shutdown(wait=True, kill_workers=True)
