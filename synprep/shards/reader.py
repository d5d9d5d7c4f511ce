"""Read HDF5 shards (docs/FORMAT.md): one shard, or every shard of a split as one indexed view.

:class:`ShardReader` is cheap to create and to pickle: it reads the attributes, offsets and line
numbers once (a short-lived h5py handle), and the pair data only on first use. With
``cache=True`` (default) the first :meth:`ShardReader.__getitem__` loads every dataset with one
read each and keeps the arrays in memory (a shard is bounded in size), so reading pair ``i`` is a
few numpy slices; with ``cache=False`` each pair costs a dozen small h5py reads through a handle
kept open (see benchmarks/bench_shards.py for both). A pickled reader carries only its path, so a
torch DataLoader worker opens its own file; a handle inherited through ``fork`` is never reused.

Whatever the stored dtypes (chosen per shard), a :class:`~synprep.types.PairRecord` read back
has int64 integer arrays and float32 ``ldd_prob``, so records of different shards collate.

Hostile files: before any dataset is read, every declared shape is compared with the header
(``n_pairs``, at most :data:`MAX_SHARD_PAIRS`) and the offsets, and the data a shard declares may not
exceed what its file size can hold (:data:`MAX_EXPANSION` × bytes, deflate's bound) nor
:data:`~synprep.constants.MAX_SHARD_BYTES` (128 MiB, whatever the file's size: a deflate bomb), so a
small file declaring 2^28 entries is a one-line :class:`~synprep.errors.InputError`, never gigabytes
of memory.
:func:`open_split` (``verify=True``, what ``train``, ``translate``, ``show`` and ``export`` use) also
checks every shard against ``manifest.json`` — list, size, sha256 (hashed once per process) —
and refuses the split naming the shard; :func:`load_vocab` then gives the ``dict.txt`` those
verified shards name, its sha256 checked (``train``, ``translate`` and ``export`` decode with it).
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

from synprep.constants import VOCAB_NAME
from synprep.errors import InputError
from synprep.shards.layout import (  # noqa: F401 - re-exported: the reader's public names
    EXPANSION_SLACK,
    MAX_EXPANSION,
    ShardFormatError,
    check_declared_size,
    check_layout,
    declared_bytes,
    read_attrs,
)
from synprep.shards.schema import (
    AXES,
    FIELDS,
    LINE,
    OFFSETS_GROUP,
    WORD_END,
    WORDS,
    inside_name,
    parse_shard_name,
)
from synprep.types import PairRecord

if TYPE_CHECKING:
    from synprep.shards.manifest import Manifest
    from synprep.vocab import Vocab


class ShardReader:
    """Random access to the pairs of one shard.

    Args:
        path: the shard file.
        cache: load every dataset into memory on first use (default) instead of reading each
            pair from the file.

    Attributes:
        path: the shard's path.
        attrs: root attributes (``config``, ``deprel_labels``, ``upos_labels`` parsed from JSON).
        lines: (N,) int64, 1-based original line number of each pair.
        offsets: axis → (N+1,) int64 CSR offsets.

    Raises:
        ShardFormatError: unknown format or version. InputError: the file cannot be opened or is
            not HDF5 (the message names the file).
    """

    def __init__(self, path: str | os.PathLike, *, cache: bool = True):
        self.path = Path(path)
        self.cache = cache
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
        except FileNotFoundError:
            raise InputError("no such shard", name) from None
        except InputError:
            raise
        except Exception as e:  # damaged HDF5 metadata (RuntimeError, OSError, KeyError, ...): one line
            raise InputError(f"cannot read shard (damaged HDF5): {type(e).__name__}: {e}", name) from None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "cache": self.cache}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self.cache = state["cache"]
        self._open_header()

    def _handle(self) -> h5py.File:
        """This process's h5py handle (reopened after fork: h5py handles do not survive it)."""
        if self._file is None or self._pid != os.getpid():
            self._file = h5py.File(self.path, "r")
            self._pid = os.getpid()
        return self._file

    def load(self) -> ShardReader:
        """Read every dataset into memory now (one read each); returns self."""
        if self._data is None:
            try:
                with h5py.File(self.path, "r") as f:
                    data = {}
                    for fl in FIELDS:
                        data[fl.name] = _read(f, fl.name, self.path)
            except InputError:
                raise
            except Exception as e:
                raise InputError(f"cannot read shard (damaged HDF5): {type(e).__name__}: {e}", str(self.path)) from None
            self._data = data
        return self

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
            a = source[fl.name][off[i]:off[i + 1]] if self.cache else _read(source, fl.name, self.path,
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
            IndexError: ``i`` outside [-N, N). InputError: a ``words`` dataset that does not hold one
                word per entry of the ``word`` axis.
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


#: shards whose sha256 this process already verified: (resolved path, size, mtime_ns, sha256)
_VERIFIED: set[tuple[str, int, int, str]] = set()


def _verify_file(path: Path, size: int, sha256: str) -> None:
    from synprep.signature import file_sha256

    st = path.stat()
    if st.st_size != size:
        raise InputError(f"{st.st_size} bytes, manifest.json says {size} (damaged or replaced; "
                         "`synprep check` tells more)", str(path))
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, sha256)
    if key in _VERIFIED:
        return
    got = file_sha256(path)
    if got != sha256:
        raise InputError(f"sha256 {got[:12]}… does not match manifest.json's {sha256[:12]}… (damaged or "
                         "replaced; `synprep check` tells more)", str(path))
    _VERIFIED.add(key)


