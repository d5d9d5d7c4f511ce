"""Syntax sources declare their options: each spec's ``Options`` dataclass is the
one declaration; TrainConfig's source fields, SYNTAX_FIELDS and the ``--set`` keys are generated from
it; old flat configs (config.json, checkpoints, presets) load and build the same model."""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, fields
from typing import Any

import numpy as np
import pytest
import torch
from helpers import run_cli

from synprep.errors import ConfigError
from synprep.train.config import (
    SYNTAX_FIELDS,
    config_from_dict,
    model_elements,
    parse_override,
    resume_config,
)
from synprep.train.schema import GATE_FIELDS, SYNTAX_CORE, _with_source_options
from synprep.train.sources import SOURCES, source_options
from synprep.train.sources.specs import SourceSpec, source_option

#: a config.json in the layout with flat source fields (every source option away from its default),
#: and what the code that wrote that layout computed from it
OLD_CONFIG: dict[str, Any] = {
    "d_model": 32, "ffn_dim": 64, "heads": 4, "encoder_layers": 2, "decoder_layers": 1, "dropout": 0.3,
    "attention_dropout": 0.2, "activation_dropout": 0.0, "share_embeddings": True, "normalize_before": False,
    "max_positions": 1024, "syntax": "hard", "syntax_layers": [0], "syntax_heads": None,
    "syntax_source": [["set", "sla", "pascal", "slr"]], "slr_gaps": "nary", "slr_tau": 5.0, "slr_hard": None,
    "pascal_sigma": 2.0, "parent_ignore": 0.1, "ldd_labels": ["det", "amod", "nsubj", "obj"],
    "syntax_dropout": 0.0, "gate_hidden": 256, "gate_freeze_epochs": 0, "gate_batch_norm": False,
    "sla_threshold": 2, "lisa_variant": "sisa", "lisa_weight": 0.5, "set_max_path": 4, "set_rel_dim": 16,
    "set_max_depth": 8, "set_gate": "tanh", "lr": 0.007, "warmup_init_lr": 0.001, "warmup_updates": 4000,
    "adam_betas": [0.9, 0.98], "adam_eps": 1e-08, "weight_decay": 0.0001, "label_smoothing": 0.1,
    "clip_norm": 0.0, "max_tokens": 4096, "update_freq": 1, "max_epochs": 1, "max_steps": 0, "seed": 1,
    "bf16": False, "num_workers": 0, "threads": 0, "log_interval": 100, "save_interval_updates": 0,
    "keep_last_epochs": 0, "decode_bf16": False, "tf32": False, "attention_backend": "auto", "compile": False,
    "beam": 5, "lenpen": 1.0, "max_len_a": 0.0, "max_len_b": 200,
}
#: the same code's config.json of a LDD + SISA model (the sources the first one leaves unused)
OLD_CONFIG_LDD_SISA = {**OLD_CONFIG, "syntax_layers": [0, 1], "syntax_heads": [0], "syntax_source": [["ldd"], ["lisa"]],
                       "slr_gaps": "cnf", "slr_tau": 10.0, "pascal_sigma": 1.0, "parent_ignore": 0.0,
                       "sla_threshold": 3, "set_max_path": 3, "set_rel_dim": 64, "set_max_depth": 16,
                       "set_gate": "sigmoid"}
#: (config, describe(), model_elements(cfg, 50), parameters, sum and |sum| of the logits below), from the flat-layout code
OLD_RESULTS = [
    (OLD_CONFIG, "hard/pascal-s2+set-p4-tanh+sla-m2+slr-nary-tau5", 66848, 33184,
     71.07648572325706, 359.79220967181027),
    (OLD_CONFIG_LDD_SISA, "hard/ldd+sisa-w0.5", 64416, 30752, -19.192143142106943, 400.03745448600966),
]
#: SYNTAX_FIELDS of the flat-layout code (taken from TrainConfig's field order)
OLD_SYNTAX_FIELDS = ("syntax", "syntax_layers", "syntax_heads", "syntax_source", "slr_gaps", "slr_tau", "slr_hard",
                     "pascal_sigma", "parent_ignore", "ldd_labels", "syntax_dropout", "gate_hidden",
                     "gate_freeze_epochs", "gate_batch_norm", "sla_threshold", "lisa_variant", "lisa_weight",
                     "set_max_path", "set_rel_dim", "set_max_depth", "set_gate")


@pytest.mark.parametrize("old, described, elements, params, total, absolute", OLD_RESULTS,
                         ids=["set-sla-pascal-slr", "ldd-sisa"])
