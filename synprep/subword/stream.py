"""Segment a split's lines with a scheme, in chunks over ``--jobs`` workers (the pipeline's text stage).

A worker loads the model once (:func:`synprep.subword.load_scheme` caches it per process); an input of one chunk
is segmented in this process, which has loaded it already (:func:`synprep.parallel.chunk_map`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from functools import partial

from synprep.parallel import chunk_map
from synprep.subword import load_scheme
from synprep.subword.base import check_pieces

#: lines per work item for ``--jobs``
CHUNK_LINES = 2000

#: one source line to align: (1-based line number, segmenter input text, the words as spelt in it)
SourceLine = tuple[int, str, list[str]]


def _align_chunk(chunk: list[SourceLine], name: str, model: str, path: str | None) -> list[tuple[str, str]]:
    scheme = load_scheme(name, model)
    out = []
    for line, text, words in chunk:
        a = scheme.align_line(text, words, line=line, path=path)
        check_pieces(a.pieces, text, line=line, path=path)
        index = " ".join(map(str, a.word_index.tolist()))
        out.append((" ".join(a.pieces), index + "\t" + " ".join(map(str, a.stats.as_tuple()))))
    return out


def align_stream(lines: Iterable[SourceLine], name: str, model: str | os.PathLike, *, path: str | None = None,
                 jobs: int = 1, backend: str = "loky", scheduler: str | None = None) -> Iterator[tuple[str, str]]:
    """Align every source line; yields ``(pieces line, word-index line)`` in order.

    The word-index line is the 0-based word of each stored piece, a tab, and the line's
    :class:`~synprep.subword.offsets.AlignStats` as integers (:func:`parse_index_line`).

    Raises:
        InputError: a word not in its line, a word without a piece, a piece with whitespace (names
            ``path`` and the line).
    """
    load_scheme(name, model)  # fail early, in this process
    func = partial(_align_chunk, name=name, model=os.path.abspath(model), path=path)
    yield from chunk_map(func, lines, CHUNK_LINES, jobs=jobs, backend=backend, scheduler=scheduler)


def parse_index_line(text: str) -> tuple[list[int], tuple[int, ...]]:
    """``"0 0 1\\t1 1 1 0 0"`` → ``([0, 0, 1], (1, 1, 1, 0, 0))`` (what :func:`align_stream` writes)."""
    index, _, stats = text.partition("\t")
    return [int(x) for x in index.split()], tuple(int(x) for x in stats.split())


def _encode_chunk(chunk: list[str], name: str, model: str) -> list[str]:
    scheme = load_scheme(name, model)
    out = []
    for text in chunk:
        pieces = scheme.encode(text)
        check_pieces(pieces, text)
        out.append(" ".join(pieces))
    return out


def encode_stream(lines: Iterable[str], name: str, model: str | os.PathLike, *, jobs: int = 1,
                  backend: str = "loky", scheduler: str | None = None) -> Iterator[str]:
    """The pieces of every line (the target side), space-separated, in order."""
    load_scheme(name, model)
    func = partial(_encode_chunk, name=name, model=os.path.abspath(model))
    yield from chunk_map(func, lines, CHUNK_LINES, jobs=jobs, backend=backend, scheduler=scheduler)
