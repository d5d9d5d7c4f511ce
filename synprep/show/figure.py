"""The pair as a matplotlib figure (``synprep show --png``): dependency arcs, the constituency tree,
gaps, SLR masks, PASCAL weights. Part of :mod:`synprep.show`."""

from __future__ import annotations

import io
import os
import unicodedata
from typing import TYPE_CHECKING

import numpy as np

from synprep.constants import EOS, GAP_EOS, GAP_SENTENCE
from synprep.extras import require
from synprep.show.fonts import _fonts
from synprep.show.pair import PairView, pair_matrices
from synprep.show.tree import _tree_panel, word_distances
from synprep.textio import atomic_write

if TYPE_CHECKING:  # matplotlib is imported only to draw
    from matplotlib.figure import Figure

#: the figure's size limits (inches; drawn at 100 dpi): long sentences get smaller labels, then every k-th
HEATMAP_MAX_SIDE = 11.0
FIGURE_MAX_WIDTH = 26.0
#: height of one nesting level of the dependency arcs (data units of the arc panel)
ARC_STEP = 0.6
#: tree sources whose gaps come from a constituency tree (drawn by :func:`_tree_panel`)
CONSTITUENCY_SOURCES = ("constituency", "mixed")


def _token_labels(view: PairView) -> list[str]:
    return [*view.src, EOS]


def _ems(word: str) -> float:
    """The width of ``word`` in ems, roughly: 1 for a wide (CJK) character, 0.6 for any other."""
    return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.6 for c in word)


def _arc_levels(heads: list[int]) -> dict[int, int]:
    """Nesting level of each arc (keyed by its 1-based dependent): 1 + the highest level of the arcs
    whose span lies inside its span, so nested arcs sit lower and their labels never meet."""
    arcs = sorted(((min(h, d), max(h, d), d) for d, h in enumerate(heads, 1) if h > 0), key=lambda a: a[1] - a[0])
    level: dict[int, int] = {}
    for i, (lo, hi, d) in enumerate(arcs):
        inner = [level[e] for lo2, hi2, e in arcs[:i] if lo <= lo2 and hi2 <= hi]
        level[d] = 1 + max(inner, default=0)
    return level


def _arc_panel(ax, view: PairView) -> None:
    """Dependency arcs over the words: a half-ellipse from head to dependent (arrowhead at the
    dependent), labelled with the deprel at its apex; the root word gets a vertical arrow."""
    rec = view.record
    w = len(view.words)
    heads = rec.heads.tolist()
    base = 0.25
    level = _arc_levels(heads)
    top = base + ARC_STEP * max(level.values(), default=1) + 0.9
    theta = np.linspace(0.0, np.pi, 60)
    for d, h in enumerate(heads, 1):
        label = view.deprels[d - 1]
        if h == 0:
            ax.annotate("", xy=(d - 1, base), xytext=(d - 1, top - 0.3),
                        arrowprops={"arrowstyle": "-|>", "color": "tab:red", "lw": 1.0})
            ax.text(d - 1, top - 0.3, label, ha="center", va="bottom", fontsize=7, color="tab:red")
            continue
        x0, x1 = h - 1, d - 1
        height = ARC_STEP * level[d]
        xs = x0 + (x1 - x0) * (1 - np.cos(theta)) / 2
        ys = base + height * np.sin(theta)
        ax.plot(xs, ys, color="tab:blue", lw=0.9)
        ax.annotate("", xy=(xs[-1], ys[-1]), xytext=(xs[-4], ys[-4]),
                    arrowprops={"arrowstyle": "-|>", "color": "tab:blue", "lw": 0.9, "mutation_scale": 9})
        ax.text((x0 + x1) / 2, base + height, label, ha="center", va="center", fontsize=7, color="tab:blue",
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85})
    per_word = ax.figure.get_figwidth() * 72 / max(w, 1)  # points of width per word
    # a word side by side with the next fits when its width (ems × size) is under 90 % of its share;
    # CJK characters are a full em wide, a Latin letter about 0.6 em
    widest = max((_ems(word) for word in view.words), default=1.0)
    size = float(min(np.clip(per_word * 0.45, 5, 9), 0.9 * per_word / max(widest, 1.0)))
    rotate = w > 22 or size < 5
    if rotate:
        size = float(np.clip(per_word * 0.9, 5, 9))
    tags = per_word >= 22 and not rotate  # else the tags would run into each other or into the slanted words
    for i, (word, tag) in enumerate(zip(view.words, view.upos, strict=True)):
        ax.text(i, 0.05, word, ha="right" if rotate else "center", va="top", fontsize=size,
                rotation=45 if rotate else 0, rotation_mode="anchor")
        if tags:  # (the text output lists them)
            ax.text(i, -0.55, tag, ha="center", va="top", fontsize=6.5, color="0.4")
    for s in rec.sent_start.tolist()[1:]:
        ax.axvline(s - 0.5, color="0.6", ls="--", lw=0.8)
    ax.set_xlim(-0.8, w - 0.2)
    ax.set_ylim(-1.0 if not rotate else -2.0, top + 0.2)
    ax.axis("off")
    ax.set_title("dependency tree: head → dependent with its deprel, root ↓"
                 + ("; UPOS under the words" if tags else "")
                 + ("; dashed = sentence boundary" if len(rec.sent_start) > 1 else ""), fontsize=9, loc="left")


