"""Checkpoints are loaded with ``weights_only=True`` (a crafted pickle must
not run), validated (keys, config types and bounds, vocabulary size, tensor shapes) before a model is
built; one-line errors, exit 2. Also ``synprep average`` (fairseq's semantics) and
``translate --average-last N``."""

from __future__ import annotations

import os
import pickle

import pytest
import torch
from builders import one_line, toy_shards
from helpers import run_cli

from synprep.errors import InputError
from synprep.train.checkpoint import (
    BEST,
    LAST,
    average_checkpoints,
    epoch_checkpoints,
    load_checkpoint,
    save_checkpoint,
    validate_checkpoint,
)
from synprep.train.config import load_preset, with_overrides
from synprep.train.data import RecordDataset
from synprep.train.decode import load_model
from synprep.train.loop import Trainer


@pytest.fixture(scope="module")
def run(shared_data, tmp_path_factory):
    """A tiny model trained 3 epochs with the last 2 epoch checkpoints kept, and its shards."""
    root = tmp_path_factory.mktemp("ckpt")
    vocab, recs = toy_shards(shared_data, root / "shards", {"train": 16, "test": 4})
    cfg = with_overrides(load_preset("tiny"), {"max_tokens": 512, "max_epochs": 3, "keep_last_epochs": 2,
                                               "threads": 1})
    Trainer(cfg, RecordDataset(recs[:16]), RecordDataset(recs[16:]), vocab.symbols, root / "run",
            torch.device("cpu"), progress=False).run()
    return root


