"""SLR: the syntactic local range mask of constituency distances (SPEC.md §3).

Hou et al. 2021 (distance-transformer-slr) §3; the gated paper's eq. 9. ``A_syn = softmax(s + log M)``:
the mask multiplies probabilities. ``log M`` (soft with temperature ``slr_tau``, or hard
``slr_hard`` = strict | nonstrict; gaps ``slr_gaps`` = cnf | nary) is built once per batch as a
(B, 1, T, T) SDPA bias that also carries the key padding. The ``</s>`` gap is 2000 (``GAP_EOS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from synprep.constants import GAP_EOS
from synprep.train.masks import slr_bias
from synprep.train.sources.base import AttendContext, SyntaxSource, bias_attention
from synprep.train.sources.specs import SLRSpec
from synprep.types import PairRecord


class SLR(SLRSpec, SyntaxSource):
    def collate(self, recs: Sequence[PairRecord], T: int) -> torch.Tensor:
        """(B, T-1) float32 gaps, ``GAP_EOS`` between the last piece and ``</s>``, 0 under padding."""
        gaps = np.zeros((len(recs), max(T - 1, 0)), dtype=np.float32)
        for b, r in enumerate(recs):
            g = r.gaps_cnf if self.opts.gaps == "cnf" else r.gaps_nary
            n = len(r.src_ids)
            if n:
                gaps[b, : n - 1] = g
                gaps[b, n - 1] = GAP_EOS  # gap between the last piece and </s>
        return torch.from_numpy(gaps)

    def prepare(self, data: Any, pad: torch.Tensor) -> torch.Tensor:
        """(B, 1, T, T) bias: ``log M`` plus the key padding."""
        return slr_bias(data, pad, self.opts.tau, self.opts.hard)

    def attend(self, q, k, v, heads, prepared, ctx: AttendContext) -> torch.Tensor:
        return bias_attention(q, k, v, prepared, ctx.dropout_p)
