"""``synprep export``: Parquet/HF, fairseq binaries (numpy side), factor text; atomic and resumable.

Real data: the 8-line IWSLT14 sample parsed by the real stanza models (tests/iwslt_sample.py), loaded
back with the real consumer (``datasets.load_dataset``). Synthetic folders cover the invariants on more
pairs. The fairseq round trip through real fairseq is tests/test_export_fairseq.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import run_cli

from synprep.errors import ConfigError, InputError
from synprep.export import EXPORTERS, export, get_exporter
from synprep.export import base as export_base
from synprep.export.columns import ShardBlock
from synprep.export.factors import FACTORS
from synprep.export.mmidx import MAGIC, read_mmidx
from synprep.features.parents import parent_positions
from synprep.shards import SplitReader, open_split
from synprep.shards.synthetic import write_folder
from synprep.show import load_pair
from synprep.text.escape import unescape
from tests.iwslt_sample import N_LINES, Sample, iwslt_sample


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "shards"
    # no <unk> ids: a folder that keeps no text gives its pieces to a factors export only where every id is known
    write_folder(out, {"train": 260, "valid": 9}, shard_size=100, drop_every=11, unk_rate=0.0)
    return out


@pytest.fixture(scope="module")
def sample(tmp_path_factory, shared_data: Path, stanza_dir: Path) -> Sample:
    return iwslt_sample(tmp_path_factory, shared_data, stanza_dir)


def records(folder: Path, split: str) -> list:
    return list(SplitReader(open_split(folder, split)))


# --- columns ----------------------------------------------------------------------------------------


def test_vectorised_parents_are_parent_positions(synthetic: Path) -> None:
    for reader in open_split(synthetic, "train"):
        recs = list(reader)
        parents = ShardBlock.read(reader).mean_parents()
        want = np.concatenate([parent_positions(r.heads, r.word_index, mode="mean") for r in recs])
        assert parents.dtype == np.float32 and np.array_equal(parents, want)


# --- parquet / hf -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_hf_export_loads_with_datasets_and_equals_the_shards(sample: Sample, tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    from datasets import Features, load_dataset

    dest = tmp_path / "hf"
    proc = run_cli("export", str(sample.shards), "--format", "hf", "--to", str(dest))
    assert proc.stdout == f"synprep export: hf train: {N_LINES} pairs -> {dest}\n"
    assert f"synprep: load with: datasets.load_dataset({str(dest)!r})" in proc.stderr
    files = sorted(str(p) for p in (dest / "data").glob("train-*.parquet"))
    assert [Path(f).name for f in files] == ["train-00000-of-00002.parquet", "train-00001-of-00002.parquet"]
    ds = load_dataset("parquet", data_files={"train": files}, cache_dir=str(tmp_path / "cache"))["train"]
    assert ds.num_rows == N_LINES
    deprel_names = ds.features["deprel"].feature.names
    upos_names = ds.features["upos"].feature.names
    src_lines = sample.src.read_text(encoding="utf-8").splitlines()
    tgt_lines = sample.tgt.read_text(encoding="utf-8").splitlines()
    for i, (row, rec) in enumerate(zip(ds, records(sample.shards, "train"), strict=True)):
        view = load_pair(sample.shards, "train", index=i)
        assert row["line"] == rec.line == i + 1
        assert row["heads"] == rec.heads.tolist()
        assert [deprel_names[d] for d in row["deprel"]] == view.deprels
        assert [upos_names[u] for u in row["upos"]] == view.upos
        assert row["src_words"] == view.words
        assert row["src_pieces"] == view.src and " ".join(row["src_pieces"]) == src_lines[i]
        assert row["tgt_ids"] == rec.tgt_ids.tolist() and " ".join(row["tgt_pieces"]) == tgt_lines[i]
        assert row["translation"]["en"] == " ".join(view.words)
        assert row["translation"]["de"] == " ".join(unescape(w) for w in tgt_lines[i].replace("@@ ", "").split())
        assert row["gaps_cnf"] == rec.gaps_cnf.tolist() and row["gaps_nary"] == rec.gaps_nary.tolist()
        assert row["parents"] == parent_positions(rec.heads, rec.word_index).tolist()
        assert [(e["dep"], e["head"], e["rel"]) for e in row["ldd"]] == list(
            zip(rec.ldd_dep.tolist(), rec.ldd_head.tolist(), rec.ldd_rel.tolist(), strict=True))
        assert np.allclose([e["prob"] for e in row["ldd"]], rec.ldd_prob)
    assert ds.features["ldd"].feature["rel"].names == deprel_names
    # the features in the metadata are the file's own schema, and the provenance is in the metadata
    schema = pq.read_schema(files[0])
    meta = json.loads(schema.metadata[b"synprep"])
    assert meta["format_version"] == 2 and meta["signature"].endswith("|export:parquet-v2")
    assert meta["signature"].startswith("synprep:0.1.0|tok:given|") and meta["config"]["src_lang"] == "en"
    features = Features.from_dict(json.loads(schema.metadata[b"huggingface"])["info"]["features"])
    assert features.arrow_schema.remove_metadata().equals(schema.remove_metadata())
    card = (dest / "README.md").read_text(encoding="utf-8")
    assert "path: data/train-*" in card and meta["signature"] in card and f"| train | {N_LINES} |" in card
    # the dataset card's configs make the folder loadable by name
    by_folder = load_dataset(str(dest), cache_dir=str(tmp_path / "cache2"))
    assert by_folder["train"].num_rows == N_LINES


# --- fairseq binaries (numpy side; real fairseq in test_export_fairseq.py) --------------------------


def test_fairseq_items_are_the_shards_plus_eos(synthetic: Path, tmp_path: Path, monkeypatch) -> None:
    from synprep.export import mmidx

    monkeypatch.setattr(mmidx, "CHUNK", 7)  # the index is assembled over many chunks
    dest = tmp_path / "fs"
    export(str(synthetic), "fairseq", str(dest))
    recs = records(synthetic, "train")
    raw = (dest / "train.de-en.de.idx").read_bytes()
    assert raw[:9] == MAGIC and raw[17] == 8  # uint16 ids: the vocabulary is under 65500
    src = read_mmidx(dest / "train.de-en.de")
    tgt = read_mmidx(dest / "train.de-en.en")
    fields = {f: read_mmidx(dest / f"train.de-en.de.{f}") for f in ("word_index", "parents", "gaps_cnf", "heads",
                                                                      "ldd_prob")}
    assert len(src) == len(tgt) == len(recs) == 260
    for k, r in enumerate(recs):
        assert src[k].tolist() == r.src_ids.tolist() + [2] and tgt[k].tolist() == r.tgt_ids.tolist() + [2]
        assert fields["word_index"][k].tolist() == r.word_index.tolist() + [len(r.heads)]
        assert fields["parents"][k].tolist() == parent_positions(r.heads, r.word_index, eos=True).tolist()
        assert fields["gaps_cnf"][k].tolist() == r.gaps_cnf.tolist() + [2000]
        assert fields["heads"][k].tolist() == r.heads.tolist()
        assert np.array_equal(fields["ldd_prob"][k], r.ldd_prob.astype(np.float64))
    assert (dest / "dict.de.txt").read_bytes() == (synthetic / "dict.txt").read_bytes() == (
        dest / "dict.en.txt").read_bytes()
    assert (dest / "synprep_fairseq" / "__init__.py").read_text().startswith('"""synprep\'s fairseq plugin')
    assert json.loads((dest / "labels.json").read_text())["upos"][-1] == "X"