def _gap_panel(ax, view: PairView) -> None:
    rec = view.record
    t = len(view.src)
    x = np.arange(t - 1) + 0.5
    cnf, nary = rec.gaps_cnf.astype(np.int64), rec.gaps_nary.astype(np.int64)
    normal = np.concatenate([cnf[cnf < GAP_SENTENCE], nary[nary < GAP_SENTENCE], [2]])
    top = float(normal.max()) + 1.5
    for vals, dx, color, name in ((cnf, -0.18, "tab:blue", "cnf"), (nary, 0.18, "tab:orange", "nary")):
        shown = np.minimum(vals, top - 0.3)
        bars = ax.bar(x + dx, shown, width=0.34, color=color, label=name)
        for b, v in zip(bars, vals.tolist(), strict=True):
            if v >= GAP_SENTENCE:
                b.set_hatch("//")
                ax.text(b.get_x() + b.get_width() / 2, top - 0.3, str(v), ha="center", va="bottom", fontsize=6)
    ax.set_xlim(-0.5, t - 0.5)
    ax.set_ylim(0, top + 0.8)
    size, step = _tick_style(t, ax.figure.get_figwidth() - 1.5)
    ticks = np.arange(0, t, step)
    ax.set_xticks(ticks)
    ax.set_xticklabels([view.src[i] for i in ticks], rotation=90, fontsize=size)
    ax.set_ylabel("gap")
    if t > 1:
        ax.legend(fontsize=8, loc="upper right", ncol=2)
    ax.set_title("piece-level syntactic distance: bar k = gap between piece k and k+1 "
                 f"({GAP_SENTENCE} = sentence boundary; </s> gap {GAP_EOS} not drawn)", fontsize=9, loc="left")


def _tick_style(n: int, inches: float) -> tuple[float, int]:
    """Font size and step for ``n`` tick labels along ``inches``: 8 pt, down to 4 pt, then every k-th."""
    per = inches * 72 / max(n, 1)  # points per label
    size = float(np.clip(per * 0.8, 4, 8))
    step = max(1, int(np.ceil(4 / (per * 0.8)))) if per * 0.8 < 4 else 1
    return size, step


def _heatmap(ax, m: np.ndarray, labels: list[str], title: str, *, cmap: str, vmin: float, vmax: float,
             parents: np.ndarray | None = None) -> None:
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest")
    n = len(labels)
    size, step = _tick_style(n, min(HEATMAP_MAX_SIDE, max(4.5, 0.26 * n)))
    ticks = np.arange(0, n, step)
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.set_xticklabels([labels[i] for i in ticks], rotation=90, fontsize=size)
    ax.set_yticklabels([labels[i] for i in ticks], fontsize=size)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    ax.set_title(title, fontsize=9)
    if parents is not None:
        ax.plot(parents, np.arange(n), "x", color="tab:cyan", ms=4, mew=1.0)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.03)


