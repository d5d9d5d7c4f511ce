"""Line-oriented text I/O with clear errors and atomic outputs.

Conventions (documented in README "Input handling"):

* Input is UTF-8. A byte sequence that is not UTF-8 raises :class:`~synprep.errors.InputError`
  naming the file, the 1-based line and the byte column.
* CRLF line ends are accepted and read as LF (the ``\\r`` is removed); a lone ``\\r`` inside a
  line is kept as text. A missing newline at the end of the file is accepted.
* A NUL byte raises :class:`InputError` (``nul="error"``) or is reported to the caller.
* A UTF-8 byte-order mark at the start of a file is removed (and logged): it would otherwise
  become an invisible first word (parsed, stored, counted in ``dict.txt``).
* A gzip-compressed file (recognised by its magic bytes ``1f 8b``, whatever its name) is read
  decompressed, transparently.
* ``-`` means standard input / standard output.
* Every output file is written atomically: a temporary file beside it, renamed on success and
  removed on failure, so no half-written file is ever left under the final name.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import logging
import os
import stat
import sys
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from synprep.errors import InputError
from synprep.lock import temp_prefix

PathLike = str | os.PathLike

log = logging.getLogger(__name__)

#: the UTF-8 encoding of U+FEFF, which some editors put at the start of a file
BOM = b"\xef\xbb\xbf"
#: the first two bytes of every gzip file
GZIP_MAGIC = b"\x1f\x8b"


def display_name(path: PathLike) -> str:
    """The name used in messages: ``<stdin>`` for ``-``, else the path as given."""
    return "<stdin>" if str(path) == "-" else str(path)


def _decode(raw: bytes, name: str, lineno: int) -> str:
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = raw[e.start : e.start + 1].hex()
        raise InputError(f"not valid UTF-8: byte 0x{bad} at byte column {e.start + 1}", name, lineno) from None


def refuse_pipes(command: str, *paths: PathLike | None) -> None:
    """Refuse inputs that can be read only once: a pipe, a FIFO, a process substitution ``<(...)``.

    For commands that read an input more than once (count its lines, record its sha256 for a
    resume, then read it): the second read of a pipe finds nothing. Missing paths and ``None``
    are left to the command's own checks.

    Raises:
        InputError: ``PATH: is a pipe ...``, naming the command and what to do instead.
    """
    for p in paths:
        if p is None or str(p) == "-":
            continue
        try:
            mode = os.stat(p).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise InputError(f"is a pipe or device (a process substitution <(...), a FIFO), not a file: {command} reads "
                             "its inputs more than once (it counts, hashes and resumes them): write it to a file first",
                             display_name(p))


def open_binary(path: PathLike) -> IO[bytes]:
    """Open a file for reading bytes, decompressing it when it is gzip (magic bytes ``1f 8b``).

    Raises:
        InputError: the file is missing, or is a directory.
    """
    name = display_name(path)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise InputError("no such file", name) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a text file", name) from None
    if f.peek(2)[:2] == GZIP_MAGIC:
        f.close()
        log.debug("%s: gzip-compressed, reading it decompressed", name)
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return f


def iter_lines(path: PathLike, *, nul: str = "error") -> Iterator[str]:
    """Yield the lines of a UTF-8 text file (plain or gzip-compressed) without their line ends.

    Args:
        path: a file path, or ``"-"`` for standard input.
        nul: ``"error"`` raises on a NUL byte; ``"keep"`` leaves it in the text.

    Yields:
        str: line ``i`` (1-based numbering in error messages), ``\\n`` / ``\\r\\n`` removed, a leading
        byte-order mark removed.

    Raises:
        InputError: a line is not UTF-8, holds a NUL byte (``nul="error"``), the file is missing,
            a directory, or a truncated/corrupt gzip file.
    """
    name = display_name(path)
    if str(path) == "-":
        stdin = sys.stdin.buffer
        if hasattr(stdin, "peek") and stdin.peek(2)[:2] == GZIP_MAGIC:
            stdin = gzip.GzipFile(fileobj=stdin, mode="rb")  # type: ignore[assignment]
        yield from _iter_stream(stdin, name, nul)
        return
    with open_binary(path) as f:
        yield from _iter_stream(f, name, nul)


#: the files whose byte-order mark this process has reported (:func:`_iter_stream`)
_TOLD_BOM: set[str] = set()


def _iter_stream(f: IO[bytes], name: str, nul: str) -> Iterator[str]:
    lineno = 0
    try:
        for lineno, raw in enumerate(f, 1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if lineno == 1 and raw.startswith(BOM):
                raw = raw[len(BOM):]
                if name not in _TOLD_BOM:  # a file is read several times (checks, stages): said once
                    _TOLD_BOM.add(name)
                    log.info("%s: removed the UTF-8 byte-order mark at the start of the file", name)
            if nul == "error" and b"\x00" in raw:
                col = raw.index(b"\x00") + 1
                raise InputError(f"NUL byte at byte column {col}", name, lineno)
            yield _decode(raw, name, lineno)
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise InputError(f"corrupt or truncated gzip data after line {lineno} ({e})", name) from None


def read_lines(path: PathLike, **kw) -> list[str]:
    """All lines of a file (see :func:`iter_lines`); for small files only."""
    return list(iter_lines(path, **kw))


def count_lines(path: PathLike) -> int:
    """Number of lines (a final line without newline counts; a gzip file is counted decompressed).

    Raises:
        InputError: the file is missing, a directory, or corrupt gzip data.
    """
    n = 0
    last = b"\n"
    with open_binary(path) as f:
        try:
            while chunk := f.read(1 << 20):
                n += chunk.count(b"\n")
                last = chunk[-1:]
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            raise InputError(f"corrupt or truncated gzip data ({e})", display_name(path)) from None
    return n + (last != b"\n")


def iter_line_pairs(src: PathLike, tgt: PathLike, **kw) -> Iterator[tuple[str, str]]:
    """Yield ``(source line, target line)`` of two parallel files.

    Raises:
        InputError: the files have different line counts (the message names both counts),
            or a line is bad (see :func:`iter_lines`).
    """
    s_it, t_it = iter_lines(src, **kw), iter_lines(tgt, **kw)
    n = 0
    for s in s_it:
        t = next(t_it, None)
        if t is None:
            rest = 1 + sum(1 for _ in s_it)
            raise InputError(
                f"line counts differ: {display_name(src)} has {n + rest} lines, {display_name(tgt)} has {n}",
                display_name(tgt),
            )
        n += 1
        yield s, t
    rest = sum(1 for _ in t_it)
    if rest:
        raise InputError(
            f"line counts differ: {display_name(src)} has {n} lines, {display_name(tgt)} has {n + rest}",
            display_name(src),
        )


def file_mode() -> int:
    """The mode a newly created ordinary file gets (``0o666`` less the umask); mkstemp gives 0600."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open ``path`` for writing through a temporary file renamed into place on success.

    On any exception the temporary file is removed and ``path`` is left untouched.
    Text mode writes ``\\n`` line ends whatever the platform.

    A ``path`` that is a symbolic link or not a regular file (``-o /dev/null``, ``/dev/stdout``,
    a FIFO) is written in place: renaming over it would replace the device node or the link
    itself (for root, ``/dev/null`` would become a regular file).
    """
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        with open(path, mode, encoding=None if "b" in mode else encoding, newline=None if "b" in mode else "\n") as f:
            yield f
        return

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path.name), suffix=".tmp", dir=path.parent)
    except OSError as e:  # name the target, never the temporary file
        raise OSError(e.errno, e.strerror, str(path)) from None
    try:
        if "b" in mode:
            f = os.fdopen(fd, mode)
        else:
            f = os.fdopen(fd, mode, encoding=encoding, newline="\n")
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and (e.filename == tmp or (
                e.filename is None and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO))):
            raise OSError(e.errno, e.strerror, str(path)) from None  # name the target file, never the temporary one
        raise


@contextlib.contextmanager
def open_output(path: PathLike | None) -> Iterator[IO[str]]:
    """A text output: standard output for ``None``/``"-"``, else an :func:`atomic_write` file."""
    if path is None or str(path) == "-":
        out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n", write_through=False)
        try:
            yield out
        finally:
            out.flush()
            out.detach()
    else:
        with atomic_write(path) as f:
            yield f


def write_lines(f: IO[str], lines: Iterable[str]) -> int:
    """Write each line followed by ``\\n``; return the number written."""
    n = 0
    for line in lines:
        f.write(line)
        f.write("\n")
        n += 1
    return n
