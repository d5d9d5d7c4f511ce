"""Presets: each shipped JSON matches the values listed in EXPECTED, cites a source for every
value that differs from the defaults, and resolves through ``synprep train --print-config``; the
old name warns; configs are type-checked and size-bounded on load."""

from __future__ import annotations

import json
import logging

import pytest
import torch
from click.testing import CliRunner
from helpers import run_cli

from synprep.cli import cli
from synprep.errors import ConfigError
from synprep.train.config import (
    LIMITS,
    MAX_MODEL_ELEMENTS,
    MAX_POSITIONS,
    TrainConfig,
    check_model_size,
    config_from_dict,
    load_config,
    load_preset,
    preset_data,
    preset_names,
    with_overrides,
)

#: the gated paper's IWSLT14 De-En setup every re-implemented baseline shares (§5.1; the reference
#: architecture distance_transformer_iwslt_de_en: pre-norm, ReLU dropout 0.1)
PAPER_SETUP = {"d_model": 512, "ffn_dim": 1024, "heads": 4, "encoder_layers": 6, "decoder_layers": 6,
               "dropout": 0.3, "attention_dropout": 0.2, "activation_dropout": 0.1, "normalize_before": True,
               "lr": 0.007, "warmup_init_lr": 0.001, "warmup_updates": 4000, "beam": 5, "lenpen": 1.0,
               "keep_last_epochs": 10}
#: what each preset must hold (fields → values)
EXPECTED = {
    "gated_iwslt14_de_en": {"normalize_before": True, "activation_dropout": 0.1, "gate_freeze_epochs": 80,
                            "syntax": "gated", "syntax_source": "slr", "syntax_dropout": 0.4, "slr_tau": 10.0,
                            "d_model": 512, "ffn_dim": 1024, "heads": 4, "lr": 0.007, "warmup_init_lr": 0.001,
                            "warmup_updates": 4000, "keep_last_epochs": 10},
    "vanilla_iwslt14_de_en": {"syntax": "vanilla", "normalize_before": True, "ffn_dim": 1024,
                              "activation_dropout": 0.1},
    "vanilla_iwslt14_de_en_ffn512": {"syntax": "vanilla", "normalize_before": True, "ffn_dim": 512,
                                     "activation_dropout": 0.0, "warmup_updates": 6000, "warmup_init_lr": 1e-7},
    "slr_iwslt14_de_en": {"syntax": "hard", "syntax_layers": [0], "syntax_heads": [0, 1, 2, 3],
                          "syntax_source": "slr", "syntax_dropout": 0.0, "slr_hard": None, "slr_tau": 10.0,
                          "lr": 0.001, "warmup_updates": 4000, "warmup_init_lr": 1e-7, "normalize_before": True,
                          "keep_last_epochs": 10},
    # the syntax-source baselines: the gated paper's IWSLT14 setup (it re-implemented them there, §5.2
    # / Table 3: pre-norm reference architecture, ReLU dropout 0.1, §5.1 optimisation) and each
    # source placed and regularised as its own paper says
    # PASCAL §3: PASCAL heads replace the self-attention heads of the first layer ("the same number
    # of attention heads as other layers"), no gate; σ = 1 (§3, Table 7(b)); parent ignoring is not
    # in its Table 2 for IWSLT (0), and parent ignoring is its only regulariser (no syntax dropout)
    "pascal_iwslt14_de_en": {"syntax": "hard", "syntax_source": "pascal", "syntax_layers": [0],
                             "syntax_heads": None, "pascal_sigma": 1.0, "parent_ignore": 0.0,
                             "syntax_dropout": 0.0, **PAPER_SETUP},
    # LDD, Method: the LDD "into the first layer of the encoder", one label's matrix per head,
    # multiplying the scores (no gate); no dropout on the infused attention
    "ldd_iwslt14_de_en": {"syntax": "hard", "syntax_source": "ldd", "syntax_layers": [0], "syntax_heads": None,
                          "ldd_labels": ["nsubj", "obj", "amod", "det"], "syntax_dropout": 0.0, **PAPER_SETUP},
    # LDD, Results: the "1-best unlabeled dependency parse" system, infused like LDD (layer 0, no gate)
    "ldd_parent_iwslt14_de_en": {"syntax": "hard", "syntax_source": "ldd_parent", "syntax_layers": [0],
                                 "syntax_heads": None, "syntax_dropout": 0.0, **PAPER_SETUP},
    # gated §5.2: LISA enforces "one attention head" with "an auxiliary L2 loss"; no gate; the first
    # layer (PASCAL §6: SISA, like PASCAL, works best there)
    "lisa_iwslt14_de_en": {"syntax": "hard", "syntax_source": "lisa", "syntax_layers": [0], "syntax_heads": [0],
                           "lisa_variant": "lisa", "lisa_weight": 1.0, "syntax_dropout": 0.0, **PAPER_SETUP},
    # gated §5.2: SLA's "naive gating network ... at each attention head of each layer", "without any
    # regularization": no BatchNorm, no pre-warmup, no syntax dropout
    "sla_iwslt14_de_en": {"syntax": "gated", "syntax_source": "sla", "syntax_layers": None, "syntax_heads": None,
                          "gate_batch_norm": False, "gate_freeze_epochs": 0, "syntax_dropout": 0.0,
                          "sla_threshold": 3, **PAPER_SETUP},
    # SET §2: the relation attention is every layer's self-attention (pure, G = 1); eq. 3's sigmoid
    # gate (the text says tanh); no dropout on it described
    "set_iwslt14_de_en": {"syntax": "pure", "syntax_source": "set", "syntax_layers": None, "syntax_heads": None,
                          "set_gate": "sigmoid", "set_max_path": 3, "set_rel_dim": 64, "set_max_depth": 16,
                          "syntax_dropout": 0.0, **PAPER_SETUP},
}
#: resolved placement {layer: source per head} of each source preset (6 layers, 4 heads)
PLACEMENT = {
    "pascal_iwslt14_de_en": {0: ["pascal"] * 4},
    "ldd_iwslt14_de_en": {0: ["ldd"] * 4},
    "ldd_parent_iwslt14_de_en": {0: ["ldd_parent"] * 4},
    "lisa_iwslt14_de_en": {0: ["lisa", None, None, None]},  # one supervised head in one layer
    "sla_iwslt14_de_en": {layer: ["sla"] * 4 for layer in range(6)},
    "set_iwslt14_de_en": {layer: ["set"] * 4 for layer in range(6)},
}
#: every IWSLT14 paper preset takes 16384 tokens per update (max_tokens × update_freq)
TOKENS_PER_UPDATE = {name: 16384 for name in EXPECTED}


