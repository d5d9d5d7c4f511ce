"""``synprep pipeline``: raw (or tokenized) parallel text of one split → shards (:mod:`synprep.pipeline`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from synprep.annotate import SplitShards, annotate_split, items_from_files
from synprep.constants import VOCAB_NAME
from synprep.errors import ConfigError, InputError
from synprep.lock import writer
from synprep.parse.options import Item, ParseOptions
from synprep.parse.trees import TreeLeavesError
from synprep.pipeline.checks import check_pipeline_inputs
from synprep.pipeline.config import DataConfig, Runtime, guard
from synprep.pipeline.folder import TRAIN, SplitInputs, TextFiles
from synprep.pipeline.intermediates import check_intermediates
from synprep.pipeline.part_records import split_identity
from synprep.pipeline.parts import Part
from synprep.pipeline.record import SignatureFields, trees_for
from synprep.pipeline.split import Front, Text, run_split
from synprep.pipeline.text import Pieces, choose_tokenizer, clean_split, subwords, tokenize_split
from synprep.shards import Manifest
from synprep.subword import scheme_class
from synprep.textio import iter_lines
from synprep.timeline import mark

log = logging.getLogger(__name__)


@writer
def run_pipeline(inputs: SplitInputs, out: str | os.PathLike, config: DataConfig, *, runtime: Runtime | None = None,
                 part: Part | None = None, prepare_only: bool = False, merge_parts: bool = False) -> Manifest:
    """Raw parallel text of one split → shards in ``out`` (module docstring of :mod:`synprep.pipeline`).

    ``run_pipeline(SplitInputs(src="train.de", tgt="train.en"), "data", DataConfig.of(src_lang="de",
    tgt_lang="en"))`` is ``synprep pipeline --src train.de --tgt train.en --out data -s de -t en``.

    Args:
        inputs: the split's name and its input files (``src``, ``tgt``, and ``clean``, ``codes``, ``vocab``,
            ``conllu``, ``trees``, ``subword_model`` when given; each field's meaning is on
            :class:`~synprep.pipeline.folder.SplitInputs`); its ``parse_src`` is ``annotate``'s and refused here.
        out: the output folder, shared by every split of a corpus.
        config: every setting that determines the folder (its ``mode`` is set to ``pipeline``); a
            folder made with another is refused, naming each field that differs.
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
        ConfigError: bad options, or a folder made with another configuration; ``inputs.parse_src`` given; a
            part or merge before ``--prepare-only``, a merge with a part that has not finished (named, with its
            command).
    """
    if inputs.parse_src is not None:
        raise ConfigError("parse_src has no effect in pipeline (the parser reads the tokenized source); "
                          "it is synprep annotate's --parse-src")
    return run_split(RawText(), inputs, Path(out), config, runtime or Runtime(), part, prepare_only, merge_parts)


class RawText(Front):
    """The front of ``synprep pipeline``: raw (or ``--tokenized``) text → tokenize, clean (+ lowercase), subwords
    (:mod:`synprep.pipeline.text`)."""

    mode = "pipeline"

    def holds(self, split: str, config: DataConfig) -> bool:
        return split in (TRAIN, config.shards.vocab_split)

    def start(self, config: DataConfig, parse: ParseOptions) -> None:
        self.scheme = scheme_class(config.subword.scheme)

    def check(self, inputs: SplitInputs, out: Path, config: DataConfig, source: Any) -> int:
        self.source = source
        return check_pipeline_inputs(inputs, out, config, source, self.scheme)

    def guard(self, out: Path, inputs: SplitInputs, config: DataConfig, parse: ParseOptions) -> dict[str, Any]:
        self.tok = choose_tokenizer(config.text, parse, self.source, config.src_lang)
        return guard(config, parse, tok=self.tok.name, scheme=self.scheme)

    def made(self, out: Path, inputs: SplitInputs, config: DataConfig) -> list[Path]:
        self.files = files = TextFiles(out / "text", inputs.split, config.src_lang, config.tgt_lang)
        files.work.mkdir(parents=True, exist_ok=True)
        made = [files.side(stage, side) for stage in ("tok", "clean", "bpe") for side in ("src", "tgt")]
        if inputs.split == TRAIN and inputs.codes is None and inputs.subword_model is None:
            made.append(out / self.scheme.model_name)  # learned on this split's text
        if inputs.split == config.shards.vocab_split and inputs.vocab is None:
            made.append(out / VOCAB_NAME)  # built from this split's pieces
        return made + [files.lines, files.dropped]

    def text(self, out: Path, inputs: SplitInputs, config: DataConfig, source: Any, n: int, runtime: Runtime) -> Text:
        # 1. tokenize, 2. clean (+ lowercase), 3. subwords
        files, text = self.files, config.text
        check_intermediates(files, n)  # what a resumed run reuses: a damaged file is named, not a traceback
        n_src = tokenize_split(files, inputs, n, text, self.tok, source, runtime.par)
        mark("tokenized")
        clean_split(files, text, inputs.clean)
        mark("cleaned")
        words_file = files.side("words" if text.lowercase else "clean", "src")
        self.pieces = pieces = subwords(out, files, inputs, words_file, config, self.scheme, runtime.par)
        mark("subwords")
        facts = {**pieces.facts, "clean": inputs.clean if inputs.clean is not None else inputs.split == TRAIN,
                 "clean_bounds": [text.ratio, text.min_len, text.max_len]}

        def items(skip: Callable[[int], bool] | None) -> Iterator[Item]:
            return _items(files, pieces, words_file, source, inputs.conllu, inputs.trees, n_src, skip)

        return Text(n_src, (pieces.src, pieces.tgt), items, facts, self.scheme.name, files.dropped)

    def identity(self, input_sha: dict[str, str], made: Text, parts: bool) -> dict[str, Any]:
        return split_identity(input_sha, [*made.pieces, self.files.lines]) if parts else {}

    def fields(self, out: Path, inputs: SplitInputs, config: DataConfig, made: Text) -> SignatureFields:
        return SignatureFields(self.tok.field, config.text.lowercase, old_tok=self.tok.name,
                               codes_sha=self.pieces.codes_sha, sub=self.pieces.sub)

    def annotate(self, target: SplitShards, items: Iterator[Item], parse: ParseOptions, config: DataConfig,
                 runtime: Runtime, inputs: SplitInputs) -> None:
        """Step 5; trees whose words are not sacremoses' tokens are an input error that points at ``--tokenized``."""
        try:
            annotate_split(target, items, parse, runtime.par, source_name=str(inputs.src or inputs.conllu))
        except TreeLeavesError as e:  # the trees' words are a treebank's tokenization, not sacremoses'
            if config.text.tokenized or config.text.tokenizer != "moses":
                raise
            raise InputError(f"{e.reason} (synprep tokenized --src with sacremoses; give text tokenized like the "
                             f"trees, one line per tree, with --tokenized)", e.path, e.line) from None


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
