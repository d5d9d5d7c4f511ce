"""GPU placement for parse workers: one worker per visible GPU, through lock files.

No GPU is visible here, so torch's device count is set by the test; the locks are real
``flock`` locks taken by real forked processes, as loky's workers take them.
"""

from __future__ import annotations

import multiprocessing as mp

import pytest
import torch

from synprep.parse import run


def _claim_and_hold(slot_dir, results, ready, release):
    results.put(run._claim_gpu(slot_dir))
    ready.wait()  # hold the lock (module global) until every worker has claimed
    release.wait()


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


def _claims(n: int, slot_dir: str) -> list[str]:
    ctx = mp.get_context("fork")
    results, release = ctx.Queue(), ctx.Event()
    ready = ctx.Barrier(n)
    procs = []
    for _ in range(n):  # one after another, as a pool starts its workers
        p = ctx.Process(target=_claim_and_hold, args=(slot_dir, results, ready, release))
        p.start()
        procs.append(p)
    got = [results.get(timeout=30) for _ in range(n)]
    release.set()
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    return got


def test_each_worker_takes_its_own_gpu(two_gpus, tmp_path):
    got = _claims(2, str(tmp_path))
    assert sorted(got) == ["cuda:0", "cuda:1"]


def test_more_workers_than_gpus_share_them(two_gpus, tmp_path):
    got = _claims(3, str(tmp_path))
    assert {"cuda:0", "cuda:1"} <= set(got) and set(got) <= {"cuda:0", "cuda:1"}


def test_a_lock_is_freed_when_its_worker_exits(two_gpus, tmp_path):
    assert _claims(1, str(tmp_path)) == ["cuda:0"]
    assert _claims(1, str(tmp_path)) == ["cuda:0"]  # the first worker is gone: slot 0 is free again


def test_one_worker_uses_the_first_gpu_and_none_is_an_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert run._claim_gpu(None) == "cuda:0"
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(RuntimeError, match="no GPU is visible"):
        run._claim_gpu(None)


def test_the_slot_folder_outlives_a_block():
    assert run.gpu_slot_dir() == run.gpu_slot_dir()


def _jobs_cmd():
    import click

    from synprep.cli.common import jobs_options, parser_jobs

    @click.command()
    @click.option("--device", default="cuda")
    @jobs_options
    def cmd(device, jobs, backend, scheduler):
        click.echo(parser_jobs(device, jobs, backend, scheduler))

    return cmd


@pytest.mark.parametrize(("args", "cores", "expected"), [([], 64, "16"), ([], 12, "12"), ([], 1, "2"),
                                                         (["-j", "1"], 64, "1"), (["-j", "3"], 64, "3"),
                                                         (["-j", "40"], 64, "16"),  # 8 per GPU at most
                                                         (["-j", "40", "--backend", "dask", "--scheduler",
                                                           "tcp://127.0.0.1:1"], 64, "40"),
                                                         (["--device", "cpu"], 64, "1"),
                                                         (["--device", "cpu", "-j", "40"], 64, "40")])
def test_parser_jobs_eight_workers_per_gpu_unless_jobs_is_given(two_gpus, monkeypatch, args, cores, expected):
    """Without -j, 8 per visible GPU (two here), at most one per core this process may use, at least one per
    GPU; a larger -j is capped at 8 per GPU on this machine, not on a dask cluster, not on the CPU."""
    from click.testing import CliRunner

    from synprep.cli import common

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(common, "usable_cpus", lambda: cores)
    monkeypatch.delenv("SYNPREP_GPU_WORKERS_PER_DEVICE", raising=False)
    res = CliRunner().invoke(_jobs_cmd(), args)
    assert res.exit_code == 0, res.output
    assert res.output.strip() == expected


