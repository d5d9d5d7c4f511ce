"""Real ``synprep pipeline`` folders for the export tests (stanza's offline models), built once per test session.

* :func:`same_language_folder`: ``-s en -t en`` (paraphrase-like): the 40 English lines of
  sample_data's valid split as the source and the 40 of its test split as the target, so the two
  sides differ on every line.
* :func:`lowercase_folder`: de→en with ``--lowercase``: the train split (the first 120 pairs of
  sample_data's) and the valid split, whose pieces the train split's 1000 merges and vocabulary
  partly never saw (stored as ``<unk>``).
* :func:`three_split_folder`: de→en, with or without ``--lowercase``: train, valid and test splits,
  the valid and test splits with pieces outside the train split's vocabulary.
"""

from __future__ import annotations

from pathlib import Path

from helpers import ROOT, run_cli, shared_folder

SAMPLE = ROOT / "sample_data"


def _parser_args(stanza_dir: Path) -> list[str]:
    return ["--no-cache", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "-j", "1"]


def same_language_folder(tmp_path_factory, stanza_dir: Path) -> Path:
    """An en→en output folder (train split), built once per test run (read-only)."""
    def build(out: Path) -> None:
        run_cli("pipeline", "--src", str(SAMPLE / "valid.en"), "--tgt", str(SAMPLE / "test.en"), "-s", "en", "-t",
                "en", "--out", str(out), "--merges", "300", "--shard-size", "25", *_parser_args(stanza_dir))

    return shared_folder(tmp_path_factory, "enen", build)


def lowercase_folder(tmp_path_factory, stanza_dir: Path) -> Path:
    """A de→en ``--lowercase`` output folder with a train and a valid split, built once per test run
    (read-only)."""
    def build(out: Path) -> None:
        inputs = out.parent / "deen-lc-inputs"
        inputs.mkdir(exist_ok=True)
        for side in ("de", "en"):
            lines = (SAMPLE / f"train.{side}").read_text(encoding="utf-8").splitlines(keepends=True)[:120]
            (inputs / f"train120.{side}").write_text("".join(lines), encoding="utf-8")
        common = ["-s", "de", "-t", "en", "--out", str(out), "--lowercase", *_parser_args(stanza_dir)]
        run_cli("pipeline", "--src", str(inputs / "train120.de"), "--tgt", str(inputs / "train120.en"), "--merges",
                "1000", *common)
        run_cli("pipeline", "--split", "valid", "--src", str(SAMPLE / "valid.de"), "--tgt", str(SAMPLE / "valid.en"),
                *common)

    return shared_folder(tmp_path_factory, "deen-lc", build)


def three_split_folder(tmp_path_factory, stanza_dir: Path, lowercase: bool) -> Path:
    """A de→en folder (``--lowercase`` or not) with a train split (the first 60 pairs of sample_data's, 300
    merges) and sample_data's valid and test splits, many of whose pieces the train split's vocabulary never
    saw (stored as ``<unk>``); built once per test run (read-only)."""
    def build(out: Path) -> None:
        inputs = out.parent / f"{out.name}-inputs"
        inputs.mkdir(exist_ok=True)
        for side in ("de", "en"):
            lines = (SAMPLE / f"train.{side}").read_text(encoding="utf-8").splitlines(keepends=True)[:60]
            (inputs / f"train60.{side}").write_text("".join(lines), encoding="utf-8")
        common = ["-s", "de", "-t", "en", "--out", str(out), *(["--lowercase"] if lowercase else []),
                  *_parser_args(stanza_dir)]
        run_cli("pipeline", "--src", str(inputs / "train60.de"), "--tgt", str(inputs / "train60.en"), "--merges",
                "300", *common)
        for split in ("valid", "test"):
            run_cli("pipeline", "--split", split, "--src", str(SAMPLE / f"{split}.de"), "--tgt",
                    str(SAMPLE / f"{split}.en"), *common)

    return shared_folder(tmp_path_factory, "deen-3-lc" if lowercase else "deen-3", build)
