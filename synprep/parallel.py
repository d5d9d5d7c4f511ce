"""Ordered, streaming parallel map over chunks of work (joblib).

``--jobs N`` everywhere goes through :func:`parallel_map`: joblib's ``loky`` process backend on
one machine, or joblib's ``dask`` backend on a ``dask.distributed`` cluster
(``--backend dask --scheduler tcp://HOST:8786``). Results come back in input order and at most
``2 * jobs`` chunks are in flight, so memory does not grow with the input.
Each worker caps its BLAS/torch threads at one (``inner_max_num_threads=1`` and
:func:`limit_threads`), so N workers never oversubscribe N cores. A ``loky`` worker exits when the
process that started it dies, even by SIGKILL (:func:`exit_with_parent`): loky's workers
otherwise outlive a killed run, holding their memory (a loaded parser) until their idle timeout.

A dask cluster must be trusted: work and results travel as pickles, which run code where they are
loaded. ``tls://HOST:PORT`` encrypts and authenticates the connection with a
``distributed.Security`` built from :func:`set_tls` (``--tls-ca-file``, ``--tls-cert``,
``--tls-key``) or dask's own ``distributed.comm.tls.*`` configuration. Before the client is made,
the scheduler must answer a handshake within :data:`CONNECT_TIMEOUT` seconds, and so must the
client's registration and the cluster check that follows (:func:`_within`): an address that
accepts TCP but never answers, or answers and then stalls, is an error, never a silent hang.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import itertools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from synprep import __version__
from synprep.errors import ConfigError
from synprep.loky_seam import lift_worker_memory_limit, process_pool_executor

T = TypeVar("T")
R = TypeVar("R")

BACKENDS = ("loky", "dask", "threading")
#: seconds a dask scheduler has to answer each step of connecting: the handshake, the client's
#: registration, the cluster check (synprep's version on the scheduler and every worker)
CONNECT_TIMEOUT = 30.0

_TLS: dict[str, str] = {}


def set_tls(ca_file: str | None = None, cert: str | None = None, key: str | None = None) -> None:
    """The TLS files for a ``tls://`` scheduler (``--tls-ca-file``, ``--tls-cert``, ``--tls-key``).

    Raises:
        ConfigError: a file that does not exist, or a key without a certificate.
    """
    _TLS.clear()
    for name, value in (("tls_ca_file", ca_file), ("tls_client_cert", cert), ("tls_client_key", key)):
        if value is not None:
            if not os.path.isfile(value):
                raise ConfigError(f"no such file: {value} (--{name.replace('_client', '').replace('_', '-')})")
            _TLS[name] = value
    if key is not None and cert is None:
        raise ConfigError("--tls-key needs --tls-cert")


def _security(scheduler: str) -> Any:
    """The ``distributed.Security`` for ``scheduler``: TLS for ``tls://``, None for other protocols.

    Raises:
        ConfigError: TLS files given for a scheduler that is not ``tls://``, or ``tls://`` without a CA.
    """
    from distributed import Security

    if not scheduler.startswith("tls://"):
        if _TLS:
            raise ConfigError(f"--tls-* options need a tls:// scheduler address, not {scheduler}")
        return None
    sec = Security(require_encryption=True, **_TLS)  # unset files come from dask's distributed.comm.tls config
    if not getattr(sec, "tls_ca_file", None):
        raise ConfigError(f"the tls:// scheduler {scheduler} needs --tls-ca-file (and --tls-cert/--tls-key when the "
                          "cluster asks for client certificates)")
    return sec


def _handshake(scheduler: str, security: Any, timeout: float) -> None:
    """Connect to the scheduler and ask for its identity, all within ``timeout`` seconds.

    Raises:
        ConfigError: refused, TLS failure, or no answer in time (naming the address).
    """
    import asyncio

    from distributed.comm import connect

    async def probe() -> Any:
        args = security.get_connection_args("client") if security is not None else {}
        comm = await connect(scheduler, timeout=timeout, **args)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        asyncio.run(asyncio.wait_for(probe(), timeout))
    except (TimeoutError, asyncio.TimeoutError):
        raise ConfigError(f"the dask scheduler at {scheduler} did not answer within {timeout:g} s (is it a dask "
                          "scheduler, and does it use this protocol?)") from None
    except (OSError, ValueError, TypeError) as e:  # refused, TLS handshake, unknown protocol
        raise ConfigError(f"cannot connect to the dask scheduler at {scheduler}: {e}") from None


def _within(seconds: float, what: str, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
    """``fn(*args, **kwargs)``, or a :class:`ConfigError` when it has not returned within ``seconds``:
    ``WHAT did not answer within T s``.

    dask's own timeouts do not cover every call (``Client.run`` has none, and the client's
    registration had none in older versions), so the call runs in a daemon thread and this one
    waits at most ``seconds``; a call left hanging is abandoned with its thread.
    """
    import threading

    done = threading.Event()
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # handed to the caller
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=call, name=f"synprep-dask-{what}", daemon=True).start()
    if not done.wait(seconds):
        raise ConfigError(f"{what} did not answer within {seconds:g} s (is it a dask scheduler, and are its "
                          "workers alive?)")
    if "error" in box:
        raise box["error"]
    return box["value"]


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Cut an iterable into lists of ``size`` items (the last may be shorter)."""
    if size < 1:
        raise ConfigError(f"chunk size must be >= 1, got {size}")
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def usable_cpus() -> int:
    """The CPUs this process may use: loky's count (``joblib.cpu_count()``), which honours the affinity mask
    (``taskset``, a batch scheduler's CPU binding), a cgroup CPU quota (containers) and ``LOKY_MAX_CPU_COUNT``,
    where ``os.cpu_count()`` counts every CPU of the machine (a job given 16 of a GPU node's 128 cores
    would start workers for 128)."""
    from joblib import cpu_count

    return max(1, int(cpu_count()))


