"""synprep.parse: everything that produces a parse (:class:`~synprep.types.ParsedLine`).

* :func:`parse_lines` — words in, parsed lines out (any registered backend, cache, workers);
* :class:`ParserSpec`, :func:`make_parser`, :func:`parser_identity` — choose and load a parser;
  :mod:`~synprep.parse.registry` — the backends by name (stanza, CoreNLP, spaCy), each a
  :class:`~synprep.parse.base.ParserBackend`;
* :mod:`~synprep.parse.conllu_io` — CoNLL-U import/export; :mod:`~synprep.parse.trees` —
  bracketed trees; :mod:`~synprep.parse.ssplit` — sentence splitting on Moses tokens;
  :mod:`~synprep.parse.cache` — the parse cache; :mod:`~synprep.parse.evaluate` — UAS/LAS.

Importing this package loads neither torch nor stanza; the parsers load them when built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from synprep.lazy import lazy_names

if TYPE_CHECKING:  # the names as the type checker reads them; at run time, :func:`__getattr__`
    from synprep.parse.base import DEFAULT_LDD_THRESHOLD, DEFAULT_MAX_WORDS, ParserSpec, ParseStats
    from synprep.parse.cache import ParseCache, default_cache_path
    from synprep.parse.conllu_io import read_conllu, write_conllu
    from synprep.parse.options import Parallel, ParseRun
    from synprep.parse.run import make_parser, parse_lines, parser_identity
    from synprep.parse.ssplit import split_sentences

#: public name -> the module that defines it, imported when the name is first read: a command that reads only
#: the parse stage's options or a backend's (``synprep tokenize``, ``synprep bpe``) loads neither the cache,
#: the CoNLL-U reader nor the parse loop
_LAZY = {
    "DEFAULT_LDD_THRESHOLD": "synprep.parse.base", "DEFAULT_MAX_WORDS": "synprep.parse.base",
    "ParserSpec": "synprep.parse.base", "ParseStats": "synprep.parse.base",
    "ParseCache": "synprep.parse.cache", "default_cache_path": "synprep.parse.cache",
    "read_conllu": "synprep.parse.conllu_io", "write_conllu": "synprep.parse.conllu_io",
    "Parallel": "synprep.parse.options", "ParseRun": "synprep.parse.options",
    "make_parser": "synprep.parse.run", "parse_lines": "synprep.parse.run", "parser_identity": "synprep.parse.run",
    "split_sentences": "synprep.parse.ssplit",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "DEFAULT_LDD_THRESHOLD",
    "DEFAULT_MAX_WORDS",
    "Parallel",
    "ParseCache",
    "ParseRun",
    "ParseStats",
    "ParserSpec",
    "default_cache_path",
    "make_parser",
    "parse_lines",
    "parser_identity",
    "read_conllu",
    "split_sentences",
    "write_conllu",
]
