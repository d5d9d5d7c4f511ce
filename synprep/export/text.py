"""The true text of exported pairs: the words the parser read, the tokenized text and the pieces of both sides.

The shards store vocabulary ids, and a piece outside ``dict.txt`` (common in valid/test splits, whose
pieces the train split's vocabulary never saw) is stored as ``<unk>`` (id 3): text rebuilt from the
ids would hold ``schiff<unk>``. The Parquet/HF export therefore takes its text fields from where
the text is, per split (docs/export.md "Where the text comes from"):

1. a ``synprep pipeline`` folder: its text files, ``OUT/text/SPLIT.words.SRC`` (``--lowercase``
   runs: the cased words the parser read) or ``SPLIT.clean.SRC`` (the parser's words otherwise),
   ``SPLIT.clean.SRC``/``SPLIT.clean.TGT`` (the tokenized pair the pieces were made from, lowercased
   with ``--lowercase``) and ``SPLIT.lines`` (the original line of each row), matched to the
   shards by line number. They are checked against the shards: every pair has the shard's number
   of words, and where a pair has no ``<unk>`` its text equals the text of its pieces; anything
   else is an :class:`~synprep.errors.InputError` naming the text file and line.
2. any other folder (``annotate``, ``shard``): the text of the pieces, which is the true text
   exactly when no piece is ``<unk>``. Where a side has an ``<unk>`` piece its text is not known:
   that side's fields are null (``src_words`` and ``translation[SRC]`` for the source,
   ``translation[TGT]`` for the target), never a guess, and a warning counts them. In a
   ``--lowercase`` folder the pieces' words are not the (cased) words the parser read: every
   ``src_words`` is null, with a warning.

Where a shard stores the words the parser read (its ``words`` dataset), ``src_words`` are those
words in every case; the rest of the text comes from 1. or 2.

Moses escapes are undone in every text field (``&amp;`` → ``&``).

The pieces (``src_pieces``/``tgt_pieces``, the factors export's piece files) come from the folder's
piece files ``OUT/text/SPLIT.bpe.L`` in the same way, checked against the shards' ids
(:class:`SplitPieces`); where a folder keeps no text they are the ids' symbols on a side without
``<unk>`` and not known (null) on a side with one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from synprep.constants import UNK_ID
from synprep.errors import InputError
from synprep.escape import unescape_tokens
from synprep.subword import DEFAULT_SCHEME
from synprep.textio import display_name, iter_lines

log = logging.getLogger("synprep")


@dataclass
class PairText:
    """The text of one shard's pairs (N pairs); None where it is not known.

    Attributes:
        words: N lists of the words the parser read (escapes undone).
        src: N tokenized texts (tokens joined by one space, escapes undone).
        tgt: N tokenized texts (tokens joined by one space, escapes undone).
    """

    words: list[list[str] | None]
    src: list[str | None]
    tgt: list[str | None]


def unk_pairs(block: Any, axis: str) -> np.ndarray:
    """``(N,) bool``: the pairs of a :class:`~synprep.export.columns.ShardBlock` with an ``<unk>``
    piece on side ``axis`` (``src`` | ``tgt``)."""
    bad = np.zeros(block.n, dtype=bool)
    hit = np.flatnonzero(block.data[f"{axis}_ids"] == UNK_ID)
    if hit.size:
        bad[np.searchsorted(block.offsets[axis], hit, side="right") - 1] = True
    return bad


def pipeline_text_files(source: Path, config: dict[str, Any], split: str) -> dict[str, Path] | None:
    """The text files of ``split`` in a ``synprep pipeline`` folder (``words``, ``src``, ``tgt``,
    ``lines``), or None when the folder is not a pipeline's or one of them is missing."""
    if config.get("mode") != "pipeline":
        return None
    # imported here: loads conllu and orjson, not needed to import this module
    from synprep.pipeline import TextFiles

    files = TextFiles(source / "text", split, str(config["src_lang"]), str(config["tgt_lang"]))
    paths = {"words": files.side("words" if config.get("lowercase") else "clean", "src"),
             "src": files.side("clean", "src"), "tgt": files.side("clean", "tgt"), "lines": files.lines}
    return paths if all(p.is_file() for p in paths.values()) else None