# --- factors ----------------------------------------------------------------------------------------


def test_factors_have_one_label_per_piece(synthetic: Path, tmp_path: Path) -> None:
    dest = tmp_path / "factors"
    export(str(synthetic), "factors", str(dest), ["train"])
    recs = records(synthetic, "train")
    pieces = (dest / "train.de").read_text(encoding="utf-8").splitlines()
    files = {f: (dest / f"train.de.{f}").read_text(encoding="utf-8").splitlines() for f in FACTORS}
    lines = (dest / "train.lines").read_text().split()
    assert len(pieces) == len(recs) == len(lines) and [int(x) for x in lines] == [r.line for r in recs]
    from synprep.types import DEPRELS, UPOS_TAGS

    for k, r in enumerate(recs):
        n = len(pieces[k].split())
        assert n == len(r.src_ids)
        labels = {f: v[k].split() for f, v in files.items()}
        assert all(len(v) == n for v in labels.values())
        wi = r.word_index
        for p in range(n):
            w = int(wi[p])
            first, last = p == 0 or wi[p - 1] != w, p == n - 1 or wi[p + 1] != w
            assert labels["bpos"][p] == {(True, True): "S", (True, False): "B", (False, True): "E",
                                         (False, False): "I"}[first, last]
            assert labels["deprel"][p] == DEPRELS[r.deprel[w]] and labels["upos"][p] == UPOS_TAGS[r.upos[w]]
            head = int(r.heads[w])
            assert labels["headdir"][p] == ("ROOT" if head == 0 else "L" if head - 1 < w else "R")
            assert int(labels["parent"][p]) == (0 if head == 0 else head - 1 - w)
    assert not (dest / "valid.de").exists()


