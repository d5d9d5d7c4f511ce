"""``manifest.json``: what an output folder holds, and how every input line was used (docs/FORMAT.md).

The manifest lists, per split, the shards (file, pairs, first/last line, sha256, bytes), the
number of input lines, the pairs kept and every dropped line with its reason, so that
``input_lines == pairs + sum(dropped.values())`` and every line is accounted for. It is saved
atomically with sorted keys and fixed indentation, so identical runs give identical bytes.

Re-running a pipeline skips a shard when :meth:`Manifest.is_done` says it exists and its sha256
matches its entry.

Several commands may write different splits into one folder at the same time: :meth:`Manifest.save`
holds the folder lock (:func:`synprep.lock.folder_lock`), re-reads the file and keeps the other
writers' splits (a split this object did not change since it was loaded or last saved is taken from
the file), and skips the write when the bytes would not change (a resumed, finished split leaves a
read-only folder untouched).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from synprep.constants import MANIFEST_NAME, SHARD_FORMAT, SHARD_FORMAT_VERSION
from synprep.errors import InputError, name_problem
from synprep.lock import SPLIT_RE, folder_lock, split_writer
from synprep.shards.schema import inside_name
from synprep.shards.writer import ShardInfo
from synprep.signature import file_sha256
from synprep.textio import atomic_write


@dataclass
class SplitEntry:
    """One split of the manifest.

    Attributes:
        input_lines: lines of the split's original (uncleaned) input.
        dropped: reason → number of dropped lines (reasons like ``clean:ratio``, ``parse:failed``;
            a reason may be listed with 0).
        dropped_lines: ``[line, reason, detail]`` for every dropped line, by line number.
        shards: the split's :class:`ShardInfo` in shard-index order.
        alignment: shard file → how often each subword alignment rule applied to its pairs
            (:class:`synprep.subword.offsets.AlignStats` as a dict); empty for subword-nmt BPE,
            which needs no rule. Saved as ``subword_alignment`` with a ``total``.
        signature: the split's own signature line when it differs from the folder's: the folder's with
            the digests of the split's own parse inputs (``--conllu``, ``--trees`` files); its shards
            carry it. None: the split's shards carry the folder's signature.
    """

    input_lines: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    dropped_lines: list[list[Any]] = field(default_factory=list)
    shards: list[ShardInfo] = field(default_factory=list)
    alignment: dict[str, dict[str, int]] = field(default_factory=dict)
    signature: str | None = None

    @property
    def pairs(self) -> int:
        """Pairs in the split's shards (the sum over shards)."""
        return sum(s.pairs for s in self.shards)

    def to_dict(self) -> dict[str, Any]:
        out = {"input_lines": self.input_lines, "pairs": self.pairs, "dropped": dict(self.dropped),
               "dropped_lines": [list(x) for x in self.dropped_lines],
               "shards": [asdict(s) for s in self.shards]}
        if self.alignment:
            total: Counter = Counter()
            for counts in self.alignment.values():
                total.update(counts)
            out["subword_alignment"] = {"total": {k: total[k] for k in sorted(total)},
                                        "shards": {k: dict(v) for k, v in self.alignment.items()}}
        if self.signature is not None:
            out["signature"] = self.signature
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SplitEntry:
        """Build from the parsed JSON.

        Raises:
            ValueError / TypeError / AttributeError: a malformed entry (a shard entry whose fields
                are missing, unknown or of the wrong JSON type; a count that is not an integer; a shard file
                name that is not a plain name in the folder: ``../x.h5``, an absolute path).
        """
        alignment = (d.get("subword_alignment") or {}).get("shards", {})
        return cls(input_lines=int(d.get("input_lines", 0)), dropped=dict(d.get("dropped", {})),
                   dropped_lines=[list(x) for x in d.get("dropped_lines", [])],
                   shards=[_shard_info(s) for s in d.get("shards", [])],
                   alignment={_plain(k, "subword_alignment shard"): {str(r): int(n) for r, n in v.items()}
                              for k, v in alignment.items()},
                   signature=_optional_str(d.get("signature")))


def _optional_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"a split's signature is {value!r}, expected a JSON string")
    return value


_SHARD_FIELDS = {"file": str, "pairs": int, "first_line": int, "last_line": int, "sha256": str, "bytes": int}


def _shard_info(d: Any) -> ShardInfo:
    """A shard entry of the JSON as :class:`ShardInfo`, its fields checked (JSON has no types to trust)."""
    if not isinstance(d, dict) or set(d) != set(_SHARD_FIELDS):
        raise ValueError(f"a shard entry must be an object with the fields {', '.join(_SHARD_FIELDS)}")
    for key, kind in _SHARD_FIELDS.items():
        value = d[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"shard entry field {key} is {value!r}, expected a JSON {kind.__name__}")
    _plain(d["file"], "shard file")
    return ShardInfo(**d)


