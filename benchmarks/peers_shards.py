"""bench_peers.py's rows on a shard folder: ``export --format fairseq`` beside ``fairseq-preprocess``, and
``check`` / reading the shards (no peer does the same: synprep's figure alone).

The folder holds synthetic records of IWSLT14 test's shape (:mod:`synprep.shards.synthetic`; building it is
not timed); the text fairseq-preprocess reads is those records' pieces, so both sides binarize the same
ids with the same dictionary (synprep's export writes it) and their ``.bin``/``.idx`` are compared byte
for byte. fairseq runs from its own venv (``pipelines/fairseq.mk``, ``$SYNPREP_FAIRSEQ_VENV``); without it
the export row says it was not measured.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import _provenance as prov
from bench_peers import ENV, PY, _command, _note, side, synprep

from synprep.shards import SplitReader, open_split
from synprep.shards.synthetic import write_folder

PAIRS = {False: 6750, True: 67500}
REQUIREMENTS = prov.ROOT / "pipelines" / "fairseq-requirements.txt"


def fairseq_venv() -> Path:
    """$SYNPREP_FAIRSEQ_VENV, else the venv pipelines/fairseq.mk builds for the current requirements."""
    if os.environ.get("SYNPREP_FAIRSEQ_VENV"):
        return Path(os.environ["SYNPREP_FAIRSEQ_VENV"])
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    return Path.home() / ".cache" / "synprep" / f"venv-fairseq-{digest}"


def folder(tmp: Path, full: bool) -> tuple[Path, int]:
    """The synthetic folder (built once per run) and its pairs; text of each side beside it."""
    out, n = tmp / "shards", PAIRS[full]
    if not out.exists():
        write_folder(out, {"test": n}, shard_size=10_000, vocab_size=10_000)
        _write_text(out, tmp)
    return out, n


def _write_text(out: Path, tmp: Path) -> None:
    """The pieces of every pair as text (``text.de`` the source side, ``text.en`` the target side)."""
    words = ["<s>", "<pad>", "</s>", "<unk>"]  # dict.txt lists the pieces after fairseq's four specials
    words += [ln.split(" ", 1)[0] for ln in (out / "dict.txt").read_text(encoding="utf-8").splitlines()]
    with open(tmp / "text.de", "w", encoding="utf-8") as src, open(tmp / "text.en", "w", encoding="utf-8") as tgt:
        for rec in SplitReader(open_split(out, "test")):
            src.write(" ".join(words[i] for i in rec.src_ids.tolist()) + "\n")
            tgt.write(" ".join(words[i] for i in rec.tgt_ids.tolist()) + "\n")


def row_export(tmp: Path, size: dict, repeat: int, full: bool) -> dict:
    venv = fairseq_venv()
    shards, n = folder(tmp, full)
    stage, command = "export: fairseq binaries", _command("export", full)
    data = f"synthetic records of IWSLT14 test's shape, {n} pairs, vocabulary 10000"
    if not (venv / ".synprep-fairseq-ready").exists():
        return {"stage": stage, "device": "cpu", "command": command, "result": None,
                "note": f"not measured: no fairseq venv at {venv} (make fairseq-venv)"}
    dest, pre = tmp / "export", tmp / "preprocess"
    shutil.rmtree(dest, ignore_errors=True)
    prov.run_once(synprep("export", str(shards), "--format", "fairseq", "--to", str(dest)), env=ENV)
    fenv = {**ENV, "PYTHONPATH": ""}
    preprocess = [str(venv / "bin" / "fairseq-preprocess"), "--source-lang", "de", "--target-lang", "en",
                  "--testpref", str(tmp / "text"), "--srcdict", str(dest / "dict.en.txt"),
                  "--tgtdict", str(dest / "dict.de.txt"), "--destdir", str(pre), "--workers", "1",
                  "--dataset-impl", "mmap"]
    best = {"synprep": prov.Run(), "peer": prov.Run()}
    for _ in range(repeat):  # each side writes a fresh folder
        shutil.rmtree(dest, ignore_errors=True)
        shutil.rmtree(pre, ignore_errors=True)
        got = prov.interleaved({
            "synprep": side(synprep("export", str(shards), "--format", "fairseq", "--to", str(dest))),
            "peer": {"cmd": preprocess, "env": fenv},
        }, 1)
        for k, r in got.items():
            best[k].cpu_s, best[k].peak_rss_mb = min(best[k].cpu_s, r.cpu_s), max(best[k].peak_rss_mb, r.peak_rss_mb)
    names = [f"test.de-en.{lang}.{ext}" for lang in ("en", "de") for ext in ("bin", "idx")]
    identical = all((dest / x).read_bytes() == (pre / x).read_bytes() for x in names)
    sp, pp = best["synprep"].cpu_s, best["peer"].cpu_s
    result = prov.peer_result(unit="pairs/s", synprep=n / sp, peer=n / pp,
                              peer_name="fairseq-preprocess --workers 1 --dataset-impl mmap (same dictionaries)",
                              identical=identical, cpu_time_ratio=sp / pp,
                              synprep_peak_rss_mb=best["synprep"].peak_rss_mb, peer_peak_rss_mb=best["peer"].peak_rss_mb)
    versions = {**prov.versions("h5py", "numpy"), **prov.versions("fairseq-fixed", "torch", python=str(venv / "bin" / "python"))}
    return prov.make_row(stage=stage, command=command, data=data, result=result, versions=versions,
                         note=_note(repeat, "; synprep also writes the syntax fields fairseq's plugin reads; "
                                            "identical: the four .bin/.idx files"))


def row_shards(tmp: Path, size: dict, repeat: int, full: bool) -> dict:
    shards, n = folder(tmp, full)
    read = [PY, "-c", "import sys\nfrom synprep.shards import iter_pairs\n"
            "n = sum(1 for _ in iter_pairs(sys.argv[1], 'test'))\nassert n > 0", str(shards)]
    best = prov.interleaved({"check": side(synprep("check", str(shards))), "read": side(read)}, repeat)
    result = {"check_pairs_per_s": round(n / best["check"].cpu_s), "read_pairs_per_s": round(n / best["read"].cpu_s),
              "check_peak_rss_mb": round(best["check"].peak_rss_mb), "read_peak_rss_mb": round(best["read"].peak_rss_mb)}
    return prov.make_row(stage="shards: check and read", command=_command("shards", full),
                         data=f"synthetic records of IWSLT14 test's shape, {n} pairs, shards of 10000", result=result,
                         versions=prov.versions("h5py", "numpy"),
                         note=_note(repeat, "; whole processes, start-up included; no peer does this work"))


ROWS = {"export": row_export, "shards": row_shards}
