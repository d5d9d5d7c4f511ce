"""joblib's vendored loky behind one seam (synprep/loky_seam.py): every internal synprep uses exists where the
seam reaches for it, with the shape synprep uses, and no other module of synprep reaches into loky."""

from __future__ import annotations

import ast
import importlib
import inspect

from helpers import ROOT

from synprep import loky_seam
from synprep.parallel import parallel_map


def missing_internals() -> list[str]:
    """The entries of :data:`synprep.loky_seam.INTERNALS` that the installed joblib does not have."""
    missing = []
    for module, attr in loky_seam.INTERNALS:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            missing.append(module)
            continue
        if attr is not None and not hasattr(mod, attr):
            missing.append(f"{module}.{attr}")
    return missing


def test_every_loky_internal_synprep_uses_is_where_the_seam_reaches_for_it():
    assert missing_internals() == []
    from joblib.externals.loky import process_executor

    # the executor synprep starts its pools with, and the shutdown that kills a warm-up's workers
    assert loky_seam.process_pool_executor() is process_executor.ProcessPoolExecutor
    assert {"max_workers", "initializer", "initargs"} <= set(inspect.signature(process_executor.ProcessPoolExecutor).parameters)
    assert "kill_workers" in inspect.signature(process_executor.ProcessPoolExecutor.shutdown).parameters
    # the private global the seam lifts is a byte count the worker loop reads at each check (else lifting it
    # would keep nothing: a grown parse worker would be restarted and load its model again)
    assert isinstance(process_executor._MAX_MEMORY_LEAK_SIZE, int)
    assert "_MAX_MEMORY_LEAK_SIZE" in inspect.getsource(process_executor._process_worker)


def test_a_moved_internal_is_named(monkeypatch):
    from joblib.externals.loky import process_executor, reusable_executor

    monkeypatch.delattr(process_executor, "_MAX_MEMORY_LEAK_SIZE")
    monkeypatch.delattr(reusable_executor, "_executor")
    assert missing_internals() == ["joblib.externals.loky.process_executor._MAX_MEMORY_LEAK_SIZE",
                                   "joblib.externals.loky.reusable_executor._executor"]


def test_lifting_the_memory_limit_raises_loky_s_global(monkeypatch):
    from joblib.externals.loky import process_executor

    monkeypatch.setattr(process_executor, "_MAX_MEMORY_LEAK_SIZE", 300_000_000)
    loky_seam.lift_worker_memory_limit()
    assert process_executor._MAX_MEMORY_LEAK_SIZE == loky_seam.NO_MEMORY_LIMIT


def _lifted_in_a_worker(_: int) -> int:
    loky_seam.lift_worker_memory_limit()  # before this function imports anything of loky's
    from joblib.externals.loky import process_executor

    return process_executor._MAX_MEMORY_LEAK_SIZE


def test_a_loky_worker_gets_its_limit_lifted_and_a_process_that_is_none_imports_no_joblib():
    """The seam finds loky's worker loop among a worker's modules (no import of its own), so a parse run in the
    command's own process (``-j 1``) does not import joblib and loky to lift a limit that no loop reads."""
    import json
    import os
    import subprocess
    import sys

    assert set(parallel_map(_lifted_in_a_worker, [1, 2], jobs=2, backend="loky")) == {loky_seam.NO_MEMORY_LIMIT}
    probe = ("import sys, json\nfrom synprep.loky_seam import lift_worker_memory_limit\n"
             "lift_worker_memory_limit()\nprint(json.dumps(sorted(m for m in sys.modules if 'joblib' in m)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert json.loads(out.stdout) == []


def test_the_reusable_executor_is_joblib_s_after_a_loky_map():
    assert list(parallel_map(abs, [-1, -2, 3], jobs=2, backend="loky")) == [1, 2, 3]
    from joblib.externals.loky import reusable_executor

    executor = loky_seam.reusable_executor()
    assert executor is reusable_executor._executor is not None
    executor.shutdown(wait=True, kill_workers=True)  # no pool left for the next test


def test_only_the_seam_imports_loky():
    reached = []
    for path in sorted((ROOT / "synprep").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.startswith("joblib.externals") for n in names):
                reached.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert reached and all(r.startswith("synprep/loky_seam.py:") for r in reached), reached