def limit_threads(n: int = 1) -> None:
    """Cap torch's intra-op threads (and BLAS through the environment) in this process.

    torch is not imported for it: where it is loaded already its threads are set, else ``OMP_NUM_THREADS`` is
    set to ``n``, which a later ``import torch`` starts with. A worker that never uses torch (``annotate``'s
    records pool: alignment and features) then never pays its import: 1–2 s of CPU per process, which 16
    records workers paid beside the GPU workers' own start-up on the GPU machine (docs/parse.md).
    """
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, str(n))
    torch = sys.modules.get("torch")
    if torch is None:
        os.environ["OMP_NUM_THREADS"] = str(n)  # torch's intra-op threads when it is imported
        return
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


def keep_loky_worker() -> None:
    """Stop loky from restarting this worker because the parser's model made it grow.

    A loky worker measures its memory after its first task and exits ("A worker stopped while
    some jobs were given to the executor ... memory leak") once it has grown by 300 MB: exactly
    what loading a stanza model into a worker that first ran a text stage looks like. The
    replacement worker would load the model again. The model is the memory we mean to keep, so
    this worker's limit is lifted (:func:`synprep.loky_seam.lift_worker_memory_limit`).
    """
    lift_worker_memory_limit()


#: seconds between two looks of a worker at its parent (:func:`exit_with_parent`)
PARENT_POLL = 0.25


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    os._exit(1)  # the parent is gone: nobody reads this worker's results; end without cleanup


def exit_with_parent(parent: int) -> None:
    """Make this worker process exit once ``parent`` (the pid of the process that started it) is gone.

    The initializer of every ``loky`` worker (:func:`parallel_map`). A daemon thread looks at
    ``os.getppid()`` every :data:`PARENT_POLL` seconds; when the parent dies (SIGKILL included) the
    worker is re-parented and ends at once with ``os._exit``. (Linux's ``PR_SET_PDEATHSIG`` is not
    used: it fires when the parent *thread* that forked the worker ends, and loky starts workers
    from its manager thread too, so a live pool could lose its workers.)
    """
    if os.getppid() != parent:  # died before this worker started
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="synprep-parent-watch", daemon=True).start()