#: shards whose values this process already verified: (resolved path, size, mtime_ns, sha256, vocab size, after line)
_VALUES_OK: set[tuple[Any, ...]] = set()


def verify_values(path: Path, sha256: str, *, vocab_size: int | None, after_line: int = 0) -> None:
    """Refuse a shard whose values break an invariant of ``synprep check`` (its sections 2 and 3).

    The one per-shard verification :func:`synprep.shards.check.check_shard` (vectorised over the
    shard's CSR arrays), run once per process and file version: heads, word indices, sentence
    starts, gaps, labels, LDD entries and ids inside their ranges, trees without cycles, lines
    increasing across the split's shards. A shard re-sealed in ``manifest.json`` (its sha256 and size
    updated) with damaged values is refused here, before any reader uses it.

    Args:
        path: the shard file (already verified against its manifest entry ``sha256``).
        vocab_size: ids must be below it (None: not checked).
        after_line: the previous shard's last line (0 for the first).

    Raises:
        InputError: ``FILE: pair P (line L): what`` (one line; the first violation).
    """
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, sha256, vocab_size, after_line)
    if key in _VALUES_OK:
        return
    from synprep.shards.check import check_shard  # here: check imports this module

    violation, _, _ = check_shard(path, vocab_size=vocab_size, after_line=after_line, name=path.name)
    if violation is not None:
        where = "" if violation.pair is None else f"pair {violation.pair}" + (
            "" if violation.line is None else f" (line {violation.line})") + ": "
        raise InputError(f"{where}{violation.what} (a damaged shard; `synprep check` reports it too)", str(path))
    _VALUES_OK.add(key)


def resume_command(folder: str | os.PathLike, split: str) -> str:
    """How to resume ``split`` of ``folder``: the command its last writer ran (from the split lock's
    record, which a killed run leaves behind), else the generic advice."""
    import shlex

    try:
        d = json.loads((Path(folder) / f".{split}.lock").read_text(encoding="utf-8"))
        argv = shlex.split(str(d["command"]))
    except (OSError, ValueError, KeyError, TypeError):
        argv = []
    if argv and (os.path.basename(argv[0]) == "synprep" or argv[0].endswith("synprep/__main__.py")):
        return "`" + shlex.join(["synprep", *argv[1:]]) + "`"
    return f"the same `synprep pipeline`/`annotate` command again (--split {split} --out {folder})"


def refuse_incomplete(folder: str | os.PathLike, split: str, entry: Any) -> None:
    """Refuse a split that ``synprep check`` reports incomplete: still being written, or its run stopped
    (``input_lines > pairs + dropped``). The message names the split and the command that resumes it.

    Raises:
        InputError: one line, naming the split, the writer or the missing lines, and the resume command.
    """
    from synprep.lock import split_writer

    writer = split_writer(folder, split)
    if writer is not None:
        raise InputError(f"the {split} split is still being written by {writer}: wait for it to finish "
                         "(`synprep check` tells when it is complete)", str(folder))
    missing = entry.input_lines - entry.pairs - sum(entry.dropped.values())
    if missing > 0:
        raise InputError(f"the {split} split is incomplete ({missing} of its {entry.input_lines} input lines neither "
                         "stored nor dropped: its run was interrupted); resume it by running "
                         f"{resume_command(folder, split)}", str(folder))


