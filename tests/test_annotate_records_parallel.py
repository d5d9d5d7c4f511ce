"""annotate's features are computed in the -j workers, chunk by chunk, and joined in
input order: the folder is the same bytes with any -j or backend, and an error in a worker's chunk still
names the file and the line, exit 2, no shard written.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from builders import write_corpus
from helpers import run_cli
from test_lock import files

from synprep.errors import InputError
from synprep.shards import check_dir


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("corpus")
    write_corpus(d, "train", 600, 7)
    blocks = (d / "train.conllu").read_text().split("\n\n")
    first = blocks[436].split("\n")
    cols = first[0].split("\t")
    cols[1] = "zzz"  # line 437's first word is not the word its pieces spell
    blocks[436] = "\n".join(["\t".join(cols), *first[1:]])
    (d / "bad.conllu").write_text("\n\n".join(blocks))
    return d


def args(corpus: Path, out: Path, conllu: str, *extra: str) -> list[str]:
    return ["annotate", "--src", str(corpus / "train.src"), "--tgt", str(corpus / "train.tgt"), "--parser", "conllu",
            "--conllu", str(corpus / conllu), "-s", "de", "-t", "en", "--out", str(out), "--split", "train",
            "--shard-size", "250", "--no-language-check", *extra]  # synthetic words: in no language


def test_features_in_workers_are_the_same_bytes_with_any_jobs(corpus, tmp_path):
    runs = {"j1": ("-j", "1"), "j2": ("-j", "2"), "j3-threading": ("-j", "3", "--backend", "threading")}
    got = {}
    for name, extra in runs.items():
        out = tmp_path / name
        run_cli(*args(corpus, out, "train.conllu", *extra))
        assert check_dir(out).ok
        got[name] = files(out)
    assert len([k for k in got["j1"] if k.endswith(".h5")]) == 3  # 600 lines, 250 per shard
    assert got["j2"] == got["j1"]
    assert got["j3-threading"] == got["j1"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_error_in_a_workers_chunk_names_the_file_and_line(corpus, tmp_path, jobs):
    out = tmp_path / "out"
    proc = run_cli(*args(corpus, out, "bad.conllu", "-j", jobs), check=False)
    assert proc.returncode == 2
    assert f"{corpus / 'train.src'}:437: BPE words differ from the parsed words at word 1" in proc.stderr
    shards = sorted(p.name for p in out.rglob("*.h5"))
    assert len(shards) == 1  # lines 1-250; line 437 is in the second shard, which is not written


def test_an_input_error_crosses_processes_with_its_file_and_line():
    e = pickle.loads(pickle.dumps(InputError("bad word", "corpus.de", 12)))
    assert (e.reason, e.path, e.line, str(e)) == ("bad word", "corpus.de", 12, "corpus.de:12: bad word")