class Payload:
    """Unpickling this runs a shell command that leaves a marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_payload_is_refused_and_never_runs(run, tmp_path):
    marker = tmp_path / "pwned"
    ck = load_checkpoint(run / "run" / BEST)
    ck["config"] = {**ck["config"], "evil": Payload(marker)}
    bad = tmp_path / "checkpoint_best.pt"
    with open(bad, "wb") as f:
        torch.save(ck, f)
    with pytest.raises(InputError, match="refused to load"):
        load_checkpoint(bad)
    err = one_line(run_cli("translate", "--checkpoint", str(bad), "--shards", str(run / "shards"),
                           "--split", "test", "-o", str(tmp_path / "hyp"), check=False), 2, alone=True)
    assert "refused to load" in err and str(bad) in err
    (tmp_path / "r").mkdir()
    os.replace(bad, tmp_path / "r" / LAST)
    one_line(run_cli("train", "--shards", str(run / "shards"), "--out", str(tmp_path / "r"), "--resume",
                     "--train-split", "test", "--valid-split", "test", check=False), 2, alone=True)
    assert not marker.exists()
    with open(tmp_path / "plain.pt", "wb") as f:  # a raw pickle (not a torch zip file) too
        pickle.dump(Payload(marker), f)
    with pytest.raises(InputError):
        load_checkpoint(tmp_path / "plain.pt")
    assert not marker.exists()


@pytest.mark.parametrize(("damage", "message"), [
    (lambda ck: ck.pop("model"), "no 'model' entry"),
    (lambda ck: ck.pop("config"), "no 'config' entry"),
    (lambda ck: ck.update(symbols=ck["symbols"] + ["extra1", "extra2"]), "a vocabulary of another size"),
    (lambda ck: ck.update(symbols="abc"), "'symbols' is a str"),
    (lambda ck: ck["config"].update(d_model=1000000), "d_model = 1000000 is above the limit"),
    # the position table is not stored: only its bound keeps an edited config from allocating GBs
    (lambda ck: ck["config"].update(max_positions=1 << 20), "max_positions = 1048576 is above the limit 16384"),
    (lambda ck: ck["config"].update(set_max_path=1 << 16), "set_max_path = 65536 is above the limit 64"),
    (lambda ck: ck["config"].update(heads="4"), "heads must be int"),
    (lambda ck: ck["model"].pop(next(iter(ck["model"]))), "model has no tensor"),
    (lambda ck: ck["model"].update(extra=torch.zeros(1)), "unexpected tensor 'extra'"),
    (lambda ck: ck["config"].update(d_model=128, ffn_dim=256), "does not match its config"),
])
def test_damaged_checkpoints_are_one_line_errors(run, tmp_path, damage, message):
    ck = load_checkpoint(run / "run" / BEST)
    damage(ck)
    ck.pop("format"), ck.pop("version")
    path = tmp_path / "c.pt"
    save_checkpoint(path, ck)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        validate_checkpoint(load_checkpoint(path), path)
    err = one_line(run_cli("translate", "--checkpoint", str(path), "--shards", str(run / "shards"),
                           "--split", "test", "-o", str(tmp_path / "hyp"), check=False), 2, alone=True)
    assert message in err and str(path) in err


def test_resume_state_damage_is_a_one_line_error(run, tmp_path):
    ck = load_checkpoint(run / "run" / LAST)
    ck["state"] = {**ck["state"], "bogus": 1}
    ck.pop("format"), ck.pop("version")
    (tmp_path / "r").mkdir()
    save_checkpoint(tmp_path / "r" / LAST, ck)
    with pytest.raises(InputError, match="damaged resume state"):
        Trainer(None, RecordDataset([]), RecordDataset([]), ck["symbols"], tmp_path / "r", torch.device("cpu"),
                resume=True)


def test_translate_refuses_shards_with_another_vocabulary(run, tmp_path, shared_data):
    toy_shards(shared_data, tmp_path / "other", {"test": 5}, files=("multi30k/val.de.gz", "multi30k/val.en.gz"))
    err = one_line(run_cli("translate", "--checkpoint", str(run / "run" / BEST), "--shards",
                           str(tmp_path / "other"), "--split", "test", "-o", str(tmp_path / "h"), check=False), 2, alone=True)
    assert "vocabulary" in err


def test_average_is_the_mean_of_the_last_epochs(run, tmp_path):
    kept = epoch_checkpoints(run / "run")
    assert [p.name for p in kept] == ["checkpoint2.pt", "checkpoint3.pt"]  # keep_last_epochs=2 pruned epoch 1
    a, b = (load_checkpoint(p) for p in kept)
    avg = average_checkpoints(kept)
    for k, v in a["model"].items():
        if v.is_floating_point():
            torch.testing.assert_close(avg["model"][k], ((v.double() + b["model"][k].double()) / 2).to(v.dtype))
        else:  # BatchNorm's num_batches_tracked: floor division, as fairseq's //=
            assert torch.equal(avg["model"][k], torch.div(v + b["model"][k], 2, rounding_mode="floor"))
    assert avg["state"] == a["state"] and avg["config"] == a["config"]  # fairseq keeps the first's metadata

    run_cli("average", str(run / "run"), "--last", "2", "-o", str(tmp_path / "avg.pt"))
    m_file, _, _ = load_model(tmp_path / "avg.pt")
    m_avg, _, _ = load_model(run / "run" / BEST, average=kept)
    for (k, x), (_, y) in zip(m_file.state_dict().items(), m_avg.state_dict().items(), strict=True):
        assert torch.equal(x, y), k
    out = run_cli("translate", "--checkpoint", str(run / "run" / BEST), "--shards", str(run / "shards"), "--split",
                  "test", "--average-last", "2", "--beam", "1")
    ref = run_cli("translate", "--checkpoint", str(tmp_path / "avg.pt"), "--shards", str(run / "shards"), "--split",
                  "test", "--beam", "1")
    assert out.stdout == ref.stdout and len(out.stdout.splitlines()) == 4  # (a 3-epoch model may say nothing)
    err = one_line(run_cli("translate", "--checkpoint", str(run / "run" / BEST), "--shards",
                           str(run / "shards"), "--split", "test", "--average-last", "3", check=False), 2, alone=True)
    assert "only 2 epoch checkpoint" in err
