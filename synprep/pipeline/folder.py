"""The output folder: its text files' names, the configuration guard (``pipeline.json``), the inputs' record
(``inputs.json``), the ``--out`` check."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from synprep.config import DataConfig, differences
from synprep.constants import MANIFEST_NAME
from synprep.errors import ConfigError, InputError
from synprep.lock import sweep_stale_temps
from synprep.signature import file_sha256
from synprep.textio import atomic_write

log = logging.getLogger(__name__)

CONFIG_NAME = "pipeline.json"


CODES_NAME = "code"


TRAIN = "train"


FEATURES = "cnf+nary+ldd"




@dataclass(frozen=True)
class TextFiles:
    """The names of one split's intermediate text files in ``OUT/text`` (module docstring).

    A file of one side is ``SPLIT.STAGE.L``; with the same language on both sides it is
    ``SPLIT.STAGE.SIDE.L`` (``SIDE`` = ``src`` / ``tgt``). Folders of differing languages keep the
    layout of earlier versions, so they resume unchanged.
    """

    work: Path
    split: str
    src_lang: str
    tgt_lang: str

    def side(self, stage: str, side: str) -> Path:
        """``stage`` = ``tok`` | ``clean`` | ``bpe`` | ``words``; ``side`` = ``src`` | ``tgt``."""
        lang = self.src_lang if side == "src" else self.tgt_lang
        infix = f"{side}." if self.src_lang == self.tgt_lang else ""
        return self.work / f"{self.split}.{stage}.{infix}{lang}"

    @property
    def lines(self) -> Path:
        return self.work / f"{self.split}.lines"

    @property
    def dropped(self) -> Path:
        return self.work / f"{self.split}.dropped.tsv"


def _refuse_overwritten_same_language(work: Path, lang: str) -> None:
    """A same-language folder of the old layout holds targets that are copies of their sources."""
    old = sorted(p.name for p in work.glob(f"*.tok.{lang}")) if work.is_dir() else []
    if old:
        raise ConfigError(
            f"{work} holds {old[0]}: it was written by an earlier synprep that named the text files by language "
            f"only, so with both sides in '{lang}' the target files overwrote the source files (or the reverse) "
            f"and its shards hold wrong pairs; delete {work.parent} and run again")




def _check_config(out: Path, config: DataConfig) -> None:
    """Record the folder's configuration (``OUT/pipeline.json``), or refuse a different one, naming
    each field that differs (a folder written by an earlier version is read in its layout)."""
    path = out / CONFIG_NAME
    if path.exists():
        diff = differences(DataConfig.load(path), config)
        if diff:
            raise ConfigError(
                f"{out} was made with another configuration ({'; '.join(diff)}): give the folder's values (an "
                f"option left out is inherited from {path}), use a new --out, or delete {out}")
        return
    with atomic_write(path) as f:
        f.write(config.to_json())


INPUTS_NAME = "inputs.json"


def _check_inputs(out: Path, split: str, files: dict[str, str | None], made: list[Path]) -> dict[str, str]:
    """Record the split's input files (sha256), or refuse to resume from inputs that changed.

    A resumed run reuses every finished step; had an input been edited in between, the folder
    would mix old and new data. ``OUT/inputs.json`` maps each split to its inputs' hashes.
    Changed inputs are accepted (and recorded anew) while nothing was made from the split yet:
    a run that failed on bad input must not block its own retry once the input is fixed.

    Args:
        made: the files a run of this split writes (intermediate text, shards): when none exists
            and the manifest knows no shard of the split, nothing was made from the old inputs.

    Returns:
        The sha256 (hex) of each given file, by role.
    """
    path = out / INPUTS_NAME
    known = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    now = {role: {"path": str(f), "sha256": file_sha256(f)} for role, f in files.items() if f is not None}
    old = known.get(split)
    if old is not None:
        changed = [role for role in sorted(set(old) | set(now))
                   if (old.get(role) or {}).get("sha256") != (now.get(role) or {}).get("sha256")]
        if changed and not _split_started(out, split, made):
            log.info("the %s split's inputs changed since a run that made nothing from them: recording them anew",
                     split)
            old = None
        elif changed:
            names = ", ".join(str((now.get(r) or old.get(r))["path"]) for r in changed)
            raise ConfigError(f"the {split} split of {out} was made from other input ({names} changed): "
                              f"use a new --out, or delete {out}")
    if old is None:
        known[split] = now
        with atomic_write(path) as f:
            f.write(json.dumps(known, indent=2, sort_keys=True) + "\n")
    return {role: entry["sha256"] for role, entry in now.items()}


def _split_started(out: Path, split: str, made: list[Path]) -> bool:
    """Whether anything of the split exists: one of ``made``, a shard file, or a manifest entry."""
    if any(p.exists() for p in made) or any(out.glob(f"{split}.*.h5")):
        return True
    if not (out / MANIFEST_NAME).is_file():
        return False
    try:
        return split in json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8")).get("splits", {})
    except (ValueError, UnicodeDecodeError):
        return True  # cannot tell: refuse rather than mix


def check_output_folder(out: Path) -> None:
    """``--out`` must be a folder, or not exist yet (it is created later, with its parents).

    Raises:
        InputError: ``out`` or one of its parents is an existing file, not a folder (exit status 2).
    """
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                raise InputError("is a file, not a folder (--out)" if p == out else
                                 f"{p} is a file, not a folder (--out)", str(out))
            return


def _remove_stale_temps(out: Path) -> None:
    """Temporary files a killed run left behind are removed (only those whose owner is gone: synprep.lock)."""
    sweep_stale_temps(out, out / "text")
