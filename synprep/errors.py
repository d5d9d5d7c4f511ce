"""Errors that name where the input went wrong.

Every error a user can cause by bad input is an :class:`InputError` (or subclass) that names the
file, the 1-based line and the reason; the CLI prints it as ``synprep: error: FILE:LINE: REASON``
and exits with status 2, never with a traceback.
"""

from __future__ import annotations


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


class ConfigError(SynprepError):
    """A bad option or configuration value (not tied to an input line)."""


class EnvironmentProblem(SynprepError):
    """The machine, not the input, is at fault: a damaged parse cache, a folder that cannot be locked.

    The CLI exits with status 1, as for other environment failures (a full disk, a permission
    denied), not 2 (bad input). The message says how to recover.
    """

    exit_status = 1
