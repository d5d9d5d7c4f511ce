"""What ``pip install synprep`` gives, run as its user runs it: the console script of a fresh virtual environment
with the core install only (no extras, no development tools), on real data.

Run by ``make install-check`` (pipelines/release.mk), which builds that environment and names it in
``SYNPREP_CORE_VENV``; not collected by a plain ``pytest`` run (the file name is not ``test_*.py``). Every command
of the main job runs: ``pipeline`` (three splits), ``annotate``, ``parse``, ``check``, ``show``, ``report``,
``export --format fairseq``, ``train`` and ``translate``; each extra's feature without its extra is the one-line
``pip install 'synprep[X]'`` message, exit status 2, and no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import SAMPLE_DATA, STANZA_DIR, missing

VENV = Path(os.environ.get("SYNPREP_CORE_VENV", "build/install-check/core")).resolve()


def synprep(*args: object, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess:
    """The installed console script ``VENV/bin/synprep ARGS`` (run outside the checkout: nothing imports the
    source tree)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run([str(VENV / "bin" / "synprep"), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    if ok:
        assert proc.returncode == 0, f"synprep {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    if not (VENV / "bin" / "synprep").exists():
        missing(f"no core install at {VENV}: run make install-check")
    probe = subprocess.run([str(VENV / "bin" / "python"), "-c", "import synprep, sys; print(synprep.__file__)"],
                           capture_output=True, text=True, cwd="/")
    assert str(VENV) in probe.stdout, f"synprep is not imported from the install: {probe.stdout}{probe.stderr}"
    return tmp_path_factory.mktemp("installed")


@pytest.fixture(scope="module")
def folder(work: Path, stanza_dir: Path) -> Path:
    """sample_data de→en through ``synprep pipeline``, train/valid/test, with the small offline stanza models."""
    out = work / "data"
    for split in ("train", "valid", "test"):
        proc = synprep("pipeline", "--split", split, "--src", SAMPLE_DATA / f"{split}.de", "--tgt",
                       SAMPLE_DATA / f"{split}.en", "-s", "de", "-t", "en", "--out", out, "--lowercase", "--merges", "500",
                       "--shard-size", "200", "--no-cache", "--stanza-dir", stanza_dir, "--stanza-package", "synprep",
                       "-j", "1", cwd=work)
        assert proc.stderr.strip().splitlines()[-1].startswith("synprep:0.1.0|"), proc.stderr
    return out


def test_the_core_install_has_no_extra(work: Path) -> None:
    code = "import importlib.util as u; print([m for m in ('matplotlib', 'pyarrow', 'datasets', 'dask', 'spacy', " \
           "'mkdocs', 'pytest') if u.find_spec(m)])"
    proc = subprocess.run([str(VENV / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=work)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_main_job_check_show_report(folder: Path, work: Path) -> None:
    assert "OK" in synprep("check", folder, cwd=work).stdout
    shown = json.loads(synprep("show", folder, "--split", "valid", "--index", "3", "--json", cwd=work).stdout)
    assert shown["index"] == 3 and len(shown["heads"]) == len(shown["words"]) > 0
    proc = synprep("report", folder, "-o", work / "report.html", cwd=work)
    page = (work / "report.html").read_text(encoding="utf-8")
    assert "<html" in page and "train" in page, proc.stderr


def test_parse_and_annotate(folder: Path, work: Path, stanza_dir: Path) -> None:
    words = folder / "text" / "test.tok.de"
    proc = synprep("parse", "-l", "de", "-i", words, "-o", work / "test.conllu", "--no-cache", "--stanza-dir",
                   stanza_dir, "--stanza-package", "synprep", cwd=work)
    conllu = (work / "test.conllu").read_text(encoding="utf-8").splitlines()
    lines = {int(x.split(" = ")[1]) for x in conllu if x.startswith("# line = ")}  # a line may hold two sentences
    assert lines == set(range(1, len(words.read_text(encoding="utf-8").splitlines()) + 1)), proc.stderr
    out = work / "annotated"
    proc = synprep("annotate", "--split", "test", "--src", folder / "text" / "test.bpe.de", "--tgt",
                   folder / "text" / "test.bpe.en", "--parse-src", words, "-s", "de", "-t", "en", "--out", out,
                   "--vocab-split", "test", "--no-cache", "--stanza-dir", stanza_dir, "--stanza-package", "synprep",
                   cwd=work)
    assert "check OK" in proc.stderr and (out / "manifest.json").is_file()


def test_export_fairseq(folder: Path, work: Path) -> None:
    dest = work / "fairseq"
    synprep("export", folder, "--format", "fairseq", "--to", dest, cwd=work)
    assert (dest / "train.de-en.de.bin").is_file() and (dest / "dict.de.txt").is_file()


def test_train_and_translate(folder: Path, work: Path) -> None:
    run = work / "run"
    proc = synprep("train", "--shards", folder, "--preset", "tiny", "--max-steps", "20", "--out", run, cwd=work)
    assert (run / "checkpoint_last.pt").is_file()
    assert "gates.png not drawn: matplotlib is not installed (pip install 'synprep[plot]')" in proc.stderr
    hyp = work / "hyp"
    synprep("translate", "--checkpoint", run / "checkpoint_last.pt", "--shards", folder, "--split", "test", "-o", hyp,
            cwd=work)
    assert len(hyp.read_text(encoding="utf-8").splitlines()) == 40


def _one_line_extra(proc: subprocess.CompletedProcess, extra: str) -> None:
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) >= 1, proc.stderr
    assert err[-1].startswith("synprep: error: ") and f"pip install 'synprep[{extra}]'" in err[-1], proc.stderr


@pytest.mark.parametrize(("extra", "args"), [
    ("plot", lambda f, w: ("show", f, "--index", "0", "--png", w / "pair.png")),
    ("parquet", lambda f, w: ("export", f, "--format", "parquet", "--to", w / "pq")),
    ("hf", lambda f, w: ("export", f, "--format", "hf", "--to", w / "hf")),
    ("dask", lambda f, w: ("pipeline", "--split", "valid2", "--src", SAMPLE_DATA / "valid.de", "--tgt",
                           SAMPLE_DATA / "valid.en", "-s", "de", "-t", "en", "--out", f, "--backend", "dask",
                           "--scheduler", "tcp://127.0.0.1:1", "--stanza-dir", STANZA_DIR, "--stanza-package",
                           "synprep")),
    ("trees", lambda f, w: ("trees", "convert", w / "tiger.xml", "-o", w / "trees.txt")),
    ("spacy", lambda f, w: ("parse", "-l", "ja", "--parser", "spacy", "--spacy-model", "ja_ginza", "-i",
                            f / "text" / "test.tok.de", "--no-cache")),
])
def test_an_extra_missing_is_one_line(folder: Path, work: Path, extra: str, args) -> None:
    (work / "tiger.xml").write_text('<?xml version="1.0" encoding="UTF-8"?>\n<corpus id="c"><body/></corpus>\n')
    _one_line_extra(synprep(*args(folder, work), cwd=work, ok=False), extra)
