"""synprep's gated model inside REAL fairseq: ``--user-dir DEST/synprep_fairseq --arch synprep_…``.

fairseq runs in its own venv (tests/test_export_fairseq.py: skipped locally without it, a failure
under CI). Shown here: the plugin's model is synprep's own (the modules in the export are the
package's files byte for byte); with a synprep checkpoint's weights it gives the same encoder output,
gates and target log-probabilities as synprep's model on the same pairs, for the gated model and for
every syntax source; ``fairseq-train`` trains it on the export (gates logged, validation run) and
``fairseq-generate`` translates with the syntax (beam search, ``--remove-bpe``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from helpers import ROOT, run_cli

from synprep.export.fairseq_model import VENDOR_DIR, vendored_modules
from synprep.shards import SplitReader, open_split
from synprep.train.checkpoint import load_checkpoint, save_checkpoint
from synprep.train.config import config_from_dict, preset_data, system_overrides
from synprep.train.data import Collater
from synprep.train.model import Seq2Seq
from tests.iwslt_sample import N_LINES, Sample
from tests.test_export_fairseq import exported, fairseq, sample, venv  # noqa: F401 - module fixtures

pytestmark = pytest.mark.slow

#: the systems checked besides the trained gated SLR model (``train --system`` names)
SYSTEMS = ("pascal", "ldd", "ldd_parent", "lisa", "sla", "set", "gated-pascal", "gated-ldd")
#: the plugin's and synprep's model run the same operations on the same CPU: equal to float32 rounding
ATOL = 1e-5

#: what tests/test_fairseq_model.py and docs/export.md run: the gated model, synprep's tiny preset
TRAIN_ARGS = ("--task", "syntax_translation", "-s", "en", "-t", "de", "--arch", "synprep_gated_transformer_iwslt_de_en",
              "--synprep-preset", "tiny", "--criterion", "synprep_label_smoothed_cross_entropy",
              "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "0.005", "--lr-scheduler", "inverse_sqrt",
              "--warmup-updates", "20", "--max-tokens", "400", "--max-update", "300", "--seed", "1",
              "--valid-subset", "train", "--validate-interval", "1000", "--no-epoch-checkpoints",
              "--log-format", "simple", "--log-interval", "100", "--required-batch-size-multiple", "1", "--cpu",
              "--num-workers", "0")
GENERATE_ARGS = ("--task", "syntax_translation", "-s", "en", "-t", "de", "--path", "CKPT/checkpoint_last.pt",
                 "--gen-subset", "train", "--beam", "4", "--remove-bpe", "--max-tokens", "4000",
                 "--required-batch-size-multiple", "1", "--cpu", "--num-workers", "0")


def test_plugin_modules_are_synprep_modules(exported: Path) -> None:  # noqa: F811
    vendor = exported / "synprep_fairseq" / VENDOR_DIR
    modules = vendored_modules()
    assert {"synprep.train.model", "synprep.train.attention", "synprep.train.gate", "synprep.train.masks",
            "synprep.train.sources.ldd"} <= set(modules)
    copied = sorted(p.relative_to(vendor).as_posix() for p in vendor.rglob("*.py") if "presets" not in p.parts)
    assert copied == sorted(f"synprep/{p.relative_to(ROOT / 'synprep').as_posix()}" for p in modules.values())
    for path in modules.values():
        assert (vendor / "synprep" / path.relative_to(ROOT / "synprep")).read_bytes() == path.read_bytes()


def test_a_module_needing_more_than_torch_and_numpy_is_refused(monkeypatch) -> None:
    from synprep.export import fairseq_model

    monkeypatch.setattr(fairseq_model, "ROOTS", (*fairseq_model.ROOTS, "synprep.shards.invariants"))
    with pytest.raises(RuntimeError, match=r"invariants\.py: imports h5py, which the fairseq plugin cannot have"):
        vendored_modules()


def test_export_replaces_the_copied_modules_and_never_follows_a_link_there(tmp_path: Path) -> None:
    from synprep.shards.synthetic import write_folder

    shards = tmp_path / "shards"
    write_folder(shards, {"train": 12}, shard_size=100)
    dest = tmp_path / "export"
    run_cli("export", str(shards), "--format", "fairseq", "--to", str(dest))
    vendor = dest / "synprep_fairseq" / VENDOR_DIR
    (vendor / "synprep" / "stale.py").write_text("raise ImportError\n")
    run_cli("export", str(shards), "--format", "fairseq", "--to", str(dest))
    assert not (vendor / "synprep" / "stale.py").exists() and (vendor / "synprep" / "train" / "model.py").is_file()
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(vendor)
    vendor.symlink_to(outside, target_is_directory=True)
    run_cli("export", str(shards), "--format", "fairseq", "--to", str(dest))
    assert list(outside.iterdir()) == [] and not vendor.is_symlink() and (vendor / "synprep" / "types.py").is_file()


def _random_checkpoint(system: str, symbols: list[str], path: Path) -> Path:
    data = {k: v for k, v in preset_data("tiny").items() if not k.startswith("_")}
    cfg = config_from_dict({**data, **system_overrides(system)}, system)
    torch.manual_seed(len(system))
    model = Seq2Seq(cfg, len(symbols))
    save_checkpoint(path, {"config": cfg.to_dict(), "symbols": symbols, "model": model.state_dict()})
    return path


def _synprep_outputs(path: Path, shards: Path):
    ck = load_checkpoint(path)
    model = Seq2Seq(config_from_dict(ck["config"]), len(ck["symbols"])).eval()
    model.load_state_dict(ck["model"])
    batch = Collater.for_model(model)(list(enumerate(SplitReader(open_split(shards, "train")))))
    with torch.no_grad():
        enc = model.encode(batch)
        lp = torch.log_softmax(model.decode(batch.prev_tokens, enc), -1)
    return batch, enc, lp.gather(2, batch.target[:, :, None])[:, :, 0]


def test_fairseq_model_equals_synprep_model(venv: Path, sample: Sample, exported: Path,  # noqa: F811
                                            tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_cli("train", "--shards", str(sample.shards), "--preset", "tiny", "--max-steps", "5", "--valid-split", "train",
            "--out", str(run))
    trained = run / "checkpoint_last.pt"
    symbols = load_checkpoint(trained)["symbols"]
    checkpoints = [trained] + [_random_checkpoint(s, symbols, tmp_path / f"{s}.pt") for s in SYSTEMS]
    out = tmp_path / "fairseq.pt"
    fairseq(venv, venv / "bin" / "python", ROOT / "tests" / "fairseq_parity.py", exported, "en", "de", out, *checkpoints)
    got = torch.load(out, weights_only=True)
    _check_configs(got.pop("configs"))
    for path in checkpoints:
        batch, enc, lp = _synprep_outputs(path, sample.shards)
        fs = got[str(path)]
        assert sorted(fs["id"].tolist()) == list(range(N_LINES))
        assert sorted(fs["gates"]) == sorted(str(k) for k in enc.gates), path.name
        for row, i in enumerate(fs["id"].tolist()):
            n, u = int(batch.src_lengths[i]), int(batch.target[i].ne(1).sum())
            assert not fs["pad"][row, :n].any() and fs["pad"][row, n:].all()
            torch.testing.assert_close(fs["x"][row, :n], enc.x[i, :n], atol=ATOL, rtol=0)
            for k, g in enc.gates.items():
                torch.testing.assert_close(fs["gates"][str(k)][row], g[i], atol=ATOL, rtol=0)
            assert fs["target"][row, :u].tolist() == batch.target[i, :u].tolist()
            torch.testing.assert_close(fs["target_lp"][row, :u], lp[i, :u], atol=ATOL, rtol=0)


def _check_configs(configs: dict) -> None:
    """The model options resolve as ``synprep train``'s --preset/--system/--set would (tests/fairseq_parity.py)."""
    iwslt, plain, pascal = configs["iwslt"], configs["plain"], configs["pascal"]
    want = {k: v for k, v in preset_data("gated_iwslt14_de_en").items() if not k.startswith("_")}
    assert {k: iwslt[k] for k in want} == want
    assert (plain["d_model"], plain["ffn_dim"], plain["heads"], plain["normalize_before"]) == (512, 2048, 8, True)
    assert {k: plain[k] for k in want if k not in ("ffn_dim", "heads")} == {k: v for k, v in want.items()
                                                                           if k not in ("ffn_dim", "heads")}
    assert (pascal["syntax_source"], pascal["d_model"], pascal["encoder_layers"], pascal["dropout"]) == ("pascal", 64, 3,
                                                                                                        0.2)
    assert (pascal["pascal_sigma"], pascal["syntax_heads"]) == (2.0, [0, 1])
    assert configs["refused"] == {"error": "--synprep-checkpoint takes the configuration from the checkpoint: drop "
                                           "--encoder-layers"}


