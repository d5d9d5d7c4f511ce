"""The export driver: atomic, resumable, streaming; an :class:`Exporter` only says what a unit's files hold.

An export reads an output folder (shards + ``manifest.json`` + ``dict.txt``) and writes ``DEST``:

* the exporter's files, unit by unit. A *unit* is one shard (``per_shard = True``, e.g. one Parquet
  file per shard) or one split (fairseq's one ``.bin``/``.idx`` per split, built by appending the
  split's shards in order). Only one shard's data is in memory at a time, so memory grows with the
  corpus only by the shards' headers, 56 bytes per pair (benchmarks/bench_export.py).
* Before anything is written to ``DEST``, every exported split is opened with
  :func:`synprep.shards.reader.open_split` (the reader ``train``, ``translate`` and ``show`` use: the
  shard list, sizes, sha256, pair counts, line ranges and attributes against ``manifest.json``) and
  ``dict.txt`` with :func:`synprep.shards.reader.load_vocab` (its sha256 against the one the
  verified shards and the manifest name). Nothing reads a shard or ``dict.txt`` any other way.
* ``DEST/export.json``: the exporter and its format version, the source's signature line and
  shard config, and per unit the source shards (sha256 from the source manifest) and the files
  written (sha256, bytes, pairs). It is saved after every unit.

Atomic: a unit's files are written under temporary names (``.NAME.XXXX.tmp``) and renamed into place
only when all are complete; then ``export.json`` records the unit. Resumable: running the same
export again skips every recorded unit whose files are intact and whose source shards are unchanged,
and redoes the rest (stale temporary files of an interrupted run are removed). A ``DEST`` holding
an export of another format or of another source configuration is refused (ConfigError). One
export per ``DEST`` at a time (a lock file).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

from synprep.errors import ConfigError, InputError, checked_name
from synprep.links import refuse_links_out
from synprep.lock import flock
from synprep.shards.manifest import Manifest
from synprep.shards.reader import ShardReader, load_vocab, open_split
from synprep.shards.writer import ShardInfo
from synprep.signature import file_sha256
from synprep.textio import atomic_write, file_mode

if TYPE_CHECKING:
    from synprep.vocab import Vocab

log = logging.getLogger("synprep")

#: name of the export's own manifest in DEST
EXPORT_MANIFEST = "export.json"
#: ``format`` field of export.json; its layout version
EXPORT_FORMAT = "synprep-export"
EXPORT_FORMAT_VERSION = 1
LOCK_NAME = ".synprep-export.lock"


@dataclass
class Unit:
    """One piece of work: a split, or one shard of it.

    Attributes:
        split: the split's name.
        shards: the source shards it reads, in order.
        key: its name in export.json (``SPLIT``, or ``SPLIT.NNNNN-of-MMMMM`` for shard NNNNN of MMMMM).
        index: the shard index for a per-shard unit, else None.
        n_shards: the split's number of shards.
    """

    split: str
    shards: list[ShardInfo]
    key: str
    index: int | None
    n_shards: int


@dataclass
class ExportContext:
    """What every exporter gets: the source folder, its manifest, languages, DEST, and the verified
    shards and vocabulary (see :func:`verified_source`).

    Attributes:
        vocab: the verified ``dict.txt``.
        split_readers: split → its verified shards, in order (headers only; a shard's data is loaded by
            :class:`~synprep.export.columns.ShardBlock` and released after it).
        options: the format's options (``factors_style``), as given.
    """

    source: Path
    dest: Path
    manifest: Manifest
    src_lang: str
    tgt_lang: str
    vocab: Vocab
    split_readers: dict[str, list[ShardReader]]
    splits: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def sides(self) -> tuple[str, str]:
        """The names of the (source, target) sides in the exported files (:func:`side_names`)."""
        return side_names(self.src_lang, self.tgt_lang)

    @property
    def vocab_path(self) -> Path:
        """The source's ``dict.txt``."""
        assert self.vocab.path is not None
        return self.vocab.path

    def readers(self, unit: Unit) -> Iterator[ShardReader]:
        """The unit's shards in order, as :func:`verified_source` opened them."""
        readers = self.split_readers[unit.split]
        yield from readers if unit.index is None else [readers[unit.index]]


