"""``export --format factors --factors-style onmt3``: the inline factors OpenNMT-py 3.x reads.

OpenNMT-py itself is not installed here: OpenNMT-py 3.5.1 pins torch<2.3 (this project's venv and the
fairseq one use torch 2.13) and its full requirements (spacy, ctranslate2, tensorboard, …) took
over 4 minutes to install on 2 cores; so the lines are read with :func:`parse_features`, a copy of
OpenNMT-py 3.5.1's own reader (``parse_features`` in onmt/inputters/text_utils.py: tokens split on
one space, each token split on U+FFE8 into the token and its ``n_feats`` features), and compared
with the default (one file per factor) export of the same folder, split by split.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from helpers import run_cli

from synprep.constants import UNK_ID
from synprep.export.factors import FACTORS
from synprep.shards import SplitReader, open_split
from tests.export_folders import three_split_folder

pytestmark = pytest.mark.slow

SPLITS = ("train", "valid", "test")


@pytest.fixture(scope="module")
def folder(tmp_path_factory, stanza_dir: Path) -> Path:
    return three_split_folder(tmp_path_factory, stanza_dir, False)


@pytest.fixture(scope="module")
def exports(folder: Path, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("onmt3")
    out = {}
    for style in ("files", "onmt3"):
        run_cli("export", str(folder), "--format", "factors", "--factors-style", style, "--to", str(base / style))
        out[style] = base / style
    return out


def parse_features(line: str, n_feats: int = 0) -> tuple[str, list[str] | None]:
    """OpenNMT-py 3.5.1's ``onmt.inputters.text_utils.parse_features`` (its ``defaults`` left out): the
    line's tokens and, per feature, the space-joined values; AssertionError where OpenNMT-py raises."""
    text, feats = [], [[] for _ in range(n_feats)]
    check, count = 0, 0
    for token in line.split(" "):
        tok, *fts = token.strip("\n").split("￨")
        check += len(fts)
        count += 1
        assert len(fts) == n_feats, f"{len(fts)} features, {n_feats} expected"
        text.append(tok)
        for i in range(n_feats):
            feats[i].append(fts[i])
    assert check == 0 or check == count * n_feats, "Some tokens are missing features"
    return " ".join(text), ([" ".join(x) for x in feats] if n_feats > 0 else None)


@pytest.mark.parametrize("split", SPLITS)
def test_onmt3_lines_read_back_as_the_pieces_and_factor_files(exports: dict[str, Path], split: str) -> None:
    files, onmt3 = exports["files"], exports["onmt3"]
    pieces = (files / f"{split}.de").read_text(encoding="utf-8").splitlines()
    factors = {f: (files / f"{split}.de.{f}").read_text(encoding="utf-8").splitlines() for f in FACTORS}
    lines = (onmt3 / f"{split}.de").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(pieces) > 30
    for k, line in enumerate(lines):
        text, feats = parse_features(line, n_feats=len(FACTORS))
        assert text == pieces[k]
        assert feats == [factors[f][k] for f in FACTORS]
    for name in (f"{split}.en", f"{split}.lines"):  # the target and the line numbers are the default layout's
        assert (onmt3 / name).read_bytes() == (files / name).read_bytes()
    assert not list(onmt3.glob(f"{split}.de.*"))


def test_onmt3_config_trains_on_the_export(exports: dict[str, Path]) -> None:
    onmt3 = exports["onmt3"]
    config = yaml.safe_load((onmt3 / "onmt3.yaml").read_text(encoding="utf-8"))
    assert config["n_src_feats"] == len(FACTORS)
    assert set(config["data"]) == {"corpus_train", "valid"}
    for name, split in (("corpus_train", "train"), ("valid", "valid")):
        corpus = config["data"][name]
        assert corpus["transforms"] == ["inferfeats"]  # OpenNMT-py refuses features without it
        assert (corpus["path_src"], corpus["path_tgt"]) == (f"{split}.de", f"{split}.en")
        assert (onmt3 / corpus["path_src"]).is_file() and (onmt3 / corpus["path_tgt"]).is_file()
    assert config["src_vocab"] and config["tgt_vocab"] and config["save_data"]


def test_onmt3_refusals(folder: Path, exports: dict[str, Path], tmp_path: Path) -> None:
    proc = run_cli("export", str(folder), "--format", "hf", "--factors-style", "onmt3", "--to", str(tmp_path / "hf"),
                   check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == "synprep: error: --factors-style applies to --format factors only"
    # one layout per DEST: resuming the other one is refused
    proc = run_cli("export", str(folder), "--format", "factors", "--to", str(exports["onmt3"]), check=False)
    assert proc.returncode == 2 and "holds another export (signature:" in proc.stderr
    # a piece holding U+FFE8 would be cut there by OpenNMT-py: refused (an <unk> piece, so the ids still match)
    changed = tmp_path / "sep"
    shutil.copytree(folder, changed)
    path = changed / "text" / "valid.bpe.de"
    rows = path.read_text(encoding="utf-8").splitlines()
    recs = list(SplitReader(open_split(changed, "valid")))
    kept = [int(x) for x in (changed / "text" / "valid.lines").read_text().split()]
    k = next(i for i, r in enumerate(recs) if UNK_ID in r.src_ids)
    row = kept.index(recs[k].line)
    pieces = rows[row].split()
    j = recs[k].src_ids.tolist().index(UNK_ID)
    pieces[j] = "a￨b"
    rows[row] = " ".join(pieces)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    dest = tmp_path / "o"
    proc = run_cli("export", str(changed), "--format", "factors", "--factors-style", "onmt3", "--to", str(dest),
                   "--split", "valid", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"synprep: error: valid.00000.h5: the pair of line {recs[k].line} has the piece 'a￨b', which holds "
        f"OpenNMT-py's feature separator U+FFE8 (pairs of the shard with such a piece: 1): OpenNMT-py 3.x would cut it "
        f"there; "
        f"export with --factors-style files")
    assert not list(dest.glob("valid*"))
    run_cli("export", str(changed), "--format", "factors", "--to", str(tmp_path / "f"), "--split", "valid")
    assert "a￨b" in (tmp_path / "f" / "valid.de").read_text(encoding="utf-8")
