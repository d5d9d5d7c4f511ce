"""``synprep export --format fairseq`` read and trained on by REAL fairseq (fairseq-fixed 0.12.3.1).

fairseq runs in its own Python 3.11 venv (``make fairseq-venv``, pipelines/fairseq.mk: built once per
requirements file and reused; ``make test`` builds it first). Locally the tests skip when that venv
is missing; under CI (``CI=true``) they fail, so CI can never pass by skipping them.

Shown here: the ``.bin``/``.idx`` synprep writes are byte-identical to what ``fairseq-preprocess``
writes for the same BPE text with the same dictionary; fairseq's task ``syntax_translation`` (the
plugin) reads every pair's ids and syntax fields as synprep stored them and pads them like the
source; ``fairseq-train`` runs 2 updates on the export on the CPU.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT, missing, run_cli

from synprep.features.parents import parent_positions
from synprep.shards import SplitReader, open_split
from tests.iwslt_sample import N_LINES, Sample, iwslt_sample

pytestmark = pytest.mark.slow

REQUIREMENTS = ROOT / "pipelines" / "fairseq-requirements.txt"


def fairseq_venv_path() -> Path:
    """The venv pipelines/fairseq.mk builds: $SYNPREP_FAIRSEQ_VENV, else ~/.cache/synprep/venv-fairseq-<hash>."""
    if os.environ.get("SYNPREP_FAIRSEQ_VENV"):
        return Path(os.environ["SYNPREP_FAIRSEQ_VENV"])
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    return Path.home() / ".cache" / "synprep" / f"venv-fairseq-{digest}"


@pytest.fixture(scope="module")
def venv() -> Path:
    path = fairseq_venv_path()
    if not (path / ".synprep-fairseq-ready").exists():
        missing(f"no fairseq venv at {path}: run `make fairseq-venv` (make test does)")
    return path


@pytest.fixture(scope="module")
def sample(tmp_path_factory, shared_data: Path, stanza_dir: Path) -> Sample:
    return iwslt_sample(tmp_path_factory, shared_data, stanza_dir)


@pytest.fixture(scope="module")
def exported(sample: Sample, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("fairseq") / "export"
    proc = run_cli("export", str(sample.shards), "--format", "fairseq", "--to", str(dest))
    assert proc.stdout == f"synprep export: fairseq train: {N_LINES} pairs -> {dest}\n"
    return dest


def fairseq(venv: Path, *args: str, timeout: float = 400, input: str | None = None) -> subprocess.CompletedProcess:
    """``args`` run from the fairseq venv (one thread, none of synprep's PYTHONPATH), ``input`` on stdin;
    asserts exit status 0."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": ""}
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=venv, input=input)
    assert proc.returncode == 0, f"{args[0]} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def test_binaries_equal_fairseq_preprocess(venv: Path, sample: Sample, exported: Path, tmp_path: Path) -> None:
    out = tmp_path / "pre"
    fairseq(venv, venv / "bin" / "fairseq-preprocess", "--source-lang", "en", "--target-lang", "de",
            "--trainpref", str(sample.src.with_suffix("")), "--srcdict", exported / "dict.en.txt",
            "--tgtdict", exported / "dict.de.txt", "--destdir", out, "--workers", "1",
            "--dataset-impl", "mmap")
    for name in ("train.en-de.en.bin", "train.en-de.en.idx", "train.en-de.de.bin", "train.en-de.de.idx"):
        assert (exported / name).read_bytes() == (out / name).read_bytes(), name


