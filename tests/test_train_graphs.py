"""CUDA graphs of the training update (``cuda_graphs``, synprep/train/graphs.py).

On every machine: the graphs' padding (the sources' word counts rounded up to a multiple of 8, LDD's
entries to a power of two) gives every source the same loss and gradients as the unpadded batch; the
graphs' step (a device gradient scale) gives the same loss and gradients as the trainer's update; the
batch key tells shapes and host values apart, and a batch's key comes back every epoch; the option is
refused where it cannot run. On CUDA: a run with graphs (and with graphs over compiled layers)
gives the losses of a run without them (dropout off), and replays the graphs it captured.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch

from synprep.errors import ConfigError
from synprep.shards.synthetic import random_records
from synprep.train.config import load_preset, with_overrides
from synprep.train.data import Collater, RecordDataset
from synprep.train.distributed import DistEnv
from synprep.train.graphs import WORD_MULTIPLE, batch_key
from synprep.train.loop import Trainer
from synprep.train.model import Seq2Seq
from synprep.train.sources import SOURCES, source_class

EXTRA = {"lisa": {"syntax_layers": [0], "syntax_heads": [0]}}
NO_DROPOUT = {"dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0, "syntax_dropout": 0.0}


def _records(n: int = 6, seed: int = 0):
    return list(random_records(n, np.random.default_rng(seed), words=7, tgt_len=9, vocab_size=200))


def _config(source: str | None, **over):
    base = load_preset("tiny")
    if source is None:
        return with_overrides(base, {"syntax": "vanilla", **NO_DROPOUT, **over})
    mode = source_class(source).paper_modes[0]
    return with_overrides(base, {"syntax": mode, "syntax_source": source, **EXTRA.get(source, {}),
                                 "gate_freeze_epochs": 0, **NO_DROPOUT, **over})


def _loss_and_grads(model: Seq2Seq, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    from synprep.train.compiling import smoothed_loss
    from synprep.train.model import real_positions

    model.zero_grad(set_to_none=True)
    logits, enc = model(batch)
    loss, _ = smoothed_loss(logits, batch.target.flatten().index_select(0, real_positions(batch)), 0.1)
    total = loss if enc.aux_loss is None else loss + enc.aux_loss
    total.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("source", [None, *sorted(SOURCES)])
def test_the_graphs_padding_changes_no_loss_and_no_gradient(source):
    """The sources' word counts rounded up to a multiple of 8 and LDD's entries padded to a power of
    two: the same loss (LISA's auxiliary loss included) and the same gradients, for every source."""
    cfg = _config(source)
    torch.manual_seed(0)
    model = Seq2Seq(cfg, 200)
    model.train()  # dropout off: LISA's auxiliary loss exists in training only
    items = list(enumerate(_records()))
    plain = Collater.for_model(model)(items)
    padded = Collater.for_model(model, graph_shapes=True)(items)
    assert padded.src_tokens.shape == plain.src_tokens.shape and padded.target.shape == plain.target.shape
    if source in ("sla", "set"):  # the test pads something
        name = "allowed" if source == "sla" else "rel"
        W1 = padded.syntax[source][name].shape[1]
        assert (W1 - 1) % WORD_MULTIPLE == 0 and W1 > plain.syntax[source][name].shape[1]
    if source in ("ldd", "ldd_parent"):
        K = padded.syntax[source]["entries"][0].shape[0]
        assert K & (K - 1) == 0 and K > plain.syntax[source]["entries"][0].shape[0]
        assert padded.syntax[source]["n_words"] % WORD_MULTIPLE == 0
    loss_a, grads_a = _loss_and_grads(model, plain)
    loss_b, grads_b = _loss_and_grads(model, padded)
    torch.testing.assert_close(loss_b, loss_a, rtol=1e-5, atol=1e-5)
    assert grads_a.keys() == grads_b.keys()
    for name in grads_a:
        torch.testing.assert_close(grads_b[name], grads_a[name], rtol=1e-4, atol=1e-6, msg=name)


def _relabelled(batch, vocab: int):
    """``batch`` with every ordinary token id (≥ 4) moved by 7 within ``[4, vocab)``: the same shapes,
    padding, ``</s>`` and target-token count (the same graph key), other tokens and other targets."""
    import dataclasses

    def move(t: torch.Tensor) -> torch.Tensor:
        return torch.where(t >= 4, (t - 4 + 7) % (vocab - 4) + 4, t)

    return dataclasses.replace(batch, src_tokens=move(batch.src_tokens), prev_tokens=move(batch.prev_tokens),
                               target=move(batch.target))


def test_relabelled_batches_keep_the_key_and_change_the_loss(tmp_path):
    """What the CUDA graphs test's third pass relies on: a relabelled batch has its original's graph key
    and another loss (a replay that read the captured batch's tokens would give the captured loss)."""
    tr = _trainer(tmp_path, None)
    tr.model.eval()
    batch = next(iter(tr.train_loader))
    other = _relabelled(batch, 300)
    assert batch_key(other) == batch_key(batch) and not torch.equal(other.src_tokens, batch.src_tokens)
    with torch.no_grad():
        losses = [tr._loss(tr.model, b)[0].item() for b in (batch, other)]
    assert losses[0] != losses[1]


def _trainer(tmp_path, source: str | None, device: str = "cpu", **over) -> Trainer:
    recs = list(random_records(120, np.random.default_rng(0), words=8, tgt_len=10, vocab_size=300))
    cfg = with_overrides(_config(source), {"max_tokens": 256, "max_steps": 9, "log_interval": 3, "threads": 1,
                                           "clip_norm": 0.0, **over})
    return Trainer(cfg, RecordDataset(recs[:100]), RecordDataset(recs[100:]), [f"p{i}" for i in range(300)],
                   tmp_path, torch.device(device), progress=False)


@pytest.mark.parametrize("source", [None, "slr", "lisa", "ldd"])
def test_the_graphs_step_is_the_updates_loss_and_gradient(tmp_path, source):
    """:meth:`Trainer._forward_backward` with a device scale (what a graph records) on the graphs' batch
    against the update's own forward and backward on the plain batch: the same loss, NLL and gradients."""
    tr = _trainer(tmp_path, source)
    tr.model.train()
    items = [(i, tr.train_loader.dataset[i][1]) for i in range(5)]
    plain = Collater.for_model(tr.model)(items)
    padded = Collater.for_model(tr.model, graph_shapes=True)(items)
    scale = 1.0 / plain.ntokens
    tr.model.zero_grad(set_to_none=True)
    loss, nll, enc = tr._loss(tr.model, plain)
    ((loss if enc.aux_loss is None else loss + enc.aux_loss.float()) * scale).backward()
    want = {n: p.grad.clone() for n, p in tr.model.named_parameters() if p.grad is not None}
    tr.model.zero_grad(set_to_none=True)
    got_loss, got_nll = tr._forward_backward(tr.model, padded, torch.tensor(scale, dtype=torch.float32))
    torch.testing.assert_close(got_loss, loss.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got_nll, nll.detach(), rtol=1e-5, atol=1e-5)
    assert want.keys() == {n for n, p in tr.model.named_parameters() if p.grad is not None}
    for n, p in tr.model.named_parameters():
        if n in want:
            torch.testing.assert_close(p.grad, want[n], rtol=1e-4, atol=1e-7, msg=n)


def test_the_batch_key_tells_shapes_and_host_values_apart():
    cfg = _config("ldd")
    model = Seq2Seq(cfg, 200)
    collate = Collater.for_model(model, graph_shapes=True)
    recs = _records(8)
    a = collate(list(enumerate(recs[:4])))
    assert batch_key(a) == batch_key(collate(list(enumerate(recs[:4]))))
    assert batch_key(a) != batch_key(collate(list(enumerate(recs[:3]))))  # B
    parts = {k[0]: k for k in batch_key(a)}
    n_words = -(-max(len(r.heads) for r in recs[:4]) // WORD_MULTIPLE) * WORD_MULTIPLE  # pad_shapes rounds it up
    assert parts["syntax.ldd.n_words"] == ("syntax.ldd.n_words", n_words)  # a host value the model reads
    (K,) = parts["syntax.ldd.entries.0"][1]  # LDD's entries: (K,), padded to a power of two
    assert K == a.syntax["ldd"]["entries"][0].shape[0] and K & (K - 1) == 0
    assert ("src_tokens", (4, a.src_tokens.shape[1]), "torch.int64") in batch_key(a)
    assert batch_key(a)[0] == ("ntokens", a.ntokens)  # the loss gathers that many positions


@pytest.mark.parametrize("source", [None, *sorted(SOURCES)])
def test_the_batch_shapes_come_back_epoch_after_epoch(source):
    """What the key and the padding are for: over three epochs (ties shuffled anew each), the sources
    whose inputs follow T alone bring back exactly the first epoch's batch keys (the sampler's sizes
    come in the same order every epoch), and the padding never makes more distinct keys than the plain
    batches have (word counts and LDD's entry counts change with the shuffle; rounded up, less often)."""
    from synprep.train.data import BucketBatchSampler

    recs = list(random_records(1500, np.random.default_rng(3), words=6, tgt_len=6, vocab_size=200))
    ds = RecordDataset(recs)
    model = Seq2Seq(_config(source), 200)
    sampler = BucketBatchSampler(ds.src_lengths, ds.tgt_lengths, 1024, shuffle=True, seed=5)
    keys = {}
    for padded in (False, True):
        collate = Collater.for_model(model, graph_shapes=padded)
        keys[padded] = [{batch_key(collate([ds[i] for i in idx])) for idx in sampler.global_batches(epoch)}
                        for epoch in range(3)]
    assert len(set.union(*keys[True])) <= len(set.union(*keys[False]))
    if source in (None, "slr", "pascal", "lisa"):
        assert keys[True][1] == keys[True][0] and keys[True][2] == keys[True][0]
        assert len(keys[True][0]) > 10
    else:  # the test's data changes these sources' keys with the shuffle
        assert len(set.union(*keys[False])) > len(keys[False][0])


def test_cuda_graphs_is_refused_where_it_cannot_run(tmp_path):
    with pytest.raises(ConfigError, match="cuda_graphs replays CUDA graphs; this run is on cpu"):
        _trainer(tmp_path, None, cuda_graphs=True)
    cuda = torch.device("cuda")  # _check_graphs reads the device's kind only
    with pytest.raises(ConfigError, match="one process; this run has 2"):
        Trainer._check_graphs(types.SimpleNamespace(env=DistEnv(rank=0, world_size=2, local_rank=0)),  # type: ignore[arg-type]
                              _config(None, cuda_graphs=True), cuda)
    # with compile the graphs record the compiled layers' kernels: no refusal (the CUDA test trains it)
    Trainer._check_graphs(types.SimpleNamespace(env=DistEnv()), _config(None, cuda_graphs=True, compile=True),  # type: ignore[arg-type]
                          cuda)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize(("source", "over"), [(None, {}), ("slr", {}),
                                              ("slr", {"syntax": "gated", "update_freq": 2, "gate_freeze_epochs": 1}),
                                              ("set", {"sorted_lookup": True}),
                                              (None, {"graphs_compile": True}),
                                              ("slr", {"syntax": "gated", "graphs_compile": True})],
                         ids=["vanilla", "slr", "gated-update_freq2-frozen", "set-sorted-lookup", "vanilla-compiled",
                              "gated-compiled"])
def test_cuda_graphs_train_as_eager_does(tmp_path, monkeypatch, source, over):
    """Dropout off, float32, the same seed and batches: a run with CUDA graphs has the losses of a
    run without them (relative 1e-3: the sources' padded word and entry counts may take other kernels'
    summation orders, and Adam divides by the gradients' size), and replays the graphs it captured.
    The replays of the third pass get other batches of the same keys (``_relabelled``: other tokens), which
    they must read. Two batches per update add into the same gradients; frozen gates (epoch 0 <
    gate_freeze_epochs) stay as they were in both runs. ``sorted_lookup``: SET's lookup as ``_SortedLookup`` in both runs
    (its per-batch sort is recorded in the graphs). ``graphs_compile``: the run with graphs also has
    ``compile: true`` (its graphs record Inductor's kernels; the same tolerance: fused reductions sum in
    other orders), against the eager run without; Dynamo compiled for it (its counters)."""
    from torch._dynamo.utils import counters

    from synprep.train.sources import set as set_mod

    over = dict(over)
    monkeypatch.setattr(set_mod, "SORTED_LOOKUP_ON_CUDA", over.pop("sorted_lookup", False))
    graphs_compile = over.pop("graphs_compile", False)
    if graphs_compile:
        torch._dynamo.reset()  # graphs another test compiled would be reused, not counted
        counters.clear()
    runs, gates = {}, {}
    for graphs in (False, True):
        tr = _trainer(tmp_path / str(graphs), source, device="cuda", cuda_graphs=graphs,
                      compile=graphs and graphs_compile, **over)
        uf = tr.cfg.update_freq
        batches = [b for _, b in zip(range(3 * uf), tr.train_loader, strict=False)]
        others = [_relabelled(b, 300) for b in batches]  # the same keys, other tokens: replays must read them
        assert all(batch_key(a) == batch_key(b) for a, b in zip(batches, others, strict=True))
        before = [p.detach().clone() for p in tr.gate_params]
        losses = []
        for i in range(9):  # each group of batches 3 times: eager, captured, replayed with other tokens
            k = (i % 3) * uf
            out = tr.train_step((batches if i < 6 else others)[k:k + uf])
            losses.append(out["loss"].item() / out["ntokens"].item())
        runs[graphs] = losses
        gates[graphs] = [torch.equal(a, p.detach()) for a, p in zip(before, tr.gate_params, strict=True)]
        if graphs:
            assert tr.graphs is not None
            assert tr.graphs.stats()["captures"] == 3 * uf and tr.graphs.stats()["replays"] == 6 * uf, tr.graphs.stats()
            if graphs_compile:  # each kind of layer and the loss compiled, no layer split by a graph break
                assert counters["stats"]["unique_graphs"] >= 3 and not counters["graph_break"], dict(counters)
    rel = np.abs(np.array(runs[True]) - np.array(runs[False])) / np.abs(np.array(runs[False]))
    print(f"cuda_graphs {source} {over}: largest relative loss difference over 9 updates {rel.max():.2e}")
    np.testing.assert_allclose(runs[True], runs[False], rtol=1e-3)
    assert gates[True] == gates[False]
    if gates[True]:  # a gated model: its gates frozen, as in the eager run
        assert all(gates[True]) == bool(over.get("gate_freeze_epochs"))
