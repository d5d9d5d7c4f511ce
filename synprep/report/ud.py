"""UPOS and relation distributions of a UD treebank, and how far a corpus's are from them.

The reference is every ``LANG_*.conllu`` of a UD folder (default ``../shared/data/ud`` beside the
project, or ``$SYNPREP_UD``) or one given CoNLL-U file (``report --ud FILE``). Tags are counted on
syntactic words (multiword-token ranges and empty nodes skipped), relations by their universal part
(``nmod:poss`` → ``nmod``), as the shards store them. The divergence is the Jensen–Shannon divergence
in bits (0 = the same distribution, 1 = disjoint) and the total variation distance
(``½ Σ |p - q|``, the share of tags that would have to change).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from synprep.errors import InputError
from synprep.types import DEPRELS, UPOS_TAGS, deprel_id, upos_id

#: Jensen–Shannon divergence (bits) of the UPOS distribution above which the report flags a split
#: (same-language corpora parsed by a sensible model stay well below; a wrong-language or lowercased
#: parse goes far above: docs/report.md)
UPOS_JS_THRESHOLD = 0.10


def default_ud_dir() -> Path | None:
    """``$SYNPREP_UD``, else ``../shared/data/ud`` beside the project (or the working directory), if it exists."""
    env = os.environ.get("SYNPREP_UD")
    cands = [Path(env)] if env else []
    cands += [Path(__file__).resolve().parents[2].parent / "shared" / "data" / "ud", Path.cwd().parent / "shared" / "data" / "ud"]
    return next((c for c in cands if c.is_dir()), None)


def treebank_files(lang: str, ud: str | os.PathLike | None = None) -> list[Path]:
    """The reference CoNLL-U files for ``lang``: ``ud`` itself when it is a file, else ``LANG_*.conllu`` in
    ``ud`` (default :func:`default_ud_dir`); ``[]`` when there is none.

    Raises:
        InputError: ``ud`` is given and is neither a file nor a folder.
    """
    if ud is not None:
        p = Path(ud)
        if p.is_file():
            return [p]
        if not p.is_dir():
            raise InputError("no such CoNLL-U file or folder", str(p))
        folder: Path | None = p
    else:
        folder = default_ud_dir()
    if folder is None or not lang:
        return []
    return sorted(folder.glob(f"{lang}_*.conllu"))


def treebank_counts(files: list[Path]) -> dict[str, Any]:
    """``{"upos": (17,) int64, "deprel": (37,) int64, "words", "files"}`` counted over ``files`` (streaming).

    Raises:
        InputError: ``FILE:LINE`` of a token line without 10 tab-separated columns.
    """
    upos = np.zeros(len(UPOS_TAGS), dtype=np.int64)
    rel = np.zeros(len(DEPRELS), dtype=np.int64)
    for path in files:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip() or line.startswith("#"):
                    continue
                cols = line.rstrip("\n").split("\t")
                if len(cols) != 10:
                    raise InputError(f"expected 10 tab-separated CoNLL-U columns, got {len(cols)}", str(path), lineno)
                if "-" in cols[0] or "." in cols[0]:
                    continue
                upos[upos_id(cols[3])] += 1
                rel[deprel_id(cols[7])] += 1
    return {"upos": upos, "deprel": rel, "words": int(upos.sum()), "files": [p.name for p in files]}


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen–Shannon divergence in bits of two count vectors (normalised here; 0 when either is empty)."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    if p.sum() <= 0 or q.sum() <= 0:
        return 0.0
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2

    def kl(a: np.ndarray) -> float:
        nz = a > 0
        return float(np.sum(a[nz] * np.log2(a[nz] / m[nz])))

    return 0.5 * kl(p) + 0.5 * kl(q)


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance ``½ Σ |p - q|`` of two count vectors (normalised here)."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    if p.sum() <= 0 or q.sum() <= 0:
        return 0.0
    return float(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())


def compare(upos: dict[str, int], deprel: dict[str, int], ref: dict[str, Any]) -> dict[str, Any]:
    """Divergences of a split's UPOS/relation counts from the reference's, and the tags that differ most."""
    p = np.array([upos[t] for t in UPOS_TAGS], dtype=np.float64)
    r = np.array([deprel[t] for t in DEPRELS], dtype=np.float64)
    q, qr = ref["upos"].astype(np.float64), ref["deprel"].astype(np.float64)
    diff = (p / max(p.sum(), 1)) - (q / max(q.sum(), 1))
    worst = np.argsort(-np.abs(diff))[:3]
    return {"upos_js_bits": round(js_divergence(p, q), 6), "upos_tv": round(total_variation(p, q), 6),
            "deprel_js_bits": round(js_divergence(r, qr), 6), "deprel_tv": round(total_variation(r, qr), 6),
            "upos_most_different": [{"tag": UPOS_TAGS[i], "here": round(float(p[i] / max(p.sum(), 1)), 4),
                                     "treebank": round(float(q[i] / max(q.sum(), 1)), 4)} for i in worst.tolist()],
            "threshold_js_bits": UPOS_JS_THRESHOLD,
            "flagged": js_divergence(p, q) > UPOS_JS_THRESHOLD}