def open_split(folder: str | os.PathLike, split: str, *, cache: bool = True,
               verify: bool = True, manifest: Manifest | None = None, complete: bool = True) -> list[ShardReader]:
    """A :class:`ShardReader` for every shard of ``split`` in ``folder``, ordered by shard index.

    This is how ``train``, ``translate``, ``show`` and ``export`` open a split. Wrap the list in
    :class:`SplitReader` for one global index over the split.

    Args:
        folder: an output folder (``manifest.json``, ``SPLIT.NNNNN.h5``, ``dict.txt``).
        split: the split's name (``[A-Za-z0-9_-]+``).
        cache: see :class:`ShardReader`.
        verify: check the shards against ``manifest.json`` first: the split's shard list, each
            file's size and sha256 (hashed once per process and file version), ``n_pairs`` and the
            first/last line against the entry, ``split``/``shard_index`` attributes, and that the
            ``vocab_path`` and ``vocab_sha256`` attributes are the manifest's vocabulary entry's.
            Every shard's declared shapes and offsets are checked whether or not ``verify`` is set
            (:func:`check_layout`).
        manifest: the folder's manifest, already loaded by the caller (so that what it plans from
            and what is verified are one reading of the file); default: read ``manifest.json``.
            With ``verify``, every shard's values are checked too (:func:`verify_values`, ``check``'s
            per-shard verification, once per process and file version).
        complete: with ``verify``, refuse a split ``synprep check`` reports incomplete (a killed run,
            or one still writing: :func:`refuse_incomplete`).

    Returns:
        The readers (an empty list when the split has no shards and the manifest does not list it).

    Raises:
        ConfigError: an invalid split name. InputError: see :func:`split_files`; a missing or
            malformed manifest (``verify``), a shard that differs from its entry (named);
            ShardFormatError: a shard of an unknown format.
    """
    from synprep.lock import check_split_name

    check_split_name(split)
    files = split_files(folder, split)
    if not verify:
        return [ShardReader(p, cache=cache) for p in files]
    from synprep.shards.manifest import Manifest

    if manifest is None:
        manifest = Manifest.load(folder)
    mpath = str(Path(folder) / "manifest.json")
    entry = manifest.splits.get(split)
    listed = [s.file for s in entry.shards] if entry is not None else []
    for index, name in enumerate(listed):  # a listed name is only ever compared, never opened; say which is wrong
        if parse_shard_name(name) != (split, index):
            raise InputError(f"split {split!r}: shard {index} is listed as {name!r}, expected "
                             f"{split}.{index:05d}.h5", mpath)
    found = [p.name for p in files]
    if listed != found:
        extra = sorted(set(found) - set(listed))
        missing = [f for f in listed if f not in found]
        what = (f"{extra[0]} is not listed in manifest.json" if extra
                else f"{missing[0]} is listed in manifest.json but missing" if missing
                else "the shard files are not the manifest's")
        raise InputError(f"split {split!r}: {what} (an interrupted or concurrent run? `synprep check` tells more)",
                         mpath)
    if entry is not None and complete:
        refuse_incomplete(folder, split, entry)
    vocab_path = str((manifest.vocab or {}).get("path", ""))
    vocab_sha256 = str((manifest.vocab or {}).get("sha256", ""))
    vocab_size = len(load_vocab(folder, {"vocab_path": vocab_path, "vocab_sha256": vocab_sha256})) \
        if files and vocab_path else None
    readers: list[ShardReader] = []
    assert entry is not None or not files
    after = 0
    for info, p in zip(entry.shards if entry is not None else [], files, strict=True):
        _verify_file(p, info.bytes, info.sha256)
        r = ShardReader(p, cache=cache)
        a = r.attrs
        if len(r) != info.pairs or (len(r) and (int(r.lines[0]), int(r.lines[-1])) != (info.first_line,
                                                                                         info.last_line)):
            raise InputError(f"holds {len(r)} pairs (lines {r.lines[:1].tolist()}…{r.lines[-1:].tolist()}), "
                             f"manifest.json says {info.pairs} (lines {info.first_line}…{info.last_line})", str(p))
        index = len(readers)
        if a.get("split") != split or a.get("shard_index") != index:
            raise InputError(f"attributes split/shard_index are {a.get('split')!r}/{a.get('shard_index')!r}, "
                             f"expected {split!r}/{index}", str(p))
        if vocab_path and a.get("vocab_path") != vocab_path:
            raise InputError(f"vocab_path attribute {a.get('vocab_path')!r} is not manifest.json's vocabulary "
                             f"{vocab_path!r}", str(p))
        if vocab_sha256 and a.get("vocab_sha256") != vocab_sha256:
            raise InputError(f"vocab_sha256 attribute {str(a.get('vocab_sha256'))[:12]}… is not manifest.json's "
                             f"vocabulary's {vocab_sha256[:12]}…", str(p))
        verify_values(p, info.sha256, vocab_size=vocab_size, after_line=after)
        after = info.last_line
        readers.append(r)
    if entry is not None and complete:
        from synprep.shards.check import split_counts_violation

        v = split_counts_violation(split, entry.to_dict(), np.concatenate([r.lines for r in readers]) if readers
                                   else np.zeros(0, np.int64))
        if v is not None:
            raise InputError(f"{v.what} (`synprep check` reports it too)", mpath)
    return readers


