"""``synprep annotate``: tokenized and BPE'd parallel text of one split → shards (:mod:`synprep.pipeline`)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from synprep.annotate import PARSE_REASONS, SplitShards, annotate_split, items_from_files, warm_parse
from synprep.constants import MANIFEST_NAME, VOCAB_NAME
from synprep.lock import hold_split, writer
from synprep.pipeline.checks import check_annotate_inputs
from synprep.pipeline.config import DataConfig, Runtime, guard, parse_options, recorded, shard_config
from synprep.pipeline.dictionary import split_vocab
from synprep.pipeline.folder import TRAIN, SplitInputs, check_output_folder
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
from synprep.pipeline.record import SignatureFields, _finish, open_split, split_manifest, trees_for
from synprep.shards import Manifest
from synprep.textio import display_name, iter_lines
from synprep.timeline import mark

log = logging.getLogger(__name__)


def pieces_lowercased(out: Path, src: str, n_src: int) -> bool:
    """The signature's ``lc:`` for pieces given as they are (``annotate``): the folder's, recorded by its first
    split, when it has a manifest (every split of a folder carries one signature); else whether a sample of
    the source pieces looks lowercased (:func:`synprep.text.langid.looks_lowercased`: fairseq's prepared
    IWSLT14 data is lowercased before BPE)."""
    from synprep.pipeline.checks import LOWERCASE_SAMPLE
    from synprep.text.langid import looks_lowercased, sample_lines

    try:
        fields = json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8"))["signature"].split("|")
        return "lc:yes" in fields
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return looks_lowercased(sample_lines(iter_lines(src), n_src, LOWERCASE_SAMPLE))


@writer
def run_annotate(src: str, tgt: str, out: str | os.PathLike, config: DataConfig, *, split: str = TRAIN,
                 vocab: str | None = None, conllu: str | None = None, trees: str | None = None,
                 parse_src: str | None = None, runtime: Runtime | None = None, part: Part | None = None,
                 prepare_only: bool = False, merge_parts: bool = False) -> Manifest:
    """Already tokenized and BPE'd parallel text of one split → shards in ``out``.

    ``src``/``tgt`` hold BPE pieces (``@@ `` markers, Moses escapes), one pair per line, such as
    fairseq's prepared ``test.de``/``test.en``. The parser reads the source words rebuilt from the
    pieces (unescaped), or with ``parse_src`` the words of that file: the cased, Moses-tokenized
    source the pieces were made from (fairseq lowercases before BPE; the parser needs the case),
    checked line by line to hold the pieces' words up to case (:func:`synprep.annotate.with_parse_src`).
    Without it, source text that looks lowercased (:func:`synprep.text.langid.looks_lowercased`)
    gets a warning naming ``--parse-src``. With ``--parser conllu`` the parses come from ``conllu``
    (one CoNLL-U sentence per line, or ``# line = N`` groups) and must match the pieces' words.
    A pair with an empty side is dropped (``parse:empty`` / ``annotate:empty_target``).
    ``dict.txt`` is built from ``config.shards.vocab_split`` (:func:`~synprep.pipeline.run_pipeline`); another
    split waits for it. ``config.text.language_check``: refuse a side whose sampled text is in another
    language than given (:func:`synprep.text.langid.check_language`).

    Args:
        config: every setting that determines the folder (its ``mode`` is set to ``annotate``; the
            text stage's fields are not read, and recorded at their defaults).
        runtime: where the work runs.
        conllu: the split's other inputs.
        trees: the split's other inputs.
        parse_src: the split's other inputs.
        part: make only this part's shards, as :func:`~synprep.pipeline.run_pipeline`.
        prepare_only: stop after the whole-split steps (here the vocabulary and the split's manifest entry).
        merge_parts: add the finished parts' records to the manifest, then finish the split.


    Raises:
        InputError: bad input, line counts that differ (both named), a parse that does not match, a side in
            another language.
        ConfigError: bad options. Nothing is written into ``out`` then. A part or merge before
            ``--prepare-only``, a merge with a part that has not finished: ConfigError.
    """
    out, runtime, config = Path(out), runtime or Runtime(), config.replace(mode="annotate")
    if part is not None or merge_parts:
        require_prepared(out, split, part, config.shards.shard_size)
    elif split == config.shards.vocab_split:  # the splits launched beside it see it at once and wait
        check_output_folder(out)
        hold_split(out, split, create=True)
    # before anything is written or removed
    finished = finished_parts(out, split, config.shards.shard_size) if merge_parts else None
    inputs = SplitInputs(split=split, src=src, tgt=tgt, vocab=vocab, conllu=conllu, trees=trees, parse_src=parse_src)
    parse = parse_options(config, runtime, trees)
    source = parse.source()
    if not (prepare_only or merge_parts):
        warm_parse(parse, runtime.par)  # the parse's workers start while the input is read and checked
    n_src = check_annotate_inputs(inputs, out, config, source)
    mark("inputs checked")
    out.mkdir(parents=True, exist_ok=True)
    shared = guard(config, parse, parse_src=parse_src is not None)  # the parser's identity, before any writing
    mark("parser identity")
    builds_vocab = split == config.shards.vocab_split and vocab is None  # then dict.txt is made from this split
    input_sha = open_split(out, split, recorded(config, source.runs_parser),
                           inputs.files(),
                           [out / VOCAB_NAME] if builds_vocab else [], vocab=vocab, runs_parser=source.runs_parser,
                           cache=parse.cache, part=part)
    v = split_vocab(out, split, [Path(src), Path(tgt)], vocab, config.shards.vocab_split)  # waits for its split
    mark("vocabulary")
    lowercased = config.text.lowercase or pieces_lowercased(out, src, n_src)
    fields = SignatureFields("given", lowercased, words="cased" if parse_src is not None else None)
    manifest, sig = split_manifest(out, split, shared, v, parse, n_src, fields, input_sha)
    if prepare_only:
        return save_prepared(out, split, manifest, list(PARSE_REASONS))
    if finished is not None:
        merged = merge_parts_into(manifest, split, finished, split_identity(input_sha))
        _finish(out, manifest, split, restore=True)
        remove_records(out, merged)
        return manifest
    if part is not None:
        resume_part(out, split, part, manifest, split_identity(input_sha))
    parses = source.imported(conllu, range(1, n_src + 1), n_src)
    items: Iterable[Any] = items_from_files(
        iter_lines(src), iter_lines(tgt), iter(range(1, n_src + 1)), parses=parses,
        trees=trees_for(trees, range(1, n_src + 1), n_src) if trees else None,
        skip=skip_others(part, config.shards.shard_size))
    if parse_src is not None:
        from synprep.annotate import with_parse_src

        items = with_parse_src(items, iter_lines(parse_src), display_name(parse_src))
    target = SplitShards(out, split, v, manifest, sig, shard_config(shared, config, split, vocab_sha256=v.sha256,
                                                                   input_sha=input_sha),
                         config.src_lang, config.tgt_lang, config.shards.shard_size, **annotate_hooks(out, split, part,
                                                                                             split_identity(input_sha)))
    annotate_split(target, items, parse, runtime.par, source_name=src)
    if part is not None:
        return manifest  # the part's record is saved; --merge-parts finishes the split
    _finish(out, manifest, split)
    mark("check")
    return manifest
