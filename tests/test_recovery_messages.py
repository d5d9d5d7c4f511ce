"""What a user sees on an empty split's report and on a manifest that cannot be read."""

from __future__ import annotations

import json

from builders import write_corpora
from helpers import run_cli
from test_lock import shard_args

from synprep.shards import check_dir
from synprep.shards.synthetic import write_folder


def test_the_report_of_a_split_without_pairs_prints_no_warnings(tmp_path):
    write_folder(tmp_path / "out", {"train": 0})
    proc = run_cli("report", str(tmp_path / "out"), "-o", str(tmp_path / "r.html"))
    assert proc.stderr.splitlines() == [f"synprep report: {tmp_path / 'r.html'} "
                                        f"({proc.stderr.split('(')[1].split(';')[0]}; 1 split(s), 0 pairs, 0 flag(s))"]


def test_a_cut_off_manifest_names_the_way_back_and_that_way_works(tmp_path):
    (tmp_path / "corpus").mkdir()
    corpus = write_corpora(tmp_path / "corpus", {"train": 30})
    out = tmp_path / "out"
    run_cli(*shard_args(corpus, "train", out))
    whole = (out / "manifest.json").read_text()
    (out / "manifest.json").write_text(whole[:200])  # a copy cut off
    recovery = ("remove it and run the commands that wrote the folder's splits again, with the same arguments: they "
                "write the manifest and the shards anew")
    for args in (shard_args(corpus, "train", out), ["show", str(out), "--split", "train", "--index", "0"]):
        proc = run_cli(*args, check=False)
        assert proc.returncode == 2
        error = proc.stderr.strip().splitlines()[-1]
        assert error.startswith(f"synprep: error: {out / 'manifest.json'}: manifest is not JSON (")
        assert error.endswith(recovery)
    check = run_cli("check", str(out), check=False)
    assert recovery in check.stdout + check.stderr
    (out / "manifest.json").unlink()
    run_cli(*shard_args(corpus, "train", out))
    assert check_dir(out).ok and json.loads((out / "manifest.json").read_text()) == json.loads(whole)