def load_vocab(folder: str | os.PathLike, attrs: dict[str, Any]) -> Vocab:
    """The vocabulary (``dict.txt``) a split's shards were written with, its sha256 checked.

    Args:
        folder: the output folder.
        attrs: a shard's root attributes (``ShardReader.attrs``): the file is
            ``FOLDER/attrs["vocab_path"]`` (default ``dict.txt``), its sha256 must be
            ``attrs["vocab_sha256"]``. For shards from :func:`open_split` (``verify=True``) both
            attributes are checked against manifest.json's vocabulary entry, so this is the
            manifest's vocabulary, byte for byte.

    Raises:
        InputError: the file is missing or not a fairseq dictionary, or its sha256 differs (a
            damaged or replaced ``dict.txt``; the message names it); a ``vocab_path`` outside the folder.
    """
    from synprep.vocab import Vocab

    name = str(attrs.get("vocab_path") or VOCAB_NAME)
    if not inside_name(name):  # the readers refuse such a shard already; this reader never follows one
        raise InputError(f"vocab_path attribute {name!r} is not a file name inside the shards' folder", str(folder))
    path = Path(folder) / name
    vocab = Vocab.load(path)
    want = attrs.get("vocab_sha256")
    if want and vocab.sha256 != want:
        raise InputError(f"vocabulary sha256 {vocab.sha256[:12]}… differs from the shards' {str(want)[:12]}… "
                         "(damaged or replaced; `synprep check` tells more)", str(path))
    return vocab


def splits_in(folder: str | os.PathLike) -> list[str]:
    """Names of the splits that have shard files in ``folder`` (sorted)."""
    return sorted({parsed[0] for p in Path(folder).iterdir() if (parsed := parse_shard_name(p.name))})


# --- plain dicts of numpy arrays: the way to feed any training loop -----------------------------

#: the keys of a pair dict: ``line`` then every ragged field of docs/FORMAT.md, in writing order
PAIR_KEYS = (LINE, *(fl.name for fl in FIELDS))


def pair_dict(record: PairRecord, fields: tuple[str, ...] = PAIR_KEYS) -> dict[str, Any]:
    """A :class:`~synprep.types.PairRecord` as a plain dict ``{name: value}`` of the given fields.

    ``line`` is an ``int`` (1-based original line); every other value is the record's numpy array
    (int64, ``ldd_prob`` float32), with the shapes of docs/FORMAT.md: ``src_ids``/``word_index``
    ``(T,)``, ``tgt_ids`` ``(U,)``, ``heads``/``deprel``/``upos`` ``(W,)``, ``gaps_*`` ``(T-1,)``,
    ``sent_start`` ``(S,)``, ``ldd_*`` ``(K,)``. The arrays are fresh copies the caller may keep.
    """
    return {name: getattr(record, name) for name in fields}