def pair_figure(view: PairView, *, tau: float = 10.0, mode: str = "cnf") -> Figure:
    """A matplotlib figure of the pair: arcs, gaps, soft/hard SLR masks, PASCAL weights (module docstring).

    The figure is sized to the sentence (about 0.28 inch per piece, at least 14 × 15 inches) and is
    made without pyplot (no global state, no display).

    Raises:
        ValueError: τ <= 0 or an unknown gap mode.
    """
    require("matplotlib", "drawing a pair (show --png)")
    with _fonts(view) as font:
        return _pair_figure(view, tau=tau, mode=mode, font=font)


def _pair_figure(view: PairView, *, tau: float, mode: str, font: str | None) -> Figure:
    from matplotlib.figure import Figure

    mats = pair_matrices(view, tau=tau, mode=mode)
    labels = _token_labels(view)
    n = len(labels)
    side = min(HEATMAP_MAX_SIDE, max(4.5, 0.26 * n))
    width = min(FIGURE_MAX_WIDTH, max(14.0, 2 * side + 3.0, 0.3 * len(view.words) + 2))
    levels = _arc_levels(view.record.heads.tolist())
    arc_h = min(7.0, 1.4 + 0.3 * max(levels.values(), default=1))
    tree_h = 0.0
    if view.attrs.get("tree_source") in CONSTITUENCY_SOURCES and len(view.words) > 1:
        dist = word_distances(view)
        tree_h = min(4.0, 1.4 + 0.25 * int(dist[dist < GAP_SENTENCE].max(initial=1)))
    rows = [arc_h, *([tree_h] if tree_h else []), 2.6, side, side]
    fig = Figure(figsize=(width, sum(rows) + 1.6), dpi=100, layout="constrained")
    grid = fig.add_gridspec(len(rows), 2, height_ratios=rows)
    _arc_panel(fig.add_subplot(grid[0, :]), view)
    r = 1
    if tree_h:
        _tree_panel(fig.add_subplot(grid[1, :]), view)
        r = 2
    _gap_panel(fig.add_subplot(grid[r, :]), view)
    _heatmap(fig.add_subplot(grid[r + 1, 0]), mats["soft"], labels,
             f"soft SLR mask, τ = {tau:g} ({mode} gaps)", cmap="viridis", vmin=0, vmax=1)
    _heatmap(fig.add_subplot(grid[r + 1, 1]), mats["hard"].astype(np.float32), labels,
             f"hard SLR mask, non-strict ({mode} gaps)", cmap="viridis", vmin=0, vmax=1)
    _heatmap(fig.add_subplot(grid[r + 2, 0]), mats["pascal"], labels,
             "PASCAL weights N(j; parent(i), σ=1); × = parent position", cmap="magma", vmin=0, vmax=0.4, parents=mats["parents"])
    ax = fig.add_subplot(grid[r + 2, 1])
    _text_panel(ax, view, font)
    fig.suptitle(view.title(), fontsize=12)
    return fig


def _text_panel(ax, view: PairView, font: str | None = None) -> None:
    """The target side and the configuration, as text (monospace, with the CJK ``font`` as fallback)."""
    import textwrap

    ax.axis("off")
    tgt = textwrap.fill(" ".join(view.tgt), 70)
    src = textwrap.fill(" ".join(view.src), 70)
    sig = textwrap.fill(str(view.attrs.get("signature", "")), 70)
    ax.text(0, 1, f"source ({len(view.src)} pieces):\n{src}\n\ntarget ({len(view.tgt)} pieces):\n{tgt}\n\n"
            f"tree source: {view.attrs.get('tree_source', '?')}\n{sig}", va="top", ha="left", fontsize=9,
            family=["DejaVu Sans Mono", font] if font else "monospace", transform=ax.transAxes)


def save_png(view: PairView, path: str | os.PathLike, *, tau: float = 10.0, mode: str = "cnf") -> int:
    """Draw :func:`pair_figure` and write it as a PNG atomically; returns the file size in bytes.

    Raises:
        ConfigError: matplotlib is not installed (the message names the ``plot`` extra).
    """
    require("matplotlib", "drawing a pair (show --png)")
    with _fonts(view) as font:  # the glyphs are looked up when the figure is drawn
        fig = _pair_figure(view, tau=tau, mode=mode, font=font)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    data = buf.getvalue()
    with atomic_write(path, "wb") as f:
        f.write(data)
    return len(data)