def _plain(name: Any, what: str) -> str:
    """``name`` when it is a plain file name in the folder (no ``/``: :func:`synprep.errors.name_problem`)."""
    problem = name_problem(name, subfolders=False)
    if problem is not None:
        raise ValueError(f"{what} {name!r} is not a file name inside the folder ({problem})")
    return name


class Manifest:
    """The manifest of one output folder.

    Attributes:
        signature: the signature line of the run.
        config: the full configuration (dict).
        vocab: ``{"path", "sha256", "size"}`` of the joint vocabulary, or None.
        splits: split name → :class:`SplitEntry`.
    """

    def __init__(self, signature: str = "", config: dict[str, Any] | None = None):
        self.signature = signature
        self.config: dict[str, Any] = dict(config or {})
        self.vocab: dict[str, Any] | None = None
        self.splits: dict[str, SplitEntry] = {}
        self._base: dict[str, dict[str, Any]] = {}  # each split as last loaded or saved (for the merge)

    # --- persistence ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"format": SHARD_FORMAT, "format_version": SHARD_FORMAT_VERSION, "signature": self.signature,
                "config": self.config, "vocab": self.vocab,
                "splits": {name: s.to_dict() for name, s in self.splits.items()}}

    def to_json(self) -> str:
        """The file's text: sorted keys, 2-space indentation, one final newline."""
        return json.dumps(self.to_dict(), sort_keys=True, indent=2, ensure_ascii=False) + "\n"

    def save(self, folder: str | os.PathLike) -> Path:
        """Write ``FOLDER/manifest.json`` atomically, merged with the file's other splits; returns its path.

        Under the folder lock: the file is re-read, and every split this object did not change
        since it was loaded or last saved is replaced by the file's version (another process may
        have written it); splits only the file has are added. Nothing is written when the file
        already holds these bytes.

        Raises:
            InputError: the file on disk is not a readable manifest.
        """
        path = Path(folder) / MANIFEST_NAME
        with folder_lock(folder):
            old_text = None
            if path.is_file():
                old_text = path.read_text(encoding="utf-8", errors="replace")
                disk = Manifest.load(path)
                for name, entry in disk.splits.items():
                    if name not in self.splits or self.splits[name].to_dict() == self._base.get(name):
                        self.splits[name] = entry
            text = self.to_json()
            if text != old_text:
                with atomic_write(path) as f:
                    f.write(text)
            self._base = {name: e.to_dict() for name, e in self.splits.items()}
        return path

    @classmethod
    def from_dict(cls, d: dict[str, Any], name: str = MANIFEST_NAME) -> Manifest:
        """Build from the parsed JSON.

        Raises:
            InputError: unknown format or version, or a malformed entry.
        """
        version = d.get("format_version")
        if d.get("format") != SHARD_FORMAT or type(version) is not int or version != SHARD_FORMAT_VERSION:
            raise InputError(f"manifest format {d.get('format')!r} version {version!r} "
                             f"is not {SHARD_FORMAT!r} version {SHARD_FORMAT_VERSION}", name)
        for key, kinds in (("signature", (str,)), ("config", (dict,)), ("vocab", (dict, type(None)))):
            if key in d and not isinstance(d[key], kinds):
                raise InputError(f"malformed manifest: {key} is {type(d[key]).__name__}, expected "
                                 f"{' or '.join('null' if k is type(None) else k.__name__ for k in kinds)}", name)
        m = cls(signature=d.get("signature", ""), config=d.get("config") or {})
        m.vocab = d.get("vocab")

        splits = d.get("splits") or {}
        if not isinstance(splits, dict):
            raise InputError(f"malformed manifest: splits is {type(splits).__name__}, expected object", name)
        for key in splits:
            if not SPLIT_RE.match(key):
                raise InputError(f"malformed manifest: split name {key!r} is not valid (letters, digits, '_' "
                                 "and '-' only)", name)
        if isinstance(m.vocab, dict) and not inside_name(m.vocab.get("path")):
            raise InputError(f"malformed manifest: vocab path {m.vocab.get('path')!r} is not a file name inside "
                             "the folder", name)
        try:
            m.splits = {k: SplitEntry.from_dict(v) for k, v in (d.get("splits") or {}).items()}
        except (TypeError, ValueError, AttributeError, OverflowError) as e:  # int(Infinity): OverflowError
            raise InputError(f"malformed manifest entry: {e}", name) from None
        m._base = {k: e.to_dict() for k, e in m.splits.items()}
        return m

    #: how to recover from a manifest that cannot be read (a copy cut off, an edit gone wrong): the
    #: writers rebuild it when it is gone
    RECOVERY = ("remove it and run the commands that wrote the folder's splits again, with the same arguments: "
                "they write the manifest and the shards anew")

    @classmethod
    def load(cls, folder: str | os.PathLike) -> Manifest:
        """Read ``FOLDER/manifest.json`` (or the given file).

        Raises:
            InputError: missing (a run writing the folder's first shard named: :func:`no_manifest_reason`),
                not JSON, or not a synprep manifest.
        """
        path = Path(folder)
        if path.is_dir():
            path = path / MANIFEST_NAME
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(no_manifest_reason(path.parent), str(path)) from None
        except (UnicodeDecodeError, ValueError) as e:
            raise InputError(f"manifest is not JSON ({e}): {cls.RECOVERY}", str(path)) from None
        if not isinstance(d, dict):
            raise InputError(f"manifest is not a JSON object: {cls.RECOVERY}", str(path))
        return cls.from_dict(d, str(path))

    @classmethod
    def load_or_new(cls, folder: str | os.PathLike, signature: str = "",
                    config: dict[str, Any] | None = None) -> Manifest:
        """The folder's manifest when there is one (for a re-run), else a new one."""
        if (Path(folder) / MANIFEST_NAME).exists():
            return cls.load(folder)
        return cls(signature, config)

    # --- editing ----------------------------------------------------------------------------
    def split(self, name: str) -> SplitEntry:
        """The entry of a split (created empty when new)."""
        return self.splits.setdefault(name, SplitEntry())

    def set_vocab(self, path: str, sha256: str, size: int) -> None:
        """Record the joint vocabulary: ``path`` relative to the folder, its sha256 and size."""
        self.vocab = {"path": str(path), "sha256": sha256, "size": int(size)}

    def set_input_lines(self, split: str, n: int) -> None:
        """Record how many lines the split's original input has."""
        self.split(split).input_lines = int(n)

    def add_shard(self, split: str, info: ShardInfo) -> None:
        """Add a shard's entry, replacing one of the same file; entries stay in file-name order."""
        entry = self.split(split)
        entry.shards = sorted([s for s in entry.shards if s.file != info.file] + [info], key=lambda s: s.file)

    def set_alignment(self, split: str, file: str, counts: dict[str, int]) -> None:
        """Record how often each subword alignment rule applied to the pairs of shard ``file``
        (replacing an earlier record of the same shard: a re-run never counts a shard twice)."""
        self.split(split).alignment[file] = {k: int(v) for k, v in counts.items()}

    def declare_reasons(self, split: str, reasons: list[str]) -> None:
        """List drop reasons with a 0 count when they have none (so the manifest shows them)."""
        for r in reasons:
            self.split(split).dropped.setdefault(r, 0)

    def record_drop(self, split: str, line: int, reason: str, detail: str = "") -> None:
        """Record that input ``line`` (1-based) of ``split`` was dropped, and why.

        Idempotent per line: recording a line again replaces its earlier reason (a re-run does
        not count a line twice).
        """
        self.record_drops(split, [(line, reason, detail)])

    def record_drops(self, split: str, drops: list[tuple[int, str, str]]) -> None:
        """Record many drops at once (``(line, reason, detail)``; same rules as :meth:`record_drop`)."""
        entry = self.split(split)
        by_line = {int(x[0]): list(x) for x in entry.dropped_lines}
        for line, reason, detail in drops:
            by_line[int(line)] = [int(line), reason, detail]
        entry.dropped_lines = [by_line[k] for k in sorted(by_line)]
        counts = Counter(x[1] for x in entry.dropped_lines)
        # known reasons keep their place (0 counts too), new ones follow
        entry.dropped = {r: counts.get(r, 0) for r in {**entry.dropped, **counts}}

    # --- queries ----------------------------------------------------------------------------
    def shard_entry(self, file: str) -> ShardInfo | None:
        """The entry of a shard file, in any split."""
        for entry in self.splits.values():
            for s in entry.shards:
                if s.file == file:
                    return s
        return None

    def is_done(self, folder: str | os.PathLike, file: str) -> bool:
        """True when ``FOLDER/file`` exists, has an entry, and its size and sha256 match the entry."""
        info = self.shard_entry(file)
        path = Path(folder) / file
        if info is None or not path.is_file() or path.stat().st_size != info.bytes:
            return False
        return file_sha256(path) == info.sha256


def no_manifest_reason(folder: Path) -> str:
    """Why a folder has no ``manifest.json``: a run writing its first shard (named from its split lock,
    :func:`synprep.lock.split_writer`), a run that stopped before its first shard, or no synprep folder."""
    splits = sorted(p.name[1:-len(".lock")] for p in folder.glob(".*.lock"))
    for split in (s for s in splits if SPLIT_RE.match(s)):
        writer = split_writer(folder, split)
        if writer is not None:
            return (f"no manifest.json yet: the {split} split is being written by {writer}, and the manifest "
                    f"appears with its first shard: wait for it to finish")
    if (folder / "pipeline.json").is_file():
        return ("no manifest.json: no run into this folder wrote a shard (each stopped or failed before its "
                "first): run the command that makes it again (it resumes)")
    return "no manifest.json"
