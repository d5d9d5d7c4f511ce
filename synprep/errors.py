"""Errors that name where the input went wrong.

Every error a user can cause by bad input is an :class:`InputError` (or subclass) that names the
file, the 1-based line and the reason; the CLI prints it as ``synprep: error: FILE:LINE: REASON``
and exits with status 2, never with a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any


class SynprepError(Exception):
    """Base class of every error synprep raises on purpose (bad input, bad configuration).

    Attributes:
        exit_status: the CLI's exit status for it: 2 (bad input or options) unless a subclass says
            otherwise (:class:`EnvironmentProblem`: 1).
    """

    exit_status = 2


class InputError(SynprepError):
    """Bad input data.

    Args:
        reason: what is wrong, in words.
        path: the file (``"-"`` or ``"<stdin>"`` for standard input), or None.
        line: 1-based line number, or None when the error concerns the whole file.
    """

    def __init__(self, reason: str, path: str | None = None, line: int | None = None):
        self.reason = reason
        self.path = path
        self.line = line
        super().__init__(self.__str__())

    def __reduce__(self):  # a worker's error reaches the main process with its file and line
        return (type(self), (self.reason, self.path, self.line))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:"
            if self.line is not None:
                where += f"{self.line}:"
            where += " "
        elif self.line is not None:
            where = f"line {self.line}: "
        return f"{where}{self.reason}"


def message(e: SynprepError) -> str:
    """The text the CLI prints for ``e``: ``str(e)``, but for an error of a torch DataLoader worker process
    the worker's own message, without the traceback torch wraps it in (``ExceptionWrapper.reraise`` builds
    the error's type from "Caught TYPE in DataLoader worker process N. Original Traceback ... MODULE.TYPE:
    MESSAGE"): a damaged shard or a full disk met while a training worker reads stays one line."""
    text = str(e)
    marker = f"\n{type(e).__module__}.{type(e).__qualname__}: "
    if text.startswith("Caught ") and "\nOriginal Traceback" in text and marker in text:
        return text[text.rindex(marker) + len(marker):].rstrip()
    return text


def name_problem(name: Any, *, subfolders: bool = True) -> str | None:
    """Why ``name``, a file name read from an artefact (``export.json``, ``manifest.json``, a shard's
    attributes), is not a plain name inside its folder, or None when it is one.

    A plain name is a non-empty relative POSIX path of non-empty parts, none of them ``.`` or ``..``,
    without NUL or backslash (``dict.txt``; with ``subfolders``, also ``data/train-00000-of-00001.parquet``).

    Args:
        name: the value as read (any JSON value).
        subfolders: whether the name may hold ``/`` (a file in a subfolder of the folder).
    """
    if not isinstance(name, str) or not name:
        return "not a non-empty string"
    if "\x00" in name or "\\" in name:
        return "it holds a NUL or a backslash"
    if name.startswith("/"):
        return "an absolute path"
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "a '..', '.' or empty part"
    if len(parts) > 1 and not subfolders:
        return "it holds a '/'"
    return None


def checked_name(name: Any, artefact: str | os.PathLike, what: str = "file name", *, subfolders: bool = True,
                 folder: str | os.PathLike | None = None) -> str:
    """``name`` (a file name read from the artefact file ``artefact``) when it is a plain name inside its
    folder (:func:`name_problem`); checked before the name is ever read, written or deleted.

    Args:
        name: the value as read.
        artefact: the file the name was read from (named in the error).
        what: what the name is, for the message (``"shard file"``).
        subfolders: see :func:`name_problem`.
        folder: when given, ``folder/name`` must also resolve inside ``folder`` (no symbolic link leads out).

    Returns:
        ``name``, unchanged.

    Raises:
        InputError: ``ARTEFACT: WHAT 'NAME' is not a file name inside the folder (WHY)`` (exit status 2).
    """
    problem = name_problem(name, subfolders=subfolders)
    if problem is None and folder is not None:
        base = Path(folder).resolve()
        if not (base / PurePosixPath(name)).resolve().is_relative_to(base):
            problem = "a symbolic link leads out of the folder"
    if problem is not None:
        raise InputError(f"{what} {name!r} is not a file name inside the folder ({problem})", str(artefact))
    return name


class ConfigError(SynprepError):
    """A bad option or configuration value (not tied to an input line)."""


class EnvironmentProblem(SynprepError):
    """The machine, not the input, is at fault: a damaged parse cache, a folder that cannot be locked.

    The CLI exits with status 1, as for other environment failures (a full disk, a permission
    denied), not 2 (bad input). The message says how to recover.
    """

    exit_status = 1
