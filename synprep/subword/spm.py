"""``spm``: SentencePiece (the ``sentencepiece`` library) on raw text, as fairseq
``--bpe sentencepiece``, Marian, mBART and NLLB use it.

Pieces mark a preceding space with ``▁`` (``▁the``). Character offsets come from
``encode(out_type="offset_mapping")`` and refer to the original text, whatever the model's
normalization (``nmt_nfkc`` maps ``ﬁ`` to ``fi``): a normalized or byte-fallback group gives its
surface to its last piece and an empty one to the others, which rule ``next`` of
:mod:`synprep.subword.offsets` then puts in the same word.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence

from synprep.errors import ConfigError, InputError
from synprep.subword.base import SubwordScheme
from synprep.textio import PathLike, atomic_write, display_name, iter_lines

#: SentencePiece's whitespace marker (U+2581)
MARKER = "\u2581"

#: defaults of ``synprep spm learn`` (and ``pipeline --subword spm`` when it learns a model; the vocabulary
#: size's is :attr:`synprep.subword.config.SubwordConfig.vocab_size`'s)
DEFAULT_MODEL_TYPE = "unigram"
DEFAULT_CHARACTER_COVERAGE = 1.0
MODEL_TYPES = ("unigram", "bpe", "char", "word")


class SpmScheme(SubwordScheme):
    """A SentencePiece model file (``.model``)."""

    name = "spm"
    library = "sentencepiece"
    model_name = "spm.model"
    model_option = "--spm-model"
    size_option = "--vocab-size"

    def __init__(self, path: PathLike):
        super().__init__(path)
        import sentencepiece

        try:
            self.sp = sentencepiece.SentencePieceProcessor(model_file=self.path)
        except (RuntimeError, OSError) as e:
            raise InputError(f"not a SentencePiece model: {e}", display_name(path)) from None

    @classmethod
    def learn(cls, files: Sequence[PathLike], out: PathLike, size: int, *, model_type: str = DEFAULT_MODEL_TYPE,
              character_coverage: float = DEFAULT_CHARACTER_COVERAGE, byte_fallback: bool = False,
              threads: int = 1) -> None:
        """Train a model on the lines of ``files`` (read in order) and write it atomically to ``out``.

        Args:
            size: the vocabulary size (``--vocab_size``).
            model_type: ``unigram`` (SentencePiece's default), ``bpe``, ``char`` or ``word``.
            character_coverage: SentencePiece's; 1.0 keeps every character (small alphabets).
            byte_fallback: unknown characters as UTF-8 byte pieces instead of ``<unk>``.
            threads: training threads; 1 (default) gives the same model on every machine.

        Raises:
            ConfigError: a bad size or model type.
            InputError: a missing or non-UTF-8 file, no text, or SentencePiece refusing the data (its message,
                e.g. a vocabulary size larger than the text allows).
        """
        import sentencepiece

        if size < 1:
            raise ConfigError(f"the vocabulary size must be >= 1, got {size}")
        if model_type not in MODEL_TYPES:
            raise ConfigError(f"unknown SentencePiece model type {model_type!r}")
        for p in files:
            if not os.path.isfile(p):
                raise InputError("no such file", display_name(p))
        names = ", ".join(display_name(p) for p in files)
        lines = _nonempty_lines(files)
        first = next(lines, None)
        if first is None:
            raise InputError("no text to learn a SentencePiece model from", names)
        model = io.BytesIO()

        def sentences() -> Iterator[str]:
            yield first
            yield from lines

        try:
            sentencepiece.SentencePieceTrainer.train(
                sentence_iterator=sentences(), model_writer=model, vocab_size=size, model_type=model_type,
                character_coverage=character_coverage, byte_fallback=byte_fallback, num_threads=threads,
                minloglevel=2)
        except RuntimeError as e:
            raise InputError(f"SentencePiece cannot learn from this text: {e}", names) from None
        with atomic_write(out, "wb", encoding=None) as f:
            f.write(model.getvalue())

    def encode(self, text: str) -> list[str]:
        return self.sp.encode(text, out_type=str)

    def encode_lines(self, lines: list[str]) -> list[list[str]]:
        """:meth:`encode` over many lines at once (SentencePiece's batch call)."""
        return self.sp.encode(lines, out_type=str)

    def segment(self, text: str) -> tuple[list[str], list[tuple[int, int]]]:
        out = self.sp.encode(text, out_type="offset_mapping")
        return out["pieces"], out["offsets"]

    def split_piece(self, piece: str, surface: str, cuts: Sequence[int]) -> list[str]:
        """Split the piece's own text where it is its surface with spaces written ``▁`` (the usual
        case: ``."`` → ``.`` ``"``); otherwise (normalization changed the piece) the surface's slices."""
        if piece.replace(MARKER, " ") == surface:
            bounds = [0, *cuts, len(piece)]
            return [piece[bounds[k]:bounds[k + 1]] for k in range(len(bounds) - 1)]
        parts = super().split_piece(piece, surface, cuts)
        if piece.startswith(MARKER) and not parts[0].startswith(MARKER):
            parts[0] = MARKER + parts[0]
        return parts

    def decode(self, pieces: Sequence[str]) -> str:
        return self.sp.decode_pieces(list(pieces))


def _nonempty_lines(files: Sequence[PathLike]) -> Iterator[str]:
    for p in files:
        for line in iter_lines(p):
            if line.strip():
                yield line
