"""BLEU as MT papers report it, the gate heatmap, and the metrics.jsonl log.

Two BLEU scores (both sacrebleu, case-sensitive, ``--smooth exp``):

* **tokenized BLEU** — what fairseq's ``generate.py --remove-bpe`` prints as ``BLEU4``: BLEU over
  the Moses-tokenized, BPE-removed text split on spaces, i.e. sacrebleu ``tokenize="none"``;
* **detokenized BLEU** — sacrebleu's standard: the text Moses-detokenized (sacremoses, the target
  language) and scored with sacrebleu's default ``13a`` tokenizer. Its signature line is printed
  with the score.

Lowercased data (IWSLT14 recipe) gives lowercased BLEU either way: say so when reporting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from synprep.align import remove_bpe  # noqa: F401 - re-exported: the trainer's scores read BPE-removed text
from synprep.textio import atomic_write


def detokenize(lines: Sequence[str], lang: str) -> list[str]:
    """Moses-detokenize (sacremoses, unescaping ``&apos;`` etc.)."""
    from sacremoses import MosesDetokenizer

    md = MosesDetokenizer(lang=lang)
    return [md.detokenize(line.split(), unescape=True) for line in lines]


def bleu_scores(hyps: Sequence[str], refs: Sequence[str], lang: str = "en", lowercase: bool = False) -> dict[str, Any]:
    """Tokenized and detokenized BLEU of tokenized (BPE-removed) hypotheses against references.

    Args:
        hyps: one tokenized line per sentence (Moses tokens, BPE removed), same count.
        refs: one tokenized line per sentence (Moses tokens, BPE removed), same count.
        lang: target language for the Moses detokenizer.
        lowercase: case-insensitive BLEU (sacrebleu ``-lc``; the signature says ``case:lc``).

    Returns:
        ``{"bleu": detok BLEU, "bleu_signature": sacrebleu signature, "bleu_text": sacrebleu's line,
        "tok_bleu": tokenized BLEU, "tok_bleu_signature": ..., "tok_bleu_text": ...}``.

    Raises:
        ValueError: different numbers of lines.
    """
    from sacrebleu.metrics import BLEU

    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    tok = BLEU(tokenize="none", force=True, lowercase=lowercase)
    tok_score = tok.corpus_score(list(hyps), [list(refs)])
    detok = BLEU(lowercase=lowercase)
    d_h, d_r = detokenize(hyps, lang), detokenize(refs, lang)
    score = detok.corpus_score(d_h, [d_r])
    return {"bleu": round(score.score, 2), "bleu_signature": str(detok.get_signature()),
            "bleu_text": score.format(signature=str(detok.get_signature())),
            "tok_bleu": round(tok_score.score, 2), "tok_bleu_signature": str(tok.get_signature()),
            "tok_bleu_text": tok_score.format(signature=str(tok.get_signature()))}


def case_mismatch(hyps: Sequence[str], refs: Sequence[str]) -> str | None:
    """A warning when every hypothesis is lowercase and the references are not (a lowercased model
    scored case-sensitively: BLEU far too low), else None. Only cased letters count (``str.isupper``)."""
    if any(ch.isupper() for h in hyps for ch in h) or not any(ch.isupper() for r in refs for ch in r):
        return None
    return ("the hypotheses are all lowercase and the references are not: BLEU is case-sensitive, so every "
            "capitalised reference word counts as wrong; add --lowercase for case-insensitive BLEU")


def draw_gate_heatmap(gates: Sequence[Sequence[float]], path: str | os.PathLike, title: str = "") -> None:
    """Heatmap of gate values like the paper's Fig. 3 (rows = layers 1..L, columns = heads H1..Hh).

    Args:
        gates: (L, H) mean gate per encoder layer and head (0 for plain heads / vanilla).
        path: PNG written atomically.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    L, H = len(gates), len(gates[0]) if gates else 0
    fig, ax = plt.subplots(figsize=(1.0 + 0.9 * H, 0.8 + 0.55 * L), dpi=120)
    im = ax.imshow(gates, vmin=0.0, vmax=1.0, cmap="Blues", aspect="auto")
    ax.set_xticks(range(H), [f"H{h + 1}" for h in range(H)])
    ax.set_yticks(range(L), [f"Layer{i + 1}" for i in range(L)])
    for i in range(L):
        for h in range(H):
            v = float(gates[i][h])
            ax.text(h, i, f"{v:.2f}", ha="center", va="center", fontsize=8, color="white" if v > 0.6 else "black")
    if title:
        ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.05)
    fig.tight_layout()
    with atomic_write(path, "wb", encoding=None) as f:
        fig.savefig(f, format="png")
    plt.close(fig)


class MetricsLog:
    """``OUT/metrics.jsonl``: one JSON object per line, appended and flushed per record.

    Args:
        path: the file.
        resume_step: when resuming, records after this update step (written after the checkpoint, by a run
            that did not finish) are dropped first, so the log matches the checkpoint; None starts a fresh
            file.
        resume_validated: False when the checkpoint was saved before its step's validation (an interval save):
            that step's validation row, written after the checkpoint, is dropped too (the resumed run writes
            it again).
    """

    def __init__(self, path: str | os.PathLike, resume_step: int | None = None, resume_validated: bool = True):
        self.path = Path(path)
        kept: list[str] = []
        if resume_step is not None and self.path.is_file():
            for line in self.path.read_text("utf-8").splitlines():
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:  # a line cut by a kill mid-write
                    continue
                step = rec.get("step", 0) if isinstance(rec, dict) else 0
                if step < resume_step or (step == resume_step and (resume_validated or "valid_loss" not in rec)):
                    kept.append(line)
        with atomic_write(self.path) as f:
            f.write("".join(x + "\n" for x in kept))

    def write(self, record: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=False) + "\n")

    @staticmethod
    def read(path: str | os.PathLike) -> list[dict[str, Any]]:
        return [json.loads(x) for x in Path(path).read_text("utf-8").splitlines() if x.strip()]