_LOCAL: tuple[int, Any, Any] | None = None


def _local_client(jobs: int) -> Any:
    """A client of this process's own local dask cluster of ``jobs`` worker processes.

    Started once and kept until the process exits (like loky's reusable executor), so the
    workers keep their loaded parser from one block to the next.
    """
    global _LOCAL
    if _LOCAL is not None and _LOCAL[0] == jobs:
        return _LOCAL[1]
    from dask.distributed import Client, LocalCluster

    _close_local()
    _quiet_dask()
    cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    client = Client(cluster, set_as_default=False)
    _LOCAL = (jobs, client, cluster)
    atexit.register(_close_local)
    return client


def _close_local() -> None:
    global _LOCAL
    if _LOCAL is not None:
        _, client, cluster = _LOCAL
        _LOCAL = None
        with contextlib.suppress(Exception):
            client.close()
            cluster.close()


def _quiet_dask() -> None:
    """dask configures its ``distributed`` logger at INFO when imported: keep its warnings only
    (unless synprep logs at DEBUG)."""
    if not logging.getLogger("synprep").isEnabledFor(logging.DEBUG):
        logging.getLogger("distributed").setLevel(logging.WARNING)


def cluster_synprep_version() -> str:
    """The synprep version where this runs (on a dask scheduler or worker: importing it is the check)."""
    return __version__


def _check_cluster(client: Any, address: str, timeout: float) -> None:
    """Refuse a dask cluster whose scheduler or workers cannot run this synprep.

    Without this, a task graph the scheduler cannot unpickle (synprep missing there) is logged on
    the scheduler, and joblib waits for its results forever.

    Raises:
        ConfigError: synprep cannot be imported on the scheduler or a worker, or its version
            differs, or the cluster has no worker, or the scheduler (or a worker) does not answer
            within ``timeout`` seconds.
    """
    where = f"the dask cluster at {address}"
    try:
        found = {"scheduler": _within(timeout, where, client.run_on_scheduler, cluster_synprep_version),
                 **_within(timeout, where, client.run, cluster_synprep_version)}
    except ConfigError:
        raise
    except Exception as e:  # e.g. ModuleNotFoundError("No module named 'synprep'") from a worker
        raise ConfigError(f"the dask cluster at {address} cannot run synprep ({e}): install synprep "
                          f"{__version__} on its scheduler and workers") from None
    if len(found) == 1:  # only the scheduler answered
        raise ConfigError(f"the dask cluster at {address} has no workers: start some with "
                          f"`dask worker {address} --nthreads 1`")
    other = {k: v for k, v in found.items() if v != __version__}
    if other:
        raise ConfigError(f"the dask cluster at {address} runs another synprep version "
                          f"({', '.join(f'{k}: {v}' for k, v in sorted(other.items()))}); this is {__version__}")


@contextlib.contextmanager
def _backend(backend: str, jobs: int, scheduler: str | None):
    from joblib import parallel_config

    if backend == "dask":
        try:
            from dask.distributed import Client
        except ImportError as e:  # pragma: no cover
            raise ConfigError("--backend dask needs dask[distributed]: pip install 'synprep[dask]'") from e
        _quiet_dask()
        if scheduler:
            security = _security(scheduler)
            _handshake(scheduler, security, CONNECT_TIMEOUT)
            where = f"the dask scheduler at {scheduler}"
            try:  # dask's timeout, and ours a little later in case dask's does not fire
                client = _within(CONNECT_TIMEOUT + 5, where, Client, scheduler, security=security,
                                 timeout=CONNECT_TIMEOUT, set_as_default=False)
            except TimeoutError:  # dask's own (an OSError): the registration was not answered
                raise ConfigError(f"{where} did not answer within {CONNECT_TIMEOUT:g} s (is it a dask scheduler, "
                                  "and are its workers alive?)") from None
            except OSError as e:  # refused
                raise ConfigError(f"cannot connect to {where}: {e}") from None
            try:
                _check_cluster(client, scheduler, CONNECT_TIMEOUT)
                with parallel_config(backend="dask", n_jobs=-1, client=client):
                    yield
            finally:
                client.close()
        else:
            with parallel_config(backend="dask", n_jobs=jobs, client=_local_client(jobs)):
                yield
    elif backend in ("loky", "threading"):
        with parallel_config(backend=backend, n_jobs=jobs, inner_max_num_threads=1 if backend == "loky" else None):
            yield
    else:
        raise ConfigError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")


