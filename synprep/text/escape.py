"""Moses XML escapes (SPEC.md §1).

sacremoses' ``tokenize(..., escape=True)`` writes ``&amp; &#124; &lt; &gt; &apos; &quot; &#91; &#93;``.
The parser sees the unescaped words; BPE and the shards keep the escaped ones. The mapping is
sacremoses' own (``MosesTokenizer.escape_xml`` / ``MosesDetokenizer.unescape_xml``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from sacremoses import MosesDetokenizer, MosesTokenizer


@lru_cache(maxsize=1)
def _tok() -> MosesTokenizer:
    return MosesTokenizer(lang="en")


@lru_cache(maxsize=1)
def _detok() -> MosesDetokenizer:
    return MosesDetokenizer(lang="en")


def escape(text: str) -> str:
    """Moses-escape ``text`` (``&`` → ``&amp;`` first, then ``| < > ' " [ ]``)."""
    return _tok().escape_xml(text)


def unescape(text: str) -> str:
    """Undo :func:`escape` (and the legacy ``&bar; &bra; &ket;``); other text is unchanged."""
    if "&" not in text:
        return text
    return _detok().unescape_xml(text)


def unescape_tokens(tokens: list[str]) -> list[str]:
    """Unescape each token of a Moses-tokenized sentence; the token count never changes."""
    return [unescape(t) for t in tokens]


#: the entities sacremoses' ``escape_xml`` writes (and the legacy ``&bar; &bra; &ket;``)
MOSES_ENTITY = re.compile(r"&(?:amp|lt|gt|apos|quot|#124|#91|#93|bar|bra|ket);")


def moses_entity(text: str) -> str | None:
    """The first Moses escape in ``text`` (``"&quot;"``), or None: a sign of already tokenized text."""
    m = MOSES_ENTITY.search(text)
    return m.group(0) if m else None
