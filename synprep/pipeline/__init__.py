"""The main job: raw (or already prepared) parallel text → checked syntax-annotated shards.

``synprep pipeline`` (:func:`run_pipeline`): tokenize (sacremoses) → clean (clean-corpus-n.perl
rules; the train split only, unless told) → lowercase (optional) → joint BPE (learned on the
train split or given) → vocabulary → parse → features → shards → ``synprep check``.
``synprep annotate`` (:func:`run_annotate`): the same from already tokenized and BPE'd text
(fairseq's prepared ``train/valid/test.{de,en}``). Both take the split's name and files as one
:class:`SplitInputs`.

Everything is written under ``OUT`` (README "Output folder"):

``OUT/text/SPLIT.tok.L``      tokenized, cased, Moses-escaped (one line per input line)
``OUT/text/SPLIT.clean.L``    the kept pairs, lowercased if asked (the BPE input; fairseq's tmp/)
``OUT/text/SPLIT.words.SRC``  the kept source lines, cased: what the parser reads (``--lowercase`` only)
``OUT/text/SPLIT.lines``      the original 1-based line number of every kept pair
``OUT/text/SPLIT.dropped.tsv`` every pair cleaning dropped, with its reason
``OUT/text/SPLIT.bpe.L``      BPE pieces
``OUT/code``, ``OUT/dict.txt``, ``OUT/SPLIT.NNNNN.h5``, ``OUT/manifest.json``, ``OUT/pipeline.json``,
``OUT/inputs.json`` (the sha256 of every split's input files)

``L`` is the side's language. When both sides have the same language (``-s en -t en``:
paraphrase, simplification, post-editing) the side is named too, ``SPLIT.tok.src.en`` and
``SPLIT.tok.tgt.en`` (:class:`TextFiles`), so the two sides never overwrite each other.

Every file is written atomically, so a step whose output exists is complete and is skipped when
the command runs again (after a crash, or for the next split). ``OUT/pipeline.json`` records the
configuration and ``OUT/inputs.json`` the inputs: running into the same folder with another
configuration, or resuming a split whose input files changed, is an error, never a silent mix.


The package's modules, in the order a split runs through them: :mod:`~synprep.pipeline.checks` (inputs and
options, before anything is written), :mod:`~synprep.pipeline.folder` (the folder's files and guards),
:mod:`~synprep.pipeline.text` (the text stage), :mod:`~synprep.pipeline.dictionary` (the vocabulary),
:mod:`~synprep.pipeline.record` (signature, manifest, drop report, final check), the one split runner
:mod:`~synprep.pipeline.split` (:func:`~synprep.pipeline.split.run_split`), and its two fronts
:mod:`~synprep.pipeline.run` (raw text, :func:`run_pipeline`) and :mod:`~synprep.pipeline.prepared` (given
pieces, :func:`run_annotate`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from synprep.lazy import lazy_names

if TYPE_CHECKING:  # the names as the type checker reads them; at run time, :func:`__getattr__`
    from synprep.pipeline.checks import (
        check_language_codes,
        check_side_languages,
        refuse_tokenized,
        warn_if_lowercased,
    )
    from synprep.pipeline.config import Runtime, parse_options
    from synprep.pipeline.dictionary import VOCAB_WAIT_S, load_or_build_vocab, split_vocab
    from synprep.pipeline.folder import (
        CODES_NAME,
        CONFIG_NAME,
        INPUTS_NAME,
        TRAIN,
        SplitInputs,
        TextFiles,
        check_output_folder,
    )
    from synprep.pipeline.prepared import run_annotate
    from synprep.pipeline.record import _manifest, numbered_parses, split_summary, trees_for
    from synprep.pipeline.run import run_pipeline

#: each public name → the module that defines it, imported on first use (so that :mod:`synprep.pipeline.config` imports without the stages: ``synprep --help``)
_LAZY = {
    "check_language_codes": "synprep.pipeline.checks",
    "check_side_languages": "synprep.pipeline.checks",
    "refuse_tokenized": "synprep.pipeline.checks",
    "warn_if_lowercased": "synprep.pipeline.checks",
    "VOCAB_WAIT_S": "synprep.pipeline.dictionary",
    "load_or_build_vocab": "synprep.pipeline.dictionary",
    "split_vocab": "synprep.pipeline.dictionary",
    "CODES_NAME": "synprep.pipeline.folder",
    "CONFIG_NAME": "synprep.pipeline.folder",
    "INPUTS_NAME": "synprep.pipeline.folder",
    "TRAIN": "synprep.pipeline.folder",
    "SplitInputs": "synprep.pipeline.folder",
    "TextFiles": "synprep.pipeline.folder",
    "check_output_folder": "synprep.pipeline.folder",
    "run_annotate": "synprep.pipeline.prepared",
    "_manifest": "synprep.pipeline.record",
    "numbered_parses": "synprep.pipeline.record",
    "split_summary": "synprep.pipeline.record",
    "trees_for": "synprep.pipeline.record",
    "run_pipeline": "synprep.pipeline.run",
    "Runtime": "synprep.pipeline.config",
    "parse_options": "synprep.pipeline.config",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "CODES_NAME", "CONFIG_NAME", "INPUTS_NAME", "TRAIN", "VOCAB_WAIT_S", "SplitInputs", "TextFiles",
    "_manifest", "check_language_codes", "check_output_folder", "check_side_languages", "Runtime", "parse_options",
    "load_or_build_vocab", "numbered_parses", "refuse_tokenized", "run_annotate", "run_pipeline",
    "split_summary", "split_vocab", "trees_for", "warn_if_lowercased",
]
