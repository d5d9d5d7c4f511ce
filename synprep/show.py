"""One sentence pair of a shard folder, as text and as a figure (``synprep show``).

:func:`load_pair` reads pair ``index`` (0-based, in the split's shard order) or the pair of
original line ``line`` (1-based) from ``DIR/SPLIT.NNNNN.h5`` and decodes its ids with the folder's
``dict.txt``. :func:`pair_text` lays out what the shard stores for it; :func:`pair_figure` draws it
with matplotlib (Agg, no display needed): the dependency tree as an arc diagram over the words,
the constituency tree when the gaps came from one (recovered from the stored n-ary gaps:
:func:`gap_tree`), the piece-level gaps (cnf and nary), the soft SLR mask (τ) and the hard
non-strict one, and the PASCAL Gaussian weights. Chinese, Japanese and Korean words are drawn
with an installed CJK font (:data:`CJK_FONTS`; Debian/Ubuntu: ``apt-get install fonts-noto-cjk``);
without one, one warning names the package and the words are drawn as boxes. Every matrix is computed with the feature functions the trainer uses
(:mod:`synprep.features.slr`, :mod:`synprep.features.parents`) on the stored gaps and heads, with
``</s>`` appended as the trainer appends it (gap 2000, parent = itself): the figures show what
the model would see, not a re-derivation.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from synprep.constants import EOS, GAP_EOS, GAP_SENTENCE, VOCAB_NAME
from synprep.errors import InputError
from synprep.types import PairRecord

if TYPE_CHECKING:  # matplotlib is imported only to draw
    from matplotlib.figure import Figure

#: gap conventions a figure's SLR masks can use (SPEC.md §2)
GAP_MODES = ("cnf", "nary")
#: the figure's size limits (inches; drawn at 100 dpi): long sentences get smaller labels, then every k-th
HEATMAP_MAX_SIDE = 11.0
FIGURE_MAX_WIDTH = 26.0
#: height of one nesting level of the dependency arcs (data units of the arc panel)
ARC_STEP = 0.6
#: fonts with CJK glyphs, tried in order (matplotlib falls back to them per glyph after DejaVu Sans)
CJK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK KR", "Noto Serif CJK JP",
             "Source Han Sans", "Source Han Sans JP", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
             "Droid Sans Fallback", "IPAexGothic", "IPAGothic", "TakaoGothic", "Noto Sans JP", "Noto Sans SC",
             "Noto Sans KR")
#: the Debian/Ubuntu package that provides the first of them
CJK_FONT_PACKAGE = "fonts-noto-cjk"
#: tree sources whose gaps come from a constituency tree (drawn by :func:`_tree_panel`)
CONSTITUENCY_SOURCES = ("constituency", "mixed")

#: Hangul Jamo, CJK radicals … Kangxi, kana, CJK unified ideographs, Hangul syllables,
#: compatibility ideographs, half/full-width forms, and the supplementary ideograph planes
_CJK = re.compile("[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
                  "\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff]")

log = logging.getLogger("synprep")


@dataclass
class PairView:
    """One stored pair with everything needed to show it.

    Attributes:
        folder, split: where it comes from. index: 0-based index in the split. shard: shard file
            name. position: index within that shard.
        record: the stored :class:`~synprep.types.PairRecord` (int64 arrays, float32 ``ldd_prob``).
        attrs: the shard's root attributes (``signature``, ``tree_source``, label lists, ...).
        src, tgt: ``(T,)`` / ``(U,)`` decoded pieces (Moses-escaped, ``@@`` markers).
        words: ``(W,)`` the words the parser read, as the shard stores them (cased; docs/FORMAT.md
            ``words``), or for a shard without them the source words rebuilt from the pieces, Moses
            escapes undone.
        words_stored: whether ``words`` are the stored parser words.
        deprels, upos: ``(W,)`` label names (the shard's own inventories).
    """

    folder: Path
    split: str
    index: int
    shard: str
    position: int
    record: PairRecord
    attrs: dict[str, Any]
    src: list[str]
    tgt: list[str]
    words: list[str]
    deprels: list[str]
    upos: list[str]
    notes: list[str] = field(default_factory=list)
    words_stored: bool = False

    @property
    def line(self) -> int:
        """1-based line number of the pair in the split's original input."""
        return self.record.line

    def title(self) -> str:
        return f"{self.split} pair {self.index} (line {self.line}) — {self.folder.name}/{self.shard}"


def _find_line(folder: Path, split: str, lines: np.ndarray, line: int) -> int:
    """Global index of the pair with original line ``line``; InputError saying why it is absent."""
    hit = np.flatnonzero(lines == line)
    if hit.size:
        return int(hit[0])
    reason = ""
    try:
        from synprep.shards.manifest import Manifest

        entry = Manifest.load(folder).splits.get(split)
        if entry is not None:
            for d in entry.dropped_lines:
                if int(d[0]) == line:
                    reason = f": it was dropped ({d[1]}{', ' + d[2] if len(d) > 2 and d[2] else ''})"
                    break
            if not reason and not 1 <= line <= entry.input_lines:
                reason = f": the split's input has {entry.input_lines} lines"
    except InputError:
        pass
    stored = f"lines {int(lines.min())}..{int(lines.max())}" if lines.size else "no lines"
    raise InputError(f"line {line} is not in split {split!r} ({stored} stored){reason}", str(folder))


def _join_pieces(pieces: list[str], word_index: np.ndarray) -> list[str]:
    """The words of the pieces by the stored ``word_index`` (``@@`` markers removed, still escaped)."""
    words: list[str] = [""] * (int(word_index.max()) + 1 if word_index.size else 0)
    for piece, w in zip(pieces, word_index.tolist(), strict=True):
        words[w] += piece[:-2] if piece.endswith("@@") else piece
    return words


def load_pair(folder: str | os.PathLike, split: str = "train", *, index: int | None = None,
              line: int | None = None) -> PairView:
    """Read one pair of a shard folder (exactly one of ``index`` and ``line``).

    Args:
        folder: an output folder (shards + ``dict.txt``).
        split: the split's name.
        index: 0-based index over the split's shards in order (negative counts from the end).
        line: 1-based original line number (as ``manifest.json`` and the shards' ``line`` record it).

    Returns:
        :class:`PairView`.

    Raises:
        InputError: missing folder, split or vocabulary; an index out of range or a line not stored
            (with the reason from the manifest when the line was dropped).
        ValueError: neither or both of ``index`` and ``line``.
    """
    from synprep.shards.reader import SplitReader, open_split, splits_in
    from synprep.text.escape import unescape_tokens
    from synprep.vocab import Vocab

    if (index is None) == (line is None):
        raise ValueError("give exactly one of index and line")
    folder = Path(folder)
    readers = open_split(folder, split)
    if not readers:
        have = ", ".join(splits_in(folder)) or "none"
        raise InputError(f"split {split!r} has no shards here (splits: {have})", str(folder))
    with SplitReader(readers) as data:
        n = len(data)
        if line is not None:
            index = _find_line(folder, split, data.lines, line)
        assert index is not None
        if not -n <= index < n:
            raise InputError(f"pair index {index} out of range: split {split!r} has {n} pairs (0..{n - 1})",
                             str(folder))
        index %= n
        s, j = data.locate(index)
        reader = data.readers[s]
        rec = reader[j]
        stored = reader.words(j)
        attrs = dict(reader.attrs)
        shard = reader.path.name
    vocab_path = folder / str(attrs.get("vocab_path") or VOCAB_NAME)
    if not vocab_path.is_file():
        raise InputError("no vocabulary to decode the ids with", str(vocab_path))
    vocab = Vocab.load(vocab_path)
    notes = []
    if attrs.get("vocab_sha256") and vocab.sha256 != attrs["vocab_sha256"]:
        notes.append(f"warning: {vocab_path.name} is not the vocabulary the shard was written with")
    src, tgt = vocab.decode(rec.src_ids), vocab.decode(rec.tgt_ids)
    words = stored if stored is not None else unescape_tokens(_join_pieces(src, rec.word_index))
    deprel_labels = list(attrs.get("deprel_labels") or [])
    upos_labels = list(attrs.get("upos_labels") or [])

    def names(ids: np.ndarray, labels: list[str]) -> list[str]:
        return [labels[i] if 0 <= i < len(labels) else f"#{i}" for i in ids.tolist()]

    return PairView(folder=folder, split=split, index=index, shard=shard, position=j, record=rec, attrs=attrs,
                    src=src, tgt=tgt, words=words, deprels=names(rec.deprel, deprel_labels),
                    upos=names(rec.upos, upos_labels), notes=notes, words_stored=stored is not None)


def pair_json(view: PairView) -> dict[str, Any]:
    """The pair as JSON-ready values (``synprep show --json``).

    Keys: ``split``, ``index`` (0-based in the split), ``shard``, ``position``, ``line`` (1-based),
    ``signature``, ``tree_source``, ``src``/``tgt`` (pieces), ``words``, ``deprels``/``upos_tags`` (label
    names), ``notes``, and every stored field of the record under its FORMAT.md name (``deprel``,
    ``upos`` are the ids; docs/FORMAT.md index bases) as a list.
    """
    from synprep.shards.reader import PAIR_KEYS

    rec = view.record
    out: dict[str, Any] = {"split": view.split, "index": view.index, "shard": view.shard, "position": view.position,
                           "signature": view.attrs.get("signature", ""), "tree_source": view.attrs.get("tree_source"),
                           "src": view.src, "tgt": view.tgt, "words": view.words, "deprels": view.deprels,
                           "upos_tags": view.upos, "notes": view.notes}
    for key in PAIR_KEYS:
        value = getattr(rec, key)
        out[key] = value.tolist() if isinstance(value, np.ndarray) else value
    return out


# --- the matrices a figure shows (all with </s>, as the trainer builds them) --------------------


def token_gaps(view: PairView, mode: str = "cnf") -> np.ndarray:
    """``(T,) int64``: the stored ``(T-1,)`` piece gaps of ``mode`` with the ``</s>`` gap (2000) appended."""
    if mode not in GAP_MODES:
        raise ValueError(f"unknown gap mode {mode!r}; choose one of {', '.join(GAP_MODES)}")
    gaps = view.record.gaps_cnf if mode == "cnf" else view.record.gaps_nary
    return np.append(gaps.astype(np.int64), GAP_EOS)


def pair_matrices(view: PairView, *, tau: float = 10.0, mode: str = "cnf", sigma: float = 1.0
                  ) -> dict[str, np.ndarray]:
    """The attention-side matrices of the pair over its ``T+1`` tokens (pieces + ``</s>``).

    Returns:
        ``soft``: ``(T+1, T+1) float32`` soft SLR mask with temperature ``tau`` (SPEC.md §3);
        ``hard``: ``(T+1, T+1) bool`` hard non-strict SLR mask; ``parents``: ``(T+1,) float32``
        PASCAL mean-parent positions (``</s>`` points at itself); ``pascal``: ``(T+1, T+1)
        float32`` Gaussian weights ``N(j; p_i, σ²)`` (SPEC.md §4).

    Raises:
        ValueError: τ <= 0, σ <= 0, unknown mode.
    """
    from synprep.features.parents import gaussian_weights, parent_positions
    from synprep.features.slr import hard_slr_mask, soft_slr_mask

    gaps = token_gaps(view, mode)
    parents = parent_positions(view.record.heads, view.record.word_index, mode="mean", eos=True)
    return {"soft": soft_slr_mask(gaps, tau), "hard": hard_slr_mask(gaps, strict=False), "parents": parents,
            "pascal": gaussian_weights(parents, sigma)}


# --- text ----------------------------------------------------------------------------------------


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
    from synprep.features.parents import parent_positions

    rec = view.record
    t, w = len(view.src), len(view.words)
    starts = rec.sent_start.tolist()
    lines = [view.title(),
             f"tree source: {view.attrs.get('tree_source', '?')}; {view.attrs.get('signature', '')}",
             *view.notes,
             f"source: {t} {view.attrs.get('subword', 'bpe')} pieces, {w} words, "
             f"{len(starts)} sentence{'s' if len(starts) != 1 else ''}"
             f"{'; the words as the parser read them' if view.words_stored else ''}",
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
    rows = [["id", "word", "head", "deprel", "upos", f"LDD (best {ldd_top}: head:rel prob)"]]
    for i in range(w):
        entries = "  ".join(f"{h}:{r} {p:.3f}" for h, r, p in ldd.get(i + 1, []))
        rows.append([str(i + 1), view.words[i], str(int(rec.heads[i])), view.deprels[i], view.upos[i], entries])
    lines += _table(rows, right={0, 2})
    lines += ["  (word ids and heads 1-based, line-level: head 0 = root)", "",
              "sentences start at words: " + " ".join(str(s + 1) for s in starts), "",
              f"target: {len(view.tgt)} pieces", "  " + " ".join(view.tgt)]
    return "\n".join(lines) + "\n"


# --- the constituency tree behind the gaps ------------------------------------------------------


def word_distances(view: PairView) -> np.ndarray:
    """``(W-1,) int64`` word-level n-ary distances read back from the stored piece gaps.

    A gap between two words is ``d + 1`` (SPEC.md §2), so ``d = gap - 1``; a sentence boundary
    keeps :data:`~synprep.constants.GAP_SENTENCE` (999).
    """
    rec = view.record
    wi = rec.word_index.astype(np.int64)
    between = np.flatnonzero(wi[1:] != wi[:-1])  # piece k ends a word
    gaps = rec.gaps_nary.astype(np.int64)[between]
    return np.where(gaps >= GAP_SENTENCE, GAP_SENTENCE, gaps - 1)


#: a node of :func:`gap_tree`: ``(height, children)``; a leaf is its 0-based word index
GapNode = tuple[int, list[Any]]


def gap_tree(dist: Sequence[int], lo: int = 0, hi: int | None = None) -> GapNode | int:
    """The unlabeled n-ary tree whose n-ary distances (SPEC.md §2) are ``dist``.

    A node's children are cut at every gap of its span that equals the span's largest gap (the
    node's value ``1 + max(child values)`` is the gap between each pair of its children, and
    every gap inside a child is smaller), so the bracketing — unary chains collapsed, labels not
    stored — is recovered exactly.

    Args:
        dist: ``(n-1,)`` word-level n-ary distances of one sentence (``>= 1``).
        lo, hi: the word span ``[lo, hi]`` (0-based, inclusive; default the whole sentence).

    Returns:
        a word index (0-based) for one word, else ``(height, children)``.
    """
    hi = len(dist) if hi is None else hi
    if lo == hi:
        return lo
    inner = dist[lo:hi]
    top = max(inner)
    cuts = [lo + k for k, d in enumerate(inner) if d == top]
    bounds = [lo, *[c + 1 for c in cuts], hi + 1]
    return int(top), [gap_tree(dist, a, b - 1) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _tree_layout(node: GapNode | int, segs: list[tuple[float, float, float, float]]) -> tuple[float, float]:
    """``(x, y)`` of ``node`` (leaves at their word index, y = 0; a node at its height, centred over
    its children), appending the node-to-child segments to ``segs``."""
    if isinstance(node, int):
        return float(node), 0.0
    height, kids = node
    pts = [_tree_layout(k, segs) for k in kids]
    x = (pts[0][0] + pts[-1][0]) / 2
    for cx, cy in pts:
        segs.append((x, float(height), cx, cy))
    return x, float(height)


def _tree_panel(ax, view: PairView) -> None:
    """The constituency tree(s) of the line, recovered from the n-ary gaps, over the words."""
    dist = word_distances(view).tolist()
    w = len(view.words)
    segs: list[tuple[float, float, float, float]] = []
    nodes: list[tuple[float, float]] = []
    start = 0
    for end in [*[k for k, d in enumerate(dist) if d >= GAP_SENTENCE], w - 1]:
        tree = gap_tree([d for d in dist[start:end]], 0, end - start)
        before = len(segs)
        _tree_layout(tree, segs)
        for i in range(before, len(segs)):
            x0, y0, x1, y1 = segs[i]
            segs[i] = (x0 + start, y0, x1 + start, y1)
            nodes.append((x0 + start, y0))
        start = end + 1
    top = max([y for _, y in nodes], default=1.0)
    for x0, y0, x1, y1 in segs:  # dendrogram style: across at the node's height, then down to the child
        ax.plot([x0, x1, x1], [y0, y0, y1], color="tab:green", lw=1.0)
    if nodes:
        xs, ys = zip(*set(nodes), strict=True)
        ax.plot(xs, ys, "o", color="tab:green", ms=3)
    rotate = w > 22
    size = float(np.clip(ax.figure.get_figwidth() * 72 / max(w, 1) * (0.9 if rotate else 0.45), 5, 9))
    for i, word in enumerate(view.words):
        ax.text(i, -0.15, word, ha="right" if rotate else "center", va="top", fontsize=size,
                rotation=45 if rotate else 0, rotation_mode="anchor")
    for s in view.record.sent_start.tolist()[1:]:
        ax.axvline(s - 0.5, color="0.6", ls="--", lw=0.8)
    ax.set_xlim(-0.8, w - 0.2)
    ax.set_ylim(-1.2 if not rotate else -2.2, top + 0.4)
    ax.set_yticks(range(1, int(top) + 1))
    ax.set_ylabel("n-ary distance")
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"constituency tree the gaps came from (tree source: {view.attrs.get('tree_source')}), "
                 "recovered from the stored n-ary gaps: a node sits at its distance; labels are not stored",
                 fontsize=9, loc="left")


def needs_cjk(texts: Iterable[str]) -> bool:
    """True when any text holds a Chinese, Japanese or Korean character."""
    return any(_CJK.search(t) for t in texts)


def cjk_font() -> str | None:
    """The first of :data:`CJK_FONTS` matplotlib knows, or None.

    matplotlib lists the system's fonts once and caches the list (``~/.cache/matplotlib``): a font
    installed after that (``apt-get install fonts-noto-cjk`` after a first plot) is not in it. So
    when none is known, the system's font files are looked at once and the CJK ones added
    (``fontManager.addfont``) before giving up.
    """
    from matplotlib import font_manager

    known = {f.name for f in font_manager.fontManager.ttflist}
    found = next((name for name in CJK_FONTS if name in known), None)
    if found is None and _add_system_cjk_fonts():
        known = {f.name for f in font_manager.fontManager.ttflist}
        found = next((name for name in CJK_FONTS if name in known), None)
    return found


@functools.lru_cache(maxsize=1)
def _add_system_cjk_fonts() -> bool:
    """Add the system's CJK font files (by file name) that matplotlib's cached list lacks; True if any."""
    from matplotlib import font_manager

    listed = {f.fname for f in font_manager.fontManager.ttflist}
    keys = [re.sub(r"[^a-z]", "", name.lower()) for name in CJK_FONTS] + ["cjk"]
    added = False
    for path in font_manager.findSystemFonts():
        stem = re.sub(r"[^a-z]", "", Path(path).stem.lower())
        if path not in listed and any(k in stem for k in keys):
            try:
                font_manager.fontManager.addfont(path)
                added = True
            except (OSError, RuntimeError, ValueError):  # an unreadable font file: skip it
                continue
    return added


@contextlib.contextmanager
def _fonts(view: PairView) -> Iterator[str | None]:
    """Draw inside: a CJK fallback font when the pair needs one (yields its name, else None); without
    one, a single warning naming :data:`CJK_FONT_PACKAGE` replaces matplotlib's one per glyph."""
    import matplotlib

    texts = [*view.src, *view.tgt, *view.words]
    font = cjk_font() if needs_cjk(texts) else None
    if needs_cjk(texts) and font is None:
        log.warning("warning: no CJK font found: Chinese/Japanese/Korean words are drawn as boxes "
                    "(install one, e.g. apt-get install %s)", CJK_FONT_PACKAGE)
    rc: dict[Any, Any] = {"font.family": ["DejaVu Sans", font]} if font else {}
    with matplotlib.rc_context(rc), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from")
        yield font


# --- figure --------------------------------------------------------------------------------------


def _token_labels(view: PairView) -> list[str]:
    return [*view.src, EOS]


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
    rotate = w > 22
    per_word = ax.figure.get_figwidth() * 72 / max(w, 1)  # points of width per word
    size = float(np.clip(per_word * (0.9 if rotate else 0.45), 5, 9))
    for i, (word, tag) in enumerate(zip(view.words, view.upos, strict=True)):
        ax.text(i, 0.05, word, ha="right" if rotate else "center", va="top", fontsize=size,
                rotation=45 if rotate else 0, rotation_mode="anchor")
        if per_word >= 22:  # else the tags would run into each other (the text output lists them)
            ax.text(i, -0.55 if not rotate else -1.5, tag, ha="center", va="top", fontsize=6.5, color="0.4")
    for s in rec.sent_start.tolist()[1:]:
        ax.axvline(s - 0.5, color="0.6", ls="--", lw=0.8)
    ax.set_xlim(-0.8, w - 0.2)
    ax.set_ylim(-1.0 if not rotate else -2.0, top + 0.2)
    ax.axis("off")
    ax.set_title("dependency tree: head → dependent with its deprel, root ↓"
                 + ("; UPOS under the words" if per_word >= 22 else "")
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


def _heatmap(fig, ax, m: np.ndarray, labels: list[str], title: str, *, cmap: str, vmin: float, vmax: float,
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
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)


def pair_figure(view: PairView, *, tau: float = 10.0, mode: str = "cnf") -> Figure:
    """A matplotlib figure of the pair: arcs, gaps, soft/hard SLR masks, PASCAL weights (module docstring).

    The figure is sized to the sentence (about 0.28 inch per piece, at least 14 × 15 inches) and is
    made without pyplot (no global state, no display).

    Raises:
        ValueError: τ <= 0 or an unknown gap mode.
    """
    from synprep.extras import require

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
    _heatmap(fig, fig.add_subplot(grid[r + 1, 0]), mats["soft"], labels,
             f"soft SLR mask, τ = {tau:g} ({mode} gaps)", cmap="viridis", vmin=0, vmax=1)
    _heatmap(fig, fig.add_subplot(grid[r + 1, 1]), mats["hard"].astype(np.float32), labels,
             f"hard SLR mask, non-strict ({mode} gaps)", cmap="viridis", vmin=0, vmax=1)
    _heatmap(fig, fig.add_subplot(grid[r + 2, 0]), mats["pascal"], labels,
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
    from synprep.extras import require
    from synprep.textio import atomic_write

    require("matplotlib", "drawing a pair (show --png)")
    with _fonts(view) as font:  # the glyphs are looked up when the figure is drawn
        fig = _pair_figure(view, tau=tau, mode=mode, font=font)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    data = buf.getvalue()
    with atomic_write(path, "wb") as f:
        f.write(data)
    return len(data)


def _cjk_fonts() -> list[str]:
    """``[cjk_font()]``, or ``[]`` without one (kept for callers of the earlier name)."""
    font = cjk_font()
    return [font] if font else []
