"""The `tiny` preset overfits 200 real Multi30k pairs on the CPU, end to end through the CLI:
shards → synprep train → synprep translate (greedy and beam) → synprep evaluate."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from builders import toy_shards
from helpers import run_cli


@pytest.fixture(scope="module")
def run(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("overfit")
    # a few lines hold two source sentences (gap 999 between them, heads offset)
    toy_shards(shared_data, root / "shards", {"train": 200, "valid": 20}, shard_size=120, split_len=7,
               two_sentences_every=10)
    out = root / "run"
    proc = run_cli("train", "--shards", str(root / "shards"), "--preset", "tiny", "--out", str(out), "--no-progress")
    return root, out, proc


def test_tiny_preset_overfits(run):
    _, out, proc = run
    recs = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in recs if "valid_loss" not in r]
    epochs = [r for r in recs if "valid_loss" in r]
    assert len(epochs) == 40 and all(r["epoch_done"] for r in epochs)
    start, end = steps[0]["train_loss"], epochs[-1]["train_loss"]
    assert end < 0.3 * start, (start, end)
    assert epochs[-1]["valid_loss"] < epochs[0]["valid_loss"]
    assert np.array(epochs[-1]["gates"]).shape == (2, 4)
    assert epochs[0]["gates_frozen"] and not epochs[-1]["gates_frozen"]
    for name in ("config.json", "gates.png", "checkpoint_last.pt", "checkpoint_best.pt"):
        assert (out / name).is_file(), name
    assert (out / "gates.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "config.json").read_text())["d_model"] == 64
    assert proc.stderr.strip().splitlines()[-1].startswith("synprep:0.1.0|task:train|")


@pytest.mark.parametrize("beam", ["1", "4"])
def test_decoding_returns_training_targets(run, beam):
    root, out, _ = run
    hyp, ref, lines = root / f"hyp{beam}", root / f"ref{beam}", root / f"lines{beam}"
    proc = run_cli("translate", "--checkpoint", str(out / "checkpoint_last.pt"), "--shards", str(root / "shards"),
                   "--split", "train", "--beam", beam, "-o", str(hyp), "--ref-out", str(ref), "--lines-out", str(lines))
    h, r = hyp.read_text().splitlines(), ref.read_text().splitlines()
    assert len(h) == len(r) == 200
    # the throughput line before the signature: the sentences and the pieces written
    rate = next(x for x in proc.stderr.splitlines() if x.startswith("synprep: translate: "))
    m = re.fullmatch(r"synprep: translate: 200 sentences, (\d+) pieces out in ([\d.]+) s: ([\d.]+) sentences/s, "
                     rf"(\d+) pieces/s on cpu \(beam {beam}, -j 1\)", rate)
    assert m and int(m[1]) == sum(len(x.split()) for x in h) and float(m[3]) > 0, rate
    assert proc.stderr.strip().splitlines()[-1].startswith("synprep:0.1.0|task:translate|")
    assert lines.read_text().split() == [str(i) for i in range(1, 201)]
    exact = sum(a == b for a, b in zip(h, r, strict=True))
    assert exact >= 180, f"{exact}/200 training targets reproduced"
    res = json.loads(run_cli("evaluate", "--hyp", str(hyp), "--ref", str(ref), "--lang", "en", "--json").stdout)
    assert res["tok_bleu"] > 90 and res["bleu"] > 90 and res["sentences"] == 200
    assert "tok:13a" in res["bleu_signature"] and "tok:none" in res["tok_bleu_signature"]


def test_plain_text_input_needs_a_vanilla_model(run):
    _, out, _ = run
    proc = run_cli("translate", "--checkpoint", str(out / "checkpoint_last.pt"), input="ein hund .\n", check=False)
    assert proc.returncode == 2
    assert "synprep: error:" in proc.stderr and "--shards" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the machine without CUDA")
def test_translate_resolves_the_device_like_train(run):
    """--device auto is the CPU here; --device cuda without CUDA is a clear error, as for train."""
    root, out, _ = run
    args = ["translate", "--checkpoint", str(out / "checkpoint_last.pt"), "--shards", str(root / "shards"),
            "--split", "valid", "--max-len-b", "2"]
    assert run_cli(*args, "--device", "auto").returncode == 0
    proc = run_cli(*args, "--device", "cuda", check=False)
    assert proc.returncode == 2 and "CUDA is not available" in proc.stderr and "Traceback" not in proc.stderr


def test_train_refuses_to_overwrite_a_run(run):
    root, out, _ = run
    proc = run_cli("train", "--shards", str(root / "shards"), "--preset", "tiny", "--out", str(out), check=False)
    assert proc.returncode == 2 and "--resume" in proc.stderr


def test_dataloader_workers_change_nothing(run, tmp_path):
    """Worker processes (each with its own HDF5 handles) feed the very same batches."""
    root, _, _ = run
    common = ["--shards", str(root / "shards"), "--preset", "tiny", "--max-steps", "3", "--set", "log_interval=1",
              "--no-progress"]
    run_cli("train", "--out", str(tmp_path / "w0"), *common)
    run_cli("train", "--out", str(tmp_path / "w2"), *common, "--num-workers", "2")

    def losses(d):
        return [json.loads(x).get("train_loss") for x in (d / "metrics.jsonl").read_text().splitlines()]

    assert losses(tmp_path / "w0") == losses(tmp_path / "w2")


def test_vanilla_model_translates_plain_bpe_text(run, tmp_path):
    root, _, _ = run
    run_cli("train", "--shards", str(root / "shards"), "--preset", "tiny", "--out", str(tmp_path / "v"),
            "--max-steps", "1", "--set", "syntax=vanilla", "--valid-split", "train", "--no-progress")
    src = "ein mann fährt fahr@@ rad .\nzwei hunde\nunbekanntes@@ wort\n"
    proc = run_cli("translate", "--checkpoint", str(tmp_path / "v" / "checkpoint_last.pt"), "--beam", "2",
                   "--max-len-b", "5", "--remove-bpe", input=src)
    lines = proc.stdout.split("\n")
    assert len(lines) == 4 and lines[-1] == "" and all("@@" not in x for x in lines)
    assert "|task:translate|model:vanilla|beam:2|" in proc.stderr


def test_cli_resume_extends_a_finished_run(run, tmp_path):
    import shutil

    root, out, _ = run
    shutil.copytree(out, tmp_path / "run")
    bad = run_cli("train", "--shards", str(root / "shards"), "--out", str(tmp_path / "run"), "--resume",
                  "--preset", "tiny", check=False)
    assert bad.returncode == 2 and "drop --config/--preset" in bad.stderr
    run_cli("train", "--shards", str(root / "shards"), "--out", str(tmp_path / "run"), "--resume", "--epochs", "41",
            "--no-progress")
    recs = [json.loads(x) for x in (tmp_path / "run/metrics.jsonl").read_text().splitlines()]
    epochs = [r["epoch"] for r in recs if "valid_loss" in r]
    assert epochs == list(range(1, 42))
    steps = [r["step"] for r in recs if "valid_loss" not in r]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
