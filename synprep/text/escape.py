"""Moses XML escapes, under the text stage's name: :mod:`synprep.escape` holds them (a shared primitive the
parsers and the alignment use too, below the text stage); this path keeps working for callers of it."""

from synprep.escape import MOSES_ENTITY, escape, moses_entity, unescape, unescape_tokens

__all__ = ["MOSES_ENTITY", "escape", "moses_entity", "unescape", "unescape_tokens"]
