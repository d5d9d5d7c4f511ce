"""Word segmentation by the parser's own tokenizer (``--tokenizer parser``), for languages Moses cannot cut.

Moses splits on spaces and punctuation, so it finds no words in Japanese (or Chinese, Thai): a whole
clause comes back as one token. For these languages the words come from the parser's own tokenizer —
GiNZA's Sudachi for ``--parser spacy --spacy-model ja_ginza`` — through the backend's
:meth:`~synprep.parse.base.ParserBackend.tokenizer` hook (a backend without one is refused). The output
is the same as Moses tokenization's: the words of each line joined by single spaces, Moses-escaped
(``&amp;`` ...; SPEC.md §1) unless ``escape=False``, lowercased with ``lowercase``. The parser later reads
exactly these words (pretokenized), so its tokenization and the parse agree by construction.

:data:`TOKENIZERS` are the ``--tokenizer`` choices: ``moses`` (sacremoses, the default; spaced
languages keep it) and ``parser``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from synprep.constants import TOKENIZERS  # noqa: F401 - re-exported: the --tokenizer choices
from synprep.escape import escape as moses_escape
from synprep.parallel import chunked, parallel_map
from synprep.parse.base import ParserSpec, backend_class
from synprep.parse.run import short_identity
from synprep.text.case import moses_lowercase

#: lines per work item
CHUNK_LINES = 2000

_TOK: tuple[ParserSpec, Callable[[str], list[str]]] | None = None


def _tokenizer(spec: ParserSpec) -> Callable[[str], list[str]]:
    """This process's tokenizer for ``spec`` (loaded once per process)."""
    global _TOK
    if _TOK is None or _TOK[0] != spec:
        _TOK = (spec, backend_class(spec.name).tokenizer(spec))
    return _TOK[1]


def parser_tokenize_line(text: str, spec: ParserSpec, *, lowercase: bool = False, escape: bool = True) -> str:
    """Segment one raw line into words with ``spec``'s parser tokenizer; words joined by single spaces.

    Raises:
        ConfigError: the backend has no tokenizer, or its model is missing.
    """
    words = _tokenizer(spec)(text) if text.strip() else []
    if escape:
        words = [moses_escape(w) for w in words]
    out = " ".join(words)
    return moses_lowercase(out) if lowercase else out


def parser_tokenize_lines(lines: list[str], spec: ParserSpec, *, lowercase: bool = False,
                          escape: bool = True) -> list[str]:
    """:func:`parser_tokenize_line` over a chunk (the unit of work for ``jobs``); same length out."""
    return [parser_tokenize_line(t, spec, lowercase=lowercase, escape=escape) for t in lines]


def parser_tokenize_stream(lines: Iterable[str], spec: ParserSpec, *, lowercase: bool = False, escape: bool = True,
                           jobs: int = 1, backend: str = "loky", scheduler: str | None = None,
                           chunk_lines: int = CHUNK_LINES) -> Iterator[str]:
    """Tokenize a stream of raw lines in order, one line out per line in, ``jobs`` workers (each loads the
    tokenizer once).

    Raises:
        ConfigError: as :func:`parser_tokenize_line` (checked in this process before any work).
    """
    _tokenizer(spec)
    func = partial(parser_tokenize_lines, spec=spec, lowercase=lowercase, escape=escape)
    for chunk in parallel_map(func, chunked(lines, chunk_lines), jobs=jobs, backend=backend, scheduler=scheduler):
        yield from chunk


def parser_tokenizer_signature(identity: str, *, lowercase: bool, escape: bool) -> dict[str, Any]:
    """Signature fields of a parser tokenization: ``tok:parser:<short parser identity>``."""
    fields = identity.split("|")
    lang = dict(f.split("=", 1) for f in fields[2:] if "=" in f).get("lang")
    return {"tok": f"parser:{short_identity(identity)}", "lang": lang, "lc": lowercase, "esc": escape}