def parallel_map(
    func: Callable[..., R],
    items: Iterable[Any],
    *,
    jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
) -> Iterator[R]:
    """Apply ``func`` to every item, in parallel, yielding results in input order.

    Args:
        func: a picklable top-level function of one argument.
        items: any iterable, consumed lazily (at most ``2 * jobs`` items ahead).
        jobs: worker processes; 1 runs in this process with no pool (fast for small inputs).
        backend: ``loky`` (default), ``dask`` (needs ``scheduler`` for a cluster; without one a
            local cluster of ``jobs`` workers is started) or ``threading``.
        scheduler: address of a dask scheduler, e.g. ``tcp://127.0.0.1:8786`` or ``tls://…`` (with
            :func:`set_tls`); the cluster must be trusted (module docstring).

    Raises:
        ConfigError: unknown backend or jobs < 1; a scheduler that refuses, fails TLS, or does not
            answer within :data:`CONNECT_TIMEOUT` seconds.
    """
    if jobs < 1:
        raise ConfigError(f"--jobs must be >= 1, got {jobs}")
    if jobs == 1 and backend == "loky" and scheduler is None:
        yield from map(func, items)
        return
    from joblib import Parallel, delayed

    with _backend(backend, jobs, scheduler):
        # loky's workers end with this process (exit_with_parent); other backends manage their own
        extra = {"initializer": exit_with_parent, "initargs": (os.getpid(),)} if backend == "loky" else {}
        par = Parallel(return_as="generator", pre_dispatch="2*n_jobs", **extra)
        yield from par(delayed(func)(x) for x in items)


def chunk_map(func: Callable[[list[T]], list[R]], items: Iterable[T], size: int, *, jobs: int = 1,
              backend: str = "loky", scheduler: str | None = None) -> Iterator[R]:
    """``func`` over the chunks of ``size`` items (:func:`chunked`), its results one by one, in input order:
    :func:`parallel_map` of the chunks, except that an input of one chunk is done in this process (on the
    ``loky`` and ``threading`` backends: ``dask`` always sends its chunks to the cluster the user named, so a
    cluster that cannot run synprep, or a missing dask, is refused whatever the input's size).

    For a text stage whose caller has loaded what ``func`` needs here already (a tokenizer, BPE codes, a
    subword model: each checks it before any work): a worker would import and load it all again, and wait for
    the parse workers' warm-up it shares the pool with, for no parallelism. The results are the same.

    Args:
        func: a picklable top-level function of one chunk (a list), returning a list.
        items: any iterable, consumed lazily (two chunks are read before the first is done).
        size: items per chunk (>= 1).
        jobs: worker processes for two chunks or more.
        backend: as :func:`parallel_map`.
        scheduler: as :func:`parallel_map`.

    Raises:
        ConfigError: size < 1, and as :func:`parallel_map`.
    """
    chunks = chunked(items, size)
    head = list(itertools.islice(chunks, 2))
    if len(head) < 2 and backend != "dask":  # a dask run meets the cluster it names, whatever the input's size
        for chunk in head:
            yield from func(chunk)
        return
    for out in parallel_map(func, itertools.chain(head, chunks), jobs=jobs, backend=backend, scheduler=scheduler):
        yield from out


# --- a second stage: ordered map in a process pool, with a bounded queue -------------------------


