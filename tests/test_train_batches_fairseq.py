"""The trainer's batches are cut as REAL fairseq cuts them (fairseq-fixed 0.12.3.1's
``data_utils.batch_by_size``), ordered as :class:`~synprep.train.data.BucketBatchSampler` says, and with
``batch_order: source`` are fairseq's own batches.

fairseq runs in its own venv (``make fairseq-venv``; tests/test_export_fairseq.py): locally the test
skips when it is missing, under CI (``CI=true``) it fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from synprep.train.data import BucketBatchSampler
from tests.test_export_fairseq import fairseq, venv  # noqa: F401 - venv: the fixture (ready, or missing())

pytestmark = pytest.mark.slow

CUT = """
import json, sys
import numpy as np
import torch
from fairseq.data import Dictionary, LanguagePairDataset, data_utils
out = []
for q in json.load(sys.stdin):
    if "order" in q:  # our order, cut by batch_by_size
        sizes = np.asarray(q["sizes"])
        cut = data_utils.batch_by_size(np.asarray(q["order"], dtype=np.int64), num_tokens_fn=lambda i: sizes[i],
                                       max_tokens=q["max_tokens"], required_batch_size_multiple=1)
    else:  # fairseq's own: the dataset's ordered_indices (unshuffled), then its batch_by_size
        d = Dictionary()
        src, tgt = np.asarray(q["src_sizes"]), np.asarray(q["tgt_sizes"])
        ds = LanguagePairDataset([torch.zeros(int(n), dtype=torch.long) for n in src], src, d,
                                 [torch.zeros(int(n), dtype=torch.long) for n in tgt], tgt, d, shuffle=False)
        cut = ds.batch_by_size(ds.ordered_indices(), max_tokens=q["max_tokens"], required_batch_size_multiple=1)
    out.append([b.tolist() for b in cut])
print(json.dumps(out))
"""


def fairseq_batches(venv: Path, queries: list[dict]) -> list[list[list[int]]]:  # noqa: F811 - the fixture's value
    """fairseq's batches per query: of its ``order`` (dataset indices) with ``sizes`` (per index), or, given
    ``src_sizes`` and ``tgt_sizes`` instead, of a ``LanguagePairDataset``'s own unshuffled order; ``max_tokens``."""
    proc = fairseq(venv, venv / "bin" / "python", "-c", CUT, timeout=300, input=json.dumps(queries))
    return json.loads(proc.stdout.splitlines()[-1])


def test_batches_are_cut_as_fairseq_batch_by_size_cuts_them(shared_data, venv):  # noqa: F811 - the fixture
    """IWSLT14 valid's piece counts, unshuffled, at 3 budgets: laid end to end the batches are sorted by
    (target size, source size) (``batch_order: target``) and fairseq's batch_by_size over that order
    returns them; with ``batch_order: source`` they are fairseq's own (``LanguagePairDataset``'s
    ``ordered_indices`` and ``batch_by_size``), and most have sources of one length."""
    folder = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    src = np.array([len(line.split()) for line in (folder / "valid.de").read_text(encoding="utf-8").splitlines()])
    tgt = np.array([len(line.split()) for line in (folder / "valid.en").read_text(encoding="utf-8").splitlines()])
    budgets, queries, expected = (256, 4096, 16384), [], []
    for max_tokens in budgets:
        s = BucketBatchSampler(src, tgt, max_tokens, shuffle=False)
        ours = s.global_batches(0)
        order = [i for b in ours for i in b]
        assert len(order) == len(src) - s.skipped and len(ours) > 1
        keys = list(zip(s.tgt_sizes[order].tolist(), s.src_sizes[order].tolist(), order, strict=True))
        assert keys == sorted(keys)  # (target, source) size, ties in index order (a stable sort)
        queries.append({"order": order, "sizes": s.sizes.tolist(), "max_tokens": max_tokens})
        expected.append(ours)
    for max_tokens in budgets:
        s = BucketBatchSampler(src, tgt, max_tokens, shuffle=False, order="source")
        assert s.skipped == 0
        queries.append({"src_sizes": s.src_sizes.tolist(), "tgt_sizes": s.tgt_sizes.tolist(), "max_tokens": max_tokens})
        expected.append(s.global_batches(0))
    assert np.mean([len(set(src[b])) == 1 for b in expected[3]]) > 0.5  # 256 tokens: one source length mostly
    for i, (theirs, ours) in enumerate(zip(fairseq_batches(venv, queries), expected, strict=True)):
        assert theirs == ours, ("target", "source")[i // 3] + f" order, {budgets[i % 3]} tokens"
