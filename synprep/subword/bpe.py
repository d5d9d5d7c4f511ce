"""``bpe``: subword-nmt joint BPE with ``@@ `` continuation markers (:mod:`synprep.text.bpe`).

It reads Moses-tokenized, escaped text and never crosses a word, so the alignment is the marker
rule of :func:`synprep.align.align` (SPEC.md §1); no piece is ever split.
"""

from __future__ import annotations

from collections.abc import Sequence

from synprep.align import align, remove_bpe
from synprep.subword.base import SubwordScheme
from synprep.subword.offsets import AlignedLine
from synprep.textio import PathLike


class BpeScheme(SubwordScheme):
    """subword-nmt codes (``#version: 0.2`` then ``a b`` merges); pieces ``ri@@ ver``."""

    name = "bpe"
    library = "subword-nmt"
    reads_raw = False
    model_name = "code"
    model_option = "--codes"
    size_option = "--merges"
    bpe_markers = True

    def __init__(self, path: PathLike):
        super().__init__(path)
        # imported here: loads subword_nmt, not needed to import this module
        from synprep.text.bpe import load_bpe

        self._bpe = load_bpe(self.path)

    @classmethod
    def learn(cls, files: Sequence[PathLike], out: PathLike, size: int) -> None:
        """Joint codes with ``size`` merges (:func:`synprep.text.bpe.learn_bpe`)."""
        # imported here: loads subword_nmt, not needed to import this module
        from synprep.text.bpe import learn_bpe

        learn_bpe(list(files), size, out)

    def encode(self, text: str) -> list[str]:
        # imported here: loads subword_nmt, not needed to import this module
        from synprep.text.bpe import apply_bpe_line

        return apply_bpe_line(self._bpe, text).split()

    def align_line(self, text: str, words: Sequence[str], *, line: int | None = None,
                   path: str | None = None) -> AlignedLine:
        """``text``: the Moses-tokenized, escaped line; ``words``: its tokens unescaped (the parser's)."""
        pieces = self.encode(text)
        return AlignedLine(pieces=pieces, word_index=align(pieces, words, line=line, path=path))

    def decode(self, pieces: Sequence[str]) -> str:
        return remove_bpe(" ".join(pieces))
