"""The tests' one builder of records, shards, folders and input files.

* :func:`record` — one hand-written :class:`~synprep.types.PairRecord` (the SPEC.md examples);
* :func:`random_records`, :func:`make_record` — synthetic valid records, and
  :func:`write_folder`, :func:`write_folder_records` — shard folders (manifest, ``dict.txt``): the
  library's :mod:`synprep.shards.synthetic`, which the benchmarks import too;
* :func:`write_pair` — a split's raw parallel text files; :func:`write_corpus`, :func:`write_corpora` —
  BPE'd text with CoNLL-U parses, the ``shard`` command's input;
* :func:`toy_records`, :func:`toy_shards` — Multi30k lines as toy records and shard folders (random
  trees) for the trainer's tests;
* :func:`small_folder` — the small synthetic folder the hostile-input tests and fuzzers damage;
* :func:`copy_folder`, :func:`reseal` — a fresh copy of a folder to damage, and its manifest made to
  match the damaged files again (so the content checks are reached);
* :func:`one_line` — the one error line of a ``synprep`` child process, asserted.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from synprep.errors import SynprepError
from synprep.shards.manifest import Manifest
from synprep.shards.synthetic import make_record, random_records, write_folder, write_folder_records
from synprep.signature import file_sha256
from synprep.train import toydata
from synprep.types import PairRecord
from synprep.vocab import Vocab

__all__ = ["copy_folder", "make_record", "one_line", "random_records", "record", "reseal", "small_folder",
           "toy_records", "toy_shards", "write_corpora", "write_corpus", "write_folder", "write_folder_records", "write_pair"]


def record(src_ids: Sequence[int], word_index: Sequence[int], heads: Sequence[int], *,
           deprel: Sequence[int] | None = None, gaps: Sequence[int] | None = None, tgt_ids: Sequence[int] = (7, 8),
           ldd: tuple[Sequence, Sequence, Sequence, Sequence] = ((), (), (), ()), line: int = 1) -> PairRecord:
    """One single-sentence pair: ``src_ids`` (T,) pieces, ``word_index`` (T,) 0-based word of each piece,
    ``heads`` (W,) 1-based (0 = root); ``deprel`` (W,) ids (default 0), ``gaps`` (T-1,) piece gaps stored
    as both ``gaps_cnf`` and ``gaps_nary`` (default 1), ``ldd`` the (dep, head, rel, prob) entries."""
    W = len(heads)

    def a(x, dt=np.int64):
        return np.asarray(x, dtype=dt)

    g = a(gaps if gaps is not None else [1] * (len(src_ids) - 1))
    return PairRecord(line=line, src_ids=a(src_ids), tgt_ids=a(tgt_ids), word_index=a(word_index), heads=a(heads),
                      deprel=a(deprel if deprel is not None else [0] * W), upos=a([0] * W), sent_start=a([0]),
                      gaps_cnf=g, gaps_nary=g.copy(), ldd_dep=a(ldd[0]), ldd_head=a(ldd[1]), ldd_rel=a(ldd[2]),
                      ldd_prob=a(ldd[3], np.float32))


def write_pair(folder: Path, split: str, src_lang: str, tgt_lang: str, src: Sequence[str],
               tgt: Sequence[str] | None = None) -> tuple[Path, Path]:
    """``folder/SPLIT.SRC`` and ``folder/SPLIT.TGT``, one line each (UTF-8); the target defaults to
    ``target sentence number I .`` per source line."""
    tgt = tgt if tgt is not None else [f"target sentence number {i} ." for i in range(len(src))]
    paths = folder / f"{split}.{src_lang}", folder / f"{split}.{tgt_lang}"
    for path, lines in zip(paths, (src, tgt), strict=True):
        path.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    return paths


def write_corpus(folder: Path, name: str, n: int, seed: int) -> tuple[Path, Path, Path]:
    """``folder/NAME.src``, ``.tgt``, ``.conllu``: ``n`` BPE'd source/target lines and their CoNLL-U parses
    (every word hangs from the first), random with ``seed``."""
    rng = random.Random(seed)
    src, tgt, conllu = [], [], []
    for _ in range(n):
        words = [f"w{rng.randint(0, 30)}" for _ in range(rng.randint(2, 6))]
        src.append(" ".join(w[:2] + "@@ " + w[2:] if len(w) > 2 else w for w in words))
        tgt.append(" ".join(f"t{rng.randint(0, 30)}" for _ in range(rng.randint(1, 6))))
        conllu.append("".join(f"{j + 1}\t{w}\t_\tX\t_\t_\t{0 if j == 0 else 1}\t{'dep' if j else 'root'}\t_\t_\n"
                              for j, w in enumerate(words)))
    paths = folder / f"{name}.src", folder / f"{name}.tgt", folder / f"{name}.conllu"
    paths[0].write_text("\n".join(src) + "\n")
    paths[1].write_text("\n".join(tgt) + "\n")
    paths[2].write_text("\n".join(conllu) + "\n")
    return paths


def write_corpora(folder: Path, sizes: dict[str, int]) -> Path:
    """:func:`write_corpus` for each split of ``sizes`` (name → lines), seeded 1, 2, 3… in order; returns ``folder``."""
    for seed, (name, n) in enumerate(sizes.items(), 1):
        write_corpus(folder, name, n, seed)
    return folder


#: the lines :func:`toy_records` reads (../shared/data, lowercased), source then target
MULTI30K = ("multi30k/train.de.gz", "multi30k/train.en.gz")


def toy_records(shared_data: Path, n: int, *, split_len: int = 6, two_sentences_every: int = 0,
                files: tuple[str, str] = MULTI30K) -> tuple[Vocab, list[PairRecord]]:
    """The first ``n`` Multi30k pairs of ``files`` (de→en, lowercased; default the training set's) as
    :mod:`synprep.train.toydata` records and the
    vocabulary of their pieces: lines 1..n, random trees (seed 0), words cut into ``split_len``-letter
    pieces; every ``two_sentences_every``-th line from the first (0: none) holds its source as two
    sentences (the words halved)."""
    src, tgt = (shared_data / name for name in files)
    pairs = toydata.read_pairs(src, tgt, n, "de", "en")
    vocab = toydata.build_vocab([p for pair in pairs for p in pair], split_len=split_len)
    rng = np.random.default_rng(0)

    def sentences(i: int, s: list[str]) -> list[list[str]]:
        return [s[: len(s) // 2], s[len(s) // 2:]] if two_sentences_every and i % two_sentences_every == 0 else [s]

    return vocab, [toydata.record_of_words(i + 1, sentences(i, s), t, vocab.symbols, rng, split_len=split_len)
                   for i, (s, t) in enumerate(pairs)]


def toy_shards(shared_data: Path, folder: Path, sizes: dict[str, int], *, shard_size: int = 1000, **kw
               ) -> tuple[Vocab, list[PairRecord]]:
    """:func:`toy_records` of ``sum(sizes)`` lines written as the shard folder ``folder`` (manifest,
    ``dict.txt``), split in order: ``{"train": 32, "valid": 8}`` stores records 1..32 as train and
    33..40 as valid. ``kw`` goes to :func:`toy_records`. Returns the vocabulary and every record."""
    vocab, recs = toy_records(shared_data, sum(sizes.values()), **kw)
    splits, start = {}, 0
    for name, k in sizes.items():
        splits[name], start = recs[start:start + k], start + k
    toydata.write_toy_shards(folder, splits, vocab, shard_size=shard_size)
    return vocab, recs


def small_folder(folder: Path, *, drop_every: int = 4, **kw) -> Path:
    """The small synthetic folder the hostile-input tests and fuzzers damage (:func:`write_folder`, seed 1):
    9 train pairs in shards of 4 (``train.00000.h5`` holds pairs 0-3, ``train.00001.h5`` 4-7,
    ``train.00002.h5`` pair 8) and 3 valid pairs, 6 words and 5 target pieces a pair, every
    ``drop_every``-th input line dropped (0: none); ``kw`` goes to :func:`write_folder` (``vocab_size``…).
    Returns ``folder``."""
    write_folder(folder, {"train": 9, "valid": 3}, shard_size=4, seed=1, words=6, tgt_len=5, drop_every=drop_every,
                 **kw)
    return folder


JA_TARGETS = ("residents showed displeasure .", "no particular request was made .", "it rained .")


def japanese_gold_folder(shared_data: Path, folder: Path, n: int) -> tuple[Path, list[list[str]]]:
    """The first ``n`` (at most 3) sentences of ja_gsd test imported with ``--parser conllu`` beside English
    targets, BPE codes learned on both sides: the ``test`` split in ``folder / "out"``, and the gold words of each
    sentence."""
    from synprep.config import DataConfig
    from synprep.pipeline import SplitInputs, run_pipeline
    from synprep.text.bpe import learn_bpe

    blocks = (shared_data / "ud" / "ja_gsd-ud-test.conllu").read_text(encoding="utf-8").split("\n\n")[:n]
    gold = folder / "ja.conllu"
    gold.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    words = [[ln.split("\t")[1] for ln in b.splitlines() if ln and ln.split("\t")[0].isdigit()] for b in blocks]
    tgt = folder / "en.txt"
    tgt.write_text("".join(line + "\n" for line in JA_TARGETS[:n]))
    text = folder / "bpe.txt"
    text.write_text("\n".join(" ".join(w) for w in words) + "\n" + tgt.read_text(), encoding="utf-8")
    learn_bpe([text], 50, folder / "codes")
    out = folder / "out"
    run_pipeline(SplitInputs(split="test", tgt=str(tgt), codes=str(folder / "codes"), conllu=str(gold)), out,
                 DataConfig.of(src_lang="ja", tgt_lang="en", parser="conllu", vocab_split="test"))
    return out, words


def copy_folder(folder: Path, tmp_path: Path) -> Path:
    """A fresh copy ``tmp_path/out`` of an output folder (a test damages it, not the shared original)."""
    out = tmp_path / "out"
    shutil.copytree(folder, out)
    return out


def small_folder_fixtures():
    """pytest fixtures ``(valid, folder)``: a :func:`small_folder` built once per module, and a copy of it
    per test to damage (``valid, folder = small_folder_fixtures()`` at a test module's top level)."""
    import pytest

    @pytest.fixture(scope="module")
    def valid(tmp_path_factory) -> Path:
        base = tmp_path_factory.mktemp("valid") / "out"
        small_folder(base)
        return base

    @pytest.fixture
    def folder(valid, tmp_path) -> Path:
        return copy_folder(valid, tmp_path)

    return valid, folder


def reseal(folder: Path, *, missing_ok: bool = False) -> None:
    """Make the manifest's sizes and checksums match the shard files again (after an edit), so the
    content is checked. ``missing_ok``: a manifest that does not load is left as it is (the fuzzers
    damage it too); otherwise its error propagates."""
    try:
        m = Manifest.load(folder)
    except SynprepError:
        if missing_ok:
            return
        raise
    for entry in m.splits.values():
        for i, s in enumerate(entry.shards):
            p = folder / s.file
            if p.is_file():
                entry.shards[i] = type(s)(s.file, s.pairs, s.first_line, s.last_line, file_sha256(p), p.stat().st_size)
    m.save(folder)


#: the lines :func:`one_line` counts as errors: the CLI's error line, and ``check``'s verdict
ERROR_LINES = ("synprep: error", "synprep check: FAILED")


def one_line(proc: subprocess.CompletedProcess, status: int, *parts: str, alone: bool = False) -> str:
    """The one error line of a finished ``synprep`` child, asserted: it exited ``status``, printed no
    traceback and exactly one line starting with one of :data:`ERROR_LINES`, which holds every string of
    ``parts``. ``alone``: that line, a ``synprep: error: …`` one, is all of stderr but a ``synprep: CUDA
    not available`` notice. Returns the line."""
    assert proc.returncode == status, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    if alone:
        errors = [x for x in proc.stderr.splitlines() if not x.startswith("synprep: CUDA not available")]
        assert len(errors) == 1 and errors[0].startswith("synprep: error: "), proc.stderr
    else:
        errors = [x for x in proc.stderr.splitlines() if x.startswith(ERROR_LINES)]
        assert len(errors) == 1, proc.stderr
    for p in parts:
        assert p in errors[0], errors[0]
    return errors[0]


def metrics_rows(out: Path) -> list[dict]:
    """A run folder's ``metrics.jsonl`` rows without their wall-clock fields (equal runs give equal rows)."""
    import json

    from synprep.train.rundir import WALL_CLOCK_KEYS

    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    for r in rows:
        for k in WALL_CLOCK_KEYS:
            r.pop(k, None)
    return rows
