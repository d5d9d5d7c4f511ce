"""One split of a folder, made by one runner (:func:`run_split`) with two fronts: raw text (``synprep pipeline``,
:class:`synprep.pipeline.run.RawText`) or given pieces (``synprep annotate``, :class:`synprep.pipeline.prepared.
GivenPieces`).

The runner holds the steps every split goes through, each called once: the split's lock (or the parts'
preconditions), the inputs' checks, the folder's guard and ``pipeline.json``, the vocabulary, the manifest and
the signature, ``--prepare-only``, the parts' merge, the shards, the drop report and the final check. A front
says what differs: which inputs it checks, the guard's text-stage fields, the files its text stage writes, and
the pairs it hands to the annotation stage.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synprep.annotate import PARSE_REASONS, SplitShards, annotate_split, warm_parse
from synprep.lock import hold_split
from synprep.parse.options import Item, ParseOptions, Runtime
from synprep.pipeline.config import DataConfig, parse_options, recorded, shard_config
from synprep.pipeline.dictionary import split_vocab
from synprep.pipeline.folder import SplitInputs, check_output_folder
from synprep.pipeline.parts import (
    Part,
    annotate_hooks,
    finished_parts,
    merge_parts_into,
    remove_records,
    require_prepared,
    resume_part,
    save_prepared,
    skip_others,
    split_identity,
)
from synprep.pipeline.record import (
    SignatureFields,
    claim_split,
    finish_split,
    record_clean_drops,
    split_manifest,
    write_drop_report,
)
from synprep.shards import Manifest
from synprep.subword import DEFAULT_SCHEME
from synprep.timeline import mark


@dataclass
class Text:
    """What a front's text stage made of the split.

    Attributes:
        n_src: the split's input line count.
        pieces: the source and target pieces (the vocabulary's input).
        items: the split's pairs for the annotation stage, given which shards to skip (``--part``).
        facts: what the split's run found, for the shards' ``config`` (subword model digests, the cleaning).
        subword: the pieces' subword scheme (the shards' ``subword`` attribute).
        dropped: ``text/SPLIT.dropped.tsv`` when the front cleans (its drops recorded, the report written).
    """

    n_src: int
    pieces: tuple[Path, Path]
    items: Callable[[Callable[[int], bool] | None], Iterator[Item]]
    facts: dict[str, Any] | None = None
    subword: str = DEFAULT_SCHEME
    dropped: Path | None = field(default=None)


class Front:
    """What a command makes of a split's inputs before the parse (:func:`run_split` calls each once, in order)."""

    mode = "pipeline"

    def holds(self, split: str, config: DataConfig) -> bool:
        """Whether a run of ``split`` holds it from its start (the splits launched beside it see it and wait)."""
        raise NotImplementedError

    def start(self, config: DataConfig, parse: ParseOptions) -> None:
        """Read what the front needs of the configuration (before the inputs are checked)."""

    def check(self, inputs: SplitInputs, out: Path, config: DataConfig, source: Any) -> int:
        """Every input and option, before anything is written; returns a line count for :meth:`text`."""
        raise NotImplementedError

    def guard(self, out: Path, inputs: SplitInputs, config: DataConfig, parse: ParseOptions) -> dict[str, Any]:
        """The manifest's guard (:func:`synprep.pipeline.config.guard`), before anything is written."""
        raise NotImplementedError

    def made(self, out: Path, inputs: SplitInputs, config: DataConfig) -> list[Path]:
        """The files a run of the split writes (:func:`synprep.pipeline.record.claim_split`)."""
        raise NotImplementedError

    def text(self, out: Path, inputs: SplitInputs, config: DataConfig, source: Any, n: int, runtime: Runtime) -> Text:
        """The text stage: the pieces of both sides and the pairs to annotate."""
        raise NotImplementedError

    def fields(self, out: Path, inputs: SplitInputs, config: DataConfig, made: Text) -> SignatureFields:
        """The text stage's fields of the signature (once the vocabulary's split has written its manifest)."""
        raise NotImplementedError

    def identity(self, input_sha: dict[str, str], made: Text, parts: bool) -> dict[str, Any]:
        """What ties a part to the split it was made of (:func:`synprep.pipeline.part_records.split_identity`);
        ``parts``: the run makes a part or merges them."""
        return split_identity(input_sha)

    def annotate(self, target: SplitShards, items: Iterator[Item], parse: ParseOptions, config: DataConfig,
                 runtime: Runtime, inputs: SplitInputs) -> None:
        """Step 5: :func:`synprep.annotate.annotate_split` of the pairs."""
        annotate_split(target, items, parse, runtime.par, source_name=inputs.src)