class _Rows:
    """The rows of a split's text files, read in step (one pass while the lines asked for grow).

    ``paths`` holds ``lines`` and the files of ``keys``; a row is the values of ``keys``, in order.
    """

    def __init__(self, paths: dict[str, Path], keys: tuple[str, ...] = ("words", "src", "tgt")):
        self.paths = paths
        self.keys = keys
        self._open()

    def _open(self) -> None:
        keys = ("lines", *self.keys)
        self._it: Iterator[tuple[str, ...]] = zip(*(iter_lines(self.paths[k]) for k in keys), strict=True)
        self.row, self.line = 0, 0
        self.current: tuple[str, ...] | None = None

    def get(self, line: int) -> tuple[str, str, str, int]:
        """(words, src, tgt, 1-based row in the text files) of original line ``line``."""
        (words, src, tgt), row = self.fields(line)
        return words, src, tgt, row

    def fields(self, line: int) -> tuple[tuple[str, ...], int]:
        """(the values of ``keys``, 1-based row in the text files) of original line ``line``."""
        if line < self.line:
            self._open()
        while self.line < line:
            try:
                self.current = next(self._it)
            except StopIteration:
                raise InputError(f"no row for line {line} of the split: these text files are not the shards' "
                                 f"(run the pipeline of this split again)", display_name(self.paths["lines"])) from None
            except ValueError:  # zip(strict=True): the files have different lengths
                raise InputError("its text files have different line counts (run the pipeline of this split "
                                 "again)", display_name(self.paths["lines"])) from None
            self.row += 1
            try:
                self.line = int(self.current[0])
            except ValueError:
                raise InputError(f"not a line number: {self.current[0][:40]!r}", display_name(self.paths["lines"]),
                                 self.row) from None
        if self.line != line or self.current is None:
            raise InputError(f"no row for line {line} of the split: these text files are not the shards' (run "
                             f"the pipeline of this split again)", display_name(self.paths["lines"]))
        return self.current[1:], self.row