def test_an_old_flat_config_loads_unchanged_and_builds_the_same_model(old, described, elements, params, total,
                                                                      absolute):
    from synprep.train.data import Collater
    from synprep.train.model import Seq2Seq
    from synprep.train.toydata import build_vocab, record_of_words

    cfg = config_from_dict(json.loads(json.dumps(old)), "old config.json")
    # saved again: the same keys and values (config.json, checkpoints), and the defaults of the fields added since
    # (batch_order "target": the order every run before the field sorted its batches by, so a resume keeps it)
    assert cfg.to_dict() == {**old, "async_checkpoint": True, "cuda_graphs": False, "batch_order": "target"}
    assert resume_config(old, {"max_steps": 3}).max_steps == 3  # a checkpoint's config resumes
    assert cfg.describe() == described and model_elements(cfg, 50) == elements
    assert cfg.options("set").max_path == old["set_max_path"] and cfg.options("pascal").parent_ignore == old["parent_ignore"]
    rng = np.random.default_rng(1)
    sents = [["ein", "mann", "schläft"], ["zwei", "hunde", "rennen", "über", "eine", "wiese"], ["ja"]]
    vocab = build_vocab(sents, split_len=4)
    recs = [record_of_words(i + 1, [s], s, vocab.symbols, rng, split_len=4) for i, s in enumerate(sents)]
    torch.manual_seed(0)
    model = Seq2Seq(cfg, len(vocab)).eval()
    batch = Collater(sorted(cfg.sources_used()), cfg)(list(enumerate(recs)))
    with torch.no_grad():
        logits = model(batch)[0].double()
    assert sum(p.numel() for p in model.parameters()) == params
    assert float(logits.sum()) == pytest.approx(total, rel=1e-5)
    assert float(logits.abs().sum()) == pytest.approx(absolute, rel=1e-5)


def test_syntax_fields_are_the_sources_declarations():
    keys = [o.key for o in source_options()]
    assert SYNTAX_FIELDS == (*SYNTAX_CORE, *keys, *GATE_FIELDS)
    assert sorted(SYNTAX_FIELDS) == sorted(OLD_SYNTAX_FIELDS)  # the same keys as the flat-layout code, in a new order
    for name in SOURCES:  # every key is SOURCE_FIELD, except PASCAL's older parent_ignore
        for o in source_options((name,)):
            assert o.key == f"{name}_{o.name}" or (name, o.key) == ("pascal", "parent_ignore")


def test_every_source_option_is_a_set_key_and_printed():
    opts = source_options()
    assert {o.source for o in opts} == set(SOURCES) - {"ldd_parent"}  # ldd_parent has no options
    sets = []
    for o in opts:
        default = o.field.default if o.field.default is not MISSING else o.field.default_factory()  # type: ignore[misc]
        raw = json.dumps(default)
        assert parse_override(f"{o.source}.{o.name}={raw}") == (o.key, default)
        assert parse_override(f"{o.key}={raw}") == (o.key, default)
        sets += ["--set", f"{o.source}.{o.name}={raw}"]
    proc = run_cli("train", "--preset", "tiny", "--print-config", *sets, "--set", "sla.threshold=5",
                   "--set", "pascal.parent_ignore=0.25")
    printed = json.loads(proc.stdout)
    assert {o.key for o in opts} <= set(printed)
    assert printed["sla_threshold"] == 5 and printed["parent_ignore"] == 0.25


def test_an_unknown_source_key_names_the_valid_keys(tmp_path):
    for item in ("sla.window=3", "sla_window=3"):
        with pytest.raises(ConfigError, match=r"unknown key '(sla.window|sla_window)'; the options of syntax "
                                              r"source 'sla' are sla_threshold$"):
            parse_override(item)
    with pytest.raises(ConfigError, match="set_max_path, set_rel_dim, set_max_depth, set_gate"):
        config_from_dict({"set_gates": "tanh"})
    with pytest.raises(ConfigError, match="unknown syntax_source 'slx'; choose one of slr, pascal"):
        parse_override("slx.tau=3")
    with pytest.raises(ConfigError, match="'ldd_parent' has no options"):
        parse_override("ldd_parent.sigma=3")
    proc = run_cli("train", "--preset", "tiny", "--print-config", "--set", "pascal.sigmaa=2", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "the options of syntax source 'pascal' are pascal_sigma, parent_ignore" in proc.stderr


class ToySpec(SourceSpec):
    """A source with one option, declared once (its ``Options`` field)."""

    name = "toy"

    @dataclass
    class Options:
        scale: float = source_option(0.5, help="a toy option")


def test_a_source_option_is_one_field_of_its_options(monkeypatch):
    monkeypatch.setitem(SOURCES, "toy", f"{__name__}:ToySpec")
    (opt,) = source_options(("toy",))
    assert (opt.key, opt.type, opt.field.default) == ("toy_scale", float, 0.5)

    @dataclass
    @_with_source_options
    class Config:  # what TrainConfig's definition does with the registry (at import)
        syntax_source: Any = "slr"
        lr: float = 1.0

    names = [f.name for f in fields(Config)]
    assert names[0] == "syntax_source" and names[-1] == "lr" and "toy_scale" in names and "sla_threshold" in names
    assert Config().toy_scale == 0.5  # type: ignore[attr-defined]
    assert ToySpec.options_of(Config(toy_scale=2.0)).scale == 2.0  # type: ignore[call-arg]