def side_names(src_lang: str, tgt_lang: str) -> tuple[str, str]:
    """The names of the (source, target) sides in every export format.

    The language codes (``("de", "en")``); with the same language on both sides (``-s en -t en``:
    paraphrase, simplification, post-editing) the codes with the side, ``("en_src", "en_tgt")``, so
    that the two sides get distinct file names (fairseq's ``train.en_src-en_tgt.en_src.bin``,
    factors' ``train.en_src``) and distinct ``translation`` keys (HF), names fairseq's ``-s``/``-t``
    and ``datasets``' ``Translation`` accept (like mBART's ``en_XX``).
    """
    if src_lang != tgt_lang:
        return src_lang, tgt_lang
    return f"{src_lang}_src", f"{tgt_lang}_tgt"


class UnitFiles:
    """The temporary files of one unit; :meth:`commit` renames them all into place."""

    def __init__(self, dest: Path):
        self.dest = dest
        self._tmp: dict[str, Path] = {}

    def path(self, name: str) -> Path:
        """A temporary path that becomes ``DEST/name`` on commit (parents created)."""
        if name not in self._tmp:
            target = self.dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            os.close(fd)
            self._tmp[name] = Path(tmp)
        return self._tmp[name]

    @contextlib.contextmanager
    def open(self, name: str, mode: str = "wb") -> Iterator[IO[Any]]:
        """Open the temporary file of ``name`` for writing (text modes: UTF-8, ``\\n`` line ends)."""
        path = self.path(name)
        f = open(path, mode) if "b" in mode else open(path, mode, encoding="utf-8", newline="\n")
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())

    def commit(self) -> dict[str, dict[str, Any]]:
        """Rename every file into place; returns ``{name: {"sha256", "bytes"}}``."""
        out = {}
        for name, tmp in sorted(self._tmp.items()):
            os.chmod(tmp, file_mode())
            out[name] = {"sha256": file_sha256(tmp), "bytes": tmp.stat().st_size}
        for name, tmp in sorted(self._tmp.items()):
            os.replace(tmp, self.dest / name)
        self._tmp.clear()
        return out

    def discard(self) -> None:
        for tmp in self._tmp.values():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        self._tmp.clear()


def _named(e: OSError, files: UnitFiles, unit: str) -> OSError:
    """``e`` naming the unit's target files (``DEST/NAME``) instead of none or a temporary one.

    A write to one of a unit's open files fails without a file name (``f.write`` does not know it), so
    with several in flight the error names them all (up to three, then a count).
    """
    if e.filename is not None and not str(e.filename).endswith(".tmp"):
        return e
    names = sorted(files._tmp) or ["?"]
    where = ", ".join(str(files.dest / n) for n in names[:3])
    if len(names) > 3:
        where += f" and {len(names) - 3} more files of {unit}"
    return OSError(e.errno, e.strerror or str(e), where)


