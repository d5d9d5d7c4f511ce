"""The new syntax sources (LISA, SLA, SET) overfit real Multi30k pairs on the CPU with the `tiny`
preset, like tests/test_train_overfit.py does for gated SLR (here through ``Trainer.train_step``,
the real update, without the per-epoch validation and checkpoints); LISA's supervised head also
learns to point at the parents it is trained on."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from synprep.train.config import load_preset, with_overrides
from synprep.train.data import RecordDataset
from synprep.train.loop import Trainer
from synprep.train.toydata import build_vocab, read_pairs, record_of_words

RUNS = {
    "lisa": {"syntax": "hard", "syntax_source": "lisa", "syntax_layers": [0], "syntax_heads": [0]},
    "sla": {"syntax": "gated", "syntax_source": "sla"},
    "set": {"syntax": "pure", "syntax_source": "set", "set_rel_dim": 16},
}
UPDATES = 160


@pytest.fixture(scope="module")
def data(shared_data):
    pairs = read_pairs(shared_data / "multi30k/train.de.gz", shared_data / "multi30k/train.en.gz", 64, "de", "en")
    symbols = build_vocab([w for pair in pairs for w in pair], split_len=7).symbols
    rng = np.random.default_rng(0)
    recs = [record_of_words(i + 1, [s[: len(s) // 2], s[len(s) // 2:]] if i % 10 == 0 else [s], t, symbols, rng)
            for i, (s, t) in enumerate(pairs)]
    return RecordDataset(recs), symbols


@pytest.mark.parametrize("name", sorted(RUNS))
def test_new_source_overfits(tmp_path, data, name):
    train, symbols = data
    cfg = with_overrides(load_preset("tiny"), {**RUNS[name], "max_tokens": 256, "gate_freeze_epochs": 0})
    tr = Trainer(cfg, train, train, symbols, tmp_path, torch.device("cpu"), progress=False)
    batches = list(tr.train_loader)
    assert 4 <= len(batches) <= 24

    @torch.no_grad()
    def evaluate() -> tuple[float, float]:
        """Training-set loss per target token (eval mode), LISA's head loss per source piece."""
        loss = tok = head = pieces = 0.0
        for b in batches:
            tr.model.eval()
            loss += float(tr._loss(tr.model, b)[0])
            tok += b.ntokens
            if name == "lisa":
                tr.model.train()  # LISA's loss is computed in training mode only (dropout is irrelevant here)
                torch.manual_seed(0)
                head += float(tr.model.encode(b).aux_loss)  # type: ignore[arg-type]
                pieces += int(b.syntax["lisa"]["real"].sum())
        return loss / tok, head / max(pieces, 1)

    loss0, head0 = evaluate()
    for step in range(UPDATES):
        tr.train_step([batches[step % len(batches)]])
    loss1, head1 = evaluate()
    assert loss1 < 0.25 * loss0, (loss0, loss1)
    if name == "lisa":
        assert head1 < 0.5 * head0, (head0, head1)  # the supervised head learned the parents
