"""One shard (:class:`ShardReader`), a split's shards as one indexed view (:class:`SplitReader`), and the
shard files of a folder. Part of :mod:`synprep.shards.reader` (its module docstring tells the design)."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import h5py
import numpy as np

from synprep.errors import InputError
from synprep.shards.layout import check_layout, read_attrs
from synprep.shards.mapped import Expect, mapped_arrays, mapped_header
from synprep.shards.schema import (
    AXES,
    FIELDS,
    LINE,
    OFFSETS_GROUP,
    WORD_END,
    WORDS,
    parse_shard_name,
)
from synprep.types import PairRecord


class Header(NamedTuple):
    """A shard's header as :class:`ShardReader` reads and checks it (:meth:`ShardReader.with_header`).

    Attributes:
        attrs: the root attributes.
        offsets: the int64 offsets of each ragged axis (``AXES``), as the file's offsets group holds them.
        lines: (n_pairs,) int64, the 1-based input line of each pair.
        data: the shard's arrays mapped from its map folder (field → array), or None: read from the file.
    """

    attrs: dict[str, Any]
    offsets: dict[str, np.ndarray]
    lines: np.ndarray
    data: dict[str, np.ndarray] | None = None


class ShardReader:
    """Random access to the pairs of one shard.

    Args:
        path: the shard file.
        cache: load every dataset into memory on first use (default) instead of reading each
            pair from the file.
        map_dir: with ``cache``, map the decoded datasets from this folder instead of holding them
            (written there by the first process that reads the shard; :mod:`synprep.shards.mapped`):
            the memory is the page cache's, shared by every process that reads the shard; ``lines`` and
            ``offsets`` are maps too once written (at the first read, or at opening where another process
            wrote them). None: hold them.
        sha256: the shard file's sha256 (``open_split`` gives the manifest's, which it verified the file against):
            maps decoded from another version of the shard are not mapped. None: not compared.
        vocab_size: the vocabulary's size, which the ids of maps must be below (None: not checked).

    Attributes:
        path: the shard's path.
        attrs: root attributes (``config``, ``deprel_labels``, ``upos_labels`` parsed from JSON).
        lines: (N,) int64, 1-based original line number of each pair.
        offsets: axis → (N+1,) int64 CSR offsets.

    Raises:
        ShardFormatError: unknown format or version.
        InputError: the file cannot be opened or is not HDF5 (the message names the file).
    """

    def __init__(self, path: str | os.PathLike, *, cache: bool = True, map_dir: str | os.PathLike | None = None,
                 sha256: str | None = None, vocab_size: int | None = None):
        self.path = Path(path)
        self.cache = cache
        self.map_dir = None if map_dir is None else Path(map_dir)
        self.sha256, self.vocab_size = sha256, vocab_size
        self._open_header()

    # --- lifecycle --------------------------------------------------------------------------
    def _open_header(self) -> None:
        self._file: h5py.File | None = None
        self._pid: int | None = None
        self._data: dict[str, np.ndarray] | None = None
        self._words: list[str] | None = None
        name = str(self.path)
        try:
            size = self.path.stat().st_size
            with h5py.File(self.path, "r") as f:
                self.attrs = read_attrs(f, name)
                check_layout(f, name, size)
                self.offsets = {axis: f[OFFSETS_GROUP][axis][()].astype(np.int64) for axis in AXES}
                self.lines = f[LINE][()].astype(np.int64)
            if self.map_dir is not None and self.cache:  # mapped by another process already: hold its map
                got = mapped_header(self.path, self.map_dir, self.offsets, self.lines, self.map_expect())
                if got is not None:
                    self._data, self.offsets, self.lines = got.data, got.offsets, got.lines
        except FileNotFoundError:
            raise InputError("no such shard", name) from None
        except InputError:
            raise
        except Exception as e:  # damaged HDF5 metadata (RuntimeError, OSError, KeyError, ...): one line
            raise InputError(f"cannot read shard (damaged HDF5): {type(e).__name__}: {e}", name) from None

    @classmethod
    def with_header(cls, path: str | os.PathLike, header: Header, *, cache: bool,
                    map_dir: str | os.PathLike | None, sha256: str | None = None,
                    vocab_size: int | None = None) -> ShardReader:
        """A reader of ``path`` whose header (with its ``data``, the maps) another process read and checked as
        :meth:`__init__` does: ``open_split``'s verification workers, for a file version it verified. Nothing is
        read here."""
        r = cls.__new__(cls)
        r.path, r.cache, r.map_dir = Path(path), cache, None if map_dir is None else Path(map_dir)
        r._file, r._pid, r._data, r._words = None, None, header.data, None
        r.attrs, r.offsets, r.lines = header.attrs, header.offsets, header.lines
        r.sha256, r.vocab_size = sha256, vocab_size
        return r

    def map_expect(self) -> Expect:
        """What this shard's maps must agree with (:class:`~synprep.shards.mapped.Expect`): its sha256 and the
        vocabulary's size where given, its label counts."""
        def count(key: str) -> int:
            labels = self.attrs.get(key)
            return len(labels) if isinstance(labels, list) else 0

        return Expect(self.sha256, self.vocab_size, count("deprel_labels"), count("upos_labels"))

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "cache": self.cache, "map_dir": self.map_dir, "sha256": self.sha256,
                "vocab_size": self.vocab_size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self.cache = state["cache"]
        self.map_dir = state.get("map_dir")
        self.sha256, self.vocab_size = state.get("sha256"), state.get("vocab_size")
        self._open_header()

    def _handle(self) -> h5py.File:
        """This process's h5py handle (reopened after fork: h5py handles do not survive it)."""
        if self._file is None or self._pid != os.getpid():
            self._file = h5py.File(self.path, "r")
            self._pid = os.getpid()
        return self._file

    def load(self) -> ShardReader:
        """Read every dataset into memory now (one read each), or map them from ``map_dir``; returns self.

        Raises:
            InputError: a damaged shard. (A ``map_dir`` that cannot be written is a warning: the arrays are then
                held, :func:`~synprep.shards.mapped.mapped_arrays`.)
        """
        if self._data is None and self.map_dir is not None:
            got = mapped_arrays(self.path, self.map_dir, self.offsets, self.lines, self._decode, self.map_expect())
            self._data, self.offsets, self.lines = got.data, got.offsets, got.lines
        elif self._data is None:
            self._data = self._decode()
        return self

    def _decode(self) -> dict[str, np.ndarray]:
        """Every dataset of the shard, read and decoded into memory."""
        try:
            with h5py.File(self.path, "r") as f:
                return {fl.name: _read(f, fl.name, self.path) for fl in FIELDS}
        except InputError:
            raise
        except Exception as e:
            raise InputError(f"cannot read shard (damaged HDF5): {type(e).__name__}: {e}", str(self.path)) from None

    def close(self) -> None:
        """Close the file handle and drop cached arrays (the reader stays usable: it reopens)."""
        if self._file is not None and self._pid == os.getpid():
            self._file.close()
        self._file = None
        self._data = None
        self._words = None

    def __enter__(self) -> ShardReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- access -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.lines)

    @property
    def src_lengths(self) -> np.ndarray:
        """(N,) int64 source lengths T in pieces (no ``</s>``), for length bucketing."""
        return np.diff(self.offsets["src"])

    @property
    def tgt_lengths(self) -> np.ndarray:
        """(N,) int64 target lengths U in pieces (no ``</s>``)."""
        return np.diff(self.offsets["tgt"])

    def __getitem__(self, i: int) -> PairRecord:
        """Pair ``i`` (0-based; negative counts from the end) as a PairRecord.

        Integer arrays are int64, ``ldd_prob`` float32 (see the module docstring).

        Raises:
            IndexError: ``i`` outside [-N, N).
        """
        n = len(self.lines)
        if not -n <= i < n:
            raise IndexError(f"pair {i} out of range for {n} pairs in {self.path.name}")
        i = int(i) % n
        if self.cache:
            source: Any = self.load()._data
        else:
            source = self._handle()
        values = {}
        for fl in FIELDS:
            off = self.offsets[fl.axis]
            a = np.asarray(source[fl.name][off[i]:off[i + 1]]) if self.cache else _read(source, fl.name, self.path,
                                                                             slice(off[i], off[i + 1]))
            values[fl.name] = a.astype(np.float32 if fl.kind == "float16" else np.int64)
        return PairRecord(line=int(self.lines[i]), **values)

    def __iter__(self) -> Iterator[PairRecord]:
        for i in range(len(self)):
            yield self[i]

    @property
    def has_words(self) -> bool:
        """Whether the shard stores the words the parser read (the ``words`` dataset, docs/FORMAT.md)."""
        return bool(self._all_words() is not None)

    def words(self, i: int) -> list[str] | None:
        """The ``(W,)`` words the parser read for pair ``i`` (cased, Moses escapes undone), or None for a
        shard written before they were stored (then rebuild them from the pieces).

        Raises:
            IndexError: ``i`` outside [-N, N).
            InputError: a ``words`` dataset that does not hold one word per entry of the ``word`` axis.
        """
        n = len(self.lines)
        if not -n <= i < n:
            raise IndexError(f"pair {i} out of range for {n} pairs in {self.path.name}")
        words = self._all_words()
        if words is None:
            return None
        off = self.offsets["word"]
        i = int(i) % n
        return words[int(off[i]):int(off[i + 1])]

    def _all_words(self) -> list[str] | None:
        if self._words is None:
            with h5py.File(self.path, "r") as f:
                obj = f.get(WORDS)
                if obj is None:
                    return None
                if not isinstance(obj, h5py.Dataset) or obj.ndim != 1 or obj.dtype != np.uint8:
                    raise InputError(f"dataset /{WORDS} is not 1-D uint8 (UTF-8 bytes)", str(self.path))
                raw = _read(f, WORDS, self.path).tobytes()
            try:
                words = raw.decode("utf-8").split(WORD_END.decode())
            except UnicodeDecodeError as e:
                raise InputError(f"dataset /{WORDS} is not UTF-8: {e}", str(self.path)) from None
            if words[-1] != "" or len(words) - 1 != int(self.offsets["word"][-1]):
                raise InputError(f"dataset /{WORDS} holds {len(words) - 1} words, the word axis "
                                 f"{int(self.offsets['word'][-1])}", str(self.path))
            self._words = words[:-1]
        return self._words

    def __repr__(self) -> str:
        return f"ShardReader({str(self.path)!r}, pairs={len(self)})"


