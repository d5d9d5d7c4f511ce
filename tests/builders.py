"""The tests' one builder of records, shards, folders and input files (issue 19 item 5).

* :func:`record` — one hand-written :class:`~synprep.types.PairRecord` (the SPEC.md examples);
* :func:`random_records`, :func:`make_record` — synthetic valid records, and
  :func:`write_folder`, :func:`write_folder_records` — shard folders (manifest, ``dict.txt``): the
  library's :mod:`synprep.shards.synthetic`, which the benchmarks import too;
* :func:`write_pair` — a split's raw parallel text files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from synprep.shards.synthetic import make_record, random_records, write_folder, write_folder_records
from synprep.types import PairRecord

__all__ = ["make_record", "random_records", "record", "write_folder", "write_folder_records", "write_pair"]


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