def _check_fields(fields: tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    if fields is None:
        return PAIR_KEYS
    unknown = [f for f in fields if f not in PAIR_KEYS]
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}; a pair has {', '.join(PAIR_KEYS)}")
    return tuple(fields)


def iter_pairs(folder: str | os.PathLike, split: str, *, fields: tuple[str, ...] | list[str] | None = None,
               shuffle: bool = False, seed: int = 0, epoch: int = 0, worker: tuple[int, int] = (0, 1)
               ) -> Iterator[dict[str, Any]]:
    """Every pair of ``split`` in ``folder`` as a plain dict of numpy arrays (see :func:`pair_dict`).

    The shards come from :func:`open_split` (the split's opener, so whatever it checks applies here
    too) and are read one at a time: each shard is loaded with one read per dataset and released
    before the next, so memory holds one shard's data (plus the split's per-pair offsets and lines
    that :func:`open_split` reads, 56 bytes per pair). Without ``shuffle`` the pairs come in stored
    order (shard by shard, ascending ``line``).

    Args:
        folder: an output folder (``SPLIT.NNNNN.h5`` shards).
        split: the split's name.
        fields: the keys to yield (default :data:`PAIR_KEYS`, everything stored).
        shuffle: shuffle the shard order and the pairs within each shard (shard-local shuffling:
            every pair exactly once per pass, one shard in memory); the order is a function of
            ``(seed, epoch)`` only.
        seed, epoch: the shuffle's seed; pass the epoch number for a new order every epoch.
        worker: ``(i, n)``: this is worker ``i`` of ``n`` (0-based) and yields only the shards at
            positions ``i, i+n, …`` of the (shuffled) shard order; the ``n`` workers together yield
            every pair once. In a torch ``DataLoader`` pass
            ``(info.id, info.num_workers)`` from ``torch.utils.data.get_worker_info()``.

    Yields:
        ``dict[str, int | np.ndarray]`` per pair.

    Raises:
        InputError: no such folder, a missing shard (see :func:`split_files`); ShardFormatError: a
            shard of an unknown format. ValueError: an unknown field name or a bad ``worker``.
    """
    keys = _check_fields(fields)
    index, n_workers = worker
    if not 0 <= index < n_workers:
        raise ValueError(f"worker must be (i, n) with 0 <= i < n, got {worker}")
    readers = open_split(folder, split)
    rng = np.random.default_rng([seed, epoch]) if shuffle else None
    order = rng.permutation(len(readers)) if rng is not None else np.arange(len(readers))
    for s in order[index::n_workers]:
        reader = readers[int(s)]
        try:
            pairs = rng.permutation(len(reader)) if rng is not None else range(len(reader))
            for i in pairs:
                yield pair_dict(reader[int(i)], keys)
        finally:
            reader.close()


def pad_batch(arrays: list[np.ndarray], pad: int | float, *, left: bool = False,
              dtype: np.dtype | type | None = None) -> np.ndarray:
    """Stack 1-D arrays of different lengths into one ``(B, max_len)`` array, padded with ``pad``.

    ``left=True`` right-aligns each row (pads on the left, as fairseq pads its source side).
    Raises ValueError for an empty list.
    """
    if not arrays:
        raise ValueError("pad_batch needs at least one array")
    width = max(len(a) for a in arrays)
    out = np.full((len(arrays), width), pad, dtype=dtype or np.result_type(*arrays))
    for row, a in zip(out, arrays, strict=True):
        if len(a):
            if left:
                row[width - len(a):] = a
            else:
                row[:len(a)] = a
    return out


def shard_arrays(reader: ShardReader) -> dict[str, np.ndarray]:
    """Every ragged dataset of a shard as stored (flat, smallest dtypes), one read each.

    For whole-shard vectorised work (the exporters); pair ``i`` of field ``F`` on axis ``A`` is
    ``arrays[F][reader.offsets[A][i]:reader.offsets[A][i + 1]]``. The arrays are the reader's cache:
    do not modify them; :meth:`ShardReader.close` drops the reader's reference.
    """
    data = reader.load()._data
    assert data is not None
    return data
