"""``synprep pipeline``: raw (or tokenized) parallel text of one split → shards (:mod:`synprep.pipeline`)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from synprep.annotate import PARSE_REASONS, SplitShards, annotate_split, items_from_files, warm_parse
from synprep.constants import VOCAB_NAME
from synprep.errors import InputError
from synprep.lock import hold_split, writer
from synprep.parse.options import Item, ParseOptions
from synprep.pipeline.checks import check_pipeline_inputs
from synprep.pipeline.config import (
    DataConfig,
    Runtime,
    guard,
    parse_options,
    recorded,
    shard_config,
)
from synprep.pipeline.dictionary import split_vocab
from synprep.pipeline.folder import TRAIN, SplitInputs, TextFiles, check_output_folder
from synprep.pipeline.intermediates import check_intermediates
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
    _finish,
    _record_clean_drops,
    _write_drop_report,
    open_split,
    split_manifest,
    trees_for,
)
from synprep.pipeline.text import Pieces, choose_tokenizer, clean_split, subwords, tokenize_split
from synprep.shards import Manifest
from synprep.textio import iter_lines
from synprep.timeline import mark

log = logging.getLogger(__name__)


@writer
def run_pipeline(src: str | None, tgt: str, out: str | os.PathLike, config: DataConfig, *, split: str = TRAIN,
                 clean: bool | None = None, codes: str | None = None, vocab: str | None = None,
                 conllu: str | None = None, trees: str | None = None, subword_model: str | None = None,
                 runtime: Runtime | None = None, part: Part | None = None, prepare_only: bool = False,
                 merge_parts: bool = False) -> Manifest:
    """Raw parallel text of one split → shards in ``out`` (module docstring of :mod:`synprep.pipeline`).

    Args:
        src: the split's raw (untokenized) source file. With ``--parser conllu`` (``config.parse.parser``)
            the source tokens are the CoNLL-U surface tokens of ``conllu`` and ``src`` may be None (when
            given, its line count must match).
        tgt: the split's raw (untokenized) target file.
        out: the output folder, shared by every split of a corpus.
        config: every setting that determines the folder (its ``mode`` is set to ``pipeline``); a
            folder made with another is refused, naming each field that differs.
        split: the split's name; the train split learns the BPE codes and the vocabulary.
        clean: clean this split (None: the train split only).
        codes: BPE codes to apply instead of learning them.
        vocab: a fairseq dict to use.
        conllu: the parses to import (``--parser conllu``).
        trees: the user's bracketed trees (``--trees``).
        subword_model: the model of a scheme that reads raw text (``--spm-model``, ``--hf-tokenizer``)
            instead of learning one (docs/subwords.md).
        runtime: where the work runs (workers, parse cache, the parser's runtime options).
        part: make only this part's shards (``--part I/N``, :mod:`synprep.pipeline.parts`) and its record, not
            ``manifest.json``; the split must be prepared.
        prepare_only: stop after the steps that need the whole split (``--prepare-only``: text, subwords,
            vocabulary, the split's manifest entry).
        merge_parts: add the finished parts' records to the manifest, then finish the split as a run does.

    Every input and the split's preconditions (a later split applies the train split's codes or subword
    model) are checked before anything is written into ``out``.

    Returns:
        The folder's manifest after the split was added.

    Raises:
        InputError: bad input (named with file and line).
        ConfigError: bad options, or a folder made with another configuration; a part or merge before
            ``--prepare-only``, a merge with a part that has not finished (named, with its command).
    """
    from synprep.subword import scheme_class

    out, runtime, config = Path(out), runtime or Runtime(), config.replace(mode="pipeline")
    check_output_folder(out)
    if part is not None or merge_parts:
        require_prepared(out, split, part, config.shards.shard_size)
    elif split in (TRAIN, config.shards.vocab_split):  # the splits launched beside it see it at once and wait
        hold_split(out, split, create=True)
    # before anything is written or removed
    finished = finished_parts(out, split, config.shards.shard_size) if merge_parts else None
    inputs = SplitInputs(split=split, src=src, tgt=tgt, clean=clean, codes=codes, vocab=vocab, conllu=conllu, trees=trees,
                         subword_model=subword_model)
    text, parse = config.text, parse_options(config, runtime, trees)
    source, scheme = parse.source(), scheme_class(config.subword.scheme)
    if not (prepare_only or merge_parts):
        warm_parse(parse, runtime.par)  # the parse's workers start while the text stage runs (annotate_split waits)
    n_tgt = check_pipeline_inputs(inputs, out, config, source, scheme)
    mark("inputs checked")
    tok = choose_tokenizer(text, parse, source, config.src_lang)
    shared = guard(config, parse, tok=tok.name, scheme=scheme)  # the parser's identity: before anything is written
    mark("parser identity")
    files = TextFiles(out / "text", split, config.src_lang, config.tgt_lang)
    files.work.mkdir(parents=True, exist_ok=True)
    made = [files.side(stage, side) for stage in ("tok", "clean", "bpe") for side in ("src", "tgt")]
    if split == TRAIN and codes is None and subword_model is None:
        made.append(out / scheme.model_name)  # learned on this split's text
    if split == config.shards.vocab_split and vocab is None:
        made.append(out / VOCAB_NAME)  # built from this split's pieces
    input_sha = open_split(out, split, recorded(config, source.runs_parser),
                           inputs.files(),
                           made + [files.lines, files.dropped], vocab=vocab, runs_parser=source.runs_parser,
                           cache=parse.cache, part=part)
    check_intermediates(files, n_tgt)  # what a resumed run reuses: a damaged file is named, not a traceback
    # 1. tokenize, 2. clean (+ lowercase), 3. subwords, 4. the vocabulary
    n_src = tokenize_split(files, inputs, n_tgt, text, tok, source, runtime.par)
    mark("tokenized")
    clean_split(files, text, clean)
    mark("cleaned")
    words_file = files.side("words" if text.lowercase else "clean", "src")
    pieces = subwords(out, files, inputs, words_file, config, scheme, runtime.par)
    mark("subwords")
    v = split_vocab(out, split, [pieces.src, pieces.tgt], vocab, config.shards.vocab_split)  # waits for its split
    mark("vocabulary")
    # 5. parse, features, shards
    fields = SignatureFields(tok.field, text.lowercase, old_tok=tok.name, codes_sha=pieces.codes_sha, sub=pieces.sub)
    manifest, sig = split_manifest(out, split, shared, v, parse, n_src, fields, input_sha)
    _record_clean_drops(manifest, split, files.dropped)
    if prepare_only:
        return save_prepared(out, split, manifest, list(PARSE_REASONS))
    identity = split_identity(input_sha, [pieces.src, pieces.tgt, files.lines]) if part or finished else {}
    merged = merge_parts_into(manifest, split, finished, identity) if finished is not None else None
    facts = {**pieces.facts, "clean": clean if clean is not None else split == TRAIN,
             "clean_bounds": [text.ratio, text.min_len, text.max_len]}
    if merged is None:
        if part is not None:
            resume_part(out, split, part, manifest, identity)
        items = _items(files, pieces, words_file, source, conllu, trees, n_src,
                       skip_others(part, config.shards.shard_size))
        attrs = shard_config(shared, config, split, vocab_sha256=v.sha256, input_sha=input_sha, facts=facts)
        target = SplitShards(out, split, v, manifest, sig, attrs, config.src_lang, config.tgt_lang,
                             config.shards.shard_size, scheme.name, **annotate_hooks(out, split, part, identity))
        _annotate(target, items, parse, config, runtime, str(src or conllu))
        if part is not None:
            return manifest  # the part's record is saved; --merge-parts finishes the split
    _write_drop_report(files.dropped, manifest, split)
    _finish(out, manifest, split, restore=merged is not None)
    mark("check")
    if merged is not None:
        remove_records(out, merged)
    return manifest


def _items(files: TextFiles, pieces: Pieces, words_file: Path, source: Any, conllu: str | None,
           trees: str | None, n_src: int, skip: Callable[[int], bool] | None = None) -> Iterator[Item]:
    """The split's kept pairs as :class:`~synprep.parse.options.Item` s: pieces, the parser's words
    (unescaped), imported parses, the user's trees, and each piece's word (schemes that align by offsets)."""
    def line_numbers() -> Iterator[int]:
        return (int(n) for n in iter_lines(files.lines))

    return items_from_files(iter_lines(pieces.src), iter_lines(pieces.tgt), line_numbers(),
                            words=iter_lines(words_file),  # split and unescaped for the pairs not skipped
                            parses=source.imported(conllu, line_numbers(), n_src),
                            trees=trees_for(trees, line_numbers(), n_src) if trees else None,
                            word_index=iter_lines(pieces.index) if pieces.index else None, skip=skip)


def _annotate(target: SplitShards, items: Iterator[Item], parse: ParseOptions, config: DataConfig, runtime: Runtime,
              source_name: str) -> None:
    """Step 5 (:func:`synprep.annotate.annotate_split`); trees whose words are not sacremoses' tokens are
    an input error that points at ``--tokenized``."""
    from synprep.parse.trees import TreeLeavesError

    try:
        annotate_split(target, items, dataclasses.replace(parse, lowercase=config.text.lowercase), runtime.par,
                       source_name=source_name)
    except TreeLeavesError as e:  # the trees' words are a treebank's tokenization, not sacremoses'
        if config.text.tokenized or config.text.tokenizer != "moses":
            raise
        raise InputError(f"{e.reason} (synprep tokenized --src with sacremoses; give text tokenized like the "
                         f"trees, one line per tree, with --tokenized)", e.path, e.line) from None
