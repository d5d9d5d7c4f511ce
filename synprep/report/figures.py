"""The report's figures, drawn with matplotlib (the optional ``plot`` extra) into base64 PNG.

Every function takes the report's numbers (:func:`synprep.report.build_report`'s dict) and returns
``data:image/png;base64,...`` text for an ``<img>``: the page needs no file and no network. The
example pairs are drawn by :func:`synprep.show.pair_figure`, exactly as ``show --png`` draws them.
"""

from __future__ import annotations

import base64
import io
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from synprep.show import load_pair, pair_figure
from synprep.types import DEPRELS, UPOS_TAGS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: resolution of the summary figures (dots per inch); the example pairs keep their own (``show --png``'s)
DPI = 80
#: a length histogram gets about 2 * n ** (1/3) bins (Rice's rule), at least this many, each a whole
#: number of values wide: a split of 50 lines is drawn in bins of several lengths, not of one
MIN_BINS = 5
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def png_data(fig: Figure, dpi: float | None = DPI) -> str:
    """The figure as a ``data:`` URL of a PNG (``dpi`` None: the figure's own resolution)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi if dpi is None else dpi)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def hist_bins(h: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, int]:
    """``(x, y, width)`` of an integer histogram (:meth:`synprep.report.hist.IntHist.to_json`, the overflow
    as its last value) in bins of ``width`` values: ``x`` each bin's centre, ``y`` the share of the values
    per unit of length in it (comparable across splits of different bin widths). ``width`` is 1 once
    Rice's bin count reaches the histogram's span (tree depths of 30 values: from 3,400 values on;
    lengths up to 200: from a million); fewer values get wider bins (:data:`MIN_BINS`)."""
    counts = np.asarray(h["counts"] + [h["overflow"]], dtype=np.float64)
    n = counts.sum()
    if not n:
        return np.zeros(0), np.zeros(0), 1
    span = len(counts)
    bins = max(MIN_BINS, int(np.ceil(2 * n ** (1 / 3))))
    width = max(1, int(np.ceil(span / bins)))
    pad = (-span) % width
    grouped = np.concatenate([counts, np.zeros(pad)]).reshape(-1, width).sum(axis=1)
    x = np.arange(grouped.size) * width + (width - 1) / 2
    return x, grouped / n / width, width


def _new(w: float, h: float, rows: int = 1, cols: int = 1) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _legend(ax: Any) -> None:
    """The panel's legend, when it has a labelled line (a split without pairs draws none: no warning)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def _hist_line(ax: Any, h: dict[str, Any], label: str, color: str) -> None:
    x, y, width = hist_bins(h)
    if not x.size:
        return
    ax.step(x, y, where="mid", color=color, label=label if width == 1 else f"{label} (bins of {width})", lw=1.4)


def lengths_figure(report: dict[str, Any]) -> str:
    """Sentence length histograms (share of pairs per length): source words, source/target pieces, sentences per line."""
    fig, axes = _new(12, 3.0, 1, 4)
    panels = (("src_words", "source words per line"), ("src_pieces", "source pieces per line"),
              ("tgt_pieces", "target pieces per line"))
    for ax, (key, title) in zip(axes[0], panels, strict=False):
        for i, (name, s) in enumerate(report["splits"].items()):
            _hist_line(ax, s["lengths"][key], name, COLORS[i % len(COLORS)])
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("length")
    ax = axes[0][3]
    for i, (name, s) in enumerate(report["splits"].items()):
        _hist_line(ax, s["pieces_per_word"], name, COLORS[i % len(COLORS)])
    ax.set_title("source pieces per word", fontsize=10)
    ax.set_xlabel("pieces")
    axes[0][0].set_ylabel("share per value")
    _legend(axes[0][0])
    return png_data(fig)


def _bars(ax: Any, names: tuple[str, ...], series: list[tuple[str, np.ndarray]], title: str) -> None:
    keep = np.zeros(len(names), dtype=bool)
    for _, v in series:
        keep |= v > 0
    idx = np.flatnonzero(keep)
    width = 0.8 / max(len(series), 1)
    for i, (label, v) in enumerate(series):
        share = v / v.sum() if v.sum() else v
        ax.bar(np.arange(idx.size) + (i - (len(series) - 1) / 2) * width, share[idx], width=width,
               color=COLORS[i % len(COLORS)] if label != "UD treebank" else "0.55", label=label)
    ax.set_xticks(np.arange(idx.size))
    ax.set_xticklabels([names[i] for i in idx], rotation=90, fontsize=8)
    ax.set_ylabel("share")
    ax.set_title(title, fontsize=10, loc="left")
    _legend(ax)


def labels_figure(report: dict[str, Any]) -> str:
    """UPOS and relation distributions of every split, beside the UD treebank's when there is one."""
    fig, axes = _new(12, 5.6, 2, 1)
    upos = [(n, np.array([s["upos"][t] for t in UPOS_TAGS], dtype=np.float64)) for n, s in report["splits"].items()]
    rel = [(n, np.array([s["deprel"][t] for t in DEPRELS], dtype=np.float64)) for n, s in report["splits"].items()]
    ud = report.get("ud_reference")
    if ud:
        upos.append(("UD treebank", np.asarray(ud["upos"], dtype=np.float64)))
        rel.append(("UD treebank", np.asarray(ud["deprel"], dtype=np.float64)))
    _bars(axes[0][0], UPOS_TAGS, upos, "UPOS (source words)")
    _bars(axes[1][0], DEPRELS, rel, "dependency relations (universal part)")
    return png_data(fig)


def syntax_figure(report: dict[str, Any]) -> str:
    """Tree depth, dependency length, word-level syntactic distance (cnf gaps) and LDD entropy."""
    fig, axes = _new(12, 3.0, 1, 4)
    for i, (name, s) in enumerate(report["splits"].items()):
        c = COLORS[i % len(COLORS)]
        _hist_line(axes[0][0], s["tree_depth"], name, c)
        _hist_line(axes[0][1], s["dependency_length"], name, c)
        _hist_line(axes[0][2], s["gaps"]["cnf"], name, c)
        e = s["ldd"]["entropy_bits"]
        counts = np.asarray(e["counts"], dtype=np.float64)
        if counts.sum():
            edges = np.asarray(e["edges"])
            axes[0][3].step((edges[:-1] + edges[1:]) / 2, counts / counts.sum(), where="mid", color=c, label=name)
    for ax, title, xl in zip(axes[0], ("tree depth (words on the longest root path)", "dependency length |head - dep|",
                                       "syntactic distance between words (cnf gap)", "LDD entropy per word"),
                             ("depth", "words", "gap", "bits"), strict=True):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xl)
    axes[0][3].set_yscale("log")
    axes[0][0].set_ylabel("share per value")
    _legend(axes[0][0])
    return png_data(fig)


