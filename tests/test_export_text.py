"""Exports carry the true text of both sides.

Real ``synprep pipeline`` folders parsed by the real stanza models (tests/export_folders.py), read
back by the real consumers: ``datasets`` for HF, plain text for the factor files (sockeye and
OpenNMT-py read them line by line); fairseq's own task reads the same-language export in
tests/test_export_fairseq.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli

from synprep.constants import UNK_ID
from synprep.export.factors import FACTORS
from synprep.shards import SplitReader, open_split
from synprep.text.escape import unescape_tokens
from synprep.text.tokenize import moses_lowercase, tokenize_line
from tests.export_folders import SAMPLE, lowercase_folder, same_language_folder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def enen(tmp_path_factory, stanza_dir: Path) -> Path:
    return same_language_folder(tmp_path_factory, stanza_dir)


@pytest.fixture(scope="module")
def deen_lc(tmp_path_factory, stanza_dir: Path) -> Path:
    return lowercase_folder(tmp_path_factory, stanza_dir)


def kept_lines(folder: Path, split: str) -> list[int]:
    return [r.line for r in SplitReader(open_split(folder, split))]


def tokenized(path: Path, lang: str, lines: list[int], lowercase: bool = False) -> list[str]:
    """The input lines ``lines`` (1-based) tokenized by sacremoses, escapes undone: the text a side holds."""
    raw = path.read_text(encoding="utf-8").splitlines()
    out = []
    for n in lines:
        text = " ".join(unescape_tokens(tokenize_line(raw[n - 1], lang).split()))
        out.append(moses_lowercase(text) if lowercase else text)
    return out


def load_hf(dest: Path, cache: Path):
    from datasets import load_dataset

    return load_dataset(str(dest), cache_dir=str(cache))


# --- item 2: a same-language folder keeps both sides --------------------------------------------------


def test_hf_export_of_a_same_language_pair_holds_both_sides(enen: Path, tmp_path: Path) -> None:
    dest = tmp_path / "hf"
    run_cli("export", str(enen), "--format", "hf", "--to", str(dest))
    ds = load_hf(dest, tmp_path / "cache")["train"]
    lines = kept_lines(enen, "train")
    assert ds["line"] == lines and len(lines) > 20
    assert ds.features["translation"].languages == ["en_src", "en_tgt"]
    src, tgt = tokenized(SAMPLE / "valid.en", "en", lines), tokenized(SAMPLE / "test.en", "en", lines)
    assert [t["en_src"] for t in ds["translation"]] == src
    assert [t["en_tgt"] for t in ds["translation"]] == tgt
    assert src != tgt
    recs = list(SplitReader(open_split(enen, "train")))
    assert ds["tgt_ids"] == [r.tgt_ids.tolist() for r in recs] and ds["src_ids"] == [r.src_ids.tolist() for r in recs]
    card = (dest / "README.md").read_text(encoding="utf-8")
    assert "language:\n- en\ntags:" in card and "`en_src`, `en_tgt`" in card


def test_factors_export_of_a_same_language_pair_holds_both_sides(enen: Path, tmp_path: Path) -> None:
    dest = tmp_path / "factors"
    run_cli("export", str(enen), "--format", "factors", "--to", str(dest))
    recs = list(SplitReader(open_split(enen, "train")))
    bpe = {side: (enen / "text" / f"train.bpe.{side}.en").read_text(encoding="utf-8").splitlines()
           for side in ("src", "tgt")}
    kept = (enen / "text" / "train.lines").read_text().split()
    row = {int(n): k for k, n in enumerate(kept)}
    src = (dest / "train.en_src").read_text(encoding="utf-8").splitlines()
    tgt = (dest / "train.en_tgt").read_text(encoding="utf-8").splitlines()
    assert len(src) == len(tgt) == len(recs)
    assert src == [bpe["src"][row[r.line]] for r in recs] and tgt == [bpe["tgt"][row[r.line]] for r in recs]
    assert src != tgt and not (dest / "train.en").exists()
    for factor in FACTORS:  # one label per SOURCE piece, line by line
        labels = (dest / f"train.en_src.{factor}").read_text(encoding="utf-8").splitlines()
        assert [len(x.split()) for x in labels] == [len(x.split()) for x in src], factor
    # an export.json of an earlier version (no "sides": its same-language files lost a side) is not resumed
    record = json.loads((dest / "export.json").read_text(encoding="utf-8"))
    assert record["sides"] == ["en_src", "en_tgt"]
    del record["sides"]
    (dest / "export.json").write_text(json.dumps(record), encoding="utf-8")
    proc = run_cli("export", str(enen), "--format", "factors", "--to", str(dest), check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1] == (
        f"synprep: error: {dest} holds another export (sides: ['en', 'en'], this one: ['en_src', 'en_tgt']); "
        f"choose another --to")


# --- item 3: the HF text fields are the true text ---------------------------------------------------


def test_hf_text_of_a_valid_split_is_the_true_cased_text(deen_lc: Path, tmp_path: Path) -> None:
    recs = list(SplitReader(open_split(deen_lc, "valid")))
    unk_src = sum(UNK_ID in r.src_ids for r in recs)
    unk_tgt = sum(UNK_ID in r.tgt_ids for r in recs)
    assert unk_src and unk_tgt  # the valid split has pieces the train split's vocabulary never saw
    dest = tmp_path / "hf"
    run_cli("export", str(deen_lc), "--format", "hf", "--to", str(dest), "--split", "valid")
    ds = load_hf(dest, tmp_path / "cache")["valid"]
    lines = [r.line for r in recs]
    assert ds["line"] == lines
    words = tokenized(SAMPLE / "valid.de", "de", lines)
    assert [" ".join(w) for w in ds["src_words"]] == words  # the cased words the parser read
    assert all(len(w) == len(r.heads) for w, r in zip(ds["src_words"], recs, strict=True))
    assert any(w != w.lower() for ws in ds["src_words"] for w in ws)
    # the pair the pieces were made from: lowercased (--lowercase), no <unk> anywhere
    assert [t["de"] for t in ds["translation"]] == [moses_lowercase(w) for w in words]
    assert [t["en"] for t in ds["translation"]] == tokenized(SAMPLE / "valid.en", "en", lines, lowercase=True)
    text = [" ".join(w) for w in ds["src_words"]] + [t[k] for t in ds["translation"] for k in ("de", "en")]
    assert not any("<unk>" in x for x in text)
    # the ids stay the model's: the <unk> pieces are there
    assert sum(UNK_ID in ids for ids in ds["src_ids"]) == unk_src and ds["tgt_ids"] == [r.tgt_ids.tolist() for r in recs]


def test_hf_export_without_text_files_writes_null_for_unknown_text(deen_lc: Path, tmp_path: Path) -> None:
    """A folder that keeps no text (annotate, shard): a side with an <unk> piece has null text, never a guess;
    src_words are the words its shards store (the words the parser read, cased)."""
    folder = tmp_path / "no-text"
    shutil.copytree(deen_lc, folder)
    shutil.rmtree(folder / "text")
    recs = list(SplitReader(open_split(deen_lc, "valid")))
    unk_src = [UNK_ID in r.src_ids for r in recs]
    unk_tgt = [UNK_ID in r.tgt_ids for r in recs]
    dest = tmp_path / "hf"
    proc = run_cli("export", str(folder), "--format", "hf", "--to", str(dest), "--split", "valid")
    n_unk = sum(a or b for a, b in zip(unk_src, unk_tgt, strict=True))
    assert "src_words are null" not in proc.stderr  # the shards store the words the parser read
    assert (f"synprep: valid.00000.h5: {n_unk} of {len(recs)} pairs have pieces outside dict.txt (<unk>) and the "
            f"folder keeps no text of them: their text fields and pieces are null (source side: {sum(unk_src)}, target side: "
            f"{sum(unk_tgt)}); synprep pipeline folders keep the text (docs/export.md)\n") in proc.stderr
    ds = load_hf(dest, tmp_path / "cache")["valid"]
    lines = [r.line for r in recs]
    src = tokenized(SAMPLE / "valid.de", "de", lines, lowercase=True)  # the pieces' (lowercased) text
    tgt = tokenized(SAMPLE / "valid.en", "en", lines, lowercase=True)
    from synprep.shards.reader import ShardReader

    stored = [r.words(i) for p in sorted(folder.glob("valid.*.h5")) for r in [ShardReader(p)] for i in range(len(r))]
    assert stored[0] and any(w != w.lower() for ws in stored for w in ws or [])  # cased, as the parser read them
    for k, row in enumerate(ds):
        assert row["src_words"] == stored[k]
        assert row["translation"] == {"de": None if unk_src[k] else src[k], "en": None if unk_tgt[k] else tgt[k]}


def test_hf_export_refuses_text_files_that_are_not_the_shards(deen_lc: Path, tmp_path: Path) -> None:
    folder = tmp_path / "other-text"
    shutil.copytree(deen_lc, folder)
    path = folder / "text" / "valid.clean.en"
    lines = path.read_text(encoding="utf-8").splitlines()
    recs = list(SplitReader(open_split(deen_lc, "valid")))
    k = next(i for i, r in enumerate(recs) if UNK_ID not in r.src_ids and UNK_ID not in r.tgt_ids)
    kept = [int(x) for x in (folder / "text" / "valid.lines").read_text().split()]
    row = kept.index(recs[k].line)
    lines[row] = lines[row] + " extra"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = run_cli("export", str(folder), "--format", "hf", "--to", str(tmp_path / "hf"), "--split", "valid",
                   check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"synprep: error: {path}:{row + 1}: the text differs from the shard's pieces of line {recs[k].line} (run the "
        f"pipeline of this split again)")
    assert np.all([not p.name.endswith(".parquet") for p in (tmp_path / "hf").rglob("*")])


def test_hf_src_words_are_the_words_a_shard_stores(tmp_path: Path, monkeypatch) -> None:
    """Shards that store the parser's words (the ``words`` dataset read by ShardReader.has_words/words(i))
    give src_words as stored, also for a pair with <unk> pieces."""
    from datasets import load_dataset

    from synprep.shards.reader import ShardReader
    from synprep.shards.synthetic import write_folder

    folder = tmp_path / "shards"
    write_folder(folder, {"train": 30}, shard_size=20)
    recs = list(SplitReader(open_split(folder, "train")))

    def stored(self, i: int) -> list[str]:  # a distinct cased word for every word of every pair
        line = int(self.lines[i])
        return [f"Wort{line}_{k}" for k in range(int(self.offsets["word"][i + 1] - self.offsets["word"][i]))]

    monkeypatch.setattr(ShardReader, "has_words", property(lambda self: True), raising=False)
    monkeypatch.setattr(ShardReader, "words", stored, raising=False)
    dest = tmp_path / "hf"
    from synprep.export import export

    export(str(folder), "hf", str(dest))
    ds = load_dataset("parquet", data_files={"train": sorted(str(p) for p in (dest / "data").glob("*.parquet"))},
                      cache_dir=str(tmp_path / "cache"))["train"]
    assert any(UNK_ID in r.src_ids for r in recs)
    assert ds["src_words"] == [[f"Wort{r.line}_{k}" for k in range(len(r.heads))] for r in recs]
