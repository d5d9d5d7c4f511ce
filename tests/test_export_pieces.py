"""Every export gives the pieces as segmented, never the symbols of their vocabulary ids.

The shards store ``<unk>`` (3) for a piece outside ``dict.txt``; a ``synprep pipeline`` folder keeps
the pieces in ``OUT/text/SPLIT.bpe.L``. Real pipeline folders (tests/export_folders.py: train,
valid and test splits, the valid/test ones with pieces the train vocabulary never saw), with and
without ``--lowercase``, exported in every format, each split apart; the exported pieces are
compared with the folder's ``.bpe`` files. Folders that keep no text (``synthetic``, or a pipeline
folder without its ``text/``) give null pieces (HF) or refuse (factors); a piece file that is not
the shards' is refused, naming its file and line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import run_cli

from synprep.constants import EOS_ID, UNK_ID
from synprep.export.factors import FACTORS
from synprep.export.mmidx import read_mmidx
from synprep.shards import SplitReader, open_split
from synprep.shards.synthetic import write_folder
from synprep.vocab import Vocab
from tests.export_folders import three_split_folder

pytestmark = pytest.mark.slow

SPLITS = ("train", "valid", "test")
FORMATS = ("factors", "hf", "parquet", "fairseq")


@pytest.fixture(scope="module")
def folders(tmp_path_factory, stanza_dir: Path) -> dict[bool, Path]:
    return {lc: three_split_folder(tmp_path_factory, stanza_dir, lc) for lc in (False, True)}


def bpe_rows(folder: Path, split: str, lang: str) -> list[str]:
    """The pieces of the split's kept pairs, in shard order: the folder's ``text/SPLIT.bpe.L`` rows."""
    rows = (folder / "text" / f"{split}.bpe.{lang}").read_text(encoding="utf-8").splitlines()
    kept = [int(n) for n in (folder / "text" / f"{split}.lines").read_text().split()]
    row = {n: k for k, n in enumerate(kept)}
    return [rows[row[r.line]] for r in SplitReader(open_split(folder, split))]


def parquet_rows(dest: Path, split: str) -> list[dict]:
    return [r for p in sorted((dest / "data").glob(f"{split}-*.parquet")) for r in pq.read_table(p).to_pylist()]


@pytest.mark.parametrize("lowercase", [False, True], ids=["cased", "lowercase"])
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_exported_pieces_are_the_folders_pieces(folders: dict[bool, Path], fmt: str, split: str, lowercase: bool,
                                                tmp_path: Path) -> None:
    folder = folders[lowercase]
    src, tgt = bpe_rows(folder, split, "de"), bpe_rows(folder, split, "en")
    recs = list(SplitReader(open_split(folder, split)))
    unk = sum(UNK_ID in r.src_ids for r in recs) + sum(UNK_ID in r.tgt_ids for r in recs)
    assert (unk > 0) == (split != "train"), unk  # valid/test hold pieces the train vocabulary never saw
    if lowercase:
        assert all(x == x.lower() for x in src[:5])
    dest = tmp_path / fmt
    run_cli("export", str(folder), "--format", fmt, "--to", str(dest), "--split", split)
    if fmt == "factors":
        assert (dest / f"{split}.de").read_text(encoding="utf-8").splitlines() == src
        assert (dest / f"{split}.en").read_text(encoding="utf-8").splitlines() == tgt
        for factor in FACTORS:
            labels = (dest / f"{split}.de.{factor}").read_text(encoding="utf-8").splitlines()
            assert [len(x.split()) for x in labels] == [len(x.split()) for x in src], factor
    elif fmt in ("hf", "parquet"):
        rows = parquet_rows(dest, split)
        assert [r["src_pieces"] for r in rows] == [x.split() for x in src]
        assert [r["tgt_pieces"] for r in rows] == [x.split() for x in tgt]
        assert [r["src_ids"] for r in rows] == [r.src_ids.tolist() for r in recs]  # the ids stay the model's
    else:  # fairseq holds the ids: the folder's pieces looked up in its dict.txt (<unk> outside it), + </s>
        vocab = Vocab.load(folder / "dict.txt")
        for lang, pieces in (("de", src), ("en", tgt)):
            got = [a.tolist() for a in read_mmidx(dest / f"{split}.de-en.{lang}")]
            assert got == [[*vocab.encode(x).tolist(), EOS_ID] for x in pieces], lang


def test_hf_pieces_without_the_folders_text_are_null_where_not_known(folders: dict[bool, Path],
                                                                     tmp_path: Path) -> None:
    """A folder that keeps no text: the ids' symbols where a side has no <unk> (exactly its pieces), null where
    it has one, never <unk> in place of a piece."""
    folder = tmp_path / "no-text"
    shutil.copytree(folders[False], folder)
    shutil.rmtree(folder / "text")
    dest = tmp_path / "hf"
    run_cli("export", str(folder), "--format", "hf", "--to", str(dest), "--split", "valid")
    rows = parquet_rows(dest, "valid")
    recs = list(SplitReader(open_split(folder, "valid")))
    for side, lang in (("src", "de"), ("tgt", "en")):
        true = bpe_rows(folders[False], "valid", lang)
        unk = [UNK_ID in getattr(r, f"{side}_ids") for r in recs]
        assert any(unk) and not all(unk)
        assert [r[f"{side}_pieces"] for r in rows] == [None if u else x.split() for u, x in zip(unk, true, strict=True)]
    assert not any("<unk>" in p for r in rows for p in (r["src_pieces"] or []) + (r["tgt_pieces"] or []))


def test_factors_export_refuses_pairs_whose_pieces_no_text_keeps(folders: dict[bool, Path], tmp_path: Path) -> None:
    """A factor file cannot say "not known": a split with <unk> ids and no text is refused, nothing written; a
    split without <unk> ids exports from the ids (they are exactly its pieces)."""
    folder = tmp_path / "no-text"
    shutil.copytree(folders[False], folder)
    shutil.rmtree(folder / "text")
    dest = tmp_path / "factors"
    proc = run_cli("export", str(folder), "--format", "factors", "--to", str(dest), "--split", "valid", check=False)
    recs = list(SplitReader(open_split(folder, "valid")))
    n_src, n_tgt = sum(UNK_ID in r.src_ids for r in recs), sum(UNK_ID in r.tgt_ids for r in recs)
    n = sum(UNK_ID in r.src_ids or UNK_ID in r.tgt_ids for r in recs)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"synprep: error: valid.00000.h5: {n} of {len(recs)} pairs have pieces outside dict.txt (<unk>) and the "
        f"folder keeps no text of them (source side: {n_src}, target side: {n_tgt}): a factor file would hold <unk> "
        f"in place of their pieces; export the synprep pipeline folder of this split (its text/ keeps the pieces), "
        f"or use --format hf (null for those pieces) or fairseq (ids)")
    assert not [p for p in dest.rglob("valid*")]
    run_cli("export", str(folder), "--format", "factors", "--to", str(dest), "--split", "train")
    assert (dest / "train.de").read_text(encoding="utf-8").splitlines() == bpe_rows(folders[False], "train", "de")


def test_factors_export_of_a_synthetic_folder_with_unknown_pieces_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "shards"
    write_folder(folder, {"train": 30}, shard_size=20)
    assert any(UNK_ID in r.src_ids for r in SplitReader(open_split(folder, "train")))
    proc = run_cli("export", str(folder), "--format", "factors", "--to", str(tmp_path / "f"), check=False)
    assert proc.returncode == 2 and "have pieces outside dict.txt (<unk>) and the folder keeps no text" in proc.stderr


@pytest.mark.parametrize("fmt", ["factors", "hf"])
@pytest.mark.parametrize("change", ["piece", "count"])
def test_a_piece_file_that_is_not_the_shards_is_refused(folders: dict[bool, Path], tmp_path: Path, fmt: str,
                                                        change: str) -> None:
    """One piece changed to another piece, or one piece added: an error naming the file and line, no
    misaligned export (for an <unk> piece the ids cannot tell: then the piece must be outside dict.txt)."""
    folder = tmp_path / "other-text"
    shutil.copytree(folders[False], folder)
    path = folder / "text" / "valid.bpe.de"
    rows = path.read_text(encoding="utf-8").splitlines()
    recs = list(SplitReader(open_split(folder, "valid")))
    kept = [int(x) for x in (folder / "text" / "valid.lines").read_text().split()]
    k = 3
    row = kept.index(recs[k].line)
    pieces = rows[row].split()
    vocab = Vocab.load(folder / "dict.txt")
    j = next(i for i, p in enumerate(pieces) if p in vocab)
    if change == "piece":
        other = next(vocab[i] for i in range(4, len(vocab)) if vocab[i] != pieces[j])
        pieces[j] = other
        reason = (f"piece {j + 1} ({other!r}) is not the shard's id {vocab.index(rows[row].split()[j])} "
                  f"({rows[row].split()[j]!r}) in line {recs[k].line}")
    else:
        pieces.insert(j, pieces[j])
        reason = f"{len(pieces)} pieces, the shard's pair of line {recs[k].line} has {len(pieces) - 1}"
    rows[row] = " ".join(pieces)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    dest = tmp_path / fmt
    proc = run_cli("export", str(folder), "--format", fmt, "--to", str(dest), "--split", "valid", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"synprep: error: {path}:{row + 1}: {reason} (run the pipeline of this split again)")
    assert not [p for p in dest.rglob("valid*") if p.is_file()]