class SplitText:
    """Where the text of a split's pairs comes from (module docstring), read shard by shard in order."""

    def __init__(self, source: Path, config: dict[str, Any], split: str):
        self.split = split
        self.paths = pipeline_text_files(source, config, split)
        self._rows = _Rows(self.paths) if self.paths is not None else None
        #: the pieces were lowercased after the parse: their words are not the words the parser read
        self.lowercased = bool(config.get("lowercase"))
        self._said_lowercased = False

    def pairs(self, block: Any, rebuilt: Callable[[], PairText]) -> PairText | None:
        """The true text of ``block``'s pairs; None when it is the text of their pieces.

        Args:
            block: a :class:`~synprep.export.columns.ShardBlock`.
            rebuilt: gives the text of the pairs' pieces (escapes undone), to check the text files with.

        Raises:
            InputError: a pipeline text file that does not match the shards (names FILE:LINE).
        """
        text = self._pairs(block, rebuilt)
        if block.words is None:
            return text
        # the shard stores the words the parser read: they are src_words, whatever else holds the text
        off = block.offsets["word"].tolist()
        stored: list[list[str] | None] = [block.words[a:b] for a, b in zip(off[:-1], off[1:], strict=True)]
        if text is None:
            mine = rebuilt()
            return PairText(stored, mine.src, mine.tgt)
        return PairText(stored, text.src, text.tgt)

    def _pairs(self, block: Any, rebuilt: Callable[[], PairText]) -> PairText | None:
        unk_src, unk_tgt = unk_pairs(block, "src"), unk_pairs(block, "tgt")
        unk = unk_src | unk_tgt
        if self._rows is None:
            if self.lowercased and block.words is None:  # the parser read cased words that nothing here keeps
                if not self._said_lowercased:
                    log.warning("%s: src_words are null: the parser read the cased words, the pieces are lowercased "
                                "(--lowercase) and the folder keeps no text of the words (docs/export.md)",
                                self.split)
                    self._said_lowercased = True
            if not unk.any() and not self.lowercased:
                return None
            mine = rebuilt()
            known: list[list[str] | None] = [None if u or self.lowercased else w
                                             for u, w in zip(unk_src.tolist(), mine.words, strict=True)]
            if not unk.any():
                return PairText(known, mine.src, mine.tgt)
            log.warning("%s: %d of %d pairs have pieces outside dict.txt (<unk>) and the folder keeps no text of "
                        "them: their text fields and pieces are null (source side: %d, target side: %d); synprep pipeline "
                        "folders keep the text (docs/export.md)", block.name, int(unk.sum()), block.n,
                        int(unk_src.sum()), int(unk_tgt.sum()))
            return PairText(known, [None if u else w for u, w in zip(unk_src.tolist(), mine.src, strict=True)],
                            [None if u else w for u, w in zip(unk_tgt.tolist(), mine.tgt, strict=True)])
        assert self.paths is not None
        mine = rebuilt()
        rebuilt_words, rebuilt_src, rebuilt_tgt = mine.words, mine.src, mine.tgt
        words: list[list[str] | None] = []
        src: list[str | None] = []
        tgt: list[str | None] = []
        for k, line in enumerate(block.lines.tolist()):
            w_line, s_line, t_line, row = self._rows.get(line)
            w = unescape_tokens(w_line.split())
            s, t = " ".join(unescape_tokens(s_line.split())), " ".join(unescape_tokens(t_line.split()))
            n_words = len(rebuilt_words[k] or ())
            if len(w) != n_words:
                raise InputError(f"{len(w)} words, the shard's pair of line {line} has {n_words} (run the pipeline "
                                 f"of this split again)", display_name(self.paths["words"]), row)
            for key, ours, theirs, unknown in (("src", s, rebuilt_src[k], unk_src[k]),
                                               ("tgt", t, rebuilt_tgt[k], unk_tgt[k])):
                if not unknown and ours != theirs:
                    raise InputError(f"the text differs from the shard's pieces of line {line} (run the pipeline "
                                     f"of this split again)", display_name(self.paths[key]), row)
            words.append(w)
            src.append(s)
            tgt.append(t)
        return PairText(words, src, tgt)


def piece_files(source: Path, config: dict[str, Any], split: str, scheme: str) -> dict[str, Path] | None:
    """The files of ``split``'s pieces in a ``synprep pipeline`` folder: ``src``/``tgt``,
    ``OUT/text/SPLIT.SCHEME.L`` (the pieces the shards' ids were made from, lowercased in a
    ``--lowercase`` folder; ``SCHEME`` is the shards' ``subword`` scheme, ``bpe`` by default), and
    ``lines``; None when the folder is not a pipeline's or one of them is missing."""
    if config.get("mode") != "pipeline":
        return None
    # imported here: loads conllu and orjson, not needed to import this module
    from synprep.pipeline import TextFiles

    files = TextFiles(source / "text", split, str(config["src_lang"]), str(config["tgt_lang"]))
    paths = {"src": files.side(scheme, "src"), "tgt": files.side(scheme, "tgt"), "lines": files.lines}
    return paths if all(p.is_file() for p in paths.values()) else None


@dataclass
class PairPieces:
    """The pieces of one shard's pairs (N pairs), as segmented; None where they are not known.

    Attributes:
        src: N lists of pieces (Moses-escaped, the scheme's markers), one per stored id.
        tgt: N lists of pieces (Moses-escaped, the scheme's markers), one per stored id.
    """

    src: list[list[str] | None]
    tgt: list[list[str] | None]

    def unknown(self) -> tuple[int, int]:
        """(source, target): the number of pairs whose pieces are not known on that side."""
        return sum(p is None for p in self.src), sum(p is None for p in self.tgt)


