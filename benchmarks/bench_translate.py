"""Translation speed: sentences per second of beam search, the batched decoder against the earlier
per-hypothesis Python decoder (``tests/decode_reference.py``), on the same checkpoint, in process.

Both decoders get the same length-bucketed, already collated batches (``translate``'s batching,
``--max-tokens`` source tokens per batch; collation is not timed), after one warm-up pass; the
two are timed in interleaved rounds and each keeps its best round (``--timing round``), or, with
``--timing batch``, every batch is timed alone, the decoders alternating batch by batch, and each
decoder's time is the sum over batches of its best time for that batch (a short interval is more
often a quiet one: on a CPU shared with other jobs this spreads far less than whole rounds). Prints one JSON object per
line: one per decoder (``figure: "translate"``) and a comparison (``figure: "translate_speedup"``,
with ``identical``: the two produced the same hypotheses).

    python benchmarks/bench_translate.py --device cpu --small           # seconds: a quick model
    python benchmarks/bench_translate.py --device cpu                   # 'tiny' trained 300 steps
    python benchmarks/bench_translate.py --checkpoint run/checkpoint_best.pt --shards data --split test

Without ``--checkpoint`` a model of the ``tiny`` preset is trained in process on a copy task over
synthetic records of realistic shape (``synprep.shards.synthetic``: ~20 words, ~30 pieces), so the
benchmark needs no data and its hypotheses end with ``</s>`` like a trained model's.
Timings on a shared machine are noisy: compare the ratio, measured in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_train_gpu import endless  # noqa: E402 - the train batches, epoch after epoch

from synprep.shards.synthetic import random_records  # noqa: E402
from synprep.train import decode  # noqa: E402
from synprep.train.config import load_preset, with_overrides  # noqa: E402
from synprep.train.data import BucketBatchSampler, Collater, RecordDataset  # noqa: E402
from synprep.train.loop import Trainer  # noqa: E402
from synprep.train.model import Seq2Seq  # noqa: E402
from tests import decode_reference as reference  # noqa: E402


def copy_task_model(n_sent: int, steps: int, device: str, vocab: int = 1000, preset: str = "tiny"):
    """A ``preset`` model (default ``tiny``) trained ``steps`` updates to copy synthetic sources; (model, eval dataset)."""
    rng = np.random.default_rng(0)
    recs = [dataclasses.replace(r, tgt_ids=r.src_ids.copy()) for r in random_records(2000 + n_sent, rng,
                                                                                      vocab_size=vocab)]
    cfg = with_overrides(load_preset(preset), {"max_steps": steps, "max_epochs": 0, "log_interval": 10 ** 6,
                                               "max_tokens": 2048, "warmup_updates": min(50, steps)})
    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(cfg, RecordDataset(recs[:2000]), RecordDataset(recs[2000:2016]), [f"p{i}" for i in range(vocab)],
                     tmp, torch.device(device), progress=False)
        for _, batch in zip(range(steps), endless(tr), strict=False):
            tr.train_step([batch])
    return tr.model.eval(), RecordDataset(recs[2000:])


def iwslt_trained_model(data: Path, preset: str, device: str, *, seconds: float, max_steps: int,
                        overrides: dict | None = None, train_lines: int = 0, test_lines: int = 0,
                        max_tokens: int = 16384):
    """A ``preset`` model TRAINED here on IWSLT14 de→en BPE text, and IWSLT14 test to decode with it.

    ``data``/iwslt14_de-en/fairseq_prepared/ (fairseq's prepare-iwslt14.sh output; ``../shared/data``):
    trains on ``valid.{de,en}`` (7283 pairs) when present, else on ``test.{de,en}`` itself (the GPU
    bundle of ``../shared/gpu/make_bundle.sh`` carries only test: then the hypotheses are those of a model
    that has seen the test pairs, which is said in the returned ``info``). The vocabulary is the joint
    set of the training pairs' BPE pieces (test pieces outside it read as ``<unk>``); records are
    :func:`synprep.train.toydata.record_of_words` over the pieces (random syntax, which a vanilla model does
    not read). Training: ``preset`` with ``overrides``, ``max_tokens`` target tokens × 1 per update, a
    short run's schedule (peak 1e-3 after 400 warm-up updates from 1e-7, inverse square root after),
    ``cuda_graphs`` on CUDA, for at most ``seconds`` of wall clock or
    ``max_steps`` updates, whichever ends first; ``train_lines``/``test_lines``: only the first so many
    pairs (0: all). A throughput workload whose searches end where a
    trained model's do, not a system to compare BLEU with.

    Returns:
        (model in eval mode, test dataset, test references (BPE pieces joined, tokenized lowercased
        text), symbols, info): info has ``trained_on`` (split name), ``train_pairs``, ``updates``,
        ``train_seconds``, ``train_target_tokens_per_s``, ``last_loss_per_token`` (nats; label-smoothed,
        of the last update) and ``loss_per_token_every_250`` ([update, loss] pairs: that the model learns).
    """
    from synprep.train.toydata import build_vocab, record_of_words

    folder = data / "iwslt14_de-en" / "fairseq_prepared"
    split = "valid" if (folder / "valid.de").exists() else "test"

    def read(name: str) -> list[list[str]]:
        return [line.split() for line in (folder / name).read_text(encoding="utf-8").splitlines()]

    whole = 10 ** 6  # pieces are BPE already: record_of_words must not cut them again
    train = [(s, t) for s, t in zip(read(f"{split}.de"), read(f"{split}.en"), strict=True) if s and t]
    test = [(s, t) for s, t in zip(read("test.de"), read("test.en"), strict=True) if s and t]
    train, test = train[:train_lines or None], test[:test_lines or None]
    vocab = build_vocab([w for pair in train for w in pair], split_len=whole)
    rng = np.random.default_rng(0)
    train_recs = [record_of_words(i + 1, [s], t, vocab.symbols, rng, split_len=whole) for i, (s, t) in enumerate(train)]
    test_recs = [record_of_words(i + 1, [s], t, vocab.symbols, rng, split_len=whole) for i, (s, t) in enumerate(test)]
    cuda = device.startswith("cuda")
    # a short run's schedule: the IWSLT14 presets' peak (7e-3, the gated paper's, after 4000 warm-up updates)
    # reached after 400 left the 512-wide model at ~6 nats a token in two H100 runs (1673 updates of 16384
    # tokens; 3258 of 4096), hypotheses of 4-7 tokens against the references' 19; fairseq's IWSLT14 recipe
    # peaks at 5e-4
    cfg = with_overrides(load_preset(preset), {**(overrides or {}), "max_steps": max_steps, "max_epochs": 0,
                                               "log_interval": 10 ** 6, "max_tokens": max_tokens, "update_freq": 1,
                                               "lr": 1e-3, "warmup_init_lr": 1e-7, "warmup_updates": 400,
                                               "cuda_graphs": cuda})
    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(cfg, RecordDataset(train_recs), RecordDataset(train_recs[:64]), vocab.symbols, tmp,
                     torch.device(device), progress=False)
        steps = tokens = 0
        curve = []  # (update, loss per token on the device) every 250 updates: read after the loop
        t0 = time.perf_counter()
        for batch in endless(tr):
            out = tr.train_step([batch])
            steps, tokens = steps + 1, tokens + batch.ntokens
            if steps % 250 == 0:
                curve.append((steps, out["loss"] / out["ntokens"]))
            if steps >= max_steps or time.perf_counter() - t0 >= seconds:
                break
        last = float(out["loss"] / out["ntokens"])  # the device is read after the loop only
        dt = time.perf_counter() - t0
    model = tr.model.eval()
    decode_policy(model, device)
    info = {"trained_on": split if split == "valid" else "test (the pairs it then translates: the bundle has no valid)",
            "train_pairs": len(train_recs), "updates": steps, "train_seconds": round(dt, 1),
            "train_target_tokens_per_s": round(tokens / dt, 1), "last_loss_per_token": round(last, 3),
            "loss_per_token_every_250": [[n, round(float(x), 3)] for n, x in curve]}
    refs = [" ".join(t).replace("@@ ", "") for _, t in test]
    return model, RecordDataset(test_recs), refs, vocab.symbols, info


def length_bound_model(preset: str, n_sent: int, device: str, vocab: int = 10000, seed: int = 0,
                       overrides: dict | None = None):
    """An UNTRAINED ``preset`` model and ``n_sent`` synthetic records: a decoding workload whose length is
    realistic by construction (the GPU suite's ``translate_iwslt_size``; a proxy, not a translation).

    The model is the preset's :class:`~synprep.train.model.Seq2Seq` (with ``overrides``, config fields, if
    given) over a ``vocab``-token vocabulary, its initialisation seeded by ``seed`` (``torch.manual_seed``),
    in eval mode on ``device``; the records are
    :func:`synprep.shards.synthetic.random_records` (seed ``seed``, ids in [4, ``vocab``): ~20 words, ~30
    pieces per source, every syntax field, so the gated presets collate too). Decoded with ``max_len_a =
    1.0, max_len_b = 0`` (limit = source length with ``</s>``: ``synprep.train.decode._limits``), nearly
    every sentence runs to its limit, as an untrained model almost never ranks ``</s>`` among a beam's best
    2·beam of ``vocab`` tokens (and a sentence leaves the search early only after beam finished
    hypotheses): the steps per sentence = its source length + 1, like a trained IWSLT14 model's, whose
    hypotheses are about as long as the sources. Measured on the CPU (300 sentences per preset, beam 5,
    fp32 and bf16 autocast, :func:`counting_steps`): every search of both IWSLT14 presets ran to its
    limit; vanilla's best hypotheses were all source-long, 11-12 % of gated's shorter (a short finished
    hypothesis kept the best score while the search went on). The real measure is a trained checkpoint:
    ``bench_translate.py --checkpoint CK --shards DIR``.

    Returns:
        (model, dataset): dataset a :class:`~synprep.train.data.RecordDataset` (``src_lengths``: pieces
        without ``</s>``).
    """
    torch.manual_seed(seed)
    model = Seq2Seq(with_overrides(load_preset(preset), overrides or {}), vocab).to(device).eval()
    recs = list(random_records(n_sent, np.random.default_rng(seed), vocab_size=vocab))
    decode_policy(model, device)
    return model, RecordDataset(recs)


def decode_policy(model, device: str) -> None:
    """Apply ``model``'s runtime policy (TF32, attention kernels) as ``synprep translate`` does before it
    decodes (:func:`synprep.train.decode.translate_dataset`). Without it SDPA keeps torch's own kernel
    choice: on Hopper cuDNN attention, which builds a new plan for every new shape, and the search's cache
    grows by one position a step (on an H200, with this script: 38 ms a step, 110 sentences/s)."""
    from synprep.train import runtime

    runtime.apply(runtime.resolve(model.cfg, torch.device(device)))


@contextlib.contextmanager
def counting_steps(model, beam: int):
    """Count the decoding steps of the searches run inside the block, without touching the decoder: a
    forward hook on the decoder's embedding, which each incremental step calls once on the (N, 1)
    newest tokens of the N = beam · A rows of its A running sentences (the encoder's calls are (B, T ≥ 2)).
    Yields a one-element list: the sentence-steps so far (Σ over steps of A). Host-side shapes only: no sync."""
    count = [0]

    def hook(_module, inputs, _output) -> None:
        x = inputs[0]
        if x.dim() == 2 and x.shape[1] == 1:
            count[0] += x.shape[0] // beam

    handle = model.dec_embed.register_forward_hook(hook)
    try:
        yield count
    finally:
        handle.remove()


def length_figures(model, bs: list, hyps: list[list[int]], sentence_steps: int, max_len_a: float,
                   max_len_b: int) -> dict:
    """How far the searches of batches ``bs`` ran (``hyps`` in batch order, as :func:`run` returns them;
    ``sentence_steps`` from :func:`counting_steps`): ``mean_source_tokens`` (pieces, no ``</s>``),
    ``mean_limit_steps`` (the length limit ``decode._limits``: a search's most steps, the last one ``</s>``)
    and ``mean_search_steps`` (steps a sentence was in the search, ``steps_to_limit_fraction`` their ratio:
    1.0 when every search ran to its limit); ``mean_hypothesis_tokens`` and ``ended_before_limit_fraction``
    (best hypotheses shorter than limit − 1 tokens: a search may run on past a short finished hypothesis
    that stays the best)."""
    src = np.concatenate([b.src_lengths.cpu().numpy() - 1 for b in bs])  # src_lengths count </s>
    lim = np.concatenate([decode._limits(model, b, max_len_a, max_len_b).cpu().numpy() for b in bs])
    hyp = np.array([len(h) for h in hyps])
    return {"mean_source_tokens": round(float(src.mean()), 2), "mean_limit_steps": round(float(lim.mean()), 2),
            "mean_search_steps": round(sentence_steps / len(hyps), 2),
            "steps_to_limit_fraction": round(sentence_steps / float(lim.sum()), 4),
            "mean_hypothesis_tokens": round(float(hyp.mean()), 2),
            "ended_before_limit_fraction": round(float(np.mean(hyp < lim - 1)), 4)}


def batches(model, dataset, max_tokens: int, device: str) -> list:
    """``translate``'s batches of the whole dataset, collated and on ``device``."""
    src = np.asarray(dataset.src_lengths)
    sampler = BucketBatchSampler(src, src, max(max_tokens, int(src.max(initial=0)) + 1), shuffle=False)
    collate = Collater.for_model(model)
    return [collate([dataset[i] for i in idx]).to(device) for idx in sampler]


def run(search, model, bs: list, beam: int, lenpen: float, a: float, b: int, device: str,
        now=time.perf_counter) -> tuple[float, list]:
    t0 = now()
    hyps = []
    for batch in bs:
        if beam == 1:
            hyps += search.greedy_search(model, batch, a, b)
        else:
            hyps += search.beam_search(model, batch, beam, lenpen, a, b)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return now() - t0, hyps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--small", action="store_true", help="a quick run (seconds on a CPU): fewer sentences and updates")
    ap.add_argument("--checkpoint", type=Path, help="a synprep checkpoint (else a copy-task model is trained here)")
    ap.add_argument("--shards", type=Path, help="with --checkpoint: the shard folder to translate")
    ap.add_argument("--split", default="test")
    ap.add_argument("--sentences", type=int, default=0, help="translate the first N sentences (0 = all / default)")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--lenpen", type=float, default=1.0)
    ap.add_argument("--max-tokens", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timing", choices=["round", "batch"], default="round",
                    help="best whole round per decoder, or the sum of per-batch bests (batches interleaved)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    ap.add_argument("--bf16", action="store_true", help="decode under bf16 autocast")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="wall time, or this process's CPU time (robust on a shared CPU; --device cpu only)")
    args = ap.parse_args()
    if args.clock == "cpu" and args.device != "cpu":
        ap.error("--clock cpu measures CPU runs only")
    now = time.process_time if args.clock == "cpu" else time.perf_counter
    if (args.checkpoint is None) != (args.shards is None):
        ap.error("--checkpoint and --shards go together")
    torch.set_num_threads(args.threads)
    if args.checkpoint:
        from synprep.train.data import ShardDataset

        model, cfg, _ = decode.load_model(args.checkpoint, args.device)
        decode_policy(model, args.device)
        dataset = ShardDataset(args.shards, args.split)
        a, b, what = cfg.max_len_a, cfg.max_len_b, str(args.checkpoint)
    else:
        n = args.sentences or (64 if args.small else 400)
        steps = 40 if args.small else 300
        model, dataset = copy_task_model(n, steps, args.device)
        a, b, what = 1.5, 10, f"tiny preset, copy task, {steps} updates"
    if args.sentences and len(dataset) > args.sentences:
        dataset = torch.utils.data.Subset(dataset, range(args.sentences))
        dataset.src_lengths = np.asarray(dataset.dataset.src_lengths)[: args.sentences]  # type: ignore[attr-defined]
    bs = batches(model, dataset, args.max_tokens, args.device)
    n_sent = sum(x.size for x in bs)
    amp = torch.autocast(torch.device(args.device).type, dtype=torch.bfloat16, enabled=args.bf16)
    rounds = 1 if args.small else args.rounds
    best: dict[str, float] = {}
    out: dict[str, list] = {}
    decoders = (("reference", reference), ("batched", decode))
    with amp:
        for name, search in decoders:  # warm-up
            out[name] = run(search, model, bs[:1], args.beam, args.lenpen, a, b, args.device)[1]
        if args.timing == "round":
            for _ in range(rounds):
                for name, search in decoders:
                    dt, out[name] = run(search, model, bs, args.beam, args.lenpen, a, b, args.device, now)
                    best[name] = max(best.get(name, 0.0), n_sent / dt)
        else:
            fastest = {name: [float("inf")] * len(bs) for name, _ in decoders}
            hyps: dict[str, list[list]] = {name: [[] for _ in bs] for name, _ in decoders}
            for r in range(rounds):
                for i, batch in enumerate(bs):
                    for name, search in decoders if r % 2 == 0 else decoders[::-1]:
                        dt, hyps[name][i] = run(search, model, [batch], args.beam, args.lenpen, a, b, args.device, now)
                        fastest[name][i] = min(fastest[name][i], dt)
            out = {name: [h for part in hyps[name] for h in part] for name, _ in decoders}
            best = {name: n_sent / sum(fastest[name]) for name, _ in decoders}
    common = {"device": args.device, "model": what, "sentences": n_sent, "beam": args.beam, "lenpen": args.lenpen,
              "max_tokens": args.max_tokens, "threads": args.threads, "bf16": args.bf16, "rounds": rounds, "clock": args.clock,
              "timing": args.timing}
    for name, sps in best.items():
        print(json.dumps({"figure": "translate", "decoder": name, "sentences_per_s": round(sps, 1), **common}),
              flush=True)
    print(json.dumps({"figure": "translate_speedup", "speedup": round(best["batched"] / best["reference"], 2),
                      "identical": out["batched"] == out["reference"], **common}), flush=True)


if __name__ == "__main__":
    main()
