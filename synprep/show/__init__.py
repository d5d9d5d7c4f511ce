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

The module is a package of one-purpose parts, re-exported here: :mod:`synprep.show.pair` (the pair,
its JSON and matrices), :mod:`~synprep.show.text`, :mod:`~synprep.show.tree` (the gap tree),
:mod:`~synprep.show.fonts` (CJK), :mod:`~synprep.show.figure` (the drawing).
"""

from __future__ import annotations

from synprep.show.figure import (
           ARC_STEP,
           CONSTITUENCY_SOURCES,
           FIGURE_MAX_WIDTH,
           HEATMAP_MAX_SIDE,
           pair_figure,
           save_png,
)
from synprep.show.fonts import (
           CJK_FONT_PACKAGE,
           CJK_FONTS,
           _add_system_cjk_fonts,
           _cjk_fonts,
           cjk_font,
           needs_cjk,
)
from synprep.show.pair import GAP_MODES, PairView, load_pair, pair_json, pair_matrices, token_gaps
from synprep.show.text import pair_text
from synprep.show.tree import GapNode, gap_tree, word_distances

__all__ = ["ARC_STEP", "CJK_FONTS", "CJK_FONT_PACKAGE", "CONSTITUENCY_SOURCES", "FIGURE_MAX_WIDTH", "GAP_MODES",
           "HEATMAP_MAX_SIDE", "GapNode", "PairView", "_add_system_cjk_fonts", "_cjk_fonts", "cjk_font", "gap_tree",
           "load_pair", "needs_cjk", "pair_figure", "pair_json", "pair_matrices", "pair_text", "save_png",
           "token_gaps", "word_distances"]