@dataclasses.dataclass
class StageStats:
    """What :func:`stage_map` saw in this process (tests read it; the suite reports it).

    Attributes:
        submitted: items handed to the pool.
        max_in_flight: the most items submitted and not yet yielded at any moment (never more than the
            ``bound`` of the call).
    """

    submitted: int = 0
    max_in_flight: int = 0


#: this process's :func:`stage_map` counts
STAGE_STATS = StageStats()

_STAGE_POOL: tuple[int, Any] | None = None


def worker_init(parent: int) -> None:
    """A pool worker's initializer (loky's ``ProcessPoolExecutor``): one BLAS/torch thread, and exit when
    the process ``parent`` that started the pool dies (:func:`exit_with_parent`)."""
    limit_threads(1)
    exit_with_parent(parent)


def _stage_pool(jobs: int) -> Any:
    """This process's pool of ``jobs`` worker processes for :func:`stage_map` (kept and reused, as loky's).

    loky's ``ProcessPoolExecutor`` (a ``concurrent.futures`` executor whose workers start as fresh
    interpreters: the main process may hold a CUDA context or torch's threads, which a forked child must
    not inherit; and, unlike ``spawn``, a script without a ``__main__`` guard is not run again). Its own
    instance: joblib's reusable loky executor would shut down for another configuration.
    """
    global _STAGE_POOL
    if _STAGE_POOL is not None and _STAGE_POOL[0] == jobs:
        return _STAGE_POOL[1]

    if _STAGE_POOL is not None:
        _STAGE_POOL[1].shutdown(wait=True)
    pool = process_pool_executor()(max_workers=jobs, initializer=worker_init, initargs=(os.getpid(),))
    _STAGE_POOL = (jobs, pool)
    return pool


def stage_map(func: Callable[[Any], R], items: Iterable[Any], *, jobs: int, bound: int | None = None) -> Iterator[R]:
    """Apply ``func`` to every item in ``jobs`` worker processes, yielding results in input order.

    The second stage of a pipeline: ``items`` is typically a generator whose every step does work in
    this process or another (a model's forward), which then runs while the pool works on the earlier
    items. At most ``bound`` items (default ``2 * jobs``) are submitted and not yet yielded: the next
    item is drawn from ``items`` only when fewer are in flight, so memory stays flat however long the
    input is (:data:`STAGE_STATS` records the most seen).

    Args:
        func: a picklable top-level function of one argument.
        jobs: worker processes (>= 1).
        bound: items in flight at most (>= 1).

    Raises:
        ConfigError: jobs or bound < 1.
        Exception: whatever ``func`` raised, for the item whose result is due.
        BrokenProcessPool: a worker died (the pool is then replaced on the next call).
    """
    from collections import deque
    from concurrent.futures.process import BrokenProcessPool

    if jobs < 1:
        raise ConfigError(f"--jobs must be >= 1, got {jobs}")
    bound = 2 * jobs if bound is None else bound
    if bound < 1:
        raise ConfigError(f"the bound must be >= 1, got {bound}")
    pool = _stage_pool(jobs)
    pending: deque = deque()
    try:
        for x in items:
            while len(pending) >= bound:
                yield pending.popleft().result()
            pending.append(pool.submit(func, x))
            STAGE_STATS.submitted += 1
            STAGE_STATS.max_in_flight = max(STAGE_STATS.max_in_flight, len(pending))
        while pending:
            yield pending.popleft().result()
    except BrokenProcessPool:  # a worker died (killed, out of memory): the next call starts a new pool
        _drop_stage_pool(pool)
        raise
    finally:
        for f in pending:  # an error or a consumer that stopped: drop what is left
            f.cancel()


def _drop_stage_pool(pool: Any) -> None:
    global _STAGE_POOL
    if _STAGE_POOL is not None and _STAGE_POOL[1] is pool:
        _STAGE_POOL = None
        with contextlib.suppress(Exception):
            pool.shutdown(wait=False)
