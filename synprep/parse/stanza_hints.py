"""What synprep says when stanza's models cannot be found where the options say."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator


def missing_dir_message(model_dir: str, lang: str) -> str:
    """``--stanza-dir`` names no folder in this process: a typing mistake, or a relative path read from another
    working folder (a dask worker started elsewhere). Names where it was looked for; no ``--package`` is
    suggested (what the folder was meant to hold is unknown)."""
    where = f"{os.path.abspath(model_dir)} on host {socket.gethostname()}"
    relative = "" if os.path.isabs(model_dir) else (
        f" (a relative path is read from each process's working folder, here {os.getcwd()}: a dask worker's may be "
        "another; give an absolute path)")
    return (f"--stanza-dir {model_dir}: no such folder ({where}){relative}; give the folder that holds "
            f"resources.json, or leave --stanza-dir out after `synprep models download {lang}`")


@contextlib.contextmanager
def quiet_stanza() -> Iterator[None]:
    """stanza's own warnings muted while it resolves a package (it warns per processor about a package it does
    not list, then synprep's error names the missing model and the fix, once)."""
    logger = logging.getLogger("stanza")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
