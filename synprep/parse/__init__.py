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

from synprep.parse.base import DEFAULT_LDD_THRESHOLD, DEFAULT_MAX_WORDS, ParserSpec, ParseStats
from synprep.parse.cache import ParseCache, default_cache_path
from synprep.parse.conllu_io import read_conllu, write_conllu
from synprep.parse.options import Parallel, ParseRun
from synprep.parse.run import make_parser, parse_lines, parser_identity
from synprep.parse.ssplit import split_sentences

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
