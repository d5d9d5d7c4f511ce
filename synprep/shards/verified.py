"""The verified opening of a split (:func:`open_split`): every shard against ``manifest.json`` (list, size,
sha256, values), the split complete; and its ``dict.txt`` (:func:`load_vocab`). Part of
:mod:`synprep.shards.reader`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from synprep import parallel, signature
from synprep.constants import VOCAB_NAME
from synprep.errors import InputError
from synprep.lock import check_split_name, split_writer
from synprep.loky_seam import process_pool_executor
from synprep.parallel import worker_init
from synprep.shards import mapped
from synprep.shards.check import split_counts_violation
from synprep.shards.manifest import Manifest
from synprep.shards.schema import inside_name, parse_shard_name
from synprep.shards.shard_reader import Header, ShardReader, split_files
from synprep.vocab import Vocab

if TYPE_CHECKING:
    from synprep.shards.manifest import SplitEntry

#: shards whose sha256 this process already verified: (resolved path, size, mtime_ns, sha256)
_VERIFIED: set[tuple[str, int, int, str]] = set()
#: a split whose shards still to verify hold at least this many bytes is verified in worker processes
#: first (:func:`_verify_in_workers`; ~2.3 s of one core's verification, against ~0.5 s to start them)
PARALLEL_VERIFY_BYTES = 64 << 20


def _file_key(path: Path, st: os.stat_result, sha256: str) -> tuple[str, int, int, str]:
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, sha256)


def _values_key(path: Path, st: os.stat_result, sha256: str, vocab_size: int | None,
                after_line: int) -> tuple[Any, ...]:
    return (*_file_key(path, st, sha256), vocab_size, after_line)


def _verify_file(path: Path, size: int, sha256: str) -> None:
    st = path.stat()
    if st.st_size != size:
        raise InputError(f"{st.st_size} bytes, manifest.json says {size} (damaged or replaced; "
                         "`synprep check` tells more)", str(path))
    key = _file_key(path, st, sha256)
    if key in _VERIFIED:
        return
    got = signature.file_sha256(path)
    if got != sha256:
        raise InputError(f"sha256 {got[:12]}… does not match manifest.json's {sha256[:12]}… (damaged or "
                         "replaced; `synprep check` tells more)", str(path))
    _VERIFIED.add(key)


#: shards whose values this process already verified: (resolved path, size, mtime_ns, sha256, vocab size, after line)
_VALUES_OK: set[tuple[Any, ...]] = set()


def verify_values(path: Path, sha256: str, *, vocab_size: int | None, after_line: int = 0) -> None:
    """Refuse a shard whose values break an invariant of ``synprep check`` (its sections 2 and 3).

    The one per-shard verification :func:`synprep.shards.check.check_shard` (vectorised over the
    shard's CSR arrays), run once per process and file version: heads, word indices, sentence
    starts, gaps, labels, LDD entries and ids inside their ranges, trees without cycles, lines
    increasing across the split's shards. A shard re-sealed in ``manifest.json`` (its sha256 and size
    updated) with damaged values is refused here, before any reader uses it.

    Args:
        path: the shard file (already verified against its manifest entry ``sha256``).
        vocab_size: ids must be below it (None: not checked).
        after_line: the previous shard's last line (0 for the first).

    Raises:
        InputError: ``FILE: pair P (line L): what`` (one line; the first violation).
    """
    st = path.stat()
    key = _values_key(path, st, sha256, vocab_size, after_line)
    if key in _VALUES_OK:
        return
    from synprep.shards.check import check_shard  # here: only a values check needs check's modules

    violation, _, _ = check_shard(path, vocab_size=vocab_size, after_line=after_line, name=path.name)
    if violation is not None:
        where = "" if violation.pair is None else f"pair {violation.pair}" + (
            "" if violation.line is None else f" (line {violation.line})") + ": "
        raise InputError(f"{where}{violation.what} (a damaged shard; `synprep check` reports it too)", str(path))
    _VALUES_OK.add(key)


#: one shard's verification for :func:`_verify_in_workers`: (path, size, sha256, vocab size, after line,
#: map folder or None)
VerifyJob = tuple[Path, int, str, "int | None", int, "Path | None"]


class Verified(NamedTuple):
    """What a verification worker read of one shard version, for the process that asked
    (:func:`_verify_in_workers`): the cache keys of the file (:data:`_VERIFIED`) and of its maps
    (:data:`~synprep.shards.mapped._MAPS_OK`, :func:`~synprep.shards.mapped.ok_key`; None without a map folder,
    or where they could not be written) it verified, and the shard's header
    as :class:`ShardReader` read and checked it: root attributes, and without maps its offsets and lines
    (with maps the asking process maps them from the folder the worker compared with them)."""

    file: tuple[Any, ...]
    maps: tuple[Any, ...] | None
    attrs: dict[str, Any]
    offsets: dict[str, np.ndarray] | None
    lines: np.ndarray | None


def _verify_job(job: VerifyJob) -> tuple[tuple[Any, ...], Verified] | None:
    """In a worker process: :func:`_verify_file` and :func:`verify_values` of one shard, its header read and
    checked (:class:`ShardReader`), then, with a map folder, its maps verified or written there
    (:mod:`synprep.shards.mapped`). Returns the
    values' cache key and what the asking process needs (:class:`Verified`), or None where anything failed or
    the file changed while it read (the calling process's own pass then meets that shard and raises its error)."""

    path, size, sha256, vocab_size, after_line, map_dir = job
    maps = None
    try:
        st = path.stat()
        _verify_file(path, size, sha256)
        verify_values(path, sha256, vocab_size=vocab_size, after_line=after_line)
        reader = ShardReader(path, map_dir=map_dir, sha256=sha256, vocab_size=vocab_size)
        if map_dir is not None:
            reader.load()
            maps = mapped.ok_key(map_dir / mapped.map_key(path), sha256, vocab_size)
            if maps not in mapped._MAPS_OK:
                return None
        again = path.stat()
    except Exception:  # noqa: BLE001 - the caller's pass raises it, in shard order
        return None
    if (again.st_size, again.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
        return None
    return _values_key(path, st, sha256, vocab_size, after_line), Verified(
        _file_key(path, st, sha256), maps, reader.attrs, None if map_dir is not None else reader.offsets,
        None if map_dir is not None else reader.lines)


def verify_workers() -> int:
    """Worker processes for verifying a large split: the cores this process may use
    (:func:`synprep.parallel.usable_cpus`), shared among the node's ranks of a ``torchrun`` job
    (``LOCAL_WORLD_SIZE``), each of which verifies the split itself."""
    try:
        ranks = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        ranks = 1
    return max(1, parallel.usable_cpus() // ranks)


def _verify_in_workers(jobs: list[VerifyJob]) -> dict[Path, Verified]:
    """Verify the shards of ``jobs`` not yet verified in this process in worker processes, and add the
    versions that pass to this process's caches (:data:`_VERIFIED`, :data:`_VALUES_OK`, the maps'
    :data:`~synprep.shards.mapped._MAPS_OK`): a warm-up of the shard-by-shard pass that follows, which then only
    verifies what failed here, in shard order, and raises what it meets exactly as without this step; the
    headers the workers read spare that pass reading them again (:func:`_verified_shard`: 20 ms a shard of
    5000 pairs on the 2-core machine, in each process that opens the split). Runs only where the shards to
    verify hold at least :data:`PARALLEL_VERIFY_BYTES` and more than one worker is available
    (:func:`verify_workers`); the workers (fresh interpreters, one thread each) end with the call. A pool that
    cannot start is ignored: the serial pass does all the work.

    Returns:
        Per shard file verified in a worker, what it read (:class:`Verified`).
    """
    todo = []
    for job in jobs:
        path, size, sha256, vocab_size, after_line, _ = job
        try:
            st = path.stat()
        except OSError:
            continue  # the serial pass names it
        if st.st_size == size and _values_key(path, st, sha256, vocab_size, after_line) not in _VALUES_OK:
            todo.append(job)
    n = min(len(todo), verify_workers())
    if n < 2 or sum(job[1] for job in todo) < PARALLEL_VERIFY_BYTES:
        return {}

    done: dict[Path, Verified] = {}
    try:
        with process_pool_executor()(max_workers=n, initializer=worker_init, initargs=(os.getpid(),)) as pool:
            for job, got in zip(todo, pool.map(_verify_job, todo), strict=True):
                if got is not None:
                    values, verified = got
                    _VERIFIED.add(verified.file)
                    _VALUES_OK.add(values)
                    if verified.maps is not None:
                        mapped._MAPS_OK.add(verified.maps)
                    done[job[0]] = verified
    except Exception:  # noqa: BLE001 - no pool (a sandbox without processes): the serial pass verifies all
        return done
    return done


def resume_command(folder: str | os.PathLike, split: str) -> str:
    """How to resume ``split`` of ``folder``: the command its last writer ran (from the split lock's
    record, which a killed run leaves behind), else the generic advice."""
    import shlex

    try:
        d = json.loads((Path(folder) / f".{split}.lock").read_text(encoding="utf-8"))
        argv = shlex.split(str(d["command"]))
    except (OSError, ValueError, KeyError, TypeError):
        argv = []
    if argv and (os.path.basename(argv[0]) == "synprep" or argv[0].endswith("synprep/__main__.py")):
        return "`" + shlex.join(["synprep", *argv[1:]]) + "`"
    return f"the same `synprep pipeline`/`annotate` command again (--split {split} --out {folder})"


def refuse_live_writer(folder: str | os.PathLike, split: str) -> None:
    """Refuse a split whose writer is alive (its lock held).

    Raises:
        InputError: one line naming the split and the writer.
    """
    writer = split_writer(folder, split)
    if writer is not None:
        raise InputError(f"the {split} split is still being written by {writer}: wait for it to finish "
                         "(`synprep check` tells when it is complete)", str(folder))


def refuse_incomplete(folder: str | os.PathLike, split: str, entry: Any) -> None:
    """Refuse a split that ``synprep check`` reports incomplete: still being written, or its run stopped
    (``input_lines > pairs + dropped``). The message names the split and the command that resumes it.

    Raises:
        InputError: one line, naming the split, the writer or the missing lines, and the resume command.
    """
    refuse_live_writer(folder, split)
    missing = entry.input_lines - entry.pairs - sum(entry.dropped.values())
    if missing > 0:
        raise InputError(f"the {split} split is incomplete ({missing} of its {entry.input_lines} input lines neither "
                         "stored nor dropped: its run was interrupted); resume it by running "
                         f"{resume_command(folder, split)}", str(folder))


def open_split(folder: str | os.PathLike, split: str, *, cache: bool = True,
               verify: bool = True, manifest: Manifest | None = None, complete: bool = True,
               map_dir: str | os.PathLike | None = None) -> list[ShardReader]:
    """A :class:`ShardReader` for every shard of ``split`` in ``folder``, ordered by shard index.

    This is how ``train``, ``translate``, ``show`` and ``export`` open a split. Wrap the list in
    :class:`SplitReader` for one global index over the split.

    Args:
        folder: an output folder (``manifest.json``, ``SPLIT.NNNNN.h5``, ``dict.txt``).
        split: the split's name (``[A-Za-z0-9_-]+``).
        cache: see :class:`ShardReader`.
        map_dir: see :class:`ShardReader`. With ``map_dir`` (and ``cache``) every shard is mapped
            before this returns, its maps written there first where absent (a large split's by the
            verification's worker processes, below), so that processes forked afterwards share them; maps
            found there are mapped only when they pass :mod:`synprep.shards.mapped`'s checks (with ``verify``,
            against the manifest's sha256 of the shard and the vocabulary's size too), else decoded again.
        verify: check the shards against ``manifest.json`` first: the split's shard list, each
            file's size and sha256 (hashed once per process and file version), ``n_pairs`` and the
            first/last line against the entry, ``split``/``shard_index``/``signature`` attributes, and that the
            ``vocab_path`` and ``vocab_sha256`` attributes are the manifest's vocabulary entry's.
            Every shard's declared shapes and offsets are checked whether or not ``verify`` is set
            (:func:`check_layout`).
        manifest: the folder's manifest, already loaded by the caller (so that what it plans from
            and what is verified are one reading of the file); default: read ``manifest.json``.
            With ``verify``, every shard's values are checked too (:func:`verify_values`, ``check``'s
            per-shard verification, once per process and file version).
        complete: with ``verify``, refuse a split ``synprep check`` reports incomplete (a killed run,
            or one still writing: :func:`refuse_incomplete`).

    Returns:
        The readers (an empty list when the split has no shards and the manifest does not list it).

    Raises:
        ConfigError: an invalid split name.
        InputError: see :func:`split_files`; a missing or malformed manifest (``verify``), a shard that
            differs from its entry (named).
        ShardFormatError: a shard of an unknown format.
    """
    entry, files, manifest = split_entry(folder, split, verify=verify, manifest=manifest, complete=complete)
    if not verify:
        return [ShardReader(p, cache=cache, map_dir=map_dir) for p in files]
    assert manifest is not None
    vocab = _vocab_entry(folder, manifest, files)
    readers: list[ShardReader] = []
    assert entry is not None or not files
    verified: dict[Path, Verified] = {}
    if entry is not None and len(files) == len(entry.shards):  # a large split: its values verified in parallel
        verified = _verify_in_workers([(p, info.bytes, info.sha256, vocab[2],
                                        entry.shards[i - 1].last_line if i else 0,
                                        None if map_dir is None else Path(map_dir))
                                       for i, (p, info) in enumerate(zip(files, entry.shards, strict=True))])
    for index, p in enumerate(files):
        assert entry is not None
        readers.append(_verified_shard(p, index, Listed(split, entry, vocab, entry.signature or manifest.signature),
                                       cache, map_dir, verified.get(p)))
        if map_dir is not None and cache:  # mapped now (a large split's maps the workers wrote): a process
            readers[-1].load()             # forked from this one (DataLoader workers) shares them
    if entry is not None and complete:
        v = split_counts_violation(split, entry.to_dict(), np.concatenate([r.lines for r in readers]) if readers
                                   else np.zeros(0, np.int64))
        if v is not None:
            raise InputError(f"{v.what} (`synprep check` reports it too)", str(Path(folder) / "manifest.json"))
    return readers


def open_shard(folder: str | os.PathLike, split: str, shard: int, *, cache: bool = True,
               manifest: Manifest | None = None, complete: bool = True) -> ShardReader:
    """Shard number ``shard`` (0-based shard index) of ``split``, verified as :func:`open_split` verifies
    each shard, without reading the split's other shards (``show`` reads one pair with it).

    Checked, as :func:`open_split` checks them: the split's shard files are the manifest's list (by
    name), the split is complete (``complete``: :func:`refuse_incomplete`), ``dict.txt``'s sha256,
    and this shard's size and sha256 (hashed once per process and file version), pairs and first/last
    line, ``split``/``shard_index``/vocabulary attributes and values (:func:`verify_values`, after the
    previous shard's last line in the manifest). Not read: the other shards (a damaged one is refused
    when it is read, not before) and so the split's line counts (``check``'s section 4, which needs
    every shard's lines; ``check`` and :func:`open_split` verify them). No byte of this shard is
    returned before it is verified.

    Raises:
        ConfigError, InputError, ShardFormatError: as :func:`open_split`, for this shard and the manifest.
        IndexError: ``shard`` is not a shard index of the split.
    """
    entry, files, manifest = split_entry(folder, split, manifest=manifest, complete=complete)
    assert manifest is not None
    if not 0 <= shard < len(files):
        raise IndexError(f"split {split!r} has {len(files)} shards, no shard {shard}")
    assert entry is not None
    return _verified_shard(files[shard], shard, Listed(split, entry, _vocab_entry(folder, manifest, files)), cache)


def split_entry(folder: str | os.PathLike, split: str, *, verify: bool = True, manifest: Manifest | None = None,
                complete: bool = True) -> tuple[SplitEntry | None, list[Path], Manifest | None]:
    """``(manifest entry of split or None, its shard files in shard order, the manifest)``, checked as
    :func:`open_split` checks them before it opens a shard: a valid split name, shard files numbered
    0..n-1 and (``verify``) exactly the manifest's list, the split complete (``complete``). Without
    ``verify`` the manifest is not read: ``(None, files, None)``.

    Raises:
        ConfigError: an invalid split name.
        InputError: see :func:`split_files`; a missing or malformed manifest, shard files other than its list;
            an incomplete split (:func:`refuse_incomplete`).
    """
    check_split_name(split)
    files = split_files(folder, split)
    if not verify:
        return None, files, None

    if manifest is None:
        manifest = Manifest.load(folder)
    mpath = str(Path(folder) / "manifest.json")
    entry = manifest.splits.get(split)
    listed = [s.file for s in entry.shards] if entry is not None else []
    for index, name in enumerate(listed):  # a listed name is only ever compared, never opened; say which is wrong
        if parse_shard_name(name) != (split, index):
            raise InputError(f"split {split!r}: shard {index} is listed as {name!r}, expected "
                             f"{split}.{index:05d}.h5", mpath)
    found = [p.name for p in files]
    # completeness before the file list: a writer renames a shard into place, then lists it, so a live or
    # killed run between the two leaves a shard not (yet) listed; say that (and how to resume), not "not listed"
    if complete and entry is not None:
        refuse_incomplete(folder, split, entry)
    if listed != found:
        if complete and entry is None:
            refuse_live_writer(folder, split)
        extra = sorted(set(found) - set(listed))
        missing = [f for f in listed if f not in found]
        what = (f"{extra[0]} is not listed in manifest.json" if extra
                else f"{missing[0]} is listed in manifest.json but missing" if missing
                else "the shard files are not the manifest's")
        raise InputError(f"split {split!r}: {what} (an interrupted or concurrent run? `synprep check` tells more)",
                         mpath)
    return entry, files, manifest


def _vocab_entry(folder: str | os.PathLike, manifest: Manifest, files: list[Path]) -> tuple[str, str, int | None]:
    """The manifest's vocabulary ``(path, sha256, size)``; the size from ``dict.txt``, its sha256 checked
    (:func:`load_vocab`), when there are shards and a vocabulary entry (else None)."""
    vocab_path = str((manifest.vocab or {}).get("path", ""))
    vocab_sha256 = str((manifest.vocab or {}).get("sha256", ""))
    vocab_size = len(load_vocab(folder, {"vocab_path": vocab_path, "vocab_sha256": vocab_sha256})) \
        if files and vocab_path else None
    return vocab_path, vocab_sha256, vocab_size


def _reader(p: Path, cache: bool, map_dir: str | os.PathLike | None, sha256: str,
            verified: Verified | None, vocab_size: int | None = None) -> ShardReader:
    """:class:`ShardReader` ``(p, cache=cache, map_dir=map_dir, sha256=sha256, vocab_size=vocab_size)``; from the header a verification worker read
    (``verified``) where the file, and with ``map_dir`` its maps, are still the versions it verified (their
    sizes and modification times): then nothing is read here but the maps' index."""
    try:
        given = _given_header(p, cache, map_dir, sha256, verified, vocab_size)
    except OSError:  # the file is gone: the reader names it
        given = None
    if given is None:
        return ShardReader(p, cache=cache, map_dir=map_dir, sha256=sha256, vocab_size=vocab_size)
    return ShardReader.with_header(p, given, cache=cache, map_dir=map_dir, sha256=sha256, vocab_size=vocab_size)


def _given_header(p: Path, cache: bool, map_dir: str | os.PathLike | None, sha256: str, verified: Verified | None,
                  vocab_size: int | None = None) -> Header | None:
    """For :func:`_reader`: the header of ``verified`` (with ``map_dir``, its mapped data) still valid for ``p``,
    or None."""

    if verified is None or _file_key(p, p.stat(), sha256) != verified.file:
        return None
    if map_dir is None:
        return None if verified.offsets is None or verified.lines is None else \
            Header(verified.attrs, verified.offsets, verified.lines)
    final = Path(map_dir) / mapped.map_key(p)
    if not cache or verified.maps is None or mapped.ok_key(final, sha256, vocab_size) != verified.maps:
        return None
    got = mapped.folder_maps(final, sha256)
    return None if got is None else Header(verified.attrs, got.offsets, got.lines, got.data)


class Listed(NamedTuple):
    """What ``manifest.json`` says of a split's shards, each shard verified against it (:func:`_verified_shard`).

    Attributes:
        split: the split's name.
        entry: its manifest entry (each shard's size, sha256, pairs, first/last line).
        vocab: the manifest's vocabulary ``(path, sha256, size)`` (:func:`_vocab_entry`).
        signature: the signature the manifest gives the split's shards (as ``check`` compares it); None: not
            compared.
    """

    split: str
    entry: SplitEntry
    vocab: tuple[str, str, int | None]
    signature: str | None = None


def _verified_shard(p: Path, index: int, listed: Listed, cache: bool, map_dir: str | os.PathLike | None = None,
                    verified: Verified | None = None) -> ShardReader:
    """Shard ``index`` (file ``p``) of the split ``listed`` describes, verified against its manifest entry:
    size and sha256, pairs and first/last line, attributes, values (after the previous shard's last line);
    with ``map_dir``, its maps there are mapped only where they are of this file's sha256 and pass the shard's
    checks (:mod:`synprep.shards.mapped`), else decoded again. ``verified``: what a verification worker read of it
    (:func:`_reader`)."""
    split, entry, (vocab_path, vocab_sha256, vocab_size), signature = listed
    info = entry.shards[index]
    _verify_file(p, info.bytes, info.sha256)
    r = _reader(p, cache, map_dir, info.sha256, verified, vocab_size)
    a = r.attrs
    if len(r) != info.pairs or (len(r) and (int(r.lines[0]), int(r.lines[-1])) != (info.first_line,
                                                                                     info.last_line)):
        raise InputError(f"holds {len(r)} pairs (lines {r.lines[:1].tolist()}…{r.lines[-1:].tolist()}), "
                         f"manifest.json says {info.pairs} (lines {info.first_line}…{info.last_line})", str(p))
    if a.get("split") != split or a.get("shard_index") != index:
        raise InputError(f"attributes split/shard_index are {a.get('split')!r}/{a.get('shard_index')!r}, "
                         f"expected {split!r}/{index}", str(p))
    if signature and a.get("signature") != signature:  # else export would copy a false one into export.json
        raise InputError(f"signature attribute {a.get('signature')!r} is not manifest.json's {signature!r}", str(p))
    if vocab_path and a.get("vocab_path") != vocab_path:
        raise InputError(f"vocab_path attribute {a.get('vocab_path')!r} is not manifest.json's vocabulary "
                         f"{vocab_path!r}", str(p))
    if vocab_sha256 and a.get("vocab_sha256") != vocab_sha256:
        raise InputError(f"vocab_sha256 attribute {str(a.get('vocab_sha256'))[:12]}… is not manifest.json's "
                         f"vocabulary's {vocab_sha256[:12]}…", str(p))
    verify_values(p, info.sha256, vocab_size=vocab_size, after_line=entry.shards[index - 1].last_line if index else 0)
    return r


def load_vocab(folder: str | os.PathLike, attrs: dict[str, Any]) -> Vocab:
    """The vocabulary (``dict.txt``) a split's shards were written with, its sha256 checked.

    Args:
        folder: the output folder.
        attrs: a shard's root attributes (``ShardReader.attrs``): the file is
            ``FOLDER/attrs["vocab_path"]`` (default ``dict.txt``), its sha256 must be
            ``attrs["vocab_sha256"]``. For shards from :func:`open_split` (``verify=True``) both
            attributes are checked against manifest.json's vocabulary entry, so this is the
            manifest's vocabulary, byte for byte.

    Raises:
        InputError: the file is missing or not a fairseq dictionary, or its sha256 differs (a
            damaged or replaced ``dict.txt``; the message names it); a ``vocab_path`` outside the folder.
    """
    name = str(attrs.get("vocab_path") or VOCAB_NAME)
    if not inside_name(name):  # the readers refuse such a shard already; this reader never follows one
        raise InputError(f"vocab_path attribute {name!r} is not a file name inside the shards' folder", str(folder))
    path = Path(folder) / name
    vocab = Vocab.load(path)
    want = attrs.get("vocab_sha256")
    if want and vocab.sha256 != want:
        raise InputError(f"vocabulary sha256 {vocab.sha256[:12]}… differs from the shards' {str(want)[:12]}… "
                         "(damaged or replaced; `synprep check` tells more)", str(path))
    return vocab