def test_usable_cpus_are_the_affinity_mask_not_the_machine():
    """A process pinned to one CPU (``taskset``, a batch scheduler's binding) may use one, whatever
    ``os.cpu_count()`` says: the GPU parse's default worker count and the trainer's loader workers read it."""
    import os
    import subprocess
    import sys

    if len(os.sched_getaffinity(0)) < 2:
        pytest.fail("this test needs a process that may run on two CPUs or more")
    code = ("import os; from synprep.parallel import usable_cpus; n = usable_cpus(); os.sched_setaffinity(0, {min("
            "os.sched_getaffinity(0))}); print(n, usable_cpus(), os.cpu_count())")
    before, pinned, machine = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                      check=True).stdout.split())
    assert before >= 2 and pinned == 1 and machine >= 2


def test_parser_jobs_without_a_gpu_is_a_config_error():
    from click.testing import CliRunner

    from synprep.errors import ConfigError

    res = CliRunner().invoke(_jobs_cmd(), [])
    assert isinstance(res.exception, ConfigError) and "sees no GPU" in str(res.exception)


def test_unpipelined_gpu_workers_are_capped_per_visible_gpu(monkeypatch, two_gpus, caplog):
    """-j beyond 8 workers per GPU slowed an H100 down (16 workers: 664 sentences/s, 8: 1759): the cap is
    per visible GPU, only for a CUDA parse on this machine (loky), and the variable overrides it."""
    from synprep.errors import ConfigError
    from synprep.parse.pipelining import gpu_parse_jobs

    cuda, cpu = "cuda", "cpu"
    monkeypatch.delenv("SYNPREP_GPU_WORKERS_PER_DEVICE", raising=False)
    with caplog.at_level("INFO", logger="synprep.parse.pipelining"):
        assert gpu_parse_jobs(32, cuda, "loky", None) == 16  # 8 per GPU, two GPUs
    assert "16 GPU workers (8 per visible GPU; -j 32)" in caplog.text
    assert gpu_parse_jobs(12, cuda, "loky", None) == 12
    assert gpu_parse_jobs(32, cpu, "loky", None) == 32  # the CPU: every worker
    assert gpu_parse_jobs(32, cuda, "dask", "tcp://x:1") == 32  # a cluster's workers are on other machines
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert gpu_parse_jobs(16, cuda, "loky", None) == 8
    monkeypatch.setenv("SYNPREP_GPU_WORKERS_PER_DEVICE", "3")
    assert gpu_parse_jobs(16, cuda, "loky", None) == 3
    for bad in ("0", "x", "-2"):
        monkeypatch.setenv("SYNPREP_GPU_WORKERS_PER_DEVICE", bad)
        with pytest.raises(ConfigError, match="SYNPREP_GPU_WORKERS_PER_DEVICE must be a whole number"):
            gpu_parse_jobs(16, cuda, "loky", None)


def test_the_warm_up_starts_one_gpus_workers_before_counting_the_gpus(monkeypatch):
    """``annotate --device cuda``'s warm-up starts one GPU's share of workers at once (known without torch) and
    counts the GPUs beside them; with one worker per GPU it counts first (the first share would be one worker:
    the parse in this process); a CPU parse starts its ``-j``."""
    from synprep.parse.base import ParserSpec
    from synprep.parse.warming import first_workers

    gpu, cpu = ParserSpec(lang="de", device="cuda"), ParserSpec(lang="de")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.delenv("SYNPREP_GPU_WORKERS_PER_DEVICE", raising=False)
    assert first_workers(gpu, 16, "loky", None) == (8, True)
    assert first_workers(gpu, 4, "loky", None) == (4, True)
    assert first_workers(gpu, 1, "loky", None) == (1, False)
    assert first_workers(cpu, 16, "loky", None) == (16, False)
    monkeypatch.setenv("SYNPREP_GPU_WORKERS_PER_DEVICE", "1")
    assert first_workers(gpu, 16, "loky", None) == (2, False)  # counted first: one per GPU, 2 GPUs