class SplitPieces:
    """Where the pieces of a split's pairs come from, read shard by shard in order.

    The shards store vocabulary ids, ``<unk>`` (3) for every piece outside ``dict.txt``: the pieces
    are not the ids' symbols. They are

    1. in a ``synprep pipeline`` folder, its piece files (:func:`piece_files`), matched to the
       shards by line number and checked against them: every pair has the shard's number of pieces
       on each side and every piece has the shard's id (its ``dict.txt`` id, ``<unk>`` outside it);
       anything else is an :class:`~synprep.errors.InputError` naming the file and line;
    2. in any other folder (``annotate``, ``shard``), the ids' symbols on a side without ``<unk>``
       (exactly the pieces there) and None on a side with one (not known: never ``<unk>`` in place
       of a piece).

    Args:
        source: the shard folder.
        config: its manifest's configuration.
        split: the split's name.
        vocab: the folder's :class:`~synprep.vocab.Vocab` (``dict.txt``).
    """

    def __init__(self, source: Path, config: dict[str, Any], split: str, vocab: Any):
        self.source, self.config, self.split, self.vocab = source, config, split, vocab
        self.symbols = np.array([vocab[i] for i in range(len(vocab))], dtype=object)
        self.paths: dict[str, Path] | None = None
        self._rows: _Rows | None = None
        self._scheme: str | None = None

    def _open(self, block: Any) -> None:
        scheme = str(block.attrs.get("subword") or DEFAULT_SCHEME)
        if scheme == self._scheme:
            return
        self._scheme = scheme
        self.paths = piece_files(self.source, self.config, self.split, scheme)
        self._rows = _Rows(self.paths, ("src", "tgt")) if self.paths is not None else None

    @property
    def from_text(self) -> bool:
        """Whether the pieces come from the folder's piece files (after the first :meth:`pairs`)."""
        return self._rows is not None

    def pairs(self, block: Any) -> PairPieces:
        """The pieces of ``block``'s pairs (a :class:`~synprep.export.columns.ShardBlock`).

        Raises:
            InputError: a piece file that does not match the shards (names FILE:LINE).
        """
        self._open(block)
        ids = {axis: block.data[f"{axis}_ids"].astype(np.int64) for axis in ("src", "tgt")}
        offsets = {axis: block.offsets[axis].tolist() for axis in ("src", "tgt")}
        if self._rows is None:
            out: dict[str, list[list[str] | None]] = {}
            for axis in ("src", "tgt"):
                unk = unk_pairs(block, axis).tolist()
                off = offsets[axis]
                out[axis] = [None if unk[k] else self.symbols[ids[axis][off[k]:off[k + 1]]].tolist()
                             for k in range(block.n)]
            return PairPieces(out["src"], out["tgt"])
        assert self.paths is not None
        got: dict[str, list[list[str] | None]] = {"src": [], "tgt": []}
        for k, line in enumerate(block.lines.tolist()):
            texts, row = self._rows.fields(line)
            for axis, text in zip(("src", "tgt"), texts, strict=True):
                pieces = text.split()
                stored = ids[axis][offsets[axis][k]:offsets[axis][k + 1]]
                if len(pieces) != stored.size:
                    raise InputError(f"{len(pieces)} pieces, the shard's pair of line {line} has {stored.size} (run "
                                     f"the pipeline of this split again)", display_name(self.paths[axis]), row)
                bad = np.flatnonzero(self.vocab.encode(pieces) != stored)
                if bad.size:
                    j = int(bad[0])
                    raise InputError(f"piece {j + 1} ({pieces[j]!r}) is not the shard's id {int(stored[j])} "
                                     f"({self.vocab[int(stored[j])]!r}) in line {line} (run the pipeline of this split "
                                     f"again)", display_name(self.paths[axis]), row)
                got[axis].append(pieces)
        return PairPieces(got["src"], got["tgt"])