def _read(f: h5py.File, name: str, path: Path, sel: Any = ()) -> np.ndarray:
    """``f[name][sel]``; a chunk that does not decode (gzip, checksum) is an InputError naming the shard."""
    try:
        return f[name][sel]
    except Exception as e:
        raise InputError(f"dataset /{name} cannot be read (damaged chunk?): {type(e).__name__}: {e}",
                         str(path)) from None


class SplitReader:
    """All shards of one split as one sequence, with global 0-based indexing in shard order.

    Args:
        readers: the split's shards in shard-index order (see :func:`open_split`).
        max_cached: keep at most this many shards' arrays in memory (least recently used ones are
            dropped); None keeps every shard that was touched. With a cap, read in shard-local
            order (shuffle the shards, then the pairs within a shard), or the caches thrash.
    """

    def __init__(self, readers: list[ShardReader], *, max_cached: int | None = None):
        self.readers = list(readers)
        sizes = np.array([len(r) for r in self.readers], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        if max_cached is not None and max_cached < 1:
            raise ValueError(f"max_cached must be >= 1, got {max_cached}")
        self.max_cached = max_cached
        self._recent: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return int(self._starts[-1])

    def locate(self, i: int) -> tuple[int, int]:
        """(shard position, index within that shard) of global pair ``i``."""
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"pair {i} out of range for {n} pairs")
        i = int(i) % n
        s = int(np.searchsorted(self._starts, i, side="right")) - 1
        return s, i - int(self._starts[s])

    def __getitem__(self, i: int) -> PairRecord:
        s, j = self.locate(i)
        if self.max_cached is not None:
            self._recent[s] = None
            self._recent.move_to_end(s)
            while len(self._recent) > self.max_cached:
                old, _ = self._recent.popitem(last=False)
                self.readers[old].close()
        return self.readers[s][j]

    def shard_ranges(self) -> list[range]:
        """The global indices of each shard's pairs (for shard-local shuffling)."""
        return [range(int(a), int(b)) for a, b in zip(self._starts[:-1], self._starts[1:], strict=True)]

    def __iter__(self) -> Iterator[PairRecord]:
        for r in self.readers:
            yield from r

    @property
    def src_lengths(self) -> np.ndarray:
        """(N,) int64 source lengths over every shard, in global order."""
        return np.concatenate([r.src_lengths for r in self.readers]) if self.readers else np.zeros(0, np.int64)

    @property
    def tgt_lengths(self) -> np.ndarray:
        """(N,) int64 target lengths over every shard, in global order."""
        return np.concatenate([r.tgt_lengths for r in self.readers]) if self.readers else np.zeros(0, np.int64)

    @property
    def lines(self) -> np.ndarray:
        """(N,) int64 original line numbers over every shard, in global order."""
        return np.concatenate([r.lines for r in self.readers]) if self.readers else np.zeros(0, np.int64)

    def close(self) -> None:
        for r in self.readers:
            r.close()

    def __enter__(self) -> SplitReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def split_files(folder: str | os.PathLike, split: str) -> list[Path]:
    """The shard files ``SPLIT.NNNNN.h5`` of a split in an output folder, by shard index.

    Raises:
        InputError: the folder is missing, or the indices are not 0, 1, …, n-1 (a shard is missing).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("no such output folder", str(folder))
    found = []
    for p in folder.iterdir():
        parsed = parse_shard_name(p.name)
        if parsed and parsed[0] == split:
            found.append((parsed[1], p))
    found.sort()
    for expected, (index, p) in enumerate(found):
        if index != expected:
            raise InputError(f"shard {expected} of split {split!r} is missing (next is {p.name})", str(folder))
    return [p for _, p in found]



def splits_in(folder: str | os.PathLike) -> list[str]:
    """Names of the splits that have shard files in ``folder`` (sorted)."""
    return sorted({parsed[0] for p in Path(folder).iterdir() if (parsed := parse_shard_name(p.name))})
