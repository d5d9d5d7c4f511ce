"""Moses' lowercasing without sacremoses: what the annotation's records need of the text stage.

Kept apart from :mod:`synprep.text.tokenize` (which imports sacremoses, and with it joblib: 0.2–0.3 s per
process) so that the processes that build a shard's records never import the tokenizer.
"""

from __future__ import annotations


def moses_lowercase(text: str) -> str:
    """Lowercase like Moses' ``lowercase.perl`` (Perl ``lc``).

    Python's :meth:`str.lower` differs from Perl ``lc`` in one place: it writes a word-final
    capital sigma as ``ς``; Perl always writes ``σ``. Everything else (full Unicode case
    mapping, ``İ`` → ``i̇``) is the same.
    """
    if "\u03a3" in text:
        text = text.replace("\u03a3", "\u03c3")
    return text.lower()