def run_split(front: Front, inputs: SplitInputs, out: Path, config: DataConfig, runtime: Runtime,
              part: Part | None = None, prepare_only: bool = False, merge_parts: bool = False) -> Manifest:
    """One split of ``out`` made from ``inputs`` through ``front`` (:func:`synprep.pipeline.run_pipeline`,
    :func:`synprep.pipeline.run_annotate`, whose docstrings say what each argument does).

    Returns:
        The folder's manifest after the split was added (or prepared, or the part's shards made).

    Raises:
        InputError: bad input (named with file and line).
        ConfigError: bad options, or a folder made with another configuration; a part or merge before
            ``--prepare-only``, a merge with a part that has not finished.
    """
    split, config = inputs.split, config.replace(mode=front.mode)
    check_output_folder(out)
    if part is not None or merge_parts:
        require_prepared(out, split, part, config.shards)
    elif front.holds(split, config):  # the splits launched beside it see it at once and wait
        hold_split(out, split, create=True)
    # before anything is written or removed
    finished = finished_parts(out, split, config.shards) if merge_parts else None
    parse = parse_options(config, runtime, inputs.trees)
    source = parse.source()
    front.start(config, parse)
    if not (prepare_only or merge_parts):
        warm_parse(parse, runtime.par)  # the parse's workers start while the text stage runs (annotate_split waits)
    n = front.check(inputs, out, config, source)
    mark("inputs checked")
    # the checks imported the libraries (stanza with torch, the language check's model): their objects out of
    # the cyclic collector's generations, or every full collection the rest of the run makes (the tokenizer's
    # import, the text stage's, the records' and the shards' garbage) walks them all again; the young garbage
    # first (a full collection would cost what the freeze saves)
    gc.collect(1)
    gc.freeze()
    shared = front.guard(out, inputs, config, parse)  # the parser's identity: before anything is written
    mark("parser identity")
    input_sha = claim_split(out, recorded(config, source.runs_parser), inputs, front.made(out, inputs, config),
                           runs_parser=source.runs_parser, cache=parse.cache, part=part)
    made = front.text(out, inputs, config, source, n, runtime)
    v = split_vocab(out, split, list(made.pieces), inputs.vocab, config.shards.vocab_split)  # waits for its split
    mark("vocabulary")
    manifest, sig = split_manifest(out, split, shared, v, parse, made.n_src, front.fields(out, inputs, config, made),
                                   input_sha)
    if made.dropped is not None:
        record_clean_drops(manifest, split, made.dropped)
    if prepare_only:
        return save_prepared(out, split, manifest, list(PARSE_REASONS))
    identity = front.identity(input_sha, made, bool(part or finished))
    merged = merge_parts_into(manifest, split, finished, identity) if finished is not None else None
    if merged is None:
        if part is not None:
            resume_part(out, split, part, manifest, identity)
        attrs = shard_config(shared, config, split, vocab_sha256=v.sha256, input_sha=input_sha, facts=made.facts)
        target = SplitShards(out, split, v, manifest, sig, attrs, config.src_lang, config.tgt_lang,
                             config.shards, made.subword, **annotate_hooks(out, split, part, identity))
        front.annotate(target, made.items(skip_others(part, config.shards)), parse, config, runtime, inputs)
        if part is not None:
            return manifest  # the part's record is saved; --merge-parts finishes the split
    if made.dropped is not None:
        write_drop_report(made.dropped, manifest, split)
    finish_split(out, manifest, split, restore=merged is not None)
    mark("check")
    if merged is not None:
        remove_records(out, merged)
    return manifest

