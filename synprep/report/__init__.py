"""``synprep report``: one self-contained HTML page (and JSON numbers) about a shard folder.

:func:`build_report` collects the numbers: per split, through the verified reader, shard by shard
(:mod:`synprep.report.stats`: memory does not grow with the corpus), the UD reference comparison
(:mod:`synprep.report.ud`), the flags (:mod:`synprep.report.flags`) and, with ``against``, the
agreement with another folder made from the same lines (:mod:`synprep.report.agreement`).
:func:`write_report` renders the page (:mod:`synprep.report.html`) with figures embedded as base64
PNG (:mod:`synprep.report.figures`; without matplotlib the page carries the tables and says how to
get the figures) and writes both files atomically. docs/report.md describes the page and every key.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from synprep import extras
from synprep.errors import InputError
from synprep.report.html import render
from synprep.report.ud import compare, treebank_counts, treebank_files
from synprep.textio import atomic_write

log = logging.getLogger("synprep")

#: example pairs drawn (from the first split, sentences of EXAMPLE_WORDS words)
EXAMPLES = 3
EXAMPLE_WORDS = (6, 18)
#: the message the page and the log give without matplotlib
NO_PLOT = "figures need matplotlib: pip install 'synprep[plot]'"


def _order(names: list[str]) -> list[str]:
    first = [n for n in ("train", "valid", "test") if n in names]
    return first + sorted(n for n in names if n not in first)


def build_report(folder: str | os.PathLike, *, splits: list[str] | None = None, against: str | os.PathLike | None = None,
                 ud: str | os.PathLike | None = None, languages: bool = True) -> dict[str, Any]:
    """Every number of the report of ``folder`` (JSON-ready; docs/report.md lists the keys).

    Args:
        folder: a shard folder (``manifest.json``, shards, ``dict.txt``).
        splits: the splits to report (default: every split the manifest lists, train/valid/test first).
        against: another folder made from the same lines: parse agreement per split (CoNLL 2018 scorer).
        ud: a UD CoNLL-U file or folder for the reference distributions (default ``../shared/data/ud``).
        languages: run the detected-language check (py3langid).

    Raises:
        InputError: no such folder, a damaged folder (the verified reader's one-line error), a split the
            manifest does not list, an ``against`` folder without one of the splits.
    """
    # imported here: loads h5py, not needed to import this module
    from synprep.report.flags import sample_text, split_flags
    from synprep.report.stats import split_stats
    from synprep.shards.manifest import Manifest
    from synprep.shards.reader import load_vocab, open_split

    start = time.perf_counter()
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("no such output folder", str(folder))
    manifest = Manifest.load(folder)
    names = _order(list(manifest.splits))
    if splits:
        missing = [s for s in splits if s not in manifest.splits]
        if missing:
            raise InputError(f"split {missing[0]!r} is not in manifest.json (splits: {', '.join(names) or 'none'})",
                             str(folder / "manifest.json"))
        names = list(dict.fromkeys(splits))
    if not names:
        raise InputError("manifest.json lists no split", str(folder / "manifest.json"))
    symbols: list[str] | None = None
    out: dict[str, Any] = {"folder": str(folder), "signature": manifest.signature, "vocab": manifest.vocab,
                           "splits": {}, "flags": []}
    for name in names:
        readers = open_split(folder, name, manifest=manifest)
        if symbols is None and readers:
            vocab = load_vocab(folder, readers[0].attrs)
            symbols = [vocab[i] for i in range(len(vocab))]
        out["splits"][name] = split_stats(folder, name, manifest, symbols or [])
    first = out["splits"][names[0]]
    src_lang = str(first.get("src_lang") or (manifest.config or {}).get("src_lang") or "")
    ref_files = treebank_files(src_lang, ud)
    if ref_files:
        ref = treebank_counts(ref_files)
        out["ud_reference"] = {"files": ref["files"], "words": ref["words"], "upos": ref["upos"].tolist(),
                               "deprel": ref["deprel"].tolist()}
        for s in out["splits"].values():
            s["ud"] = {**compare(s["upos"], s["deprel"], ref), "files": ref["files"]}
    else:
        out["ud_reference"] = None
    train = out["splits"].get("train")
    if train is None and "train" in manifest.splits and names != ["train"]:
        train = {"config": _split_config(folder, "train", manifest)}
    for name, s in out["splits"].items():
        sample = sample_text(folder, name, manifest, {**s, "config": s.get("config")})
        out["flags"] += split_flags(name, s, sample, train if name != "train" else None, languages=languages)
    if against is not None:
        out["against"] = folder_agreement(folder, Path(against), names, manifest)
    out["examples"] = pick_examples(folder, names[0], manifest)
    out["seconds"] = round(time.perf_counter() - start, 3)
    return out


def _split_config(folder: Path, split: str, manifest: Any) -> dict[str, Any]:
    # imported here: loads h5py, not needed to import this module
    from synprep.shards.reader import open_split

    readers = open_split(folder, split, manifest=manifest)
    return dict(readers[0].attrs.get("config") or {}) if readers else {}


def folder_agreement(folder: Path, other: Path, names: list[str], manifest: Any) -> dict[str, Any]:
    """Agreement of each split with ``other``'s (see :mod:`synprep.report.agreement`)."""
    # imported here: loads h5py, not needed to import this module
    from synprep.report.agreement import split_agreement
    from synprep.shards.manifest import Manifest

    if not other.is_dir():
        raise InputError("no such output folder (--against)", str(other))
    om = Manifest.load(other)
    common = [n for n in names if n in om.splits]
    if not common:
        raise InputError(f"has none of the splits {', '.join(names)} (--against)", str(other))
    return {"folder": str(other), "signature": om.signature,
            "splits": {n: split_agreement(folder, other, n, manifest, om) for n in common}}


def pick_examples(folder: Path, split: str, manifest: Any, k: int = EXAMPLES) -> list[list[Any]]:
    """``[[split, index]]``: up to ``k`` pairs of ``split`` with 6-18 source words, spread over the split."""
    # imported here: loads h5py, not needed to import this module
    from synprep.shards.reader import open_split

    readers = open_split(folder, split, manifest=manifest)
    if not readers:
        return []
    w = np.concatenate([np.diff(r.offsets["word"]) for r in readers])
    cand = np.flatnonzero((w >= EXAMPLE_WORDS[0]) & (w <= EXAMPLE_WORDS[1]))
    if not cand.size:
        cand = np.arange(w.size)
    picks = sorted({int(cand[int(q * (cand.size - 1))]) for q in np.linspace(0.1, 0.9, k)})
    return [[split, i] for i in picks]


def write_report(report: dict[str, Any], html_path: str | os.PathLike, json_path: str | os.PathLike | None = None,
                 *, figures: bool = True) -> dict[str, Any]:
    """Render the page to ``html_path`` and the numbers to ``json_path`` (both atomically).

    Returns:
        ``{"figures": bool, "bytes": int}``; without matplotlib the page has its tables and
        :data:`NO_PLOT` where the figures would be (a warning says so too).
    """
    figs: dict[str, Any] = {}
    drawn = figures and extras.available("matplotlib")
    if figures and not drawn:
        log.warning("warning: %s (the page has the numbers and tables only)", NO_PLOT)
    if drawn:
        # imported here: synprep.report.figures imports this package
        from synprep.report import figures as f

        figs = {"lengths": f.lengths_figure(report), "labels": f.labels_figure(report),
                "syntax": f.syntax_figure(report), "agreement": f.agreement_figure(report),
                "examples": f.example_figures(report["folder"], [tuple(e) for e in report["examples"]])}
    page = render(report, figs, None if drawn else NO_PLOT)
    with atomic_write(html_path) as fh:
        fh.write(page)
    if json_path is not None:
        with atomic_write(json_path) as fh:
            fh.write(json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return {"figures": drawn, "bytes": len(page.encode("utf-8"))}
