"""The dask backend on a real ``distributed.LocalCluster``.

``synprep pipeline --backend dask --scheduler ADDRESS -j 2`` against a two-process cluster on
loopback writes the same bytes as loky ``-j 2`` and as ``-j 1``: the parse batches are fixed per
block before any work is sent out, whoever runs them. 60 lines of sample_data, shards of 20 pairs,
batches of 8 sentences, so every block has several work items for the workers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import SAMPLE_DATA
from pipeline_runs import assert_lines_accounted, assert_same_folder, pipeline_args, run, run_ok

pytestmark = pytest.mark.slow

FLAGS = ("--lowercase", "--shard-size", "20", "--merges", "500", "--batch-size", "8")


@pytest.fixture(scope="module")
def sixty_lines(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("input")
    for lang in ("de", "en"):
        lines = (SAMPLE_DATA / f"train.{lang}").read_text(encoding="utf-8").splitlines(keepends=True)[:60]
        (d / f"s.{lang}").write_text("".join(lines), encoding="utf-8")
    return d / "s.de", d / "s.en"


def _parser_calls() -> int:
    """Runs on a dask worker: the sentences that worker's parser was given."""
    from synprep.parse import run as parse_run

    return parse_run.PARSER_CALLS


def test_dask_cluster_gives_the_same_shards_as_loky_and_one_job(sixty_lines, tmp_path, stanza_dir):
    from distributed import Client, LocalCluster

    src, tgt = sixty_lines

    def args(name: str, *extra: str) -> list[str]:
        return pipeline_args(tmp_path / name, None, stanza_dir, *extra, src=src, tgt=tgt, flags=FLAGS)

    # the scheduler runs in this process, the workers are spawned from it: both import this checkout
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        proc = run_ok(args("dask", "-j", "2", "--backend", "dask", "--scheduler", cluster.scheduler_address))
        with Client(cluster) as client:
            calls = client.run(_parser_calls)
        assert len(calls) == 2 and sum(calls.values()) >= 59, f"sentences parsed per worker: {calls}"
    assert "; check OK\n" in proc.stderr  # the split summary says synprep check passed
    run_ok(args("loky", "-j", "2"))
    run_ok(args("one", "-j", "1"))
    assert len(json.loads((tmp_path / "one/manifest.json").read_text())["splits"]["train"]["shards"]) == 3
    assert_same_folder(tmp_path / "dask", tmp_path / "one")
    assert_same_folder(tmp_path / "loky", tmp_path / "one")
    assert_lines_accounted(tmp_path / "dask")


def test_a_cluster_without_synprep_is_a_clear_error_not_a_hang(sixty_lines, tmp_path):
    """A scheduler that cannot import synprep is a clear error, not joblib waiting forever."""
    src, _ = sixty_lines
    info = tmp_path / "scheduler.json"
    # a scheduler where `import synprep` fails, however synprep is installed here (an editable
    # install in .venv, or PYTHONPATH): a package of that name on its path that refuses to import
    fake = tmp_path / "fake-site" / "synprep"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("synprep is not installed on this machine")\n')
    env = {**os.environ, "PYTHONPATH": str(fake.parent)}
    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                              "--port", "0", "--no-dashboard", "--scheduler-file", str(info)],
                             cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not info.exists() or not info.read_text().strip():
            assert sched.poll() is None and time.monotonic() < deadline, "the dask scheduler did not start"
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        proc = run(["tokenize", "-l", "de", "-i", str(src), "-o", str(tmp_path / "tok.de"), "-j", "2",
                    "--backend", "dask", "--scheduler", address], timeout=120)
    finally:
        sched.terminate()
        sched.wait(timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert f"synprep: error: the dask cluster at {address} cannot run synprep" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "tok.de").exists()


def test_a_cluster_without_workers_is_a_clear_error(sixty_lines, tmp_path):
    """A scheduler with no worker: joblib would wait and then fail with a TimeoutError."""
    from distributed import LocalCluster

    src, _ = sixty_lines
    with LocalCluster(n_workers=0, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        proc = run(["tokenize", "-l", "de", "-i", str(src), "-o", str(tmp_path / "tok.de"), "-j", "2",
                    "--backend", "dask", "--scheduler", cluster.scheduler_address], timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "has no workers" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "tok.de").exists()
