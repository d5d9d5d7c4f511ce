"""The pair as text (``synprep show``): piece and word tables. Part of :mod:`synprep.show`."""

from __future__ import annotations

from synprep.constants import GAP_SENTENCE
from synprep.features.parents import parent_positions
from synprep.show.pair import PairView
from synprep.types import PairRecord


def _ldd_by_word(rec: PairRecord, deprels: list[str], top: int) -> dict[int, list[tuple[int, str, float]]]:
    out: dict[int, list[tuple[int, str, float]]] = {}
    for d, h, r, p in zip(rec.ldd_dep.tolist(), rec.ldd_head.tolist(), rec.ldd_rel.tolist(), rec.ldd_prob.tolist(),
                          strict=True):
        out.setdefault(d, []).append((h, deprels[r] if r < len(deprels) else f"#{r}", p))
    for d in out:
        out[d] = sorted(out[d], key=lambda e: -e[2])[:top]
    return out


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [v.rjust(w) if c in right else v.ljust(w) for c, (v, w) in enumerate(zip(r, widths, strict=True))]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def pair_text(view: PairView, *, ldd_top: int = 3) -> str:
    """What the shard stores for the pair, laid out for reading (docs/shards.md "synprep show").

    Piece table: 0-based piece position, piece, 1-based word id, the gap between the piece and the
    next one (cnf, nary; the trainer appends 2000 before ``</s>``), PASCAL parent position (0-based
    piece, SPEC.md §4). Word table: 1-based word id, word, head (1-based, 0 = root), deprel, UPOS,
    the ``ldd_top`` most probable LDD entries ``head:rel prob``. Then sentence starts and the
    target pieces.
    """
    rec = view.record
    t, w = len(view.src), len(view.words)
    starts = rec.sent_start.tolist()
    lines = [view.title(),
             f"tree source: {view.attrs.get('tree_source', '?')}; {view.attrs.get('signature', '')}",
             *view.notes,
             f"source: {t} {view.attrs.get('subword', 'bpe')} pieces, {w} words, "
             f"{len(starts)} sentence{'s' if len(starts) != 1 else ''}",
             "  " + " ".join(view.src), ""]
    parents = parent_positions(rec.heads, rec.word_index, mode="mean")
    rows = [["pos", "piece", "word", "gap cnf", "gap nary", "parent"]]
    for p in range(t):
        gap_c = str(int(rec.gaps_cnf[p])) if p < t - 1 else "-"
        gap_n = str(int(rec.gaps_nary[p])) if p < t - 1 else "-"
        rows.append([str(p), view.src[p], str(int(rec.word_index[p]) + 1), gap_c, gap_n, f"{parents[p]:.1f}"])
    lines += _table(rows, right={0, 2, 3, 4, 5})
    lines += [f"  (gap: between this piece and the next; 1 inside a word, d+1 between words, {GAP_SENTENCE} between "
              f"sentences; parent: PASCAL mean position, 0-based piece)", ""]
    ldd = _ldd_by_word(rec, list(view.attrs.get("deprel_labels") or []), ldd_top)
    if view.words_stored:  # below the pieces, which may be lowercased (annotate --parse-src)
        lines += ["the words as the parser read them (stored in the shard):"]
    rows = [["id", "word", "head", "deprel", "upos", f"LDD (best {ldd_top}: head:rel prob)"]]
    for i in range(w):
        entries = "  ".join(f"{h}:{r} {p:.3f}" for h, r, p in ldd.get(i + 1, []))
        rows.append([str(i + 1), view.words[i], str(int(rec.heads[i])), view.deprels[i], view.upos[i], entries])
    lines += _table(rows, right={0, 2})
    lines += ["  (word ids and heads 1-based, line-level: head 0 = root)", "",
              "sentences start at words: " + " ".join(str(s + 1) for s in starts), "",
              f"target: {len(view.tgt)} pieces", "  " + " ".join(view.tgt)]
    return "\n".join(lines) + "\n"

