"""The output folder: its text files' names, the configuration guard (``pipeline.json``), the inputs' record
(``inputs.json``), the ``--out`` check."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from synprep.constants import MANIFEST_NAME, VOCAB_NAME
from synprep.errors import ConfigError, InputError
from synprep.links import refuse_links_out
from synprep.lock import SPLIT_RE, split_writer, sweep_stale_temps
from synprep.pipeline.config import DataConfig, differences
from synprep.signature import file_sha256
from synprep.subword import scheme_class
from synprep.textio import atomic_write

log = logging.getLogger(__name__)

CONFIG_NAME = "pipeline.json"


CODES_NAME = "code"


TRAIN = "train"


FEATURES = "cnf+nary+ldd"




@dataclass(frozen=True)
class SplitInputs:
    """What one run is given for its split, beside the folder's configuration: never saved in
    ``pipeline.json`` (the inputs' digests are recorded in ``inputs.json`` and the shards).
    :func:`~synprep.pipeline.run_pipeline` and :func:`~synprep.pipeline.run_annotate` take it whole, e.g.
    ``SplitInputs(split="test", src="test.de", tgt="test.en", codes="data/code")``.

    Attributes:
        split: the split's name; the train split learns the BPE codes (or subword model) and the vocabulary.
        src: the source file. ``pipeline``: the split's raw (untokenized, or ``--tokenized``) source; with
            ``--parser conllu`` (``config.parse.parser``) the source tokens are the CoNLL-U surface tokens of
            ``conllu`` and ``src`` may be None (when given, its line count must match). ``annotate``: the
            BPE'd source.
        tgt: the target file (``pipeline``: the split's raw target; ``annotate``: the BPE'd target).
        clean: clean this split (``--clean/--no-clean``; None: the train split only); ``pipeline`` only.
        codes: BPE codes to apply instead of learning them (``--codes``); ``pipeline`` only.
        vocab: a fairseq dict to use (``--vocab``).
        conllu: the parses to import (``--parser conllu``).
        trees: the user's bracketed trees (``--trees``).
        subword_model: the model of a scheme that reads raw text (``--spm-model``, ``--hf-tokenizer``) instead
            of learning one (docs/subwords.md); ``pipeline`` only.
        parse_src: the cased tokenized source the parser reads (``annotate --parse-src``); ``annotate`` only.
    """

    split: str = TRAIN
    src: str | None = None
    tgt: str = ""
    clean: bool | None = None
    codes: str | None = None
    vocab: str | None = None
    conllu: str | None = None
    trees: str | None = None
    subword_model: str | None = None
    parse_src: str | None = None

    def files(self) -> dict[str, str | None]:
        """The input files whose digests the folder records (``inputs.json``), by role (None: not given)."""
        return {"src": self.src, "tgt": self.tgt, "conllu": self.conllu, "trees": self.trees, "parse_src": self.parse_src}


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


def refuse_overwritten_same_language(work: Path, lang: str) -> None:
    """A same-language folder of the old layout holds targets that are copies of their sources."""
    old = sorted(p.name for p in work.glob(f"*.tok.{lang}")) if work.is_dir() else []
    if old:
        raise ConfigError(
            f"{work} holds {old[0]}: it was written by an earlier synprep that named the text files by language "
            f"only, so with both sides in '{lang}' the target files overwrote the source files (or the reverse) "
            f"and its shards hold wrong pairs; delete {work.parent} and run again")




def check_folder_config(out: Path, config: DataConfig, split: str) -> None:
    """Record the folder's configuration (``OUT/pipeline.json``), or refuse a different one, naming
    each field that differs (a folder written by an earlier version is read in its layout).

    A different configuration is taken (logged) while the folder holds nothing to protect: no shard and
    no finished split (:func:`_folder_made`) and no other split being written. A command refused for
    a mistake found after the configuration was written (trees that need ``--tokenized``, a wrong
    input) then accepts its corrected form; the files made with the earlier configuration
    (:func:`_discard_unfinished`) are removed, so nothing made with it is reused.

    Raises:
        ConfigError: another configuration, and the folder holds shards, a finished split, or another
            split is being written into it (named).
    """
    path = out / CONFIG_NAME
    if path.exists():
        old = DataConfig.load(path)
        diff = differences(old, config)
        if not diff:
            return
        if _folder_made(out):
            raise ConfigError(
                f"{out} was made with another configuration ({'; '.join(diff)}): give the folder's values (an "
                f"option left out is inherited from {path}), use a new --out{_remake_hint(out, split)}")
        busy = _other_writers(out, split)
        if busy:
            raise ConfigError(
                f"{out} was made with another configuration ({'; '.join(diff)}) and {busy[0]} is writing into it "
                f"with that one: wait for it to finish and give the folder's values, or use a new --out")
        removed = _discard_unfinished(out, old)
        log.info("%s holds no shard yet: its configuration is replaced by this run's (%s)%s", out, "; ".join(diff),
                 f"; removed what the earlier one made: {', '.join(removed)}" if removed else "")
    with atomic_write(path) as f:
        f.write(config.to_json())


def _remake_hint(out: Path, split: str) -> str:
    """``, or make the SPLIT split again here with --remake-split`` where that option can (the folder's only made
    split is this one), else nothing."""
    # imported here: loads click, not needed to import this module
    from synprep.pipeline.inherit import made_splits

    return f", or make the {split} split again here with --remake-split" if made_splits(out) == [split] else ""


def _folder_made(out: Path) -> bool:
    """Whether the folder holds a shard or a finished split (an entry of ``manifest.json``; an unreadable
    manifest counts as one: refuse rather than guess)."""
    if any(out.glob("*.h5")):
        return True
    if not (out / MANIFEST_NAME).is_file():
        return False
    try:
        return bool(json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8")).get("splits"))
    except (ValueError, UnicodeDecodeError, AttributeError):
        return True


def _other_writers(out: Path, split: str) -> list[str]:
    """The live writers of the folder's other splits (:func:`synprep.lock.split_writer`), named."""
    names = {p.name[1:-len(".lock")] for p in out.glob(".*.lock")}
    return [w for name in sorted(names - {split}) if SPLIT_RE.match(name) and (w := split_writer(out, name))]


def _discard_unfinished(out: Path, old: DataConfig) -> list[str]:
    """Remove what runs with the folder's earlier configuration made before any shard: the intermediate
    text (``OUT/text``), the subword model (``code``, …), ``dict.txt``, the manifest and the inputs'
    record. Returns the removed files' names (relative to ``out``)."""
    candidates = [out / CODES_NAME, out / scheme_class(old.subword.scheme).model_name, out / VOCAB_NAME,
                  out / MANIFEST_NAME, out / INPUTS_NAME]
    text = out / "text"
    if text.is_dir():
        candidates += sorted(p for p in text.iterdir() if p.is_file() and not p.name.startswith("."))
    removed = []
    for p in dict.fromkeys(candidates):
        if p.is_file():
            p.unlink()
            removed.append(str(p.relative_to(out)))
    return removed


INPUTS_NAME = "inputs.json"


def record_split_inputs(out: Path, split: str, files: dict[str, str | None], made: list[Path]) -> dict[str, str]:
    """Record the split's input files (sha256), or refuse to resume from inputs that changed.

    A resumed run reuses every finished step; had an input been edited in between, the folder
    would mix old and new data. ``OUT/inputs.json`` maps each split to its inputs' hashes.
    Other inputs are accepted (and recorded anew, logged) while no shard holds anything made from the
    old ones: the split has no shard and no manifest entry, and no other split's shards were (or are
    being) made with a file of ``made`` at the folder's top level (``dict.txt``, ``code`` built from this
    split). What a run made from the old inputs (the existing files of ``made``, the split's files in
    ``OUT/text``) is removed then, so nothing of it is reused:
    a run that failed on a wrong input must not block its own retry with the right one.

    Args:
        made: the files a run of this split writes (intermediate text; ``dict.txt``, ``code`` when built
            from it).

    Returns:
        The sha256 (hex) of each given file, by role.

    Raises:
        ConfigError: other inputs than the split's shards were made from (each named: a file that
            changed since, or another file given than the one recorded).
    """
    path = out / INPUTS_NAME
    known = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    now = {role: {"path": str(f), "sha256": file_sha256(f)} for role, f in files.items() if f is not None}
    old = known.get(split)
    if old is not None:
        changed = [role for role in sorted(set(old) | set(now))
                   if (old.get(role) or {}).get("sha256") != (now.get(role) or {}).get("sha256")]
        what = "; ".join(_input_change(role, old.get(role), now.get(role)) for role in changed)
        blocker = _input_blocker(out, split, made) if changed else None
        if blocker:
            raise ConfigError(f"the {split} split of {out} was made from other input ({what}) and {blocker}: give "
                              f"the same files, use a new --out, or delete {out}")
        if changed:
            text = out / "text"
            stale = [*made, *(text.glob(f"{split}.*") if text.is_dir() else ())]
            stale = [p for p in dict.fromkeys(stale) if p.is_file()]
            for p in stale:
                p.unlink()
            log.info("the %s split of %s has no shard yet: its inputs are recorded anew (%s)%s", split, out, what,
                     f"; removed what the earlier ones made: {', '.join(p.name for p in stale)}" if stale else "")
            old = None
    elif (out / "text").is_dir() and not _split_made(out, split):
        _remove_unrecorded_text(out, split)
    if old is None:
        known[split] = now
        with atomic_write(path) as f:
            f.write(json.dumps(known, indent=2, sort_keys=True) + "\n")
    return {role: entry["sha256"] for role, entry in now.items()}


def _remove_unrecorded_text(out: Path, split: str) -> None:
    """``OUT/text/SPLIT.*`` files of a split whose inputs ``inputs.json`` does not record: no run of this folder
    made them from any input it knows (its inputs are recorded before its first text file), so they are
    removed, never reused (another corpus's tokenized text would be paired with this run's)."""
    stale = sorted(p for p in (out / "text").glob(f"{split}.*") if p.is_file())
    for p in stale:
        p.unlink()
    if stale:
        log.warning("removed %d file(s) of the %s split in %s that no recorded input made (%s): made again from "
                    "this run's inputs", len(stale), split, out / "text", ", ".join(p.name for p in stale))


def _input_change(role: str, old: dict[str, str] | None, now: dict[str, str] | None) -> str:
    """How one input differs from the recorded one: ``src: raw.de changed since`` (the same path),
    ``src: the folder has raw.de, this run tok.de`` (another file), or an input given on one side only."""
    option = f"--{role.replace('_', '-')}"
    if old is None:
        return f"{option}: the folder has none, this run {now['path'] if now else '-'}"
    if now is None:
        return f"{option}: the folder has {old['path']}, this run none"
    if old["path"] == now["path"]:
        return f"{option}: {now['path']} changed since (sha256 {old['sha256'][:8]}, now {now['sha256'][:8]})"
    return f"{option}: the folder has {old['path']}, this run {now['path']} (other content)"


def _input_blocker(out: Path, split: str, made: list[Path]) -> str | None:
    """Why the split's recorded inputs must stay (what was made from them is in use), or None."""
    if _split_made(out, split):
        return "its shards hold what was made from them"
    shared = [p.name for p in made if p.parent == out and p.exists()]
    if shared and _folder_made(out):
        return f"the folder's shards were made with {', '.join(shared)} made from them"
    writers = _other_writers(out, split) if shared else []
    if writers:
        return f"{writers[0]} is making shards with {', '.join(shared)} made from them"
    return None


def _split_made(out: Path, split: str) -> bool:
    """Whether the split has a shard file or an entry in ``manifest.json`` (an unreadable manifest counts as
    one: refuse rather than mix)."""
    if any(out.glob(f"{split}.*.h5")):
        return True
    if not (out / MANIFEST_NAME).is_file():
        return False
    try:
        return split in json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8")).get("splits", {})
    except (ValueError, UnicodeDecodeError, AttributeError):
        return True


def check_output_folder(out: Path) -> None:
    """``--out`` must be a folder, or not exist yet (it is created later, with its parents).

    Raises:
        InputError: ``out`` or one of its parents is an existing file, not a folder (exit status 2).
        ConfigError: a symbolic link in ``out`` leads out of it (``arrays`` may).
    """
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                raise InputError("is a file, not a folder (--out)" if p == out else
                                 f"{p} is a file, not a folder (--out)", str(out))
            break
    refuse_links_out(out, "--out", allowed=("arrays",))  # arrays/ on another disk: docs/train.md


def remove_stale_temps(out: Path) -> None:
    """Temporary files a killed run left behind are removed (only those whose owner is gone: synprep.lock)."""
    sweep_stale_temps(out, out / "text")
