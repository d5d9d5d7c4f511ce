"""The runtime policy: every attention_backend the CPU has gives math's outputs,
the others a clear error; `auto` keeps every call off cuDNN attention on CUDA (a plan per shape: 58k
against 205k tokens/s for vanilla on an H100); the policy is logged and recorded in config.json and metrics.jsonl; configs and checkpoints
written before these fields existed still load."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from synprep.errors import ConfigError
from synprep.shards.synthetic import random_records
from synprep.train import runtime
from synprep.train.checkpoint import LAST, load_checkpoint, save_checkpoint
from synprep.train.config import (
    ATTENTION_BACKENDS,
    TrainConfig,
    config_from_dict,
    load_config,
    load_preset,
    with_overrides,
)
from synprep.train.data import Collater, RecordDataset
from synprep.train.decode import load_model
from synprep.train.loop import Trainer
from synprep.train.model import Seq2Seq

NEW_FIELDS = ("decode_bf16", "tf32", "attention_backend", "compile", "cuda_graphs")
#: float32 outputs of a kernel against math's: the kernels sum in different orders
ATOL = 1e-5
CPU_BACKENDS = ("auto", "math", "flash")


def _records(n=24):
    return list(random_records(n, np.random.default_rng(0), words=8, tgt_len=10, vocab_size=300))


@pytest.mark.parametrize("over", [{"syntax": "vanilla"}, {"syntax_source": "slr"}, {"syntax_source": "pascal"},
                                  {"syntax_source": "sla"}, {"syntax": "pure", "syntax_source": "set"},
                                  {"syntax": "hard", "syntax_source": "lisa", "syntax_layers": [0], "syntax_heads": [0]}],
                         ids=lambda o: o.get("syntax_source", "vanilla"))
def test_every_cpu_backend_gives_maths_outputs(over):
    cfg = with_overrides(load_preset("tiny"), {**over, "syntax_dropout": 0.0})
    torch.manual_seed(0)
    model = Seq2Seq(cfg, 300).eval()
    batch = Collater.for_model(model)(list(enumerate(_records())))
    outs = {}
    for name in CPU_BACKENDS:
        with runtime.attention_backend(name), torch.no_grad():
            outs[name] = model(batch)[0]
    for name in CPU_BACKENDS:
        torch.testing.assert_close(outs[name], outs["math"], atol=ATOL, rtol=0)


@pytest.mark.parametrize("name", ["efficient", "cudnn"])
def test_cuda_kernels_are_refused_on_the_cpu(name):
    with pytest.raises(ConfigError, match=f"attention_backend {name} is a CUDA kernel"):
        runtime.set_attention_backend(name, "cpu")


def test_flex_and_unknown_backends_are_clear_errors():
    with pytest.raises(ConfigError, match="flex is not supported"):
        runtime.set_attention_backend("flex", "cpu")
    with pytest.raises(ConfigError, match="attention_backend must be one of"):
        TrainConfig(attention_backend="fast")
    assert set(ATTENTION_BACKENDS) == {"auto", "efficient", "flash", "cudnn", "math", "flex"}


def test_auto_on_cuda_keeps_every_call_off_cudnn(monkeypatch):
    """The kernels switched on while SDPA runs (read from torch's global flags, so this runs on the CPU)."""
    seen: list[tuple[bool, bool]] = []

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
        seen.append((attn_mask is not None, torch.backends.cuda.cudnn_sdp_enabled()))
        return v

    monkeypatch.setattr(runtime.F, "scaled_dot_product_attention", spy)
    q = torch.zeros(1, 1, 2, 4)
    policy = runtime.RuntimePolicy("cuda:0", None, None, False, "auto", False)
    saved = (runtime._masked, runtime._unmasked, torch.backends.cuda.matmul.allow_tf32)
    try:
        runtime.apply(policy)
        runtime.sdpa(q, q, q, attn_mask=torch.zeros(1, 1, 1, 2))
        runtime.sdpa(q, q, q, is_causal=True)
        runtime.apply(runtime.RuntimePolicy("cuda:0", None, None, False, "cudnn", False))
        runtime.sdpa(q, q, q, attn_mask=torch.zeros(1, 1, 1, 2))
    finally:
        runtime._masked, runtime._unmasked, torch.backends.cuda.matmul.allow_tf32 = saved
    assert seen == [(True, False), (False, False), (True, True)]
    assert torch.backends.cuda.cudnn_sdp_enabled()  # the scope ended with the call


def test_policy_is_logged_and_recorded(tmp_path, caplog):
    recs = _records(60)
    cfg = with_overrides(load_preset("tiny"), {"max_steps": 2, "log_interval": 1, "max_tokens": 256,
                                               "attention_backend": "math", "threads": 1})
    caplog.set_level("INFO", logger="synprep.train")
    Trainer(cfg, RecordDataset(recs[:50]), RecordDataset(recs[50:]), [f"p{i}" for i in range(300)], tmp_path,
            torch.device("cpu"), progress=False).run()
    want = {"device": "cpu", "train_autocast": None, "decode_autocast": None, "tf32": False,
            "attention_backend": "math", "compile": False, "cuda_graphs": False, "torch": torch.__version__}
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["_runtime"] == want and saved["attention_backend"] == "math"
    assert load_config(tmp_path / "config.json") == cfg  # the record is metadata: the config reads back
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["runtime"] for r in rows if "valid_loss" in r] == [want]
    assert "runtime: device cpu | autocast train off, decode off | tf32 off | attention math" in caplog.text
    runtime.set_attention_backend("auto")


def test_configs_and_checkpoints_without_the_runtime_fields_load(tmp_path):
    old = {k: v for k, v in TrainConfig().to_dict().items() if k not in NEW_FIELDS}
    (tmp_path / "config.json").write_text(json.dumps(old))
    cfg = load_config(tmp_path / "config.json")
    assert (cfg.attention_backend, cfg.compile, cfg.tf32, cfg.decode_bf16, cfg.cuda_graphs) == \
        ("auto", False, False, False, False)
    tiny = {k: v for k, v in load_preset("tiny").to_dict().items() if k not in NEW_FIELDS}
    model = Seq2Seq(config_from_dict(tiny), 300)
    save_checkpoint(tmp_path / LAST, {"config": tiny, "symbols": [f"p{i}" for i in range(300)],
                                      "model": model.state_dict(), "signature": "s", "data_signature": None})
    assert set(NEW_FIELDS).isdisjoint(load_checkpoint(tmp_path / LAST)["config"])
    loaded, lcfg, _ = load_model(tmp_path / LAST)
    assert lcfg.attention_backend == "auto"
    for a, b in zip(loaded.state_dict().values(), model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
