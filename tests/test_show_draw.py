"""``synprep show --png``: the constituency tree behind the gaps, and CJK words (with a CJK font, or
one warning naming the package without one)."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import pytest
from builders import japanese_gold_folder

from synprep import show
from synprep.features.distance import both_gaps
from synprep.show import PairView, gap_tree, load_pair, pair_figure, save_png, word_distances
from synprep.types import PairRecord

SPEC_TREE = "(ROOT (S (NP (PRP I)) (VP (VBP swim) (PP (IN across) (NP (DT the) (NN river)))) (. .)))"


def view_of(words: list[str], nary: list[int], tree_source: str, sent_start: tuple[int, ...] = (0,)) -> PairView:
    """A pair whose pieces are its words; ``nary``: the stored piece gaps (d + 1, 999 between sentences)."""
    n = len(words)
    z = np.zeros(0, dtype=np.int64)
    rec = PairRecord(line=1, src_ids=np.arange(4, 4 + n), tgt_ids=np.array([4]), word_index=np.arange(n),
                     heads=np.array([0] + [1] * (n - 1)), deprel=np.zeros(n, np.int64), upos=np.zeros(n, np.int64),
                     sent_start=np.array(sent_start), gaps_cnf=np.array(nary), gaps_nary=np.array(nary),
                     ldd_dep=z, ldd_head=z, ldd_rel=z, ldd_prob=np.zeros(0, np.float32))
    return PairView(folder=Path("x"), split="test", index=0, shard="test.00000.h5", position=0, record=rec,
                    attrs={"tree_source": tree_source}, src=list(words), tgt=["x"], words=list(words),
                    deprels=["dep"] * n, upos=["X"] * n)


def tree_titles(fig) -> list[str]:
    return [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left").startswith("constituency tree")]


def test_gap_tree_recovers_the_bracketing() -> None:
    # SPEC.md §2: nary [4,3,2,1,4] ← (S (NP I) (VP swim (PP across (NP the river))) .)
    nary = both_gaps(SPEC_TREE)[1].tolist()
    assert nary == [4, 3, 2, 1, 4]
    assert gap_tree(nary) == (4, [0, (3, [1, (2, [2, (1, [3, 4])])]), 5])
    view = view_of("I swim across the river .".split(), [d + 1 for d in nary], "constituency")
    assert word_distances(view).tolist() == nary


def test_constituency_tree_drawn_only_when_the_gaps_came_from_one() -> None:
    words = "hello . I swim across the river .".split()
    gaps = [2, 999, 5, 4, 3, 2, 5]  # SPEC.md §2's two-sentence line
    fig = pair_figure(view_of(words, gaps, "constituency", (0, 2)))
    assert len(tree_titles(fig)) == 1
    ax = next(a for a in fig.axes if a.get_title(loc="left").startswith("constituency tree"))
    # every word under the tree; the node heights are the n-ary distances (4 at the top of sentence 2)
    assert [t.get_text() for t in ax.texts] == words
    assert ax.get_ylim()[1] == pytest.approx(4.4)
    assert tree_titles(pair_figure(view_of(words, gaps, "dependency", (0, 2)))) == []


JA = "これ に 不快 感 を 示す 住民 は い まし た".split()


def test_cjk_words_with_a_font(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from matplotlib import font_manager

    # a CJK font entry: the real one where installed (fonts-noto-cjk), else a stand-in that makes
    # the choice testable on CI, which installs no fonts
    if show.cjk_font() is None:
        dejavu = font_manager.findfont("DejaVu Sans")
        fake = font_manager.FontEntry(fname=dejavu, name="Noto Sans CJK JP", style="normal", variant="normal",
                                      weight=400, stretch="normal", size="scalable")
        monkeypatch.setattr(font_manager.fontManager, "ttflist", [*font_manager.fontManager.ttflist, fake])
    font = show.cjk_font()
    assert font in show.CJK_FONTS
    caplog.set_level(logging.WARNING, logger="synprep")
    fig = pair_figure(view_of(JA, [2] * (len(JA) - 1), "dependency"))
    families = {tuple(t.get_fontfamily()) for ax in fig.axes for t in ax.texts if t.get_text() in JA}
    assert families == {("DejaVu Sans", font)}
    assert caplog.records == []


@pytest.mark.skipif(show.cjk_font() is None, reason="no CJK font installed (CI: the stand-in test above)")
def test_installed_cjk_font_has_the_glyphs() -> None:
    from matplotlib import font_manager, ft2font

    path = font_manager.findfont(font_manager.FontProperties(family=show.cjk_font()), fallback_to_default=False)
    face = ft2font.FT2Font(path)
    assert all(face.get_char_index(ord(c)) != 0 for c in "".join(JA))


@pytest.mark.skipif(show.cjk_font() is None, reason="no CJK font installed (.ci/run installs fonts-noto-cjk)")
def test_a_cjk_font_installed_after_matplotlibs_font_cache_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib caches its font list: a font installed after the first plot is not in it (seen here:
    `apt-get install fonts-noto-cjk`, then show --png still warned and drew boxes)."""
    from matplotlib import font_manager

    cjk_files = {f.fname for f in font_manager.fontManager.ttflist if f.name in show.CJK_FONTS}
    stale = [f for f in font_manager.fontManager.ttflist if f.fname not in cjk_files]  # as before the install
    monkeypatch.setattr(font_manager.fontManager, "ttflist", stale)
    show._add_system_cjk_fonts.cache_clear()
    try:
        assert show.cjk_font() in show.CJK_FONTS
    finally:
        show._add_system_cjk_fonts.cache_clear()


def test_no_cjk_font_one_warning_naming_the_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(show.fonts, "cjk_font", lambda: None)  # where _fonts looks it up
    show.fonts._warn_no_cjk_font.cache_clear()  # once per process: this test's own
    caplog.set_level(logging.WARNING, logger="synprep")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save_png(view_of(JA, [2] * (len(JA) - 1), "dependency"), tmp_path / "ja.png")
    assert [r.getMessage() for r in caplog.records] == [
        "warning: no CJK font found: Chinese/Japanese/Korean words are drawn as boxes "
        "(install one, e.g. apt-get install fonts-noto-cjk)"]
    assert [str(w.message) for w in caught if "Glyph" in str(w.message)] == []  # not one per glyph
    assert (tmp_path / "ja.png").read_bytes()[:4] == b"\x89PNG"
    # Latin text needs no CJK font: no warning
    caplog.clear()
    save_png(view_of(["I", "swim"], [2], "dependency"), tmp_path / "en.png")
    assert caplog.records == []


def test_japanese_gold_parse_through_conllu_import(shared_data: Path, tmp_path: Path) -> None:
    """ja_gsd test sentence 1 imported with --parser conllu: the words reach the figure as they are."""
    out, words = japanese_gold_folder(shared_data, tmp_path, 2)
    view = load_pair(out, "test", index=0)
    assert view.words == words[0] and show.needs_cjk(view.words)
    fig = pair_figure(view)
    arcs = fig.axes[0]
    assert [t.get_text() for t in arcs.texts if t.get_text() in words[0]][:3] == words[0][:3]