class Exporter:
    """Base class of an export format (registered in :data:`synprep.export.EXPORTERS`).

    Subclasses set the class attributes and implement :meth:`write_unit`; :meth:`finish` writes the
    files that describe the whole export (dataset card, dictionaries, plugin), rewritten every run.

    Attributes:
        name: the format's name.
        version: the layout version of what it writes (bumped when an old reader would misread it).
        requires: the modules it imports (lazily, inside its methods; :data:`synprep.extras.EXTRA_OF` names the pip extra of each).
        per_shard: one unit per shard (True) or per split (False).
        options: the names of the format's own options (:attr:`ExportContext.options`).
        replaced: folders under DEST (relative paths) that :meth:`finish` removes and writes anew every run
            (a link there is removed, never followed), so a link there is no refusal.
    """

    name: ClassVar[str] = ""
    version: ClassVar[int] = 1
    requires: ClassVar[tuple[str, ...]] = ()
    per_shard: ClassVar[bool] = False
    options: ClassVar[tuple[str, ...]] = ()
    replaced: ClassVar[tuple[str, ...]] = ()

    def __init__(self, ctx: ExportContext):
        self.ctx = ctx

    def write_unit(self, unit: Unit, files: UnitFiles) -> int:
        """Write one unit's files through ``files``; returns the number of pairs written.

        Raises:
            NotImplementedError: in this base class; each format implements it.
            InputError: a shard the format cannot take (fairseq, parquet: an id outside the vocabulary, label
                lists that differ from the other shards'), naming the shard.
        """
        raise NotImplementedError

    def finish(self, record: ExportRecord) -> None:
        """Write the whole-export files (atomically, each with :func:`synprep.textio.atomic_write`).

        Raises:
            InputError: a source file the export copies changed since it was verified (fairseq: ``dict.txt``).
        """

    def usage(self) -> str | None:
        """One line telling how to use the export (printed on stderr by ``synprep export``), or None."""
        return None

    def signature(self) -> str:
        """The source's signature line with ``|export:NAME-vVERSION`` appended."""
        return f"{self.ctx.manifest.signature}|export:{self.name}-v{self.version}"


@dataclass
class ExportRecord:
    """``DEST/export.json``."""

    exporter: str
    exporter_version: int
    signature: str
    config: dict[str, Any]
    src_lang: str
    tgt_lang: str
    units: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the names of the two sides in the files (:func:`side_names`); an export.json without them was
    #: written before same-language pairs got distinct names: its sides are the language codes
    sides: list[str] = field(default_factory=list)
    #: how to use the export (the exporter's :meth:`Exporter.usage`; not saved)
    usage: str | None = field(default=None, compare=False)

    def to_json(self) -> str:
        d = {"format": EXPORT_FORMAT, "format_version": EXPORT_FORMAT_VERSION, "exporter": self.exporter,
             "exporter_version": self.exporter_version, "signature": self.signature, "config": self.config,
             "src_lang": self.src_lang, "tgt_lang": self.tgt_lang, "sides": self.sides, "units": self.units}
        return json.dumps(d, sort_keys=True, indent=2, ensure_ascii=False) + "\n"

    def save(self, dest: Path) -> None:
        with atomic_write(dest / EXPORT_MANIFEST) as f:
            f.write(self.to_json())

    @classmethod
    def load(cls, dest: Path) -> ExportRecord | None:
        """``DEST/export.json``, or None when there is none.

        Every file name its units list is checked (:func:`synprep.errors.checked_name`) before any is read,
        rewritten or deleted: an export.json is as trustworthy as whoever shipped the folder.

        Raises:
            InputError: not an export manifest; a unit's file name that is not a plain name inside ``DEST``
                (``../x``, an absolute path, a symbolic link out of it); the message names export.json.
        """
        path = dest / EXPORT_MANIFEST
        if not path.exists():
            return None
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
            if d.get("format") != EXPORT_FORMAT or d.get("format_version") != EXPORT_FORMAT_VERSION:
                raise ValueError(f"unknown format {d.get('format')!r} version {d.get('format_version')!r}")
            record = cls(exporter=d["exporter"], exporter_version=d["exporter_version"], signature=d["signature"],
                         config=d["config"], src_lang=d["src_lang"], tgt_lang=d["tgt_lang"], units=d["units"],
                         sides=list(d.get("sides", [d["src_lang"], d["tgt_lang"]])))
            for key, unit in record.units.items():
                if not isinstance(unit, dict) or not isinstance(unit.get("files"), dict):
                    raise ValueError(f"unit {key!r} has no files object")
                for meta in unit["files"].values():
                    if not (isinstance(meta, dict) and isinstance(meta.get("sha256"), str)
                            and type(meta.get("bytes")) is int):
                        raise ValueError(f"unit {key!r}: a file entry {meta!r} is not {{sha256, bytes}}")
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise InputError(f"not a synprep export manifest: {e}", str(path)) from None
        for key, unit in record.units.items():
            for name in unit["files"]:
                checked_name(name, path, f"unit {key!r}: file", folder=dest)
        return record

    def pairs(self, split: str) -> int:
        return sum(u["pairs"] for u in self.units.values() if u["split"] == split)

    def splits(self) -> list[str]:
        return sorted({u["split"] for u in self.units.values()})


