"""Chinese, Japanese and Korean words in figures: an installed CJK font (:data:`CJK_FONTS`), or one
warning naming :data:`CJK_FONT_PACKAGE`. Part of :mod:`synprep.show`."""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from synprep.show.pair import PairView

#: fonts with CJK glyphs, tried in order (matplotlib falls back to them per glyph after DejaVu Sans)
CJK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK KR", "Noto Serif CJK JP",
             "Source Han Sans", "Source Han Sans JP", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
             "Droid Sans Fallback", "IPAexGothic", "IPAGothic", "TakaoGothic", "Noto Sans JP", "Noto Sans SC",
             "Noto Sans KR")
#: the Debian/Ubuntu package that provides the first of them
CJK_FONT_PACKAGE = "fonts-noto-cjk"

#: Hangul Jamo, CJK radicals … Kangxi, kana, CJK unified ideographs, Hangul syllables,
#: compatibility ideographs, half/full-width forms, and the supplementary ideograph planes
_CJK = re.compile("[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
                  "\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff]")

log = logging.getLogger("synprep")


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
        _warn_no_cjk_font()
    rc: dict[Any, Any] = {"font.family": ["DejaVu Sans", font]} if font else {}
    with matplotlib.rc_context(rc), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from")
        yield font


@functools.cache
def _warn_no_cjk_font() -> None:
    """The one warning of a process that draws CJK words without a CJK font (a report draws several pairs)."""
    log.warning("warning: no CJK font found: Chinese/Japanese/Korean words are drawn as boxes "
                "(install one, e.g. apt-get install %s)", CJK_FONT_PACKAGE)


def _cjk_fonts() -> list[str]:
    """``[cjk_font()]``, or ``[]`` without one (kept for callers of the earlier name)."""
    font = cjk_font()
    return [font] if font else []
