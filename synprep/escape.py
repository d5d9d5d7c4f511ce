"""Moses XML escapes (SPEC.md §1).

sacremoses' ``tokenize(..., escape=True)`` writes ``&amp; &#124; &lt; &gt; &apos; &quot; &#91; &#93;``.
The parser sees the unescaped words; BPE and the shards keep the escaped ones. The mapping is
sacremoses' own (``MosesTokenizer.escape_xml`` / ``MosesDetokenizer.unescape_xml``), kept as a
table here (:data:`synprep.constants.MOSES_ESCAPES`) so that escaping does not import sacremoses;
``tests/test_layering.py`` checks it against sacremoses' own regexes. A shared primitive below every stage
(the alignment and the parsers unescape, the text stage escapes); :mod:`synprep.text.escape` re-exports it.
"""

from __future__ import annotations

import re

from synprep.constants import MOSES_ESCAPES

#: character → entity, what sacremoses' ``MosesTokenizer.escape_xml`` writes (``&`` included: one
#: pass over the text equals its ``&``-first chain of substitutions)
_ESCAPE = str.maketrans({char: entity for entity, char in MOSES_ESCAPES.items()})
#: entity → character, what sacremoses' ``MosesDetokenizer.unescape_xml`` reads: the escapes and the
#: legacy ``&bar; &bra; &ket;``. Entities start with ``&``, end with ``;`` and hold neither inside, so
#: their occurrences never overlap and one left-to-right pass equals sacremoses' chain.
_UNESCAPE = {**MOSES_ESCAPES, "&bar;": "|", "&bra;": "[", "&ket;": "]"}
_UNESCAPE_RE = re.compile("|".join(re.escape(e) for e in _UNESCAPE))


def escape(text: str) -> str:
    """Moses-escape ``text`` (``&`` → ``&amp;``, ``| < > ' " [ ]``), as sacremoses' ``escape_xml``."""
    return text.translate(_ESCAPE)


def unescape(text: str) -> str:
    """Undo :func:`escape` (and the legacy ``&bar; &bra; &ket;``); other text is unchanged."""
    if "&" not in text:
        return text
    return _UNESCAPE_RE.sub(lambda m: _UNESCAPE[m.group(0)], text)


def unescape_tokens(tokens: list[str]) -> list[str]:
    """Unescape each token of a Moses-tokenized sentence; the token count never changes."""
    return [unescape(t) for t in tokens]


#: the entities sacremoses' ``escape_xml`` writes (and the legacy ``&bar; &bra; &ket;``)
MOSES_ENTITY = re.compile(r"&(?:amp|lt|gt|apos|quot|#124|#91|#93|bar|bra|ket);")


def moses_entity(text: str) -> str | None:
    """The first Moses escape in ``text`` (``"&quot;"``), or None: a sign of already tokenized text."""
    m = MOSES_ENTITY.search(text)
    return m.group(0) if m else None