def agreement_figure(report: dict[str, Any]) -> str | None:
    """UAS/LAS/UPOS agreement per split (bars), or None without ``--against``."""
    agree = report.get("against")
    if not agree:
        return None
    rows = [(n, a["scores"]) for n, a in agree["splits"].items() if a.get("scores")]
    if not rows:
        return None
    fig, axes = _new(6, 2.8)
    ax = axes[0][0]
    for i, metric in enumerate(("UAS", "LAS", "UPOS")):
        bars = ax.bar(np.arange(len(rows)) + (i - 1) * 0.27, [r[metric] for _, r in rows], width=0.27, label=metric,
                      color=COLORS[i])
        ax.bar_label(bars, fmt="%.1f", fontsize=7)
    ax.set_xticks(np.arange(len(rows)))
    ax.set_xticklabels([n for n, _ in rows])
    ax.set_ylim(0, 100)
    ax.set_ylabel("F1 × 100")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("agreement with the other folder (CoNLL 2018 scorer)", fontsize=9, loc="left")
    return png_data(fig)


def example_figures(folder: Any, examples: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """``[{split, index, line, png}]``: each example pair drawn by :func:`synprep.show.pair_figure` at its own
    resolution, the PNG ``show --png`` writes (the page shows it at that size, scrolling when wider)."""
    out = []
    with warnings.catch_warnings():  # drawn (savefig) here: without a CJK font, one warning (show.fonts), not one per glyph
        warnings.filterwarnings("ignore", message="Glyph .* missing from")
        for split, index in examples:
            view = load_pair(folder, split, index=index)
            out.append({"split": split, "index": index, "line": view.line, "title": view.title(),
                        "png": png_data(pair_figure(view), dpi=None)})
    return out