def _unit_done(dest: Path, entry: dict[str, Any] | None, unit: Unit) -> bool:
    if entry is None or entry.get("sources") != [s.sha256 for s in unit.shards]:
        return False
    for name, meta in entry.get("files", {}).items():
        path = dest / name
        if not path.is_file() or path.stat().st_size != meta["bytes"] or file_sha256(path) != meta["sha256"]:
            return False
    return True


def _drop_stale_units(dest: Path, record: ExportRecord, split: str, keys: set[str]) -> None:
    """Forget the units of ``split`` that the source no longer has (its shard count changed) and delete
    their files, so that no file of an older export is left for a glob such as ``data/train-*``."""
    keep = {name for key, u in record.units.items() if key in keys for name in u["files"]}
    for key in [k for k, u in record.units.items() if u["split"] == split and k not in keys]:
        for name in record.units.pop(key)["files"]:
            if name not in keep:
                (dest / name).unlink(missing_ok=True)
    record.save(dest)


def _units(manifest: Manifest, split: str, per_shard: bool) -> list[Unit]:
    shards = manifest.splits[split].shards
    if per_shard:
        n = len(shards)  # in the key: another shard count makes every old unit (and its file) stale
        return [Unit(split, [s], f"{split}.{i:05d}-of-{n:05d}", i, n) for i, s in enumerate(shards)]
    return [Unit(split, list(shards), split, None, len(shards))]


@contextlib.contextmanager
def _locked(dest: Path) -> Iterator[None]:
    with open(dest / LOCK_NAME, "w") as lock:
        try:
            flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB, dest / LOCK_NAME)
        except BlockingIOError:
            raise ConfigError(f"{dest} is being written by another synprep export") from None
        yield


def _remove_stale_tmp(dest: Path) -> None:
    for tmp in dest.rglob(".*.tmp"):
        if tmp.is_file():
            tmp.unlink()


def verified_source(source: Path, manifest: Manifest, splits: list[str]) -> tuple[dict[str, list[ShardReader]], Vocab]:
    """Every shard of ``splits`` opened with :func:`~synprep.shards.reader.open_split` (checked against
    ``manifest``) and the ``dict.txt`` they name, checked with :func:`~synprep.shards.reader.load_vocab`.

    Raises:
        InputError: a shard or ``dict.txt`` that is not the manifest's (the message names the file).
    """
    readers = {split: open_split(source, split, manifest=manifest) for split in splits}
    first = next(r for split in splits for r in readers[split])
    return readers, load_vocab(source, first.attrs)


def languages(readers: dict[str, list[ShardReader]]) -> tuple[str, str]:
    """(source, target) language codes: the ``src_lang``/``tgt_lang`` attributes of the first verified shard."""
    attrs = next(r for rs in readers.values() for r in rs).attrs
    return str(attrs["src_lang"]), str(attrs["tgt_lang"])


