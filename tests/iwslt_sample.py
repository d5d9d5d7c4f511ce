"""A small real shard folder for the ``shard``/``show`` tests, built once per test session.

The first 8 lines of the real IWSLT14 test set as fairseq prepared it (``test.en`` / ``test.de``:
BPE'd, lowercased, Moses-escaped) are the pairs; their words (``tmp/test.en``, the same text before
BPE) are parsed by the real stanza English models through ``synprep parse``, and ``synprep shard``
turns the three files into shards. Nothing from ../shared is copied into the repository: the
files are written under pytest's session temp folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from helpers import run_cli, shared_folder

N_LINES = 8


@dataclass(frozen=True)
class Sample:
    src: Path  # BPE'd English, 8 lines
    tgt: Path  # BPE'd German
    words: Path  # Moses-tokenized English before BPE
    conllu: Path  # synprep parse output (stanza, en, with constituency trees and LDD)
    shards: Path  # synprep shard output folder (shard size 5: two shards)


def first_lines(path: Path, n: int = N_LINES) -> str:
    with open(path, encoding="utf-8") as f:
        return "".join(next(f) for _ in range(n))


def iwslt_sample(tmp_path_factory, shared_data: Path, stanza_dir: Path) -> Sample:
    """The sample, built once per test run (:func:`helpers.shared_folder`)."""
    base = shared_folder(tmp_path_factory, "iwslt8", lambda base: _build(base, shared_data, stanza_dir))
    return _sample(base)


def _sample(base: Path) -> Sample:
    return Sample(base / "test8.bpe.en", base / "test8.bpe.de", base / "test8.tok.en", base / "test8.conllu",
                  base / "shards")


def _build(base: Path, shared_data: Path, stanza_dir: Path) -> None:
    prepared = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    s = _sample(base)
    s.src.write_text(first_lines(prepared / "test.en"), encoding="utf-8")
    s.tgt.write_text(first_lines(prepared / "test.de"), encoding="utf-8")
    s.words.write_text(first_lines(prepared / "tmp" / "test.en"), encoding="utf-8")
    run_cli("parse", "-l", "en", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "--no-cache",
            "-i", str(s.words), "-o", str(s.conllu))
    run_cli("shard", "--src", str(s.src), "--tgt", str(s.tgt), "--conllu", str(s.conllu), "-s", "en", "-t", "de",
            "--out", str(s.shards), "--shard-size", "5")
