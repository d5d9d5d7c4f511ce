"""The base class of subword schemes (registry: :data:`synprep.subword.SCHEMES`).

A scheme knows one segmenter: how to load its model file, learn one (when it can), split a line
into pieces, and align a line's pieces to the parser's words. Schemes that read raw text
(``reads_raw``) give character offsets, and the alignment is :mod:`synprep.subword.offsets`;
subword-nmt BPE reads Moses-tokenized text and aligns by its ``@@`` markers
(:func:`synprep.align.align`).
"""

from __future__ import annotations

import os
import re
import shutil
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from synprep.errors import ConfigError, InputError
from synprep.signature import file_sha256, package_version
from synprep.subword.offsets import AlignedLine, align_offsets, locate_words
from synprep.textio import PathLike, atomic_write, display_name

_SPACE = re.compile(r"\s+")


class SubwordScheme(ABC):
    """One subword segmenter with its model file.

    Class attributes:
        name: the registry name (``--subword NAME``; the shards' ``subword`` attribute).
        library: the distribution that segments (its version goes into :meth:`identity`).
        reads_raw: True when the scheme segments raw text and gives character offsets; False when
            it reads Moses-tokenized, escaped text (subword-nmt).
        model_name: the model's file name inside a pipeline's output folder.
        model_option: the option that gives a model (``--codes``, ``--spm-model``, …).
        size_option: the option that sizes a learned model, or None when the scheme cannot learn.
        bpe_markers: True when the stored pieces are subword-nmt's: Moses-tokenized, escaped words
            cut into pieces that end in ``@@`` when their word goes on, so removing ``@@ `` and
            undoing the escapes gives the words back (what ``translate --remove-bpe/--detok`` and
            the parquet/hf export's word rebuilding assume). False: the words are found by
            character offsets, and the pieces carry no such marker.
        byte_level: True when pieces are byte-level BPE symbols (GPT-2's byte-to-unicode table: ``Ġ``
            for a space), so a word's text is its pieces' bytes decoded as UTF-8.

    Args:
        path: the model file.

    Raises:
        InputError: the model file is missing or not a model of this scheme.
    """

    name: ClassVar[str]
    library: ClassVar[str]
    reads_raw: ClassVar[bool] = True
    model_name: ClassVar[str]
    model_option: ClassVar[str]
    size_option: ClassVar[str | None] = None
    bpe_markers: ClassVar[bool] = False
    byte_level: ClassVar[bool] = False

    def __init__(self, path: PathLike):
        self.path = str(path)
        if not os.path.isfile(self.path):
            raise InputError(f"no such {self.name} model file ({self.model_option})", display_name(path))
        self.sha256 = file_sha256(self.path)

    # --- learning ---------------------------------------------------------------------------
    @classmethod
    def learn(cls, files: Sequence[PathLike], out: PathLike, size: int) -> None:
        """Learn a model of ``size`` (merges, vocabulary size) on the lines of ``files``, written
        atomically to ``out``.

        Raises:
            ConfigError: this scheme cannot learn (give a model file).
            InputError: bad input.
        """
        raise ConfigError(f"--subword {cls.name} cannot learn a model: give {cls.model_option}")

    # --- segmenting -------------------------------------------------------------------------
    def identity(self) -> str:
        """``NAME-LIBVERSION/SHA8``: the segmenter's library version and the model file's sha256 prefix."""
        return f"{self.name}-{package_version(self.library)}/{self.sha256[:8]}"

    @abstractmethod
    def encode(self, text: str) -> list[str]:
        """The pieces of one line, as the segmenter gives them (the target side; ``apply``)."""

    def segment(self, text: str) -> tuple[list[str], list[tuple[int, int]]]:
        """The pieces of one raw line and their ``[start, end)`` character spans in ``text``."""
        raise NotImplementedError(f"{self.name} gives no character offsets")

    def split_piece(self, piece: str, surface: str, cuts: Sequence[int]) -> list[str]:
        """The stored names of the parts of a piece split at word starts (rule ``split``).

        ``cuts`` are 0-based offsets in ``surface`` (the piece's characters in the line). When the
        piece is a marker followed by its surface (``Ġ2,``, ``##2,``), the first part keeps the
        marker and the parts are the surface's slices; otherwise the parts are the slices, with
        whitespace written ``▁`` (a piece never holds a space).
        """
        bounds = [0, *cuts, len(surface)]
        slices = [surface[bounds[k]:bounds[k + 1]] for k in range(len(bounds) - 1)]
        if surface and piece.endswith(surface):
            slices[0] = piece[: len(piece) - len(surface)] + slices[0]
            return slices
        return [_SPACE.sub("\u2581", s) for s in slices]

    def align_line(self, text: str, words: Sequence[str], *, line: int | None = None,
                   path: str | None = None) -> AlignedLine:
        """Segment one line and give every piece its word (:func:`~synprep.subword.offsets.align_offsets`).

        Args:
            text: the line as the segmenter reads it (raw text; lowercased when the corpus is).
            words: ``(W,)`` the parser's words, spelt as in ``text``.
            line: for error messages.
            path: for error messages.

        Raises:
            InputError: a word is not in the line, a word gets no piece (names the line).
        """
        word_spans = locate_words(text, words, line=line, path=path)
        pieces, spans = self.segment(text)
        return align_offsets(pieces, spans, word_spans, text, self.split_piece, line=line, path=path)

    def decode(self, pieces: Sequence[str]) -> str:
        """Detokenize target pieces back to text (what ``translate`` prints)."""
        return " ".join(pieces)

    def save(self, out: PathLike) -> None:
        """Copy the model to ``out`` (atomically): a pipeline keeps its model in its output folder."""
        with atomic_write(out, "wb", encoding=None) as f, open(self.path, "rb") as g:
            shutil.copyfileobj(g, f)


def check_pieces(pieces: Sequence[str], text: str, *, line: int | None = None, path: str | None = None) -> None:
    """Refuse a piece that is empty or holds whitespace: pieces are stored space-separated (dict.txt).

    Raises:
        InputError: names the piece and the line.
    """
    for p in pieces:
        if not p or _SPACE.search(p):
            raise InputError(f"the segmenter gave the piece {p!r}, which is empty or holds whitespace "
                             f"(pieces are stored space-separated), for {text[:60]!r}", path, line)
