"""Symbolic links inside a folder a command writes: one that leads out of it is refused before anything is written.

A command writes its files by name inside its folder (``--out``, ``--to``, a run folder); a link there that leads
elsewhere (``data -> ../outside``, ``metrics.jsonl -> ../victim``) would make it write, or replace, files outside
the folder it was given. Links the docs offer (a folder's ``arrays/`` on another disk) are named by the caller;
a link whose target stays inside the folder is harmless.
"""

from __future__ import annotations

import os
from pathlib import Path

from synprep.errors import ConfigError


def refuse_links_out(folder: str | os.PathLike, option: str, *, allowed: tuple[str, ...] = ()) -> None:
    """Refuse ``folder`` when an entry in it, at any depth (links are not followed), is a symbolic link whose
    target resolves outside ``folder`` (a dangling one included: writing through it creates its target).

    Args:
        folder: the folder a command writes (need not exist: nothing to refuse then).
        option: how the command names it (``--to``), for the message.
        allowed: entries (paths relative to ``folder``) that may lead anywhere: a documented link, or a folder
            the command removes and writes anew (never writing through it).

    Raises:
        ConfigError: names the link, where it leads, and the fix.
    """
    root = Path(folder)
    if not root.is_dir():
        return
    inside = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        for name in [*dirnames, *filenames]:
            p = here / name
            if not p.is_symlink() or p.relative_to(root).as_posix() in allowed:
                continue
            target = p.resolve()
            if not target.is_relative_to(inside):
                raise ConfigError(f"{p} is a symbolic link to {target}, outside {option} {folder}: synprep writes only "
                                  "inside the folder it is given; remove the link (or give another folder)")
        dirnames[:] = [d for d in dirnames if (here / d).relative_to(root).as_posix() not in allowed]
