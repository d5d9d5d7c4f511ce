"""What a split records: its signature, the manifest checked against the run, the drop report, the final check."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synprep.annotate import ParseOptions
from synprep.constants import MANIFEST_NAME, SHARD_FORMAT_VERSION, VOCAB_NAME
from synprep.errors import ConfigError, InputError
from synprep.lock import folder_lock, hold_split
from synprep.parse.cache import check_cache_usable
from synprep.parse.conllu_io import read_numbered
from synprep.parse.trees import read_tree_lines
from synprep.pipeline.dictionary import await_vocabulary_writer, refuse_without_vocabulary
from synprep.pipeline.folder import (
    FEATURES,
    SplitInputs,
    check_folder_config,
    record_split_inputs,
    remove_stale_temps,
)
from synprep.pipeline.parts import hold_part, refuse_beside_parts, refuse_split_writer, sweep_part_temps
from synprep.shards import Manifest, check_dir
from synprep.signature import signature
from synprep.textio import atomic_write, count_lines, display_name, iter_lines
from synprep.types import ParsedLine
from synprep.vocab import Vocab

if TYPE_CHECKING:
    from synprep.pipeline.parts import Part

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class SignatureFields:
    """What the text stage adds to a split's signature line (:func:`signature`).

    Attributes:
        tok: the ``tok:`` field (``sacremoses-0.2.0``, ``given``, ``conllu/...``).
        lowercase: the ``lc:`` field.
        old_tok: the ``tok:`` earlier versions wrote (default ``tok``).
        codes_sha: the BPE codes' sha256 (``bpe:``, 8 hex digits), or None.
        sub: the subword model's identity (``sub:``), or None.
        words: ``pwords:`` (``cased``: ``annotate --parse-src``), or None.
    """

    tok: str
    lowercase: bool
    old_tok: str | None = None
    codes_sha: str | None = None
    sub: str | None = None
    words: str | None = None


def _signature(fields: SignatureFields, opts: ParseOptions, inputs: dict[str, str] | None = None,
               form: str = "current") -> str:
    """The signature line; its ``parser:`` field names the parser and its models' digest, as
    ``synprep parse`` prints it (``form`` ``legacy``: without the digest, as folders of earlier versions have
    it; ``older``: without the fields added since, ``trees:`` and ``pwords:``; both with ``fields.old_tok``).

    ``trees:`` names the user's trees (``--trees``), ``pwords:cased`` the parser's words given with
    ``annotate --parse-src``. With ``inputs`` (the split's input digests by role, :func:`record_split_inputs`)
    it is the split's signature: ``parser:conllu#SHA`` and ``trees:SHA`` name the files' sha256 (8 hex
    digits); without, the folder's (``trees:given``), the same for every split.
    """
    legacy, older = form == "legacy", form == "older"
    tok = fields.tok if form == "current" else (fields.old_tok or fields.tok)
    lowercase, codes_sha, sub, words = fields.lowercase, fields.codes_sha, fields.sub, fields.words
    source = opts.source()
    parser = source.legacy_signature() if legacy else source.signature()
    trees = None
    if not (legacy or older):
        if inputs is not None and "conllu" in inputs:
            parser = f"{parser}#{inputs['conllu'][:8]}"
        if opts.trees:
            trees = inputs["trees"][:8] if inputs is not None and "trees" in inputs else "given"
    return signature(tok=tok, lc=lowercase, bpe=codes_sha[:8] if codes_sha else None, sub=sub, parser=parser,
                     trees=trees, pwords=None if legacy or older else words, feat=FEATURES,
                     shard=f"v{SHARD_FORMAT_VERSION}")


def _split_signature(manifest: Manifest, split: str, folder_sig: str, split_sig: str) -> str:
    """The signature the split's shards carry: the split's own (recorded in its manifest entry) when the
    folder has this version's signature and the split's inputs add digests to it; else the folder's."""
    if manifest.signature != folder_sig or split_sig == folder_sig:
        return manifest.signature
    manifest.split(split).signature = split_sig
    return split_sig


def split_summary(manifest: Manifest, split: str) -> str:
    """One line on a split: ``train: 8 input lines, 7 pairs in 3 shard(s); dropped: parse:too_long 1``."""
    entry = manifest.split(split)
    dropped = ", ".join(f"{k} {v}" for k, v in sorted(entry.dropped.items()) if v) or "none"
    return (f"{split}: {entry.input_lines} input lines, {entry.pairs} pairs in {len(entry.shards)} shard(s); "
            f"dropped: {dropped}")


def finish_split(out: Path, manifest: Manifest, split: str, *, restore: bool = False) -> None:
    """Save ``manifest`` and check the split (:func:`synprep.shards.check_dir`), under the folder lock. ``restore``
    (a merge of parts' records): a split that fails its check (or a check that raises) puts the earlier
    ``manifest.json`` back, so that the folder stays as it was prepared and the merge can run again with the
    genuine records.

    Raises:
        CheckError: the split fails its check.
    """
    path = out / MANIFEST_NAME
    with folder_lock(out):  # other splits may be written meanwhile: check this one, in a consistent state
        before = path.read_bytes() if restore and path.is_file() else None
        try:
            manifest.save(out)
            report = check_dir(out, splits=[split])
        except BaseException:
            _put_back(path, before)
            raise
        if not report.ok:
            _put_back(path, before)
    report.raise_if_failed()
    log.debug("%s", report.summary())  # the command prints the split's one summary line


def _put_back(path: Path, before: bytes | None) -> None:
    """``manifest.json`` as it was (``before``: its bytes; None: nothing to restore)."""
    if before is not None:
        with atomic_write(path, "wb") as f:
            f.write(before)


def trees_for(path: str, lines: Iterable[int], n_lines: int) -> Iterator[list[Any]]:
    """The user's trees (``--trees``: one line of bracketed tree(s) per input line) of the kept lines.

    Args:
        path: the trees file.
        lines: the kept lines' 1-based numbers, increasing.
        n_lines: the input's line count, which the trees file must have too.

    Raises:
        InputError: a malformed tree (named by file and line), or a trees file of another length.
    """
    name = display_name(path)
    n_trees = count_lines(path)
    if n_trees != n_lines:
        raise InputError(f"line counts differ: the trees file has {n_trees} lines, the input {n_lines} (one line "
                         "of tree(s) per input line)", name)
    reader = read_tree_lines(path)
    for n in lines:
        for k, trees in reader:
            if k == n:
                yield trees
                break


def numbered_parses(conllu: str, n_lines: int) -> Iterator[ParsedLine]:
    """:func:`synprep.parse.conllu_io.read_numbered` (the parses of lines ``1..n_lines``), kept for
    callers of earlier versions: the one numbered CoNLL-U reader is in :mod:`synprep.parse.conllu_io`."""
    return read_numbered(conllu, n_lines)


def _manifest(out: Path, sig: str, shared: dict[str, Any], v: Vocab, legacy_sig: str,
              older_sig: str | None = None) -> Manifest:
    """The folder's manifest (new, or the one a resume or an earlier split left), checked against this run.

    A folder of an earlier version keeps its signature: one whose signature names the parser without
    its models' digest (``legacy_sig``), or one without the fields this version added (``older_sig``:
    ``trees:``, ``pwords:``, ``tok:conllu``); its shards and the rest of the split agree. Its
    configuration may say ``parser.constituency: true`` where no constituency model ran (earlier
    versions wrote what was asked): kept as well.
    """
    manifest = Manifest.load_or_new(out, signature=sig, config=shared)
    if manifest.signature in (legacy_sig, older_sig) and manifest.signature != sig:
        log.info("%s has the signature format of an earlier version: kept", out / MANIFEST_NAME)
    elif manifest.signature != sig:
        raise ConfigError(f"{out / MANIFEST_NAME} has signature {manifest.signature}, this run {sig}: use a new --out")
    if manifest.config and manifest.config != shared and _asked_constituency(manifest.config, shared):
        log.info("%s names the constituency model that was asked, not the one that ran (an earlier version): "
                 "kept", out / MANIFEST_NAME)
    elif manifest.config and manifest.config != shared:  # e.g. the parser's models changed (its identity)
        diff = sorted(k for k in set(manifest.config) | set(shared) if manifest.config.get(k) != shared.get(k))
        raise ConfigError(f"{out / MANIFEST_NAME} was made with another {', '.join(diff)} (the parser's identity "
                          "names its models' digest): use a new --out")
    manifest.set_vocab(VOCAB_NAME, v.sha256, len(v))
    return manifest


def _asked_constituency(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether ``old`` differs from ``new`` only by ``parser.constituency`` true where no model ran."""
    p_old, p_new = old.get("parser"), new.get("parser")
    if not (isinstance(p_old, dict) and isinstance(p_new, dict)) or p_new.get("constituency") is not False:
        return False
    return {**old, "parser": {**p_old, "constituency": False}} == new


def record_clean_drops(manifest: Manifest, split: str, report: Path) -> None:
    """Declare the cleaning's drop reasons for ``split`` and record the lines ``report`` (``text/SPLIT.dropped.tsv``)
    lists."""
    # imported here: loads sacremoses, not needed to import this module
    from synprep.text.clean import REASONS

    manifest.declare_reasons(split, [f"clean:{r}" for r in REASONS])
    drops = []
    for i, row in enumerate(iter_lines(report)):
        if i == 0:
            continue  # header
        line, reason, n_src, n_tgt = row.split("\t")[:4]
        if ":" in reason:
            continue  # a later stage's drop, added by write_drop_report
        drops.append((int(line), f"clean:{reason}", f"{n_src} source / {n_tgt} target tokens"))
    manifest.record_drops(split, drops)


def write_drop_report(report: Path, manifest: Manifest, split: str) -> None:
    """``text/SPLIT.dropped.tsv``: one record of every dropped line, the cleaning's and the later stages'.

    The cleaning writes its rows (``line  reason  src_tokens  tgt_tokens``); when the split is
    done, the drops of the parse and annotation stages are merged in by line number, with their
    manifest reason (``parse:too_long``), ``-`` for the token counts and the detail in a fifth
    column ``detail`` (empty for the cleaning's rows).
    """
    # imported here: loads sacremoses, not needed to import this module
    from synprep.text.clean import report_header

    rows: dict[int, str] = {}
    for i, row in enumerate(iter_lines(report)):
        if i > 0:
            cols = row.split("\t")
            if ":" not in cols[1]:
                rows[int(cols[0])] = "\t".join([*cols[:4], ""])
    for line, reason, detail in manifest.split(split).dropped_lines:
        if not reason.startswith("clean:"):
            rows[int(line)] = "\t".join([str(line), reason, "-", "-", " ".join(str(detail).split())])
    text = "".join([report_header() + "\tdetail\n", *(rows[line] + "\n" for line in sorted(rows))])
    if report.read_text(encoding="utf-8") == text:
        return  # a finished split resumed: nothing to write (a read-only folder resumes too)
    with atomic_write(report) as f:
        f.write(text)


def claim_split(out: Path, config: Any, inputs: SplitInputs, made: list[Path], *, runs_parser: bool,
                cache: str | None, part: Part | None = None) -> dict[str, str]:
    """Claim the split and check the folder against this run, before anything is written into it.

    The split's writer is held (a second one is refused, :func:`synprep.lock.hold_split`); under the
    folder lock a split that needs a vocabulary nobody makes is refused, the configuration is recorded
    or compared (:func:`synprep.pipeline.folder.check_folder_config`, a difference named by field) and the
    inputs too (:func:`synprep.pipeline.folder.record_split_inputs`); then a killed run's temporary files are
    removed and the parse cache is checked.

    Args:
        config: the run's :class:`~synprep.pipeline.config.DataConfig` as the folder records it
            (:func:`synprep.pipeline.config.recorded`).
        inputs: the split's inputs (its name, its files by role, ``--vocab``).
        made: the files a run of the split writes.
        runs_parser: whether a parser runs (then the parse cache is checked).
        cache: the parse cache file, or None.
        part: ``--part I/N`` (:class:`synprep.pipeline.parts.Part`, of a prepared split): the part's own lock
            instead of the split's, no folder lock (both files exist: they are only read), and only the part's
            own stale temporary files removed (another part's, on another machine, may be live there).

    Returns:
        The sha256 (hex) of each given input, by role.
    """
    split, vocab = inputs.split, inputs.vocab
    if part is None:
        hold_split(out, split)  # a second writer of this split is refused, naming this run (synprep.lock)
        refuse_beside_parts(out, split)  # ... and so is a writer beside a running part of it
        await_vocabulary_writer(out, split, vocab, config.shards.vocab_split)  # one starting beside this run
    else:
        refuse_split_writer(out, split)
        hold_part(out, split, part)
    with folder_lock(out) if part is None else contextlib.nullcontext():
        refuse_without_vocabulary(out, split, vocab, config.shards.vocab_split)  # before anything is written
        check_folder_config(out, config, split)
        input_sha = record_split_inputs(out, split, inputs.files(), made)
    if part is None:
        remove_stale_temps(out)  # after the configuration check: a refused command leaves the folder alone
    else:
        sweep_part_temps(out, split, part)
    if runs_parser and cache:  # a damaged cache stops the run before any stage
        check_cache_usable(cache)
    return input_sha


def split_manifest(out: Path, split: str, shared: dict[str, Any], v: Vocab, opts: ParseOptions, n_lines: int,
                   fields: SignatureFields, input_sha: dict[str, str]) -> tuple[Manifest, str]:
    """The folder's manifest checked against this run (:func:`_manifest`: a folder of an earlier version
    keeps its signature), with the split's input line count; and the signature its shards carry.

    Args:
        out: the output folder.
        split: the split's name.
        shared: the manifest's guard (:func:`synprep.pipeline.config.guard`).
        v: the folder's vocabulary.
        opts: the split's parse.
        n_lines: the split's input line count.
        fields: the text stage's fields of the signature.
        input_sha: the split's input digests by role.
    """
    sig = _signature(fields, opts)
    manifest = _manifest(out, sig, shared, v, _signature(fields, opts, form="legacy"),
                         _signature(fields, opts, form="older"))
    sig = _split_signature(manifest, split, sig, _signature(fields, opts, inputs=input_sha))
    manifest.set_input_lines(split, n_lines)
    return manifest, sig
