"""What a run into an existing folder takes from it: the settings the command line left out.

A later split inherits the folder's settings (``--split valid`` needs no ``--merges``), and the run
says so on one line (:func:`inherited_line`). The split that set them (the folder's vocabulary split)
is different: re-running it, once made, with a setting left out that the folder has at another value
than the default would resume the old data under a command that reads as the default; it is refused
(:func:`refuse_left_out`), naming the setting and the two ways on: a new ``--out``, or
``--remake-split``, which makes the split again (:func:`remake_split`) and says what it removes.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from synprep.constants import MANIFEST_NAME
from synprep.errors import ConfigError
from synprep.pipeline.config import DEFAULTS, DataConfig, option_fields

log = logging.getLogger(__name__)

#: fields a later command leaves out without meaning their default (the folder's languages)
_ALWAYS_INHERITED = ("src_lang", "tgt_lang")


def spelled(command: click.Command, param: str, value: Any) -> str | None:
    """``param`` at ``value`` as the command line writes it (``--tokenized``, ``--no-lowercase``,
    ``--merges 500``); None when the command has no such option, the value is None (unset), or a flag without its
    off form is off."""
    opt = next((p for p in command.params if p.name == param and isinstance(p, click.Option)), None)
    if opt is None:
        return None
    if value is None:
        return None
    if opt.is_flag:
        if value:
            return max(opt.opts, key=len)
        return max(opt.secondary_opts, key=len) if opt.secondary_opts else None
    return f"{max(opt.opts, key=len)} {value}"


def _left_out(command: click.Command, folder: DataConfig, given: Callable[[str], bool]
              ) -> list[tuple[str, str, str | None]]:
    """``(field, the folder's value spelled, the default's)`` for every field the command could set, left
    out, whose folder value is not the default."""
    have, default = folder.flat(), DEFAULTS.flat()
    out = []
    for param, field, negated in option_fields():
        if given(param) or have[field] == default[field]:
            continue
        value = (not have[field]) if negated else have[field]
        off = (not default[field]) if negated else default[field]
        mine = spelled(command, param, value)
        if mine is not None:
            out.append((field, mine, spelled(command, param, off)))
    return out


def inherited_line(command: click.Command, folder: DataConfig, path: Path, given: Callable[[str], bool]) -> str | None:
    """The one line naming every setting this run takes from ``path`` (the folder's ``pipeline.json``)
    rather than from the command line, those not at their defaults; None when there is none."""
    taken = [mine for _, mine, _ in _left_out(command, folder, given)]
    if not taken:
        return None
    return f"settings from {path} (not on the command line): {' '.join(taken)}"


def made_splits(out: Path) -> list[str]:
    """The splits of ``out`` that have a manifest entry or a shard file."""
    names: set[str] = set()
    try:
        names.update(json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8")).get("splits", {}))
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        pass
    names.update(p.name.split(".")[0] for p in out.glob("*.h5"))
    return sorted(names)


def refuse_left_out(command: click.Command, out: Path, split: str, folder: DataConfig,
                    given: Callable[[str], bool]) -> None:
    """Re-running the made split that set the folder's settings (its vocabulary split) with one of them
    left out, at a value other than the default: refused, naming it.

    Raises:
        ConfigError: ``the train split of OUT was made with --tokenized, which this command leaves out ...``.
    """
    if split != folder.shards.vocab_split or split not in made_splits(out):
        return
    left = [(mine, off) for field, mine, off in _left_out(command, folder, given) if field not in _ALWAYS_INHERITED]
    if not left:
        return
    made = " ".join(m for m, _ in left)
    defaults = " ".join(o or f"no {m.split()[0]}" for m, o in left)
    raise ConfigError(f"the {split} split of {out} was made with {made}, which this command leaves out (the default "
                      f"is {defaults}): give {made} to resume it as it was made, or make it with this command's "
                      f"settings into a new --out, or here with --remake-split (replaces the split)")


#: what synprep writes at the top of a folder besides the shards (``*.h5``) and ``text/``
_FOLDER_FILES = ("pipeline.json", MANIFEST_NAME, "inputs.json", "code", "dict.txt", "spm.model", "spm.vocab",
                 "tokenizer.json")


def check_remake(out: Path, split: str) -> None:
    """``--remake-split`` can make ``split`` again: it is made, and the folder's only split.

    Raises:
        ConfigError: the split is not made in ``out`` (the option has no effect), or the folder holds
            other splits too (their settings and vocabulary would change under them: a new --out).
    """
    made = made_splits(out)
    if split not in made:
        raise ConfigError(f"--remake-split has no effect: the {split} split of {out} is not made (leave it out)")
    others = [s for s in made if s != split]
    if others:
        raise ConfigError(f"--remake-split makes a folder's only split again; {out} also holds {', '.join(others)}, "
                          f"made with its settings and vocabulary: use a new --out")


def remake_split(out: Path, split: str) -> list[str]:
    """``--remake-split``: remove what the folder's only made split consists of (its shards, text files,
    the folder's configuration, codes or subword model, vocabulary and records), so that this run
    makes it as a fresh run would. Returns the removed names (relative to ``out``), also logged.

    Raises:
        ConfigError: the split is not made in ``out`` (the option has no effect), or the folder holds
            other splits too (their settings and vocabulary would change under them: a new --out).
    """
    check_remake(out, split)
    removed = _remove(out, [*sorted(out.glob("*.h5")), *(out / n for n in _FOLDER_FILES)])
    text = out / "text"
    if text.is_dir():
        removed += _remove(out, sorted(text.iterdir()))
    extra = sorted(p for p in out.glob(".parts*") if p.is_dir())  # the part records of an array job
    for p in extra:
        shutil.rmtree(p)
        removed.append(p.name)
    log.warning("--remake-split: the %s split of %s is made again; removed %d file(s) it was made of: %s", split,
                out, len(removed), _short(removed))
    return removed


def _remove(out: Path, paths: Iterable[Path]) -> list[str]:
    gone = []
    for p in paths:
        if p.is_file():
            p.unlink()
            gone.append(str(p.relative_to(out)))
    return gone


def _short(names: list[str], most: int = 6) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
