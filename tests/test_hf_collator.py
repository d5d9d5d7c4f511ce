"""``synprep.hf.SyntaxCollator``: rows of ``export --format hf`` (loaded by the real ``datasets``) give the
batches synprep's trainer builds from the shards, and a plain PyTorch training step runs on them.

Real data: the 8-line IWSLT14 sample parsed by the real stanza models (tests/iwslt_sample.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers import ROOT, run_cli

from synprep.hf import SyntaxCollator
from synprep.shards import SplitReader, open_split
from synprep.train.data import Collater
from synprep.train.sources import SOURCES
from tests.iwslt_sample import N_LINES, Sample, iwslt_sample

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sample(tmp_path_factory, shared_data: Path, stanza_dir: Path) -> Sample:
    return iwslt_sample(tmp_path_factory, shared_data, stanza_dir)


@pytest.fixture(scope="module")
def hf_export(sample: Sample, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("hf") / "export"
    run_cli("export", str(sample.shards), "--format", "hf", "--to", str(dest))
    return dest


@pytest.fixture(scope="module")
def rows(hf_export: Path):
    from datasets import load_dataset

    return load_dataset(str(hf_export), cache_dir=str(hf_export.parent / "cache"))["train"]


def _flat(value, path="") -> dict:
    """Every tensor or number of a source's collated data, by its path."""
    if isinstance(value, torch.Tensor | int | float):
        return {path: value if isinstance(value, torch.Tensor) else torch.tensor(value)}
    items = value.items() if isinstance(value, dict) else enumerate(value)
    return {k: v for key, sub in items for k, v in _flat(sub, f"{path}/{key}").items()}


def test_collator_batches_equal_synprep_batches(sample: Sample, rows) -> None:
    recs = list(SplitReader(open_split(sample.shards, "train")))
    assert [r["line"] for r in rows] == [int(r.line) for r in recs] and len(recs) == N_LINES
    names = list(SOURCES)
    for pick in ([2, 0, 5], list(range(N_LINES))):  # the rows' order is the batch's; padding side and length follow
        got = SyntaxCollator(names)([rows[i] for i in pick])
        want = Collater(names)([(k, recs[i]) for k, i in enumerate(pick)])
        assert got.src_padded == want.src_padded and got.ntokens == want.ntokens
        for field in ("ids", "src_tokens", "src_lengths", "prev_tokens", "target"):
            a, b = getattr(got, field), getattr(want, field)
            assert a.dtype == b.dtype and torch.equal(a, b), field
        assert got.src_tokens[0, -1] == 1 or got.src_tokens.shape[1] == len(recs[pick[0]].src_ids) + 1  # right pad
        flat_got, flat_want = _flat(got.syntax), _flat(want.syntax)
        assert sorted(flat_got) == sorted(flat_want) and {k.split("/")[1] for k in flat_got} == set(names)
        for key, b in flat_want.items():
            a = flat_got[key]
            assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), key


def page_block(heading: str, lang: str) -> str:
    """The first ```LANG block after ``heading`` in docs/export.md."""
    text = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    return text[text.index(heading):].split(f"```{lang}\n", 1)[1].split("```", 1)[0]


def test_plain_pytorch_training_step_over_the_collator(hf_export: Path, capsys) -> None:
    """docs/export.md "batches for your own loop" runs as written, on the sample's export."""
    code = page_block("## Batches for your own loop", "python")
    exec(compile(code, "docs/export.md", "exec"), {"DEST": str(hf_export)})  # noqa: S102 - the page's own code
    losses = [float(line.split()[-1]) for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert len(losses) == 20 and sum(losses[-5:]) < sum(losses[:5]) - 5.0, losses