def test_fairseq_task_reads_synprep_ids_and_syntax(venv: Path, sample: Sample, exported: Path, tmp_path: Path) -> None:
    out = tmp_path / "read.json"
    fairseq(venv, venv / "bin" / "python", ROOT / "tests" / "fairseq_read.py", exported, "en", "de", "train", out)
    got = json.loads(out.read_text())
    recs = list(SplitReader(open_split(sample.shards, "train")))
    assert got["pad"] == 1 and got["eos"] == 2 and len(got["items"]) == len(recs) == N_LINES
    for item, r in zip(got["items"], recs, strict=True):
        assert item["source"] == r.src_ids.tolist() + [2] and item["target"] == r.tgt_ids.tolist() + [2]
        syn = item["syntax"]
        assert syn["word_index"] == r.word_index.tolist() + [len(r.heads)]
        assert np.allclose(syn["parents"], parent_positions(r.heads, r.word_index, eos=True))
        assert syn["gaps_cnf"] == r.gaps_cnf.tolist() + [2000] and syn["gaps_nary"] == r.gaps_nary.tolist() + [2000]
        for f in ("heads", "deprel", "upos", "sent_start", "ldd_dep", "ldd_head", "ldd_rel"):
            assert syn[f] == getattr(r, f).tolist(), f
        assert np.allclose(syn["ldd_prob"], r.ldd_prob)
    # the collated batch: rows in fairseq's order (longest source first), syntax left-padded like the source
    batch = got["batch"]
    src = np.array(batch["src_tokens"])
    for row, i in enumerate(batch["id"]):
        r = recs[i]
        n = len(r.src_ids) + 1
        assert (src[row, :-n] == 1).all() and src[row, -n:].tolist() == r.src_ids.tolist() + [2]
        wi = np.array(batch["syntax"]["word_index"][row])
        assert wi.shape == src[row].shape and (wi[:-n] == -1).all() and wi[-n:].tolist() == r.word_index.tolist() + [
            len(r.heads)]
        gaps = np.array(batch["syntax"]["gaps_cnf"][row])
        assert len(gaps) == src.shape[1] - 1 and gaps[-(n - 1):].tolist() == r.gaps_cnf.tolist() + [2000]
    assert batch["dtypes"]["parents"] == "torch.float32" and batch["dtypes"]["heads"] == "torch.int64"


def test_fairseq_train_runs_two_updates(venv: Path, exported: Path, tmp_path: Path) -> None:
    proc = fairseq(venv, venv / "bin" / "fairseq-train", exported, "--user-dir", exported / "synprep_fairseq",
                   "--task", "syntax_translation", "-s", "en", "-t", "de", "--arch", "transformer",
                   "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32",
                   "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
                   "--encoder-attention-heads", "2", "--decoder-attention-heads", "2", "--optimizer", "adam",
                   "--lr", "0.001", "--max-tokens", "400", "--max-update", "2", "--cpu", "--num-workers", "0",
                   "--disable-validation", "--no-save", "--save-dir", tmp_path / "ckpt", "--log-format", "simple",
                   "--log-interval", "1", "--seed", "1", "--syntax-fields", "word_index,gaps_cnf,heads")
    log = proc.stdout + proc.stderr
    assert "task: SyntaxTranslationTask" in log
    assert "num_updates 2" in log or "num_updates=2" in log, log[-3000:]
    assert "done training" in log


def test_fairseq_task_reads_both_sides_of_a_same_language_pair(venv: Path, tmp_path_factory, stanza_dir: Path,
                                                               tmp_path: Path) -> None:
    """-s en -t en: fairseq names both sides ``train.en-en.en``; the export names them en_src/en_tgt."""
    from tests.export_folders import same_language_folder

    folder = same_language_folder(tmp_path_factory, stanza_dir)
    dest = tmp_path / "export"
    proc = run_cli("export", str(folder), "--format", "fairseq", "--to", str(dest))
    assert "-s en_src -t en_tgt" in proc.stderr
    out = tmp_path / "read.json"
    fairseq(venv, venv / "bin" / "python", ROOT / "tests" / "fairseq_read.py", dest, "en_src", "en_tgt", "train", out)
    got = json.loads(out.read_text())
    recs = list(SplitReader(open_split(folder, "train")))
    assert len(got["items"]) == len(recs) > 20
    for item, r in zip(got["items"], recs, strict=True):
        assert item["source"] == r.src_ids.tolist() + [2] and item["target"] == r.tgt_ids.tolist() + [2]
        assert item["syntax"]["word_index"] == r.word_index.tolist() + [len(r.heads)]
    assert any(item["source"] != item["target"] for item in got["items"])
