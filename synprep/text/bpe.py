"""Joint BPE with subword-nmt: learn codes on several files together, apply them line by line.

Source: Sennrich et al. (2016), subword-nmt ``learn_bpe.py`` / ``apply_bpe.py``; fairseq's
prepare-iwslt14.sh learns *joint* codes on ``cat train.de train.en`` (``learn_bpe.py -s 10000``)
and applies them to each side. The codes file is subword-nmt's own format (``#version: 0.2``
then one merge ``a b`` per line); pieces carry the ``@@`` continuation marker (``ri@@ ver``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import sys
import weakref
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache, partial
from typing import IO, Any

import subword_nmt.learn_bpe as _subword_learn_module
from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe as _subword_learn_bpe

from synprep.constants import BPE_SEPARATOR
from synprep.errors import ConfigError, InputError
from synprep.parallel import chunk_map
from synprep.signature import file_sha256, package_version
from synprep.textio import PathLike, atomic_write, display_name, iter_lines

log = logging.getLogger(__name__)

@contextlib.contextmanager
def _terminal_progress() -> Iterator[None]:
    """While subword-nmt learns: its tqdm bar drawn on a terminal only, on the real stderr (subword-nmt draws it on
    stderr even into a log file; meanwhile ``sys.stderr`` is the :class:`_StderrToLog` around the call). subword-nmt
    reads the bar's class from its module global ``tqdm`` at each call (its stand-in when tqdm is missing is left
    alone); the global is put back after the call."""
    bar = getattr(_subword_learn_module, "tqdm", None)
    if bar is None or not hasattr(bar, "__mro__"):
        yield
        return

    def terminal_bar(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("file", getattr(sys.stderr, "terminal", sys.stderr))
        return bar(*args, disable=None, **kwargs)

    _subword_learn_module.tqdm = terminal_bar  # type: ignore[attr-defined]
    try:
        yield
    finally:
        _subword_learn_module.tqdm = bar  # type: ignore[attr-defined]


class _StderrToLog(io.TextIOBase):
    """Stands in for ``sys.stderr`` while subword-nmt learns: its lines go through synprep's log.

    ``no pair has frequency >= 2. Stopping`` (it stopped early) is logged at INFO, the per-merge
    lines of its verbose mode and its character counts at DEBUG.
    """

    def __init__(self, terminal: IO[str]):
        self.terminal = terminal
        self._buf = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._buf += text
        *lines, self._buf = self._buf.split("\n")
        for line in lines:
            if line.strip():
                level = logging.INFO if "Stopping" in line else logging.DEBUG
                log.log(level, "subword-nmt: %s", line.strip())
        return len(text)

    def flush(self) -> None:
        if self._buf.strip():
            log.debug("subword-nmt: %s", self._buf.strip())
        self._buf = ""

#: lines per work item for ``--jobs``
CHUNK_LINES = 2000


class _Counting:
    """Iterate over the lines of several files in order, counting lines and tokens."""

    def __init__(self, files: Sequence[PathLike]):
        self.files = files
        self.lines = 0
        self.tokens = 0

    def __iter__(self) -> Iterator[str]:
        for path in self.files:
            for line in iter_lines(path):
                self.lines += 1
                self.tokens += sum(1 for w in line.strip("\r\n ").split(" ") if w)
                yield line


def learn_bpe(files: Sequence[PathLike], n_merges: int, out_codes: PathLike | IO[str], *,
              min_frequency: int = 2) -> int:
    """Learn joint BPE codes on the concatenation of ``files`` (subword-nmt ``learn_bpe``).

    Equivalent to ``cat FILES... | subword-nmt learn-bpe -s N > CODES``, streaming (no
    concatenated copy is written). The codes file is written atomically.

    Args:
        files: tokenized text files, read in the given order (fairseq: ``train.de train.en``).
        n_merges: number of merge operations (``-s``; fairseq IWSLT14: 10000). Fewer are written
            when no pair occurs ``min_frequency`` times any more (subword-nmt stops early).
        out_codes: the codes file to write (atomically), or an open text stream.
        min_frequency: subword-nmt's ``--min-frequency``.

    Returns:
        The number of merges written.

    Raises:
        ConfigError: ``n_merges < 1`` or no files.
        InputError: a file is missing or not UTF-8, or the files hold no token at all.
    """
    if n_merges < 1:
        raise ConfigError(f"the number of merges must be >= 1, got {n_merges}")
    if not files:
        raise ConfigError("bpe learn needs at least one input file")
    for path in files:
        if str(path) != "-" and not os.path.isfile(path):
            raise InputError("no such file", display_name(path))
    source = _Counting(files)
    counter = _MergeCounter()
    with contextlib.redirect_stderr(_StderrToLog(sys.stderr)) as err, _terminal_progress():
        try:
            _learn(source, counter, n_merges, out_codes, min_frequency)
        finally:
            err.flush()
    return counter.merges


def _learn(source: _Counting, counter: _MergeCounter, n_merges: int, out_codes: PathLike | IO[str],
           min_frequency: int) -> None:
    files = source.files
    try:
        if hasattr(out_codes, "write"):
            counter.out = out_codes  # type: ignore[assignment]
            _subword_learn_bpe(source, counter, n_merges, min_frequency=min_frequency)
        else:
            with atomic_write(out_codes) as out:  # type: ignore[arg-type]
                counter.out = out
                _subword_learn_bpe(source, counter, n_merges, min_frequency=min_frequency)
    except ValueError:
        # subword-nmt fails with max() of an empty sequence when there is nothing to learn from
        names = ", ".join(display_name(p) for p in files)
        if source.tokens == 0:
            raise InputError(f"no tokens to learn BPE from ({source.lines} lines)", names) from None
        raise InputError("nothing to learn BPE merges from: no word has two symbols", names) from None


class _MergeCounter:
    """A write-through wrapper that counts the merge lines subword-nmt writes."""

    out: IO[str]

    def __init__(self) -> None:
        self.merges = 0

    def write(self, text: str) -> int:
        if not text.startswith("#version:"):
            self.merges += text.count("\n")
        return self.out.write(text)


def count_merges(codes: PathLike) -> int:
    """Number of merge operations in a codes file (lines after the ``#version`` header)."""
    n = 0
    for i, line in enumerate(iter_lines(codes)):
        if i == 0 and line.startswith("#version:"):
            continue
        n += 1
    return n


def load_bpe(codes: PathLike, *, merges: int = -1, separator: str = BPE_SEPARATOR) -> BPE:
    """Load a subword-nmt codes file into a :class:`subword_nmt.apply_bpe.BPE` (cached per file state).

    Raises:
        InputError: the file is missing, not UTF-8, its ``#version:`` header names no version, or a merge line
            does not hold two units.
    """
    path = os.path.abspath(codes)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError("no such BPE codes file", display_name(codes)) from None
    return _load_bpe(path, st.st_mtime_ns, st.st_size, merges, separator)


#: characters of distinct words whose segmentation a process keeps (:func:`segment_lines`' memo) before it is
#: emptied: the segmentation is a pure function of the word, so emptying changes nothing but time. About 25 bytes
#: a character for words of real text (~300,000 word types), 60 for random strings (a piece per character) in
#: subword-nmt's own memo (``BPE.cache``), less in synprep's (one string a word): a worker's memo stays under
#: ~120 MB on a corpus of millions of word types or of random strings (benchmarks/hostile_rss.py, longwords)
BPE_CACHE_CHARS = 2_000_000
#: each loaded BPE's segmented words, ``word -> "ri@@ ver"`` (:func:`segment_lines`)
_WORDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: characters of the words in each loaded BPE's memo
_CACHE_CHARS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


#: the header subword-nmt writes and reads (``#version: 0.2``): numbers joined by dots
_VERSION_RE = re.compile(r"^#version:\s*\d+(\.\d+)*\s*$")


@lru_cache(maxsize=4)
def _load_bpe(path: str, _mtime: int, _size: int, merges: int, separator: str) -> BPE:
    lines = list(iter_lines(path))
    start = 1 if lines and lines[0].startswith("#version:") else 0
    if start and not _VERSION_RE.match(lines[0]):  # subword-nmt's int() of each part would raise ValueError
        raise InputError(f"not a BPE codes file: the header {lines[0][:40]!r} is not '#version: ' and a version "
                         "such as 0.2 (fix the first line, or learn the codes again)", path, 1)
    for i, line in enumerate(lines[start:], start + 1):
        if len(line.strip("\r\n ").split(" ")) != 2:
            raise InputError("not a BPE codes file: a merge line must hold two units separated by a space",
                             path, i)
    # subword-nmt reads the lines synprep read (a byte-order mark removed, gzip decompressed, CRLF as LF)
    return BPE(io.StringIO("".join(line + "\n" for line in lines)), merges=merges, separator=separator)


def apply_bpe_line(bpe: BPE, line: str) -> str:
    """Segment one tokenized line into pieces (``BPE.process_line``); ``"ri@@ ver"`` style (:func:`segment_lines`)."""
    return segment_lines(bpe, [line])[0]


def apply_bpe_lines(lines: list[str], codes: str, *, separator: str = BPE_SEPARATOR) -> list[str]:
    """Apply the codes file ``codes`` to a chunk of lines (the unit of work for ``--jobs``).

    The codes are loaded once per process (:func:`load_bpe` caches them).
    """
    return segment_lines(load_bpe(codes, separator=separator), lines)


def segment_lines(bpe: BPE, lines: Iterable[str]) -> list[str]:
    """``bpe.process_line(line)`` of each line, each distinct word segmented by subword-nmt once.

    subword-nmt segments a line word by word (``BPE.segment_tokens``: a word's pieces do not depend on the
    words around it) and looks each word up in its memo through two calls and three list comprehensions.
    Here a line without whitespace at either end is its words' segmentations joined by spaces, each one
    ``" ".join(bpe.segment_tokens([word]))`` made on the word's first occurrence and kept in synprep's memo
    (within :data:`BPE_CACHE_CHARS` characters of words); a line with whitespace at an end, which
    ``process_line`` keeps, is given to ``process_line``. subword-nmt's own memo is emptied after each call:
    synprep's holds every word it would find there.

    Args:
        bpe: a loaded BPE (:func:`load_bpe`).
        lines: tokenized lines, without their line ends.

    Returns:
        One segmented line per line in, in order (``"ri@@ ver"`` pieces joined by single spaces).
    """
    memo = _WORDS.get(bpe)
    if memo is None:
        memo = _WORDS[bpe] = {}
    chars = _CACHE_CHARS.get(bpe, 0)
    out = []
    for line in lines:
        if line.strip("\r\n ") != line:
            out.append(bpe.process_line(line))
            continue
        segments = []
        for word in line.split(" "):
            seg = memo.get(word)
            if seg is None:
                if not word:  # two spaces in a row: no word between them
                    continue
                if chars > BPE_CACHE_CHARS:
                    memo.clear()
                    chars = 0
                seg = memo[word] = " ".join(bpe.segment_tokens([word]))
                chars += len(word)
            segments.append(seg)
        out.append(" ".join(segments))
    bpe.cache.clear()
    _CACHE_CHARS[bpe] = chars
    return out


def apply_bpe_stream(lines: Iterable[str], codes: PathLike, *, jobs: int = 1, backend: str = "loky",
                     scheduler: str | None = None, chunk_lines: int = CHUNK_LINES,
                     separator: str = BPE_SEPARATOR) -> Iterator[str]:
    """Apply BPE codes to a stream of lines, in order, with ``jobs`` workers (one chunk: here,
    :func:`~synprep.parallel.chunk_map`); one line out per line in.

    Raises:
        InputError: bad codes file (checked here before any work starts).
    """
    load_bpe(codes, separator=separator)  # fail early, in this process
    func = partial(apply_bpe_lines, codes=os.path.abspath(codes), separator=separator)
    yield from chunk_map(func, lines, chunk_lines, jobs=jobs, backend=backend, scheduler=scheduler)


def bpe_signature(codes: PathLike) -> dict[str, object]:
    """Signature fields for BPE codes: ``bpe:subword-nmt-VERSION/SHA8`` (sha256 of the codes file)."""
    return {"bpe": f"subword-nmt-{package_version('subword-nmt')}/{file_sha256(codes, 8)}"}
