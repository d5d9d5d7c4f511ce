"""joblib's vendored loky, reached in one place.

synprep starts its own pools with loky's ``ProcessPoolExecutor`` (fresh interpreters, no fork of a process that
may hold a CUDA context), shuts down the one executor joblib's ``loky`` backend keeps, lifts a private global that
a loky worker's loop reads (its memory-growth limit), and imports loky's process-start modules ahead of time.
joblib vendors loky as ``joblib.externals.loky`` and calls none of these names public: :data:`INTERNALS` lists
each, and ``tests/test_loky_seam.py`` imports them and fails when joblib moves or renames one. No other synprep
module imports ``joblib.externals.loky`` (the same test checks that).

joblib is imported by the functions, not here: ``synprep --help`` and ``import synprep.parse`` stay light.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

#: ``(module, attribute)`` of every loky internal synprep uses; attribute None: a module imported for its
#: side effect (loky imports it when it first starts a process; POSIX only)
INTERNALS: tuple[tuple[str, str | None], ...] = (
    ("joblib.externals.loky.process_executor", "ProcessPoolExecutor"),
    ("joblib.externals.loky.process_executor", "_MAX_MEMORY_LEAK_SIZE"),
    ("joblib.externals.loky.reusable_executor", "_executor"),
    ("joblib.externals.loky.backend.fork_exec", None),
    ("joblib.externals.loky.backend.popen_loky_posix", None),
    ("joblib.externals.loky.backend.synchronize", None),
)

#: bytes a loky worker may grow by once :func:`lift_worker_memory_limit` ran in it (loky's own: 300 MB)
NO_MEMORY_LIMIT = 1 << 62


def process_pool_executor() -> Any:
    """loky's ``ProcessPoolExecutor`` class (a ``concurrent.futures`` executor; ``shutdown(wait, kill_workers)``)."""
    from joblib.externals.loky.process_executor import ProcessPoolExecutor

    return ProcessPoolExecutor


def reusable_executor() -> Any | None:
    """The executor joblib's ``loky`` backend keeps between calls (loky's module global), or None: none started,
    or joblib without loky."""
    try:
        from joblib.externals.loky import reusable_executor as module
    except ImportError:  # pragma: no cover - joblib vendors loky
        return None
    return module._executor


def lift_worker_memory_limit() -> None:
    """In a loky worker: never restart it for having grown (loky's worker loop reads this module global at each
    check; it exits a worker grown by 300 MB since its first task). Nothing elsewhere: a loky worker runs its
    loop from ``process_executor``, so a process that has not imported it is no loky worker (and a parse with
    ``-j 1`` does not import joblib for nothing)."""
    process_executor: Any = sys.modules.get("joblib.externals.loky.process_executor")
    if process_executor is None:
        return
    process_executor._MAX_MEMORY_LEAK_SIZE = max(process_executor._MAX_MEMORY_LEAK_SIZE, NO_MEMORY_LIMIT)


def import_loky() -> None:
    """Import joblib, loky and the modules loky imports when it first starts a process, in this thread (two
    threads that import them at once can deadlock in Python's import lock)."""
    import joblib  # noqa: F401
    import joblib.externals.loky  # noqa: F401

    with contextlib.suppress(ImportError):  # POSIX only
        import joblib.externals.loky.backend.fork_exec  # noqa: F401
        import joblib.externals.loky.backend.popen_loky_posix  # noqa: F401
        import joblib.externals.loky.backend.synchronize  # noqa: F401
