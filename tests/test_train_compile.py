"""``compile: true`` (synprep.train.compiling): regional compilation.

Each encoder/decoder layer is compiled in place and the loss is compiled; the per-update losses equal
eager's from the same seed (dropout off) within ``RTOL``; identical layers share one graph and
batches of other shapes reuse it (the number of graphs is bounded by the kinds of layer, not by the
layers or the shapes); a compiled run's checkpoint is an eager model's (same keys, same values) and
an eager trainer resumes it, taking the same next update.

The models are the presets' architectures shrunk (2+2 layers, d=32): compilation dominates the
time of this file (about 10 s per kind of graph on one CPU core, less with Inductor's disk cache).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters

from synprep.shards.synthetic import random_records
from synprep.train.checkpoint import LAST
from synprep.train.compiling import compile_model, compiled_layers
from synprep.train.config import load_preset, with_overrides
from synprep.train.data import RecordDataset
from synprep.train.loop import Trainer

#: relative difference allowed between a compiled and an eager update's loss: Inductor reorders
#: float32 sums (matmul, softmax, the loss over V), about 1e-7 relative per update, growing slowly
#: through the weights over the updates; 1e-5 is still 100x below a change of one update's weights
RTOL = 1e-5
UPDATES = 6
SHRINK = {"d_model": 32, "ffn_dim": 64, "heads": 4, "encoder_layers": 2, "decoder_layers": 2, "gate_hidden": 16,
          "max_tokens": 300, "update_freq": 1, "gate_freeze_epochs": 0, "threads": 1, "max_steps": 100,
          "dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0, "syntax_dropout": 0.0}
VOCAB = 200


def _trainer(tmp_path, preset: str, compile: bool, resume: bool = False, **over) -> Trainer:
    recs = list(random_records(120, np.random.default_rng(0), vocab_size=VOCAB))
    cfg = with_overrides(load_preset(f"{preset}_iwslt14_de_en"), {**SHRINK, "compile": compile, **over})
    return Trainer(None if resume else cfg, RecordDataset(recs[:100]), RecordDataset(recs[100:]),
                   [f"p{i}" for i in range(VOCAB)], tmp_path, torch.device("cpu"), progress=False, resume=resume,
                   overrides={"compile": compile} if resume else None)


def _batches(tr: Trainer, n: int) -> list:
    it = iter(tr.train_loader)
    return [next(it) for _ in range(n)]


def _losses(tr: Trainer, batches: list) -> list[float]:
    outs = [tr.train_step([b]) for b in batches]
    return [float(o["loss"]) / float(o["ntokens"]) for o in outs]


def _graphs() -> int:
    return counters["stats"]["unique_graphs"]


def _run_pair(tmp_path, preset: str) -> tuple[Trainer, list, list[float], list[float], int]:
    """Eager and compiled trainers of ``preset`` on the same batches: (compiled trainer, batches,
    eager losses, compiled losses, graphs compiled by the compiled run)."""
    eager = _trainer(tmp_path / "eager", preset, compile=False)
    batches = _batches(eager, UPDATES)
    want = _losses(eager, batches)
    comp = _trainer(tmp_path / "compiled", preset, compile=True)
    before = _graphs()
    got = _losses(comp, batches)
    assert counters["graph_break"] == {}, dict(counters["graph_break"])  # a layer is one graph
    return comp, batches, want, got, _graphs() - before


@pytest.fixture(scope="module")
def vanilla(tmp_path_factory):
    torch._dynamo.reset()  # graphs another test compiled would be reused, not counted
    counters.clear()
    return _run_pair(tmp_path_factory.mktemp("vanilla"), "vanilla")


def test_vanilla_compiled_layers_give_eager_losses_with_one_graph_per_kind_of_layer(vanilla):
    comp, batches, want, got, graphs = vanilla
    shapes = {(tuple(b.src_tokens.shape), tuple(b.prev_tokens.shape)) for b in batches}
    assert len(shapes) >= 4  # the batches do vary in shape (batch size x lengths)
    # every layer compiled in place (the old compile wrapped the whole model and no layer)
    assert all(layer._compiled_call_impl is not None for layer in compiled_layers(comp.model))
    np.testing.assert_allclose(got, want, rtol=RTOL)
    # one graph for the 2 encoder layers, one for the 2 decoder layers, one for the loss: not one per
    # layer, and none more for the other 5 shapes (dynamic from the first compilation)
    assert graphs == 3
    assert counters["recompiles"] == {}


def test_compiled_checkpoint_is_an_eager_models_and_an_eager_trainer_resumes_it(vanilla, tmp_path):
    comp, batches, _, _, _ = vanilla
    comp.save(False)
    comp.finish_writes()
    ck = torch.load(comp.out / LAST, map_location="cpu", weights_only=False)
    eager_keys = list(_trainer(tmp_path / "fresh", "vanilla", compile=False).model.state_dict())
    assert list(ck["model"]) == eager_keys  # no "_orig_mod." or other wrapper prefix
    assert ck["config"]["compile"] is True
    eager = _trainer(comp.out, "vanilla", compile=False, resume=True)  # resumed with compile: false
    assert eager.cfg.compile is False
    assert all(layer._compiled_call_impl is None for layer in compiled_layers(eager.model))
    for name, value in comp.model.state_dict().items():
        assert torch.equal(eager.model.state_dict()[name], value), name
    nxt = batches[:2]
    np.testing.assert_allclose(_losses(eager, nxt), _losses(comp, nxt), rtol=RTOL)


def test_gated_compiled_gives_eager_losses_with_one_graph_per_kind_of_layer(tmp_path):
    comp, _, want, got, graphs = _run_pair(tmp_path, "gated")
    np.testing.assert_allclose(got, want, rtol=RTOL)
    # every encoder layer of the gated preset is syntactic: one graph for both, one for the decoder
    # layers, one for the loss (fewer where an earlier test of this process compiled them)
    assert {type(layer.self_attn).__name__ for layer in comp.model.encoder} == {"SyntacticSelfAttention"}
    assert graphs <= 3
    assert counters["recompiles"] == {}


@pytest.mark.parametrize("preset", ["gated", "pascal", "ldd", "ldd_parent", "sla", "slr", "lisa", "set"])
def test_every_syntax_source_layer_traces_as_one_graph_over_batch_shapes(tmp_path, preset):
    """Dynamo's tracing only (backend ``eager``: no code generation, fast): no graph break, no
    recompilation over the batch shapes, no guard error, and the eager model's outputs. PASCAL's heads
    take dropout 1 - (1-a)(1-p): with symbolic floats torch 2.13 failed its own guard on it. The
    paper presets' dropout rates are kept (the same random draws, in the same order, as eager)."""
    preset_dropout = {k: v for k, v in load_preset(f"{preset}_iwslt14_de_en").to_dict().items()
                      if k in SHRINK and "dropout" in k}
    tr = _trainer(tmp_path, preset, compile=False, **preset_dropout)
    assert tr.cfg.attention_dropout > 0
    batches = _batches(tr, 4)
    model = tr.model.train()

    def outputs() -> list[torch.Tensor]:
        torch.manual_seed(0)
        return [model(b)[0] for b in batches]

    want = outputs()
    torch._dynamo.reset()
    counters.clear()
    compile_model(model, backend="eager")
    got = outputs()
    assert counters["graph_break"] == {}, dict(counters["graph_break"])
    assert counters["recompiles"] == {}
    kinds = {type(layer.self_attn).__name__ for layer in model.encoder}
    assert counters["stats"]["unique_graphs"] == len(kinds) + 1  # encoder kinds + the decoder layer
    for w, g in zip(want, got, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)