def run_export(exporter_cls: type[Exporter], source: str | os.PathLike, dest: str | os.PathLike,
               splits: list[str] | None = None, options: dict[str, Any] | None = None) -> ExportRecord:
    """Export ``splits`` (default: every split with shards) of the output folder ``source`` into ``dest``.

    ``options`` are the format's own (:attr:`Exporter.options`; ``{"factors_style": "onmt3"}``).

    Returns:
        the saved :class:`ExportRecord` (pairs per split via ``.pairs(split)``).

    Raises:
        InputError: ``source`` is not an output folder, a shard is missing or corrupt.
        ConfigError: an unknown split or an option the format does not have; ``dest`` is the source folder, or a non-empty folder that is
            not an export, or holds another export (format, version, source signature or
            configuration differ), or is being written by another process; a symbolic link in ``dest`` that
            leads out of it.
    """
    source, dest = Path(source), Path(dest)
    options = {k: v for k, v in (options or {}).items() if v is not None}
    for key in options:
        if key not in exporter_cls.options:
            raise ConfigError(f"--{key.replace('_', '-')} is not an option of --format {exporter_cls.name}")
    manifest = Manifest.load(source)
    available = [s for s, e in manifest.splits.items() if e.shards]
    if not splits:
        splits = sorted(available)
    unknown = [s for s in splits if s not in available]
    if unknown:
        raise ConfigError(f"split {unknown[0]!r} has no shards in {source} (splits: {', '.join(sorted(available)) or 'none'})")
    if not splits:
        raise ConfigError(f"{source} holds no shards to export")
    split_readers, vocab = verified_source(source, manifest, splits)
    src_lang, tgt_lang = languages(split_readers)
    if dest.exists() and not dest.is_dir():
        raise ConfigError(f"--to {dest} exists and is not a folder")
    if dest.resolve() == source.resolve():
        raise ConfigError(f"--to {dest} is the shard folder itself; export into another folder")
    if dest.is_dir() and not (dest / EXPORT_MANIFEST).exists() and any(  # what a killed first run leaves is ours
            p.is_file() and p.name != LOCK_NAME and not (p.name.startswith(".") and p.name.endswith(".tmp"))
            for p in dest.rglob("*")):
        raise ConfigError(f"--to {dest} is not empty and holds no {EXPORT_MANIFEST}: export into a new or empty "
                          f"folder (or one an earlier export made)")
    refuse_links_out(dest, "--to", allowed=exporter_cls.replaced)  # data -> ../outside counted as empty
    dest.mkdir(parents=True, exist_ok=True)
    ctx = ExportContext(source, dest, manifest, src_lang, tgt_lang, vocab, split_readers, list(splits), options)
    exporter = exporter_cls(ctx)
    with _locked(dest):
        _remove_stale_tmp(dest)
        record = ExportRecord.load(dest)
        fresh = ExportRecord(exporter_cls.name, exporter_cls.version, exporter.signature(), manifest.config,
                             src_lang, tgt_lang, sides=list(ctx.sides))
        if record is None:
            record = fresh
        else:
            for key in ("exporter", "exporter_version", "signature", "config", "src_lang", "tgt_lang", "sides"):
                if getattr(record, key) != getattr(fresh, key):
                    raise ConfigError(f"{dest} holds another export ({key}: {getattr(record, key)!r}, this one: "
                                      f"{getattr(fresh, key)!r}); choose another --to")
        for split in splits:
            units = _units(manifest, split, exporter_cls.per_shard)
            _drop_stale_units(dest, record, split, {u.key for u in units})
            for unit in units:
                if _unit_done(dest, record.units.get(unit.key), unit):
                    log.info("export: %s already done, skipped", unit.key)
                    continue
                files = UnitFiles(dest)
                try:
                    pairs = exporter.write_unit(unit, files)
                    written = files.commit()
                except OSError as e:  # a full disk: name the files, not a temporary or nothing
                    raise _named(e, files, unit.key) from None
                finally:
                    files.discard()
                record.units[unit.key] = {"split": split, "sources": [s.sha256 for s in unit.shards],
                                          "files": written, "pairs": pairs}
                record.save(dest)
                log.info("export: %s: %d pairs", unit.key, pairs)
        exporter.finish(record)
        record.save(dest)
    record.usage = exporter.usage()
    return record