def _print_config(*args: str) -> dict:
    res = CliRunner().invoke(cli, ["train", *args, "--print-config"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_print_config_of_each_paper_preset_matches_its_expected_values(name):
    got = _print_config("--preset", name)
    for key, value in EXPECTED[name].items():
        assert got[key] == value, (name, key)
    assert got["max_tokens"] * got["update_freq"] == TOKENS_PER_UPDATE[name]
    assert set(got) == set(TrainConfig().to_dict())  # the full resolved config, metadata left out
    assert config_from_dict(got).to_dict() == got  # and it loads back as a --config file


def test_every_iwslt14_paper_preset_keeps_the_last_10_epochs_for_averaging():
    # gated-syntax-attention Tables 4-6 average the last 10 epochs: translate --average-last 10 needs
    # checkpoint{EPOCH}.pt of the last 10 epochs in every run it compares, baselines included
    names = [n for n in preset_names() if n.endswith("_iwslt14_de_en") and "_alias" not in preset_data(n)]
    assert len(names) == 9
    for name in names:
        assert load_preset(name).keep_last_epochs == 10, name


def test_slr_preset_places_syntax_in_layer_0_only():
    assert load_preset("slr_iwslt14_de_en").head_sources() == {0: ["slr"] * 4}


@pytest.mark.parametrize("name", sorted(PLACEMENT))
def test_source_preset_places_its_heads_as_its_paper_does(name):
    got = _print_config("--preset", name)
    assert config_from_dict(got).head_sources() == PLACEMENT[name]


def test_old_name_warns_through_the_cli_and_prints_the_gated_preset():
    proc = run_cli("train", "--preset", "iwslt14_de_en", "--print-config")
    assert json.loads(proc.stdout) == _print_config("--preset", "gated_iwslt14_de_en")
    assert "preset iwslt14_de_en is an old name: loading gated_iwslt14_de_en" in proc.stderr
    assert "--set normalize_before=false" in proc.stderr  # how to get the old setup back
    quiet = run_cli("train", "--preset", "gated_iwslt14_de_en", "--print-config")
    assert "old name" not in quiet.stderr


@pytest.mark.parametrize("name", preset_names())
def test_every_changed_value_cites_its_source(name):
    data = preset_data(name)
    if "_alias" in data:
        return
    defaults = TrainConfig().to_dict()
    changed = {k for k, v in data.items() if not k.startswith("_") and defaults[k] != v}
    cite = data.get("_cite", {})
    assert changed <= set(cite), sorted(changed - set(cite))
    assert set(cite) <= set(defaults), sorted(set(cite) - set(defaults))  # no cite for a non-field
    assert all(isinstance(v, str) and len(v) > 10 for v in cite.values())
    assert data.get("_description")


def test_old_name_is_an_alias_that_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="synprep.train"):
        old = load_preset("iwslt14_de_en")
    assert old == load_preset("gated_iwslt14_de_en")
    assert "old name" in caplog.text and "gated_iwslt14_de_en" in caplog.text


def test_print_config_applies_overrides_and_train_help_lists_every_preset():
    got = _print_config("--preset", "cpu_small", "--set", "syntax=vanilla", "--seed", "7")
    assert (got["syntax"], got["seed"], got["d_model"]) == ("vanilla", 7, 128)
    help_text = CliRunner().invoke(cli, ["train", "--help"], terminal_width=500).output
    for name in preset_names():
        assert name in help_text


def test_config_files_may_carry_metadata_keys(tmp_path):
    (tmp_path / "c.json").write_text('{"_description": "mine", "_cite": {"heads": "me"}, "heads": 8}')
    assert load_config(tmp_path / "c.json").heads == 8


@pytest.mark.parametrize(("data", "message"), [
    ({"d_model": 1000000}, "d_model = 1000000 is above the limit"),
    ({"heads": "4"}, "heads must be int, got '4' (str)"),
    ({"dropout": "0.1"}, "dropout must be float"),
    ({"share_embeddings": 1}, "share_embeddings must be bool"),
    ({"d_model": True}, "d_model must be int"),
    ({"lr": float("nan")}, "lr must be float"),
    ({"syntax_layers": [0, "1"]}, "syntax_layers must be list[int] | None"),
    ({"max_tokens": 0}, "max_tokens must be >= 1"),
    ({"log_interval": 0}, "log_interval must be >= 1"),
    ({"seed": -1}, "seed must be >= 0"),
    ({"d_model": 16384, "ffn_dim": 65536, "encoder_layers": 128}, "elements without its embeddings (limit"),
    ({"max_positions": 1 << 20}, f"max_positions = 1048576 is above the limit {MAX_POSITIONS}"),
    ({"d_model": 8192, "heads": 8, "max_positions": MAX_POSITIONS, "encoder_layers": 1, "decoder_layers": 1,
      "ffn_dim": 8}, "elements without its embeddings (limit"),  # the position table alone: 2^27 elements
    ({"syntax": "pure", "syntax_source": "set", "set_max_path": 1 << 16}, "set_max_path = 65536 is above"),
    ({"syntax": ["gated"]}, "syntax must be str"),
    # resolved before validate() ran: an IndexError traceback (found by benchmarks/fuzz.py)
    ({"syntax_heads": [4]}, "syntax_heads must be distinct 0-based indices below 4, got [4]"),
    ({"syntax_layers": [6], "syntax_heads": [0]}, "syntax_layers must be distinct 0-based indices below 6"),
])
def test_hostile_configs_are_one_line_errors(tmp_path, data, message):
    with pytest.raises(ConfigError) as e:
        config_from_dict(data, "c.json")
    assert message in str(e.value) and str(e.value).startswith("c.json: ") and "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="above the limit|must be"):
        with_overrides(load_preset("tiny"), {"d_model": 10**9})


def test_cli_rejects_a_huge_config_with_exit_2(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps({"d_model": 1000000, "ffn_dim": 4000000}))
    proc = run_cli("train", "--shards", str(tmp_path), "--config", str(tmp_path / "c.json"),
                   "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"synprep: error: {tmp_path / 'c.json'}: d_model = 1000000 is above the limit " \
                                  f"{LIMITS['d_model'][1]}"
    assert not (tmp_path / "o").exists()


# --- the size bound counts everything the model allocates -------------------------
SMALL = {"d_model": 24, "ffn_dim": 40, "heads": 4, "encoder_layers": 3, "decoder_layers": 2, "gate_hidden": 12,
         "max_positions": 37}
#: one small config per syntax source (and the architecture switches: shared embeddings, pre-norm,
#: the gate's BatchNorm, constant gates, SISA's bilinear operator, SET's tables)
SIZED = {
    "vanilla": {"syntax": "vanilla", "share_embeddings": False},
    "slr": {"syntax": "gated", "syntax_source": "slr", "normalize_before": True},
    "slr-hard": {"syntax": "hard", "syntax_source": "slr", "syntax_layers": [1], "syntax_heads": [0, 2]},
    "pascal": {"syntax": "avg", "syntax_source": "pascal", "share_embeddings": False},
    "ldd": {"syntax": "gated", "syntax_source": "ldd", "syntax_layers": [0, 2], "gate_batch_norm": False},
    "ldd_parent": {"syntax": "hard", "syntax_source": "ldd_parent"},
    "lisa": {"syntax": "hard", "syntax_source": "lisa", "syntax_layers": [2], "syntax_heads": [1],
             "lisa_variant": "sisa"},
    "lisa-l2": {"syntax": "pure", "syntax_source": "lisa", "syntax_layers": [0], "syntax_heads": [3]},
    "sla": {"syntax": "gated", "syntax_source": "sla", "gate_batch_norm": False, "normalize_before": True},
    "set": {"syntax": "pure", "syntax_source": "set", "syntax_heads": [0, 1, 3], "set_max_path": 5,
            "set_rel_dim": 6, "set_max_depth": 7},
    "mixed": {"syntax": "gated", "syntax_layers": [0, 1],
              "syntax_source": [["slr", "pascal", "set", "sla"], "set"], "syntax_dropout": 0.1,
              "gate_freeze_epochs": 0, "gate_batch_norm": True},
}


def _allocated(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in model.buffers())


def test_sized_configs_cover_every_source():
    from synprep.train.sources import SOURCES

    used = set().union(*(config_from_dict({**SMALL, **extra}).sources_used() for extra in SIZED.values()))
    assert used == set(SOURCES)


@pytest.mark.parametrize("name", sorted(SIZED))
def test_model_elements_is_what_a_real_model_allocates(name):
    from synprep.train.config import model_elements
    from synprep.train.model import Seq2Seq

    cfg = config_from_dict({**SMALL, **SIZED[name]})
    model = Seq2Seq(cfg, 29)  # a real model on the CPU: every parameter and buffer allocated
    assert model_elements(cfg, 29) == _allocated(model)
    assert model.positions.numel() == (37 + 2) * 24  # the position table is counted


@pytest.mark.parametrize("name", [n for n in preset_names() if not preset_data(n).get("_alias")])
def test_model_elements_of_every_preset(name):
    from synprep.train.config import model_elements
    from synprep.train.model import Seq2Seq

    cfg = load_preset(name)
    with torch.device("meta"):  # the shapes, nothing allocated
        model = Seq2Seq(cfg, 10_004)
    assert model_elements(cfg, 10_004) == _allocated(model)


def test_realistic_big_models_pass_and_a_hostile_vocabulary_does_not():
    from synprep.train.config import model_elements
    from synprep.train.model import Seq2Seq

    check_model_size(load_preset("gated_iwslt14_de_en"), 40_000)
    big = config_from_dict({"d_model": 1024, "ffn_dim": 4096, "heads": 16, "encoder_layers": 6, "decoder_layers": 6,
                            "max_positions": 1024, "share_embeddings": False, "syntax": "gated"})
    check_model_size(big, 40_000)
    assert 0.45 < model_elements(big, 40_000) / MAX_MODEL_ELEMENTS < 0.6  # room above transformer-big, no more
    with pytest.raises(ConfigError, match=r"^model: the model would have 2,227,\d{3},\d{3} elements with a vocabulary "
                                          r"of 1000000 \(limit 536,870,912\)"):
        Seq2Seq(big, 1_000_000)  # refused before anything is allocated


def test_set_relation_count_in_closed_form_matches_the_enumeration():
    from synprep.train.sources.set import LABEL0, n_relations, path_ids
    from synprep.types import DEPRELS

    for p in range(0, 40):
        assert n_relations(p) == LABEL0 + 2 * len(DEPRELS) + len(path_ids(p))
        assert not path_ids(p) or max(path_ids(p).values()) == n_relations(p) - 1
