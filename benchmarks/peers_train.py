"""bench_peers.py's training and beam-search rows: ``synprep train`` (vanilla, gated) beside ``fairseq-train``
with the same architecture, data, batches and one thread; ``synprep translate`` beside ``fairseq-generate``
(beam 5) with the vanilla models both just trained.

Data: a synthetic folder (``synprep.shards.synthetic``, IWSLT-shaped pairs, vocabulary 10000) and its
``export --format fairseq`` (fairseq's standard ``translation`` task reads the same ids). Model: the
``tiny`` preset's shape (d 64, FFN 128, 4 heads, 2+2 layers, post-norm, shared embeddings; fairseq
``transformer`` with those sizes and ``--share-all-embeddings``), dropout 0.1, label smoothing 0.1, Adam,
inverse-sqrt warm-up, clipping 1.0. Batches: ``max_tokens`` 1024 cut by the same rule (batch size x longest
pair, ``</s>`` included), from pairs sorted as fairseq sorts them (synprep ``batch_order: source``, fairseq
``--required-batch-size-multiple 1``), so an update holds as many target tokens either side. Threads: one
(``threads: 1``; fairseq: ``OMP_NUM_THREADS=1``); each run records the threads its updates ran with.

Measured inside each process (benchmarks/_train_clock.py wraps both trainers' ``train_step``): the CPU time
of the training loop (``time.process_time``, the process's user + system time, which other work on the
machine moves least) from the start of update ``WARM + 1`` to the start of update ``WARM + N + 1`` (reading
and collating batches and logging included; start-up, validation and checkpoints outside), and the target
tokens of those N updates. The sides run in turn (A B C A B C ...), ``repeat`` rounds; each side's figure is
its best round, the row keeps every round's rate (the spread).
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import _provenance as prov
from bench_peers import ENV, HERE, _command, _note, side, synprep
from peers_shards import fairseq_venv

from synprep.shards.synthetic import write_folder

WARM = 50
MEASURED = {False: 25, True: 100}
TEST = {False: 300, True: 2000}
LOG = 25
TINY = {"d_model": 64, "ffn_dim": 128, "heads": 4, "encoder_layers": 2, "decoder_layers": 2, "dropout": 0.1,
        "attention_dropout": 0.0, "lr": 0.008, "warmup_init_lr": 0.0005, "warmup_updates": 50, "weight_decay": 0.0,
        "label_smoothing": 0.1, "clip_norm": 1.0, "max_tokens": 1024, "log_interval": LOG, "threads": 1,
        "batch_order": "source"}
CLOCK = str(HERE / "_train_clock.py")


def synprep_cmd(shards: Path, out: Path, syntax: str, steps: int, ticks: Path) -> list[str]:
    sets = [x for k, v in {**TINY, "syntax": syntax}.items() for x in ("--set", f"{k}={json.dumps(v)}")]
    args = synprep("train", "--shards", str(shards), "--preset", "tiny", *sets, "--out", str(out),
                   "--max-steps", str(steps), "--no-progress", "--num-workers", "0", "--seed", "1")
    return [args[0], CLOCK, "synprep", str(ticks), "--", *args[3:]]  # args[1:3]: -m synprep


def fairseq_cmd(venv: Path, data: Path, out: Path, steps: int, ticks: Path) -> list[str]:
    return [str(venv / "bin" / "python"), CLOCK, "fairseq", str(ticks), "--", str(data), "--task", "translation",
            "-s", "de", "-t", "en",
            "--arch", "transformer", "--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64",
            "--decoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
            "--encoder-attention-heads", "4", "--decoder-attention-heads", "4", "--share-all-embeddings",
            "--dropout", "0.1", "--attention-dropout", "0.0", "--criterion", "label_smoothed_cross_entropy",
            "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "0.008", "--lr-scheduler", "inverse_sqrt",
            "--warmup-updates", "50", "--warmup-init-lr", "0.0005", "--clip-norm", "1.0", "--max-tokens", "1024",
            "--required-batch-size-multiple", "1",
            "--max-update", str(steps), "--cpu", "--disable-validation", "--no-epoch-checkpoints", "--log-format", "json",
            "--log-interval", str(LOG), "--seed", "1", "--num-workers", "0", "--no-progress-bar",
            "--save-dir", str(out)]


def loop_rate(ticks: Path, measured: int) -> tuple[float, int, list[int]]:
    """Target tokens per CPU second of updates ``WARM+1 .. WARM+measured`` (the loop's time: from the start
    of the first to the start of the one after the last), their tokens, and the threads the updates ran with."""
    got = json.loads(ticks.read_text())
    ups = got["updates"]
    if len(ups) < WARM + measured + 1:
        raise SystemExit(f"{ticks}: {len(ups)} updates, {WARM + measured + 1} needed")
    window = ups[WARM:WARM + measured]
    tokens = sum(int(u[4]) for u in window)
    return tokens / (ups[WARM + measured][0] - window[0][0]), tokens, got["threads"]


def rows_train(tmp: Path, size: dict, repeat: int, full: bool) -> list[dict]:
    venv = fairseq_venv()
    measured = MEASURED[full]
    steps = WARM + measured + 1
    data = (f"synthetic IWSLT-shaped pairs, vocabulary 10000; tiny shape (d 64, FFN 128, 2+2 layers); 1024 tokens "
            f"a batch cut alike from fairseq's order; one thread; updates {WARM + 1}-{WARM + measured}")
    if not (venv / ".synprep-fairseq-ready").exists():
        return [{"stage": "train: vanilla beside fairseq-train", "device": "cpu", "command": _command("train", full),
                 "result": None, "note": f"not measured: no fairseq venv at {venv} (make fairseq-venv)"}]
    shards, exp = tmp / "train-shards", tmp / "train-export"
    write_folder(shards, {"train": 4 * steps * 30, "valid": 20, "test": TEST[full]}, shard_size=10_000,
                 vocab_size=10_000)
    prov.run_once(synprep("export", str(shards), "--format", "fairseq", "--to", str(exp)), env=ENV)
    fenv = {**ENV, "PYTHONPATH": ""}
    runs: dict[str, list[tuple[float, int, list[int]]]] = {"vanilla": [], "gated": [], "fairseq": []}
    for _ in range(repeat):  # A B C A B C ...
        for name in runs:
            out, ticks = tmp / f"train-{name}-{steps}", tmp / f"ticks-{name}.json"
            shutil.rmtree(out, ignore_errors=True)
            cmd = (fairseq_cmd(venv, exp, out, steps, ticks) if name == "fairseq"
                   else synprep_cmd(shards, out, name, steps, ticks))
            prov.run_once(cmd, env=fenv if name == "fairseq" else ENV)
            runs[name].append(loop_rate(ticks, measured))
    peer = [r for r, _, _ in runs["fairseq"]]
    versions = {**prov.versions("torch"), **prov.versions("fairseq-fixed", "torch", python=str(venv / "bin" / "python"))}
    rows = []
    for name in ("vanilla", "gated"):
        mine = [r for r, _, _ in runs[name]]
        result = prov.peer_result(
            unit="tokens/s", synprep=max(mine), peer=max(peer), peer_name="fairseq-train --arch transformer (same "
            "sizes, --share-all-embeddings, --required-batch-size-multiple 1, --cpu)", identical=None,
            measured_updates=measured, synprep_target_tokens_per_update=runs[name][0][1] / measured,
            peer_target_tokens_per_update=runs["fairseq"][0][1] / measured,
            synprep_threads=runs[name][0][2], peer_threads=runs["fairseq"][0][2],
            synprep_rounds=[round(r, 1) for r in mine], peer_rounds=[round(r, 1) for r in peer],
            ratio_of_medians=round(statistics.median(mine) / statistics.median(peer), 3),
            ratio_min=round(min(mine) / max(peer), 3), ratio_max=round(max(mine) / min(peer), 3))
        rows.append(prov.make_row(
            stage=f"train: {name} beside fairseq-train", command=_command("train", full), data=data, result=result,
            versions=versions,
            note=(f"CPU time of the training loop inside each process (updates {WARM + 1}-{WARM + measured}: reading, "
                  f"collating, logging included; start-up, validation, checkpoints not), best of {repeat} rounds, "
                  "interleaved; every round in synprep_rounds/peer_rounds, ratio_min/ratio_max the worst and best "
                  "pairings; one thread a side; loaded"
                  + ("" if name == "vanilla" else "; the gated model does more work"))))
    return [*rows, row_translate(tmp, venv, shards, exp, steps, repeat, full)]


def row_translate(tmp: Path, venv: Path, shards: Path, exp: Path, steps: int, repeat: int, full: bool) -> dict:
    """``synprep translate`` beside ``fairseq-generate``: the vanilla models the training rows just made."""
    n = TEST[full]
    mine, theirs = tmp / "hyp.synprep", tmp / "hyp.fairseq"
    beam = ["--beam", "5", "--max-len-a", "1.5", "--max-len-b", "10", "--max-tokens", "1024"]
    best = prov.interleaved({
        "synprep": side(synprep("translate", "--checkpoint", str(tmp / f"train-vanilla-{steps}" / "checkpoint_last.pt"),
                                "--shards", str(shards), "--split", "test", *beam, "-j", "1", "--no-progress",
                                "-o", str(mine))),
        "peer": {"cmd": [str(venv / "bin" / "fairseq-generate"), str(exp), "--task", "translation", "-s", "de",
                         "-t", "en", "--path", str(tmp / f"train-fairseq-{steps}" / "checkpoint_last.pt"),
                         "--gen-subset", "test", *beam, "--cpu", "--num-workers", "0"],
                 # fairseq 0.12 loads its own checkpoint (argparse.Namespace inside) as torch < 2.6 did
                 "env": {**ENV, "PYTHONPATH": "", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}, "stdout": theirs},
    }, repeat)
    out_mine = sum(len(x.split()) for x in mine.read_text(encoding="utf-8").splitlines())
    out_theirs = sum(len(x.split("\t")[2].split()) for x in theirs.read_text(encoding="utf-8").splitlines()
                     if x.startswith("H-"))
    sp, pp = best["synprep"].cpu_s, best["peer"].cpu_s
    result = prov.peer_result(unit="sentences/s", synprep=n / sp, peer=n / pp,
                              peer_name="fairseq-generate --beam 5 --cpu (same model shape, same updates)",
                              identical=None, synprep_output_tokens_per_s=out_mine / sp,
                              peer_output_tokens_per_s=out_theirs / pp, synprep_output_tokens=out_mine,
                              peer_output_tokens=out_theirs)
    versions = {**prov.versions("torch"), **prov.versions("fairseq-fixed", "torch", python=str(venv / "bin" / "python"))}
    return prov.make_row(
        stage="translate: beam search beside fairseq-generate", command=_command("train", full),
        data=f"{n} synthetic IWSLT-shaped test pairs; each tool's own vanilla tiny model after {steps} updates; beam 5, "
             "max length 1.5 x source + 10, 1024 tokens a batch, one thread",
        result=result, versions=versions,
        note=_note(repeat, "; whole processes, model load included; the two models differ, so do their outputs' "
                           "lengths: output tokens/s beside sentences/s"))


ROWS = {"train": rows_train}
