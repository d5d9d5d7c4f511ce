"""One stored pair of a shard folder (:class:`PairView`), read by :func:`load_pair`, as JSON, and the
attention-side matrices a figure of it shows (:func:`pair_matrices`). Part of :mod:`synprep.show`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from synprep.constants import GAP_EOS, GAP_MODES, VOCAB_NAME
from synprep.errors import InputError
from synprep.escape import unescape_tokens
from synprep.features.parents import gaussian_weights, parent_positions
from synprep.features.slr import hard_slr_mask, soft_slr_mask
from synprep.types import PairRecord
from synprep.vocab import Vocab

#: gap conventions a figure's SLR masks can use (SPEC.md §2)


@dataclass
class PairView:
    """One stored pair with everything needed to show it.

    Attributes:
        folder: where it comes from.
        split: where it comes from.
        index: 0-based index in the split.
        shard: shard file name.
        position: index within that shard.
        record: the stored :class:`~synprep.types.PairRecord` (int64 arrays, float32 ``ldd_prob``).
        attrs: the shard's root attributes (``signature``, ``tree_source``, label lists, ...).
        src: ``(T,)`` decoded source pieces (Moses-escaped, ``@@`` markers).
        tgt: ``(U,)`` decoded target pieces (Moses-escaped, ``@@`` markers).
        words: ``(W,)`` the words the parser read, as the shard stores them (cased; docs/FORMAT.md
            ``words``), or for a shard without them the source words rebuilt from the pieces, Moses
            escapes undone.
        words_stored: whether ``words`` are the stored parser words.
        deprels: ``(W,)`` label names (the shard's own inventories).
        upos: ``(W,)`` label names (the shard's own inventories).
    """

    folder: Path
    split: str
    index: int
    shard: str
    position: int
    record: PairRecord
    attrs: dict[str, Any]
    src: list[str]
    tgt: list[str]
    words: list[str]
    deprels: list[str]
    upos: list[str]
    notes: list[str] = field(default_factory=list)
    words_stored: bool = False

    @property
    def line(self) -> int:
        """1-based line number of the pair in the split's original input."""
        return self.record.line

    def title(self) -> str:
        return f"{self.split} pair {self.index} (line {self.line}) — {self.folder.name}/{self.shard}"


def _find_line(folder: Path, split: str, stored: tuple[int, int] | None, line: int) -> None:
    """Raise the InputError saying why original line ``line`` is absent: ``stored`` is the split's
    ``(first, last)`` stored line (None: no pairs), the reason comes from the manifest."""
    reason = ""
    try:
        # imported here: loads h5py, not needed to import this module
        from synprep.shards.manifest import Manifest

        entry = Manifest.load(folder).splits.get(split)
        if entry is not None:
            for d in entry.dropped_lines:
                if int(d[0]) == line:
                    reason = f": it was dropped ({d[1]}{', ' + d[2] if len(d) > 2 and d[2] else ''})"
                    break
            if not reason and not 1 <= line <= entry.input_lines:
                reason = f": the split's input has {entry.input_lines} lines"
    except InputError:
        pass
    have = f"lines {stored[0]}..{stored[1]}" if stored is not None else "no lines"
    raise InputError(f"line {line} is not in split {split!r} ({have} stored){reason}", str(folder))


def _join_pieces(pieces: list[str], word_index: np.ndarray) -> list[str]:
    """The words of the pieces by the stored ``word_index`` (``@@`` markers removed, still escaped)."""
    words: list[str] = [""] * (int(word_index.max()) + 1 if word_index.size else 0)
    for piece, w in zip(pieces, word_index.tolist(), strict=True):
        words[w] += piece[:-2] if piece.endswith("@@") else piece
    return words


def load_pair(folder: str | os.PathLike, split: str = "train", *, index: int | None = None,
              line: int | None = None) -> PairView:
    """Read one pair of a shard folder (exactly one of ``index`` and ``line``).

    Args:
        folder: an output folder (shards + ``dict.txt``).
        split: the split's name.
        index: 0-based index over the split's shards in order (negative counts from the end).
        line: 1-based original line number (as ``manifest.json`` and the shards' ``line`` record it).

    Returns:
        :class:`PairView`.

    Only the shard that holds the pair is opened, verified as :func:`~synprep.shards.reader.open_split`
    verifies each shard (:func:`~synprep.shards.reader.open_shard`): a damaged other shard does not
    stop it; the manifest's pair counts and first/last lines choose the shard.

    Raises:
        InputError: missing folder, split or vocabulary; an index out of range or a line not stored
            (with the reason from the manifest when the line was dropped); the shard that holds the
            pair differs from its manifest entry or breaks an invariant of ``synprep check``.
        ValueError: neither or both of ``index`` and ``line``.
    """
    # imported here: loads h5py, not needed to import this module
    from synprep.shards.reader import open_shard, split_entry, splits_in

    if (index is None) == (line is None):
        raise ValueError("give exactly one of index and line")
    folder = Path(folder)
    entry, files, manifest = split_entry(folder, split)
    if entry is None or not files:
        have = ", ".join(splits_in(folder)) or "none"
        raise InputError(f"split {split!r} has no shards here (splits: {have})", str(folder))
    # the manifest's counts choose the shard; only that one is opened (and verified) and read
    starts = np.cumsum([0, *(s.pairs for s in entry.shards)])
    n = int(starts[-1])
    if line is not None:
        s = next((k for k, info in enumerate(entry.shards) if info.pairs and info.first_line <= line <= info.last_line),
                 None)
        reader = None if s is None else open_shard(folder, split, s, manifest=manifest)
        hit = np.flatnonzero(reader.lines == line) if reader is not None else np.zeros(0, np.int64)
        if not hit.size:
            if reader is not None:
                reader.close()
            stored = [(info.first_line, info.last_line) for info in entry.shards if info.pairs]
            _find_line(folder, split, (stored[0][0], stored[-1][1]) if stored else None, line)
        assert s is not None and reader is not None
        j = int(hit[0])
        index = int(starts[s]) + j
    else:
        assert index is not None
        if not -n <= index < n:
            raise InputError(f"pair index {index} out of range: split {split!r} has {n} pairs (0..{n - 1})",
                             str(folder))
        index %= n
        s = int(np.searchsorted(starts, index, side="right")) - 1
        j = index - int(starts[s])
        reader = open_shard(folder, split, s, manifest=manifest)
    try:
        rec = reader[j]
        stored_words = reader.words(j)
        attrs = dict(reader.attrs)
        shard = reader.path.name
    finally:
        reader.close()
    vocab, notes = _shard_vocab(folder, attrs)
    src, tgt = vocab.decode(rec.src_ids), vocab.decode(rec.tgt_ids)
    words = stored_words if stored_words is not None else unescape_tokens(_join_pieces(src, rec.word_index))
    deprel_labels = list(attrs.get("deprel_labels") or [])
    upos_labels = list(attrs.get("upos_labels") or [])
    return PairView(folder=folder, split=split, index=index, shard=shard, position=j, record=rec, attrs=attrs,
                    src=src, tgt=tgt, words=words, deprels=_names(rec.deprel, deprel_labels),
                    upos=_names(rec.upos, upos_labels), notes=notes, words_stored=stored_words is not None)


def _shard_vocab(folder: Path, attrs: dict[str, Any]) -> tuple[Vocab, list[str]]:
    """The vocabulary a shard names (``vocab_path``, else ``dict.txt``) and a warning when it is not the
    one the shard was written with (``vocab_sha256``).

    Raises:
        InputError: no such vocabulary file.
    """
    vocab_path = folder / str(attrs.get("vocab_path") or VOCAB_NAME)
    if not vocab_path.is_file():
        raise InputError("no vocabulary to decode the ids with", str(vocab_path))
    vocab = Vocab.load(vocab_path)
    notes = []
    if attrs.get("vocab_sha256") and vocab.sha256 != attrs["vocab_sha256"]:
        notes.append(f"warning: {vocab_path.name} is not the vocabulary the shard was written with")
    return vocab, notes


def _names(ids: np.ndarray, labels: list[str]) -> list[str]:
    """Each label id's name (``#ID`` for an id outside ``labels``)."""
    return [labels[i] if 0 <= i < len(labels) else f"#{i}" for i in ids.tolist()]


def pair_json(view: PairView) -> dict[str, Any]:
    """The pair as JSON-ready values (``synprep show --json``).

    Keys: ``split``, ``index`` (0-based in the split), ``shard``, ``position``, ``line`` (1-based),
    ``signature``, ``tree_source``, ``src``/``tgt`` (pieces), ``words``, ``deprels``/``upos_tags`` (label
    names), ``notes``, and every stored field of the record under its FORMAT.md name (``deprel``,
    ``upos`` are the ids; docs/FORMAT.md index bases) as a list.
    """
    # imported here: loads h5py, not needed to import this module
    from synprep.shards.reader import PAIR_KEYS

    rec = view.record
    out: dict[str, Any] = {"split": view.split, "index": view.index, "shard": view.shard, "position": view.position,
                           "signature": view.attrs.get("signature", ""), "tree_source": view.attrs.get("tree_source"),
                           "src": view.src, "tgt": view.tgt, "words": view.words, "deprels": view.deprels,
                           "upos_tags": view.upos, "notes": view.notes}
    for key in PAIR_KEYS:
        value = getattr(rec, key)
        out[key] = value.tolist() if isinstance(value, np.ndarray) else value
    return out


# --- the matrices a figure shows (all with </s>, as the trainer builds them) --------------------


def token_gaps(view: PairView, mode: str = "cnf") -> np.ndarray:
    """``(T,) int64``: the stored ``(T-1,)`` piece gaps of ``mode`` with the ``</s>`` gap (2000) appended."""
    if mode not in GAP_MODES:
        raise ValueError(f"unknown gap mode {mode!r}; choose one of {', '.join(GAP_MODES)}")
    gaps = view.record.gaps_cnf if mode == "cnf" else view.record.gaps_nary
    return np.append(gaps.astype(np.int64), GAP_EOS)


def pair_matrices(view: PairView, *, tau: float = 10.0, mode: str = "cnf", sigma: float = 1.0
                  ) -> dict[str, np.ndarray]:
    """The attention-side matrices of the pair over its ``T+1`` tokens (pieces + ``</s>``).

    Returns:
        ``soft``: ``(T+1, T+1) float32`` soft SLR mask with temperature ``tau`` (SPEC.md §3);
        ``hard``: ``(T+1, T+1) bool`` hard non-strict SLR mask; ``parents``: ``(T+1,) float32``
        PASCAL mean-parent positions (``</s>`` points at itself); ``pascal``: ``(T+1, T+1)
        float32`` Gaussian weights ``N(j; p_i, σ²)`` (SPEC.md §4).

    Raises:
        ValueError: τ <= 0, σ <= 0, unknown mode.
    """
    gaps = token_gaps(view, mode)
    parents = parent_positions(view.record.heads, view.record.word_index, mode="mean", eos=True)
    return {"soft": soft_slr_mask(gaps, tau), "hard": hard_slr_mask(gaps, strict=False), "parents": parents,
            "pascal": gaussian_weights(parents, sigma)}

