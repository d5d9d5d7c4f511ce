"""What synprep says when stanza's models cannot be found where the options say."""

from __future__ import annotations

import os
import socket


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