# --- atomic, resumable, refused ---------------------------------------------------------------------


def test_resume_after_a_crash_gives_the_same_files(synthetic: Path, tmp_path: Path, monkeypatch) -> None:
    clean = tmp_path / "clean"
    export(str(synthetic), "parquet", str(clean))
    dest = tmp_path / "crashed"
    exporter = get_exporter("parquet")
    real = exporter.write_unit
    calls = []

    def crash_on_second(self, unit, files):
        calls.append(unit.key)
        n = real(self, unit, files)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return n

    monkeypatch.setattr(exporter, "write_unit", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        export(str(synthetic), "parquet", str(dest))
    monkeypatch.setattr(exporter, "write_unit", real)
    done = json.loads((dest / "export.json").read_text())["units"]
    assert list(done) == ["train.00000-of-00003"] and not list(dest.rglob("*.tmp"))
    assert sorted(p.name for p in (dest / "data").iterdir()) == ["train-00000-of-00003.parquet"]
    before = (dest / "data" / "train-00000-of-00003.parquet").stat().st_mtime_ns
    record = export(str(synthetic), "parquet", str(dest))
    assert (dest / "data" / "train-00000-of-00003.parquet").stat().st_mtime_ns == before  # skipped
    assert record.pairs("train") == 260 and record.pairs("valid") == 9
    for f in sorted(clean.rglob("*")):
        if f.is_file() and not f.name.startswith(".synprep-export"):
            assert (dest / f.relative_to(clean)).read_bytes() == f.read_bytes(), f
    # a damaged file is redone; a stale temporary file is removed
    victim = dest / "data" / "valid-00000-of-00001.parquet"
    victim.write_bytes(b"broken")
    (dest / "data" / ".x.parquet.abc.tmp").write_text("stale")
    export(str(synthetic), "parquet", str(dest))
    assert victim.read_bytes() == (clean / victim.relative_to(dest)).read_bytes()
    assert not list(dest.rglob("*.tmp"))


def test_refusals(synthetic: Path, tmp_path: Path, monkeypatch) -> None:
    dest = tmp_path / "x"
    export(str(synthetic), "factors", str(dest), ["valid"])
    with pytest.raises(ConfigError, match="holds another export"):
        export(str(synthetic), "fairseq", str(dest))
    proc = run_cli("export", str(synthetic), "--format", "parquet", "--to", str(dest), check=False)
    assert proc.returncode == 2 and "holds another export (exporter: 'factors'" in proc.stderr
    proc = run_cli("export", str(synthetic), "--format", "factors", "--to", str(tmp_path / "y"), "--split", "test",
                   check=False)
    assert proc.returncode == 2 and "split 'test' has no shards" in proc.stderr and "train, valid" in proc.stderr
    proc = run_cli("export", str(tmp_path / "nothing"), "--format", "factors", "--to", str(tmp_path / "z"),
                   check=False)
    assert proc.returncode == 2 and "synprep: error:" in proc.stderr and not (tmp_path / "z").exists()
    changed = tmp_path / "changed"
    shutil.copytree(synthetic, changed)
    with h5py.File(changed / "valid.00000.h5", "r+") as f:
        f["heads"][0] = f["heads"][0]  # rewritten: the bytes (and sha256) change, the manifest does not
        f.attrs["tree_source"] = "dependency"
    with pytest.raises(InputError, match=r"valid\.00000\.h5: .*manifest\.json says|valid\.00000\.h5: sha256 .* does "
                                         r"not match manifest\.json's"):
        export(str(changed), "factors", str(tmp_path / "c"), ["valid"])
    with pytest.raises(ConfigError, match="shard folder itself"):
        export(str(synthetic), "factors", str(synthetic))
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty and holds no export.json"):
        export(str(synthetic), "factors", str(tmp_path / "busy"))
    monkeypatch.setattr("synprep.extras.available", lambda module: module != "pyarrow")
    with pytest.raises(ConfigError, match=r"pip install .synprep\[hf\]."):  # the format's own extra (pyarrow + datasets)
        get_exporter("hf")
    with pytest.raises(ConfigError, match="unknown export format"):
        get_exporter("csv")
    assert set(EXPORTERS) == {"parquet", "hf", "fairseq", "factors"}
    assert export_base.EXPORT_MANIFEST == "export.json"


def test_vectorised_unescape_and_unbpe_equal_sacremoses_and_sed() -> None:
    import pyarrow as pa

    from synprep.export.parquet import _unbpe, _unescape

    words = ["we &apos;re", "plain", "a &amp;lt; b", "&#91;x&#93; &quot;q&quot; &#124; &lt;&gt;", "&amp;amp;", ""]
    assert _unescape(pa.array(words)).to_pylist() == [unescape(w) for w in words]
    assert _unescape(pa.array(["no escapes"])).to_pylist() == ["no escapes"]
    assert _unbpe(pa.array(["ri@@ ver bank@@", "a@@ @@ b", "x"])).to_pylist() == ["river bank", "ab", "x"]


def test_a_split_with_other_shards_replaces_the_old_files(tmp_path: Path) -> None:
    src = tmp_path / "shards"
    write_folder(src, {"train": 30}, shard_size=20)
    dest = tmp_path / "pq"
    export(str(src), "parquet", str(dest))
    assert sorted(p.name for p in (dest / "data").iterdir()) == ["train-00000-of-00002.parquet",
                                                                 "train-00001-of-00002.parquet"]
    shutil.rmtree(src)
    write_folder(src, {"train": 30}, shard_size=10)  # same config, same signature, three shards now
    record = export(str(src), "parquet", str(dest))
    assert sorted(p.name for p in (dest / "data").iterdir()) == [f"train-0000{i}-of-00003.parquet" for i in range(3)]
    assert sorted(record.units) == [f"train.0000{i}-of-00003" for i in range(3)] and record.pairs("train") == 30


def test_parquet_refuses_pieces_it_cannot_turn_into_words(synthetic: Path, tmp_path: Path) -> None:
    import dataclasses

    from synprep.shards import Manifest
    from synprep.signature import file_sha256

    src = tmp_path / "spm"
    shutil.copytree(synthetic, src)
    shard = src / "valid.00000.h5"
    with h5py.File(shard, "r+") as f:
        f.attrs["subword"] = "spm"
    m = Manifest.load(src)
    entry = m.splits["valid"]
    entry.shards[0] = dataclasses.replace(entry.shards[0], sha256=file_sha256(shard), bytes=shard.stat().st_size)
    m.save(src)
    with pytest.raises(ConfigError, match="'spm' pieces"):
        export(str(src), "parquet", str(tmp_path / "pq"), ["valid"])
    assert export(str(src), "factors", str(tmp_path / "f"), ["valid"]).pairs("valid") == 9


# --- only verified shards and a verified dict.txt are exported (open_split, load_vocab) -------------

FORMATS = sorted(EXPORTERS)


def tree(folder: Path) -> dict[str, bytes] | None:
    """Every file under ``folder`` with its bytes (None when there is no folder)."""
    if not folder.exists():
        return None
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_replaced_dict_is_refused_before_anything_is_written(synthetic: Path, tmp_path: Path, fmt: str) -> None:
    src = tmp_path / "src"
    shutil.copytree(synthetic, src)
    done = tmp_path / "done"  # an export of the intact folder, to be resumed
    export(str(src), fmt, str(done))
    before = tree(done)
    lines = (src / "dict.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[0], lines[1] = lines[1], lines[0]  # same symbols and size: the ids now decode to other pieces
    (src / "dict.txt").write_text("".join(lines), encoding="utf-8")
    dest = tmp_path / "new"
    proc = run_cli("export", str(src), "--format", fmt, "--to", str(dest), check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"synprep: error: {src / 'dict.txt'}: vocabulary sha256 ")
    assert proc.stderr.count("\n") == 1 and not dest.exists()
    with pytest.raises(InputError, match="vocabulary sha256") as e:
        export(str(src), fmt, str(done))
    assert e.value.path == str(src / "dict.txt") and tree(done) == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_shard_entry_outside_the_folder_is_never_followed(synthetic: Path, tmp_path: Path, fmt: str) -> None:
    src = tmp_path / "src"
    shutil.copytree(synthetic, src)
    evil = tmp_path / "evil.h5"
    shutil.move(src / "valid.00000.h5", evil)  # the same bytes: its size and sha256 match the entry
    raw = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    for name in ("../evil.h5", str(evil)):
        raw["splits"]["valid"]["shards"][0]["file"] = name
        (src / "manifest.json").write_text(json.dumps(raw), encoding="utf-8")
        dest = tmp_path / "out"
        with pytest.raises(InputError, match=f"shard file '{name}' is not a file name inside the folder") as e:
            export(str(src), fmt, str(dest), ["valid"])
        assert e.value.path == str(src / "manifest.json") and not dest.exists()
    proc = run_cli("export", str(src), "--format", fmt, "--to", str(dest), check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "is not a file name inside" in proc.stderr
    assert not dest.exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_shard_changed_after_its_export_is_refused(synthetic: Path, tmp_path: Path, fmt: str) -> None:
    src = tmp_path / "src"
    shutil.copytree(synthetic, src)
    dest = tmp_path / "done"
    export(str(src), fmt, str(dest))
    before = tree(dest)
    victim = src / "train.00001.h5"
    with h5py.File(victim, "r+") as f:  # every target boundary one piece later; still a valid layout
        o = f["offsets/tgt"]
        o[1:-1] = o[1:-1] + 1
    for to in (dest, tmp_path / "new"):  # resumed (every unit recorded as done) and fresh
        with pytest.raises(InputError) as e:
            export(str(src), fmt, str(to))
        assert e.value.path == str(victim) and "manifest.json" in e.value.reason
    assert tree(dest) == before and not (tmp_path / "new").exists()


def test_a_shard_naming_another_vocabulary_is_refused(synthetic: Path, tmp_path: Path) -> None:
    import dataclasses

    from synprep.shards import Manifest
    from synprep.signature import file_sha256

    src = tmp_path / "src"
    shutil.copytree(synthetic, src)
    shard = src / "valid.00000.h5"
    with h5py.File(shard, "r+") as f:
        f.attrs["vocab_sha256"] = "f" * 64
    m = Manifest.load(src)  # the manifest lists the shard as it is now: only the vocabulary is wrong
    entry = m.splits["valid"]
    entry.shards[0] = dataclasses.replace(entry.shards[0], sha256=file_sha256(shard), bytes=shard.stat().st_size)
    m.save(src)
    with pytest.raises(InputError, match="vocab_sha256 attribute ffffffffffff… is not manifest.json's") as e:
        export(str(src), "factors", str(tmp_path / "f"), ["valid"])
    assert e.value.path == str(shard) and not (tmp_path / "f").exists()


def test_fairseq_never_copies_a_dict_replaced_during_the_export(synthetic: Path, tmp_path: Path, monkeypatch) -> None:
    src = tmp_path / "src"
    shutil.copytree(synthetic, src)
    exporter = get_exporter("fairseq")
    real = exporter.write_unit

    def replace_dict_after(self, unit, files):
        n = real(self, unit, files)
        text = (src / "dict.txt").read_text(encoding="utf-8").splitlines(keepends=True)
        (src / "dict.txt").write_text("".join([text[1], text[0], *text[2:]]), encoding="utf-8")
        return n

    monkeypatch.setattr(exporter, "write_unit", replace_dict_after)
    dest = tmp_path / "fs"
    with pytest.raises(InputError, match="changed during the export") as e:
        export(str(src), "fairseq", str(dest), ["valid"])
    assert e.value.path == str(src / "dict.txt") and not list(dest.glob("dict.*.txt"))
