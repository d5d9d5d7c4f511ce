"""``synprep annotate``: tokenized and BPE'd parallel text of one split → shards (:mod:`synprep.pipeline`)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from synprep.annotate import items_from_files, with_parse_src
from synprep.constants import MANIFEST_NAME, VOCAB_NAME
from synprep.errors import ConfigError
from synprep.lock import writer
from synprep.parse.options import Item, ParseOptions
from synprep.pipeline.checks import LOWERCASE_SAMPLE, check_annotate_inputs
from synprep.pipeline.config import DataConfig, Runtime, guard
from synprep.pipeline.folder import SplitInputs
from synprep.pipeline.parts import Part
from synprep.pipeline.record import SignatureFields, trees_for
from synprep.pipeline.split import Front, Text, run_split
from synprep.shards import Manifest
from synprep.text.langid import looks_lowercased, sample_lines
from synprep.textio import display_name, iter_lines

log = logging.getLogger(__name__)


def pieces_lowercased(out: Path, src: str, n_src: int) -> bool:
    """The signature's ``lc:`` for pieces given as they are (``annotate``): the folder's, recorded by its first
    split, when it has a manifest (every split of a folder carries one signature); else whether a sample of
    the source pieces looks lowercased (:func:`synprep.text.langid.looks_lowercased`: fairseq's prepared
    IWSLT14 data is lowercased before BPE)."""
    try:
        fields = json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8"))["signature"].split("|")
        return "lc:yes" in fields
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return looks_lowercased(sample_lines(iter_lines(src), n_src, LOWERCASE_SAMPLE))


@writer
def run_annotate(inputs: SplitInputs, out: str | os.PathLike, config: DataConfig, *, runtime: Runtime | None = None,
                 part: Part | None = None, prepare_only: bool = False, merge_parts: bool = False) -> Manifest:
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
        inputs: the split's name and its input files (``src``, ``tgt``, and ``vocab``, ``conllu``, ``trees``,
            ``parse_src`` when given; each field's meaning is on :class:`~synprep.pipeline.folder.SplitInputs`);
            its ``clean``, ``codes`` and ``subword_model`` are ``pipeline``'s and refused here.
        out: the output folder, shared by every split of a corpus.
        config: every setting that determines the folder (its ``mode`` is set to ``annotate``; the
            text stage's fields are not read, and recorded at their defaults).
        runtime: where the work runs (workers, parse cache, the parser's runtime options).
        part: make only this part's shards, as :func:`~synprep.pipeline.run_pipeline`.
        prepare_only: stop after the whole-split steps (here the vocabulary and the split's manifest entry).
        merge_parts: add the finished parts' records to the manifest, then finish the split.

    Returns:
        The folder's manifest after the split was added.

    Raises:
        InputError: bad input, line counts that differ (both named), a parse that does not match, a side in
            another language.
        ConfigError: bad options. Nothing is written into ``out`` then. ``inputs.src`` missing, or one of
            ``pipeline``'s inputs given. A part or merge before ``--prepare-only``, a merge with a part that
            has not finished: ConfigError.
    """
    unused = [name for name in ("clean", "codes", "subword_model") if getattr(inputs, name) is not None]
    if unused:
        raise ConfigError(f"{', '.join(unused)}: no effect in annotate (the pieces are given as they are); "
                          f"{'they are' if len(unused) > 1 else 'it is'} synprep pipeline's")
    if inputs.src is None:
        raise ConfigError("annotate needs the BPE'd source (src)")
    return run_split(GivenPieces(), inputs, Path(out), config, runtime or Runtime(), part, prepare_only, merge_parts)


class GivenPieces(Front):
    """The front of ``synprep annotate``: tokenized, BPE'd text, used as it is (no text stage)."""

    mode = "annotate"

    def holds(self, split: str, config: DataConfig) -> bool:
        return split == config.shards.vocab_split

    def check(self, inputs: SplitInputs, out: Path, config: DataConfig, source: Any) -> int:
        return check_annotate_inputs(inputs, out, config, source)

    def guard(self, out: Path, inputs: SplitInputs, config: DataConfig, parse: ParseOptions) -> dict[str, Any]:
        out.mkdir(parents=True, exist_ok=True)
        return guard(config, parse, parse_src=inputs.parse_src is not None)

    def made(self, out: Path, inputs: SplitInputs, config: DataConfig) -> list[Path]:
        builds_vocab = inputs.split == config.shards.vocab_split and inputs.vocab is None
        return [out / VOCAB_NAME] if builds_vocab else []  # then dict.txt is made from this split

    def text(self, out: Path, inputs: SplitInputs, config: DataConfig, source: Any, n: int, runtime: Runtime) -> Text:
        assert inputs.src is not None
        src, tgt = inputs.src, inputs.tgt

        def items(skip: Callable[[int], bool] | None) -> Iterator[Item]:
            parses = source.imported(inputs.conllu, range(1, n + 1), n)
            given: Iterator[Item] = items_from_files(
                iter_lines(src), iter_lines(tgt), iter(range(1, n + 1)), parses=parses,
                trees=trees_for(inputs.trees, range(1, n + 1), n) if inputs.trees else None, skip=skip)
            if inputs.parse_src is None:
                return given
            return with_parse_src(given, iter_lines(inputs.parse_src), display_name(inputs.parse_src))

        return Text(n, (Path(src), Path(tgt)), items)

    def fields(self, out: Path, inputs: SplitInputs, config: DataConfig, made: Text) -> SignatureFields:
        assert inputs.src is not None
        lowercased = config.text.lowercase or pieces_lowercased(out, inputs.src, made.n_src)
        return SignatureFields("given", lowercased, words="cased" if inputs.parse_src is not None else None)
