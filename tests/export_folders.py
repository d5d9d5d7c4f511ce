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

from tests.conftest import ROOT, run_cli

SAMPLE = ROOT / "sample_data"
_BUILT: dict[str, Path] = {}


def _parser_args(stanza_dir: Path) -> list[str]:
    return ["--no-cache", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "-j", "1"]


def same_language_folder(base: Path, stanza_dir: Path) -> Path:
    """``base/enen``: an en→en output folder (train split)."""
    out = base / "enen"
    if "enen" not in _BUILT:
        run_cli("pipeline", "--src", str(SAMPLE / "valid.en"), "--tgt", str(SAMPLE / "test.en"), "-s", "en", "-t",
                "en", "--out", str(out), "--merges", "300", "--shard-size", "25", *_parser_args(stanza_dir))
        _BUILT["enen"] = out
    return _BUILT["enen"]


def lowercase_folder(base: Path, stanza_dir: Path) -> Path:
    """``base/deen-lc``: a de→en ``--lowercase`` output folder with a train and a valid split."""
    out = base / "deen-lc"
    if "deen-lc" not in _BUILT:
        base.mkdir(parents=True, exist_ok=True)
        for side in ("de", "en"):
            lines = (SAMPLE / f"train.{side}").read_text(encoding="utf-8").splitlines(keepends=True)[:120]
            (base / f"train120.{side}").write_text("".join(lines), encoding="utf-8")
        common = ["-s", "de", "-t", "en", "--out", str(out), "--lowercase", *_parser_args(stanza_dir)]
        run_cli("pipeline", "--src", str(base / "train120.de"), "--tgt", str(base / "train120.en"), "--merges",
                "1000", *common)
        run_cli("pipeline", "--split", "valid", "--src", str(SAMPLE / "valid.de"), "--tgt", str(SAMPLE / "valid.en"),
                *common)
        _BUILT["deen-lc"] = out
    return _BUILT["deen-lc"]


def three_split_folder(base: Path, stanza_dir: Path, lowercase: bool) -> Path:
    """``base/deen-3`` (``base/deen-3-lc`` with ``--lowercase``): a de→en folder with a train split (the
    first 60 pairs of sample_data's, 300 merges) and sample_data's valid and test splits, many of
    whose pieces the train split's vocabulary never saw (stored as ``<unk>``)."""
    name = "deen-3-lc" if lowercase else "deen-3"
    out = base / name
    if name not in _BUILT:
        base.mkdir(parents=True, exist_ok=True)
        for side in ("de", "en"):
            lines = (SAMPLE / f"train.{side}").read_text(encoding="utf-8").splitlines(keepends=True)[:60]
            (base / f"train60.{side}").write_text("".join(lines), encoding="utf-8")
        common = ["-s", "de", "-t", "en", "--out", str(out), *(["--lowercase"] if lowercase else []),
                  *_parser_args(stanza_dir)]
        run_cli("pipeline", "--src", str(base / "train60.de"), "--tgt", str(base / "train60.en"), "--merges",
                "300", *common)
        for split in ("valid", "test"):
            run_cli("pipeline", "--split", split, "--src", str(SAMPLE / f"{split}.de"), "--tgt",
                    str(SAMPLE / f"{split}.en"), *common)
        _BUILT[name] = out
    return _BUILT[name]