def test_fairseq_trains_and_generates_with_the_gated_model(venv: Path, exported: Path,  # noqa: F811
                                                           tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    proc = fairseq(venv, venv / "bin" / "fairseq-train", exported, "--user-dir", exported / "synprep_fairseq",
                   *TRAIN_ARGS, "--save-dir", ckpt)
    log = proc.stdout + proc.stderr
    lines = [ln for ln in log.splitlines() if "train_inner" in ln or "valid on" in ln or "done training" in ln]
    print("\n".join(lines))  # the run's record in CI's log (pytest -rP)
    assert "num_updates=300" in lines[-3] and "gate0=" in lines[-3] and "gate1=" in lines[-3]
    valid = [ln for ln in lines if "valid on 'train' subset" in ln]
    assert valid and "gate0 " in valid[-1]
    final_loss = float(valid[-1].split("| loss ")[1].split()[0])
    assert final_loss < 2.5, valid[-1]  # from ~9.7 at update 1: it learnt the 8 pairs
    args = [str(ckpt / "checkpoint_last.pt") if a == "CKPT/checkpoint_last.pt" else a for a in GENERATE_ARGS]
    gen = fairseq(venv, venv / "bin" / "fairseq-generate", exported, "--user-dir", exported / "synprep_fairseq", *args)
    hyps = [ln for ln in gen.stdout.splitlines() if ln.startswith("H-")]
    bleu = [ln for ln in gen.stdout.splitlines() + gen.stderr.splitlines() if "BLEU4 =" in ln]
    print("\n".join(hyps + bleu))
    assert len(hyps) == N_LINES and "@@" not in "".join(hyps)
    assert float(bleu[0].split("BLEU4 = ")[1].split(",")[0]) > 30, bleu


def test_the_page_runs_the_commands_of_this_test() -> None:
    """docs/export.md "train the gated model with fairseq" shows the commands the test above runs."""
    text = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    block = text[text.index("#### Train the gated model with fairseq"):].split("```sh\n", 1)[1].split("```", 1)[0]
    train, generate = block.splitlines()
    assert train == " ".join(("fairseq-train DEST --user-dir DEST/synprep_fairseq", *TRAIN_ARGS, "--save-dir CKPT"))
    assert generate == " ".join(("fairseq-generate DEST --user-dir DEST/synprep_fairseq", *GENERATE_ARGS))
