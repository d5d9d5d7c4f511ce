"""Running a finished command again changes nothing.

* ``synprep export --format hf`` again into the same folder: every unit is skipped, and the dataset
  card (``README.md``) is not rewritten (with "0 names" for the deprel/upos label lists).
* ``synprep pipeline`` again on a finished split: ``text/SPLIT.dropped.tsv`` is not rewritten
  (a new file would stop a finished split from resuming in a read-only folder, docs/hardening.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders import small_folder, write_corpus
from helpers import run_cli

from synprep.types import DEPRELS, UPOS_TAGS


def test_a_second_hf_export_keeps_the_label_lists(tmp_path):
    pytest.importorskip("pyarrow")
    src, dest = tmp_path / "shards", tmp_path / "hf"
    small_folder(src, drop_every=0)
    run_cli("export", str(src), "--format", "hf", "--to", str(dest))
    card = (dest / "README.md").read_text()
    assert f"UD relation ({len(DEPRELS)} names)" in card and f"universal POS ({len(UPOS_TAGS)} names)" in card
    again = run_cli("export", str(src), "--format", "hf", "--to", str(dest))
    assert "already done, skipped" in again.stderr
    assert (dest / "README.md").read_text() == card


def snapshot(folder: Path) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*")
            if p.is_file() and not p.name.endswith(".lock")}


def test_a_finished_pipeline_split_resumes_in_a_read_only_folder(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_corpus(corpus, "train", 40, 1)
    tgt = (corpus / "train.tgt").read_text().splitlines()
    tgt[4] = ""  # a pair the cleaning drops: dropped.tsv has a row
    (corpus / "train.raw").write_text("\n".join(tgt) + "\n")
    from synprep.text.bpe import learn_bpe

    learn_bpe([corpus / "train.tgt"], 20, corpus / "codes")
    out = tmp_path / "out"
    args = ["pipeline", "--tgt", str(corpus / "train.raw"), "--parser", "conllu", "--conllu",
            str(corpus / "train.conllu"), "-s", "de", "-t", "en", "--out", str(out), "--codes", str(corpus / "codes"),
            "--shard-size", "16"]
    run_cli(*args)
    assert "\tempty\t" in (out / "text" / "train.dropped.tsv").read_text()
    before = snapshot(out)
    read_only = os.geteuid() != 0  # root writes into read-only folders anyway: the inodes tell
    folders = [out, out / "text"]
    if read_only:
        for d in folders:
            d.chmod(0o555)
    try:
        proc = run_cli(*args, check=False)
    finally:
        for d in folders:
            d.chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    assert "check OK" in proc.stderr
    assert snapshot(out) == before  # no file rewritten, dropped.tsv included
