"""The joint subword vocabulary, fairseq-compatible (``dict.txt``).

Ids follow fairseq's :class:`fairseq.data.Dictionary`: the specials ``<s>``=0, ``<pad>``=1,
``</s>``=2, ``<unk>``=3 (:mod:`synprep.constants`), then the pieces. ``dict.txt`` is fairseq's
format: one ``PIECE COUNT`` line per non-special symbol, in id order (id = 4 + line index).

Building (:meth:`Vocab.build`) reproduces ``fairseq-preprocess --joined-dictionary`` (its
``Dictionary.finalize``): pieces are counted over every given file (source and target, for shared
embeddings), a line is split on whitespace like fairseq's ``tokenize_line``, and the pieces are
ordered by **count descending, ties by code-point order of the piece** (fairseq sorts the symbols
before ``Counter.most_common``, whose sort is stable). ``threshold`` and ``nwords`` mean what
``--thresholdsrc`` / ``--nwordssrc`` mean. ``padding_factor`` (default 8, as fairseq) pads the
vocabulary to a multiple of 8 with ``madeupword0000 0``, ``madeupword0001 0``, … so that the
embedding matrix is tensor-core friendly *and* ``dict.txt`` is byte-identical to the one
``fairseq-preprocess`` writes for the same training text; ``padding_factor=1`` disables it.

Reading (:meth:`Vocab.load`) accepts any fairseq ``dict.*.txt``: madeupwords are ordinary
symbols, and a line may end in fairseq's ``#fairseq:overwrite`` flag.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from synprep.constants import EOS, SPECIAL_SYMBOLS, UNK_ID
from synprep.errors import InputError
from synprep.textio import atomic_write, iter_lines

#: fairseq's flag that lets a dict.txt line redefine a symbol already present
OVERWRITE_FLAG = "#fairseq:overwrite"
#: fairseq's default ``padding_factor`` (``fairseq-preprocess``)
DEFAULT_PADDING_FACTOR = 8


def count_pieces(paths: Iterable[str | os.PathLike], counter: Counter | None = None) -> Counter:
    """Count the whitespace-separated pieces of text files, streaming line by line.

    Like fairseq's ``Dictionary.add_file_to_dictionary``: each line is split on whitespace and
    ``</s>`` is counted once per line. Memory is the number of distinct pieces, never the corpus.

    Args:
        paths: BPE'd text files (UTF-8, one sentence per line).
        counter: a Counter to add to (a new one when None).

    Returns:
        Counter: piece → occurrences (``</s>`` included).

    Raises:
        InputError: a file is missing or not UTF-8 (see :func:`synprep.textio.iter_lines`).
    """
    counter = Counter() if counter is None else counter
    for path in paths:
        for line in iter_lines(path):
            counter.update(line.split())
            counter[EOS] += 1
    return counter


class Vocab:
    """A fairseq-compatible dictionary: specials first, then pieces in frequency order.

    Attributes:
        symbols: list of str, id → piece (specials included).
        counts: list of int, id → count (fairseq's; specials are not saved).
        path: the file it was loaded from or last saved to, or None.
    """

    nspecial = len(SPECIAL_SYMBOLS)

    def __init__(self) -> None:
        self.symbols: list[str] = []
        self.counts: list[int] = []
        self._index: dict[str, int] = {}
        self.path: Path | None = None
        self._sha256: str | None = None
        for s in SPECIAL_SYMBOLS:
            self._add(s, 1)

    def _add(self, symbol: str, n: int, overwrite: bool = False) -> int:
        if symbol in self._index and not overwrite:
            idx = self._index[symbol]
            self.counts[idx] += n
            return idx
        idx = len(self.symbols)
        self._index[symbol] = idx
        self.symbols.append(symbol)
        self.counts.append(n)
        return idx

    # --- construction -----------------------------------------------------------------------
    @classmethod
    def from_counts(cls, counts: Counter | dict[str, int], *, threshold: int = -1, nwords: int = -1,
                    padding_factor: int = DEFAULT_PADDING_FACTOR) -> Vocab:
        """Build from piece counts exactly as fairseq's ``Dictionary.finalize`` does.

        Args:
            counts: piece → count. Counts of the special symbols (e.g. ``</s>``) are added to the
                specials, which keep ids 0-3 and are never saved.
            threshold: keep pieces with count >= threshold (fairseq stops at the first below).
            nwords: total size including specials (-1: no limit), before padding.
            padding_factor: pad the size to a multiple of this with ``madeupwordNNNN`` (count 0);
                1 disables padding.
        """
        v = cls()
        pieces = {}
        for piece, n in counts.items():
            if piece in v._index:
                v.counts[v._index[piece]] += n
            else:
                pieces[piece] = n
        if nwords <= 0:
            nwords = v.nspecial + len(pieces)
        # fairseq: Counter(dict(sorted(zip(symbols, counts)))).most_common(nwords - nspecial):
        # sorted by symbol, then a stable sort by count descending.
        ordered = sorted(sorted(pieces.items()), key=lambda kv: kv[1], reverse=True)
        for piece, n in ordered[: nwords - v.nspecial]:
            if n < threshold:
                break
            v._add(piece, n)
        if padding_factor > 1:
            i = 0
            while len(v) % padding_factor:
                v._add(f"madeupword{i:04d}", 0)
                i += 1
        return v

    @classmethod
    def build(cls, paths: Iterable[str | os.PathLike], **kw) -> Vocab:
        """Build the joint vocabulary of BPE'd text files (streaming; see :func:`count_pieces`).

        Pass the training source and target files for a joint dictionary (shared embeddings).
        Keyword arguments are those of :meth:`from_counts` (``threshold``, ``nwords``,
        ``padding_factor``). The result equals ``fairseq-preprocess --joined-dictionary`` with the
        same training files and defaults.
        """
        return cls.from_counts(count_pieces(paths), **kw)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocab:
        """Read a fairseq dictionary file (``PIECE COUNT [#fairseq:overwrite]`` per line).

        Raises:
            InputError: missing file, a line without a count, or a duplicate symbol without the
                overwrite flag (fairseq refuses both too).
        """
        path = Path(path)
        v = cls()
        for lineno, raw in enumerate(iter_lines(path), 1):
            line = raw.rstrip()
            parts = line.rsplit(" ", 1)
            overwrite = False
            if len(parts) == 2 and parts[1] == OVERWRITE_FLAG:
                overwrite = True
                parts = parts[0].rsplit(" ", 1)
            if len(parts) != 2:
                raise InputError(f"not a fairseq dictionary line 'PIECE COUNT': {raw!r}", str(path), lineno)
            word, field = parts
            try:
                n = int(field)
            except ValueError:
                raise InputError(f"count is not an integer: {field!r}", str(path), lineno) from None
            if word in v._index and not overwrite:
                raise InputError(f"duplicate symbol {word!r} (fairseq needs '{OVERWRITE_FLAG}' to redefine)",
                                 str(path), lineno)
            v._add(word, n, overwrite=overwrite)
        v.path = path
        v._sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        return v

    # --- output -----------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """``dict.txt`` content: ``PIECE COUNT\\n`` for every non-special symbol, in id order."""
        return "".join(f"{s} {c}\n" for s, c in zip(self.symbols[self.nspecial:], self.counts[self.nspecial:],
                                                    strict=True)).encode("utf-8")

    def save(self, path: str | os.PathLike) -> str:
        """Write ``dict.txt`` atomically; returns its sha256 (hex)."""
        data = self.to_bytes()
        with atomic_write(path, "wb") as f:
            f.write(data)
        self.path = Path(path)
        self._sha256 = hashlib.sha256(data).hexdigest()
        return self._sha256

    @property
    def sha256(self) -> str:
        """Hex sha256 of the file's bytes (of :meth:`to_bytes` for a vocabulary not yet saved)."""
        if self._sha256 is None:
            return hashlib.sha256(self.to_bytes()).hexdigest()
        return self._sha256

    # --- lookup -----------------------------------------------------------------------------
    def __len__(self) -> int:
        """Number of symbols, specials and madeupwords included (the embedding size)."""
        return len(self.symbols)

    def __contains__(self, piece: object) -> bool:
        return piece in self._index

    def __getitem__(self, idx: int) -> str:
        """Piece of an id; an id outside the vocabulary gives ``<unk>`` (like fairseq)."""
        return self.symbols[idx] if 0 <= idx < len(self.symbols) else self.symbols[UNK_ID]

    def index(self, piece: str) -> int:
        """Id of a piece; unknown → ``UNK_ID`` (3)."""
        return self._index.get(piece, UNK_ID)

    def encode(self, pieces: Sequence[str] | str) -> np.ndarray:
        """Ids of pieces (a list, or a line split on whitespace); unknown pieces → 3.

        Returns:
            (n,) int32 ids (no ``</s>`` appended: shards store sentences without it).
        """
        if isinstance(pieces, str):
            pieces = pieces.split()
        get = self._index.get
        return np.fromiter((get(p, UNK_ID) for p in pieces), dtype=np.int32, count=len(pieces))

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Pieces of ids (``<unk>`` for ids outside the vocabulary)."""
        return [self[int(i)] for i in ids]
