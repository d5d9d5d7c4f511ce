"""A user's ordinary mistakes with ``synprep pipeline``, one row each: the mistaken command exits with its
status and one error line that names the fix, writes nothing (a new folder is not created, an existing one
keeps every byte), and the corrected command's folder is byte for byte a fresh run's of that command.

Tiny inputs (12 lines of sample_data, 12 lines of IWSLT14's tokenized valid set) and the offline stanza
models; the fresh runs are made once per corrected command and shared by the rows.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from builders import one_line
from helpers import SAMPLE_DATA, SHARED_DATA, run_cli
from pipeline_runs import assert_same_folder, folder_bytes

N = 12


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``raw.{de,en}`` (untokenized), ``tok.{de,en}`` (Moses-tokenized with escapes), ``bpe.{de,en}``."""
    d = tmp_path_factory.mktemp("corpus")
    for lang in ("de", "en"):
        lines = (SAMPLE_DATA / f"train.{lang}").read_text(encoding="utf-8").splitlines()[:N]
        (d / f"raw.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    prepared = SHARED_DATA / "iwslt14_de-en" / "fairseq_prepared"
    de = (prepared / "tmp" / "valid.de").read_text(encoding="utf-8").splitlines()
    en = (prepared / "tmp" / "valid.en").read_text(encoding="utf-8").splitlines()
    keep = [i for i, x in enumerate(de) if "&quot;" in x and " , " in x and len(x.split()) < 25][:N]
    (d / "tok.de").write_text("".join(de[i] + "\n" for i in keep), encoding="utf-8")
    (d / "tok.en").write_text("".join(en[i] + "\n" for i in keep), encoding="utf-8")
    for lang in ("de", "en"):
        lines = (prepared / f"valid.{lang}").read_text(encoding="utf-8").splitlines()[:N]
        (d / f"bpe.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return d


@dataclass(frozen=True)
class Row:
    """A mistake: ``before`` runs first into the folder (a made split), then ``wrong`` is refused with
    ``status`` and a line holding ``says``; ``right`` is the corrected command into the same folder."""

    name: str
    wrong: tuple[str, ...]
    status: int
    says: tuple[str, ...]
    right: tuple[str, ...]
    before: tuple[str, ...] | None = None
    fresh: tuple[str, ...] | None = None  # the fresh run to compare with (default: ``right``)


RAW = ("--src", "raw.de", "--tgt", "raw.en")
DE_EN = ("-s", "de", "-t", "en")
ROWS = [
    Row("tokenized flag on raw text", ("--tokenized", *RAW, *DE_EN), 2,
        ("raw.de:1: 'Dank,'", "this text is not tokenized", "leave out --tokenized", "--allow-untokenized"),
        (*RAW, *DE_EN)),
    Row("flag left out on a made split", (*RAW, *DE_EN), 2,
        ("the train split of", "was made with --tokenized", "which this command leaves out", "--remake-split"),
        ("--remake-split", *RAW, *DE_EN), before=("--tokenized", "--allow-untokenized", *RAW, *DE_EN),
        fresh=(*RAW, *DE_EN)),
    Row("lowercase left out on a made split", (*RAW, *DE_EN), 2,
        ("was made with --lowercase", "the default is --no-lowercase"),
        ("--lowercase", *RAW, *DE_EN), before=("--lowercase", *RAW, *DE_EN)),
    Row("both ways: --no-tokenized on a tokenized folder", ("--no-tokenized", *RAW, *DE_EN), 2,
        ("tokenized: the folder has true, this run false", "--remake-split"),
        ("--no-tokenized", "--remake-split", *RAW, *DE_EN), before=("--tokenized", "--allow-untokenized", *RAW, *DE_EN),
        fresh=(*RAW, *DE_EN)),
    Row("escaped text in raw mode", ("--src", "tok.de", "--tgt", "tok.en", *DE_EN), 2,
        ("tok.de:", "already tokenized", "--tokenized"), ("--tokenized", "--src", "tok.de", "--tgt", "tok.en", *DE_EN)),
    Row("BPE'd text", ("--src", "bpe.de", "--tgt", "bpe.en", *DE_EN), 2,
        ("bpe.de:1:", "already split into subwords", "synprep annotate"),
        ("--tokenized", "--src", "tok.de", "--tgt", "tok.en", *DE_EN)),
    Row("swapped sides", (*RAW, "-s", "en", "-t", "de"), 2, ("raw.de", "-s"), (*RAW, *DE_EN)),
    Row("wrong language", (*RAW, "-s", "fr", "-t", "en"), 2, ("raw.de", "'fr'"), (*RAW, *DE_EN)),
]


def _args(corpus: Path, out: Path, stanza_dir: Path, cmd: tuple[str, ...]) -> list[str]:
    files = [str(corpus / a) if (corpus / a).is_file() else a for a in cmd]
    return ["pipeline", *files, "--out", str(out), "--merges", "40", "--no-cache", "--stanza-dir", str(stanza_dir),
            "--stanza-package", "synprep"]


@pytest.fixture(scope="module")
def fresh_runs(corpus: Path, stanza_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    made: dict[tuple[str, ...], Path] = {}

    def fresh(cmd: tuple[str, ...]) -> Path:
        if cmd not in made:
            out = tmp_path_factory.mktemp("fresh") / "out"
            run_cli(*_args(corpus, out, stanza_dir, cmd))
            made[cmd] = out
        return made[cmd]

    return fresh


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_a_mistake_is_refused_and_its_correction_makes_a_fresh_runs_folder(row: Row, corpus: Path, stanza_dir: Path,
                                                                          tmp_path: Path, fresh_runs) -> None:
    out = tmp_path / "out"
    if row.before is not None:
        shutil.copytree(fresh_runs(row.before), out)
    before = folder_bytes(out) if out.exists() else None
    proc = run_cli(*_args(corpus, out, stanza_dir, row.wrong), check=False)
    one_line(proc, row.status, *row.says)
    if before is None:
        assert not out.exists(), sorted(p.name for p in out.rglob("*"))
    else:
        assert folder_bytes(out) == before
    run_cli(*_args(corpus, out, stanza_dir, row.right))
    want = fresh_runs(row.fresh or row.right)
    if row.right != (row.fresh or row.right) or row.before is None:
        assert_same_folder(out, want)
    else:  # the corrected command is the made split's own: it resumes, changing nothing
        assert folder_bytes(out) == before
