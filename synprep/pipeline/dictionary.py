"""The folder's vocabulary (``OUT/dict.txt``): built by the vocabulary split, waited for by the others."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from synprep.constants import VOCAB_NAME
from synprep.errors import ConfigError
from synprep.lock import folder_lock, split_writer, wait_for_split
from synprep.pipeline.config import DataConfig
from synprep.pipeline.folder import CONFIG_NAME, TRAIN
from synprep.vocab import Vocab

log = logging.getLogger(__name__)

#: how long a split waits for the vocabulary split (``train``) to write ``dict.txt`` while that split's
#: writer runs (seconds; ``SYNPREP_VOCAB_WAIT`` overrides): then it stops, naming the writer
VOCAB_WAIT_S = 6 * 3600.0


def load_or_build_vocab(out: Path, split: str, bpe_files: list[Path], vocab: str | None,
                        vocab_split: str = TRAIN) -> Vocab:
    """``OUT/dict.txt``: copied from ``vocab``, reused, or built jointly from the split's BPE files.

    Only ``vocab_split`` (the train split, or the split ``pipeline.json`` names) builds it; the
    caller holds the folder lock. Another split uses the one that split made (:func:`split_vocab`
    waits for it).

    Raises:
        ConfigError: ``vocab`` differs from the folder's ``dict.txt``; no ``dict.txt`` yet and
            ``split`` is not ``vocab_split`` ("run the train split first").
    """
    target = out / VOCAB_NAME
    if vocab is not None:
        v = Vocab.load(vocab)
        if target.exists() and Vocab.load(target).sha256 != v.sha256:
            raise ConfigError(f"{target} differs from --vocab {vocab}: use a new --out")
        if target.exists():
            return v  # the same vocabulary: nothing to write (a read-only folder resumes)
    elif target.exists():
        return Vocab.load(target)
    elif split != vocab_split:
        raise ConfigError(_no_vocab_message(out, vocab_split))
    else:
        v = Vocab.build(bpe_files)
    v.save(target)
    return v


def _no_vocab_message(out: Path, vocab_split: str) -> str:
    return (f"no {VOCAB_NAME} in {out} yet: run the {vocab_split} split first (the folder's vocabulary is built "
            f"from it), or give --vocab")


def vocab_wait_s() -> float:
    """How long a split waits for the train split's files: ``$SYNPREP_VOCAB_WAIT`` or :data:`VOCAB_WAIT_S`."""
    return float(os.environ.get("SYNPREP_VOCAB_WAIT", VOCAB_WAIT_S))


def split_vocab(out: Path, split: str, bpe_files: list[Path], vocab: str | None, vocab_split: str,
                wait_s: float | None = None) -> Vocab:
    """The split's vocabulary (:func:`load_or_build_vocab`), waiting for the vocabulary split.

    A split other than ``vocab_split`` whose folder has no ``dict.txt`` yet waits while a live
    process writes ``vocab_split`` (:func:`synprep.lock.wait_for_split`, which also waits a moment
    for one that is starting), at most ``wait_s`` seconds (default :func:`vocab_wait_s`), so splits
    started side by side encode with the vocabulary a sequential run gives. Nothing is held while
    waiting (the writer needs the folder lock).

    Raises:
        ConfigError: no ``dict.txt`` and no live writer of ``vocab_split`` ("run the train split
            first"), or the wait ran out (naming the writer).
    """
    if vocab is None and split != vocab_split:
        wait_for_split(out, vocab_split, (out / VOCAB_NAME).exists, what=f"{VOCAB_NAME} in {out}",
                       why="the folder's vocabulary comes from it", refusal=_no_vocab_message(out, vocab_split),
                       wait_s=vocab_wait_s() if wait_s is None else wait_s)
    with folder_lock(out):
        return load_or_build_vocab(out, split, bpe_files, vocab, vocab_split)


def refuse_without_vocabulary(out: Path, split: str, vocab: str | None, vocab_split: str) -> None:
    """Refuse a split that will need ``dict.txt`` when the folder has none and no live process writes
    the vocabulary split (so a refused command writes nothing; :func:`split_vocab` waits otherwise)."""
    if vocab is None and split != vocab_split and not (out / VOCAB_NAME).exists() \
            and split_writer(out, vocab_split) is None:
        raise ConfigError(_no_vocab_message(out, vocab_split))


def await_vocabulary_writer(out: Path, split: str, vocab: str | None, vocab_split: str) -> None:
    """Before :func:`refuse_without_vocabulary` (outside the folder lock): a split that will need
    ``dict.txt`` waits a moment for a writer of the vocabulary split that is starting beside it
    (:func:`synprep.lock.wait_for_split`); only its appearance is awaited, not the file, and the refusal
    is left to :func:`refuse_without_vocabulary`."""
    if vocab is None and split != vocab_split:
        wait_for_split(out, vocab_split, lambda: (out / VOCAB_NAME).exists() or split_writer(out, vocab_split)
                       is not None, what=f"{VOCAB_NAME} in {out}", why="the folder's vocabulary comes from it",
                       refusal=None, wait_s=vocab_wait_s())


def folder_vocab_split(out: Path, given: str | None) -> str:
    """The folder's vocabulary split: ``given``, else ``pipeline.json``'s, else ``train``."""
    if given is not None:
        return given
    path = out / CONFIG_NAME
    return DataConfig.load(path).shards.vocab_split if path.is_file() else TRAIN
