"""One-line errors instead of tracebacks, each through the real CLI.

* a checkpoint save that hits a full disk (``torch.save`` raises ``RuntimeError``) and an export
  that does: the disk is made full with a file-size limit (``RLIMIT_FSIZE`` in the child, so writes
  fail with EFBIG as they fail with ENOSPC on a full disk; the tmpfs check is in docs/hardening.md);
* bracketed trees nested 990+ levels (``RecursionError`` before);
* ``adam_betas`` outside [0, 1) and ``num_workers: 1000`` (a ConfigError; a run uses at most as many
  workers as the machine has CPUs);
* a process substitution ``<(...)`` as input: read by ``parse`` and ``clean`` (they read once),
  refused by ``pipeline``/``annotate`` (they read their inputs more than once);
* a checkpoint with NaN weights is refused by ``translate`` (it translated to empty lines).
"""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import sys

import pytest
import torch
from builders import one_line, toy_shards
from helpers import ROOT, run_cli

from synprep.train.checkpoint import LAST, load_checkpoint, save_checkpoint
from synprep.train.config import MAX_WORKERS
from synprep.train.rundir import bounded_workers

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _limited(args, max_bytes):
    """``synprep ARGS`` with every file it writes limited to ``max_bytes`` (a disk that fills up)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return subprocess.run([sys.executable, "-m", "synprep", *args], capture_output=True, text=True, env=ENV,
                          preexec_fn=limit)


@pytest.fixture(scope="module")
def shards(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("errors") / "shards"
    toy_shards(shared_data, root, {"train": 32, "valid": 8})
    return root


TRAIN = ("--preset", "tiny", "--set", "threads=1", "--set", "max_tokens=256", "--no-progress", "--device", "cpu")


def test_a_full_disk_during_a_checkpoint_save_is_one_line(shards, tmp_path):
    out = tmp_path / "run"
    proc = _limited(["train", "--shards", str(shards), "--out", str(out), *TRAIN, "--max-steps", "3"], 1 << 20)
    msg = one_line(proc, 1)  # 1: the machine, not the input (synprep.errors.EnvironmentProblem's status)
    assert msg.startswith(f"synprep: error: {out}/checkpoint_") and "File too large" in msg, msg
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))  # nothing half-written stays
    assert not list(out.glob("checkpoint*.pt"))


def test_a_full_disk_during_an_export_names_the_files(shards, tmp_path):
    dest = tmp_path / "export"
    proc = _limited(["export", str(shards), "--format", "factors", "--to", str(dest)], 2000)
    msg = one_line(proc, 1)
    assert f"{dest}/train.de" in msg and "File too large" in msg, msg
    assert not (dest / "train.de").exists()


@pytest.mark.parametrize("depth", [990, 5000, 100_000])
def test_deeply_nested_trees_are_one_line_errors(tmp_path, depth):
    trees = tmp_path / "deep.txt"
    trees.write_text("(ROOT (S (NN a)))\n(ROOT " + "(X " * depth + "(NN w)" + ")" * depth + ")\n", encoding="utf-8")
    msg = one_line(run_cli("distance", "--trees", str(trees), "-o", str(tmp_path / "d.txt"), check=False), 2)
    assert msg.startswith(f"synprep: error: {trees}:2: bad bracketed tree: the tree nests more than 500 brackets")


@pytest.mark.parametrize("betas", ["[0.9,1.0]", "[-0.1,0.98]", "[0.9,1.5]"])
def test_adam_betas_outside_0_1_are_refused(betas):
    msg = one_line(run_cli("train", "--preset", "tiny", "--set", f"adam_betas={betas}", "--print-config",
                            check=False), 2)
    assert "adam_betas must be two numbers in [0, 1)" in msg, msg


def test_num_workers_is_bounded():
    msg = one_line(run_cli("train", "--preset", "tiny", "--num-workers", "1000", "--print-config", check=False), 2)
    assert "num_workers" in msg and str(MAX_WORKERS) in msg, msg
    cpus = len(os.sched_getaffinity(0))
    assert bounded_workers(MAX_WORKERS) == min(MAX_WORKERS, cpus)
    assert bounded_workers(1) == 1


def _bash(command):
    """Run a bash command line (process substitution is bash's)."""
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=ENV)


def test_process_substitution_is_read_or_refused(tmp_path, shared_data, stanza_dir):
    text = shared_data / "iwslt14_de-en/fairseq_prepared/tmp/test.de"
    head = tmp_path / "head.de"
    head.write_text("".join(text.read_text(encoding="utf-8").splitlines(keepends=True)[:3]), encoding="utf-8")
    py = shlex.quote(sys.executable)
    parse = f"{py} -m synprep parse -l de --stanza-dir {stanza_dir} --stanza-package synprep --no-cache"
    # parse reads its input once: <(...) gives what the file gives (it gave nothing)
    assert _bash(f"{parse} -i <(cat {head}) -o {tmp_path}/a.conllu").returncode == 0
    assert _bash(f"{parse} -i {head} -o {tmp_path}/b.conllu").returncode == 0
    a, b = (tmp_path / "a.conllu").read_text(), (tmp_path / "b.conllu").read_text()
    assert a == b and a.count("\n\n") == 4  # 3 lines, 4 sentences
    # clean reads both sides once ("no such file" before)
    proc = _bash(f"{py} -m synprep clean <(cat {head}) <(cat {head}) --out-src {tmp_path}/c.de --out-tgt {tmp_path}/c.en")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "c.de").read_text() == head.read_text()
    # pipeline and annotate read an input several times (count, sha256 for resuming, read): refused
    for cmd in (f"pipeline --src <(cat {head}) --tgt {head}", f"annotate --src {head} --tgt <(cat {head})"):
        out = tmp_path / "out"
        proc = _bash(f"{py} -m synprep {cmd} -s de -t en --out {out} --stanza-dir {stanza_dir} --stanza-package synprep")
        msg = one_line(proc, 2)
        assert msg.startswith("synprep: error: /dev/fd/") and "is a pipe" in msg and "write it to a file first" in msg
        assert not out.exists()


def test_a_checkpoint_with_nan_weights_is_refused(shards, tmp_path):
    out = tmp_path / "run"
    run_cli("train", "--shards", str(shards), "--out", str(out), *TRAIN, "--max-steps", "1")
    ck = load_checkpoint(out / LAST)
    name = next(k for k, v in ck["model"].items() if v.is_floating_point() and v.numel() > 1)
    ck["model"][name][0] = float("nan")
    bad = tmp_path / "nan.pt"
    save_checkpoint(bad, {k: v for k, v in ck.items() if k not in ("format", "version")})
    assert torch.isnan(load_checkpoint(bad)["model"][name]).any()
    hyp = tmp_path / "hyp.txt"
    proc = run_cli("translate", "--checkpoint", str(bad), "--shards", str(shards), "--split", "valid", "--device",
                   "cpu", "-o", str(hyp), check=False)
    msg = one_line(proc, 2)
    assert msg == (f"synprep: error: {bad}: the model's weights are not finite (NaN or inf in {name}): the training "
                   "diverged; use an earlier checkpoint (checkpoint_best.pt, an epoch copy)")
    assert not hyp.exists()
    run_cli("translate", "--checkpoint", str(out / LAST), "--shards", str(shards), "--split", "valid", "--device",
            "cpu", "-o", str(hyp))  # the checkpoint it came from translates
