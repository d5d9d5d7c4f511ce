"""bench_peers.py's training and beam-search rows: ``synprep train`` (vanilla, gated) beside ``fairseq-train``
with the same architecture, data, batch size and one thread; ``synprep translate`` beside ``fairseq-generate``
(beam 5) with the vanilla models both just trained.

Data: a synthetic folder (``synprep.shards.synthetic``, IWSLT-shaped pairs, vocabulary 10000) and its
``export --format fairseq`` (fairseq's standard ``translation`` task reads the same ids). Model: the
``tiny`` preset's shape (d 64, FFN 128, 4 heads, 2+2 layers, post-norm, shared embeddings; fairseq
``transformer`` with those sizes and ``--share-all-embeddings``), dropout 0.1, label smoothing 0.1, Adam,
inverse-sqrt warm-up, clipping 1.0, ``max_tokens`` 1024. The first ``WARM`` updates are excluded by
difference: each side runs ``WARM`` updates and ``WARM + N`` updates, and its rate is the target tokens of
updates ``WARM+1 .. WARM+N`` (each tool's own log: synprep's ``metrics.jsonl``, fairseq's json log) over
the difference of the two runs' CPU times, so start-up, validation and checkpoints cancel out.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import _provenance as prov
from bench_peers import ENV, _command, _note, side, synprep
from peers_shards import fairseq_venv

from synprep.shards.synthetic import write_folder

WARM = 50
MEASURED = {False: 25, True: 100}
TEST = {False: 300, True: 2000}
LOG = 25
TINY = {"d_model": 64, "ffn_dim": 128, "heads": 4, "encoder_layers": 2, "decoder_layers": 2, "dropout": 0.1,
        "attention_dropout": 0.0, "lr": 0.008, "warmup_init_lr": 0.0005, "warmup_updates": 50, "weight_decay": 0.0,
        "label_smoothing": 0.1, "clip_norm": 1.0, "max_tokens": 1024, "log_interval": LOG, "threads": 1}


def synprep_cmd(shards: Path, out: Path, syntax: str, steps: int) -> list[str]:
    sets = [x for k, v in {**TINY, "syntax": syntax}.items() for x in ("--set", f"{k}={json.dumps(v)}")]
    return synprep("train", "--shards", str(shards), "--preset", "tiny", *sets, "--out", str(out),
                   "--max-steps", str(steps), "--no-progress", "--num-workers", "0", "--seed", "1")


def fairseq_cmd(venv: Path, data: Path, out: Path, steps: int) -> list[str]:
    return [str(venv / "bin" / "fairseq-train"), str(data), "--task", "translation", "-s", "de", "-t", "en",
            "--arch", "transformer", "--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64",
            "--decoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
            "--encoder-attention-heads", "4", "--decoder-attention-heads", "4", "--share-all-embeddings",
            "--dropout", "0.1", "--attention-dropout", "0.0", "--criterion", "label_smoothed_cross_entropy",
            "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "0.008", "--lr-scheduler", "inverse_sqrt",
            "--warmup-updates", "50", "--warmup-init-lr", "0.0005", "--clip-norm", "1.0", "--max-tokens", "1024",
            "--max-update", str(steps), "--cpu", "--disable-validation", "--no-epoch-checkpoints", "--log-format", "json",
            "--log-interval", str(LOG), "--seed", "1", "--num-workers", "0", "--no-progress-bar",
            "--save-dir", str(out)]


def synprep_tokens(out: Path) -> int:
    """Target tokens of the updates after ``WARM`` (metrics.jsonl's intervals ending past it)."""
    recs = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    return sum(r["ntokens"] for r in recs if "ntokens" in r and "valid_loss" not in r and r["step"] > WARM)


def fairseq_tokens(log: str) -> int:
    """Target tokens of the updates after ``WARM``: each json interval line's ``wpb`` x its updates."""
    total = 0
    for line in log.splitlines():
        start = line.find("{")
        if start < 0 or '"wpb"' not in line:
            continue
        rec = json.loads(line[start:])
        if "num_updates" in rec and int(rec["num_updates"]) > WARM and "train_wpb" not in rec:
            total += round(float(rec["wpb"]) * LOG)
    return total


def _best(runs: list[tuple[float, int]]) -> float:
    return max(tokens / cpu for cpu, tokens in runs)


def rows_train(tmp: Path, size: dict, repeat: int, full: bool) -> list[dict]:
    venv = fairseq_venv()
    steps = WARM + MEASURED[full]
    data = (f"synthetic IWSLT-shaped pairs, vocabulary 10000; tiny shape (d 64, FFN 128, 2+2 layers), 1024 tokens "
            f"a batch, one thread; updates {WARM + 1}-{steps}")
    if not (venv / ".synprep-fairseq-ready").exists():
        return [{"stage": "train: vanilla beside fairseq-train", "device": "cpu", "command": _command("train", full),
                 "result": None, "note": f"not measured: no fairseq venv at {venv} (make fairseq-venv)"}]
    shards, exp = tmp / "train-shards", tmp / "train-export"
    write_folder(shards, {"train": 4 * steps * 30, "valid": 20, "test": TEST[full]}, shard_size=10_000,
                 vocab_size=10_000)
    prov.run_once(synprep("export", str(shards), "--format", "fairseq", "--to", str(exp)), env=ENV)
    fenv = {**ENV, "PYTHONPATH": ""}
    runs: dict[str, list[tuple[float, int]]] = {"vanilla": [], "gated": [], "fairseq": []}
    for _ in range(repeat):
        for name in runs:
            cpu = {}
            for n in (WARM, steps):
                out = tmp / f"train-{name}-{n}"
                shutil.rmtree(out, ignore_errors=True)
                if name == "fairseq":
                    log = tmp / "fairseq.log"
                    cpu[n] = prov.run_once(fairseq_cmd(venv, exp, out, n), env=fenv, stdout=log)[0]
                else:
                    cpu[n] = prov.interleaved({name: side(synprep_cmd(shards, out, name, n))}, 1)[name].cpu_s
            tokens = fairseq_tokens(log.read_text()) if name == "fairseq" else synprep_tokens(tmp / f"train-{name}-{steps}")
            runs[name].append((cpu[steps] - cpu[WARM], tokens))
    peer = _best(runs["fairseq"])
    versions = {**prov.versions("torch"), **prov.versions("fairseq-fixed", "torch", python=str(venv / "bin" / "python"))}
    rows = []
    for name in ("vanilla", "gated"):
        mine = _best(runs[name])
        result = prov.peer_result(unit="tokens/s", synprep=mine, peer=peer, peer_name="fairseq-train --arch transformer "
                                  "(same sizes, --share-all-embeddings, --cpu)", identical=None,
                                  measured_updates=MEASURED[full], synprep_target_tokens=runs[name][0][1],
                                  peer_target_tokens=runs["fairseq"][0][1])
        rows.append(prov.make_row(
            stage=f"train: {name} beside fairseq-train", command=_command("train", full), data=data, result=result,
            versions=versions, note=_note(repeat, f"; target tokens per CPU second of updates after the first {WARM}"
                                                  f"{'' if name == 'vanilla' else '; the gated model does more work'}")))
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
