"""Fuzzing inputs and targets for synprep's readers and ``synprep check`` (test_fuzz.py, benchmarks/fuzz.py).

The property everywhere: a reader either returns well-formed data or raises one of synprep's own
errors (:class:`~synprep.errors.SynprepError`: ``InputError`` naming the file and line);
``check_dir`` returns a :class:`~synprep.shards.check.CheckReport` (with a violation when the
folder was certainly broken). Any other exception, or a hang, is a bug.

Inputs:

* bracketed trees: random text over the bracket alphabet, random valid trees (tests/strategies.py)
  with bracket-level mutations, deep nesting;
* CoNLL-U: random bytes, and real UD sentence blocks (../shared/data/ud) with 1-4 mutations each —
  a column set to a hostile value (heads out of range, cycles, bad/overlapping multiword ranges,
  ``_``, empty), columns deleted or added, lines dropped/duplicated/swapped, comments inserted
  (``# line``, ``# error``, ``# ldd``), then byte-level damage (non-UTF-8, NUL, truncation);
* output folders: a valid synthetic folder (synprep.shards.synthetic) with its files damaged —
  bytes flipped, files truncated or deleted, HDF5 datasets deleted or replaced (other dtype,
  shape, values), attributes deleted or changed, manifest.json values replaced or removed;
* hostile shards read as ``train``/``show``/``check`` read them: shapes declaring up to
  2^34 entries in a file of a few KB, ``n_pairs`` out of range, damaged attribute metadata, gzip
  chunks that do not decode, offsets out of range, datasets of non-numeric dtypes, flipped bits,
  a ``vocab_path`` outside the folder (with the manifest's vocabulary dropped or not), a deflate
  bomb (real gzip chunks) around ``MAX_SHARD_BYTES`` —
  with the manifest re-sealed (so only the declared shapes give the shard away) or not.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import builders
import h5py
import numpy as np
from hypothesis import strategies as st
from nltk import Tree
from strategies import trees

from synprep.errors import SynprepError
from synprep.parse.conllu_io import read_conllu
from synprep.parse.trees import parse_tree, parse_trees, read_mrg, tree_to_str
from synprep.shards import SplitReader, open_split
from synprep.shards.check import CheckReport, check_dir
from synprep.shards.schema import AXES as AXES_
from synprep.shards.schema import DEFAULTED_ATTRS


class Hang(Exception):
    """A target ran longer than the hang guard allows."""


@contextlib.contextmanager
def no_hang(seconds: float = 60.0) -> Iterator[None]:
    """Raise :class:`Hang` in this (main) thread if the block runs longer than ``seconds``.

    Not a speed check: the readers take milliseconds per input; this only turns an endless loop
    into a failure instead of a stuck test run.
    """
    def alarm(signum, frame):
        raise Hang(f"no result after {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# --- bracketed trees --------------------------------------------------------------------------

_BRACKET_ALPHABET = list("()(() ) \t\nabXNP-=0123") + ["-NONE-", "ROOT", "TOP", "(X", "-LRB-", "\x00", "é"]


@st.composite
def _mutated_tree(draw) -> str:
    text = tree_to_str(draw(trees))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        op = draw(st.sampled_from(["delete", "insert", "duplicate", "swap"]))
        piece = draw(st.sampled_from(["(", ")", " ", "(-NONE- *)", "()", "( ", "NP-SBJ-1", "\n", "x y"]))
        if op == "delete":
            text = text[:i] + text[i + 1:]
        elif op == "insert":
            text = text[:i] + piece + text[i:]
        elif op == "duplicate":
            j = draw(st.integers(i, len(text)))
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[::-1] if draw(st.booleans()) else text[i:] + text[:i]
    return text


#: text a tree reader may be given
tree_texts = st.one_of(
    st.lists(st.sampled_from(_BRACKET_ALPHABET), max_size=60).map("".join),
    st.text(max_size=40),
    _mutated_tree(),
    st.integers(1, 700).map(lambda n: "(X " * n + "w" + ")" * n),
    trees.map(tree_to_str),
)


def check_tree_text(text: str) -> None:
    """``parse_tree`` / ``parse_trees`` give trees whose leaves are non-empty, or raise InputError."""
    for fn in (parse_tree, parse_trees):
        try:
            out = fn(text, "fuzz.txt", 1)
        except SynprepError:
            continue
        for t in [out] if isinstance(out, Tree) else out:  # a Tree is a list (of its children)
            assert t.label() == "ROOT" and len(t.leaves()) >= 1


def check_mrg_bytes(data: bytes, path: Path) -> None:
    """``read_mrg`` over a file of these bytes: normalized trees, or InputError."""
    path.write_bytes(data)
    try:
        for line, t in read_mrg(path):
            assert line >= 1 and t.label() == "ROOT"
    except SynprepError:
        pass


# --- CoNLL-U ----------------------------------------------------------------------------------


def read_blocks(path: Path, limit: int = 400) -> list[list[str]]:
    """The first ``limit`` sentence blocks of a CoNLL-U file, each as its lines."""
    blocks, cur = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                cur.append(line)
            elif cur:
                blocks.append(cur)
                cur = []
                if len(blocks) >= limit:
                    break
    return blocks


_HOSTILE = ["_", "", "0", "1", "-1", "2", "99", "100000000000000000000", "1-1", "2-1", "1-2", "1-3", "2-3",
            "1.1", "0.1", "1.", "x", "٣", "\x00", "root", "1 2", "1\t2", "nan"]
_COMMENTS = ["#", "# line = 1", "# line = 0", "# line = x", "# line = 99", "# error = parser failed",
             "# error =", "# ldd = 1,0,root,0.5", "# ldd = 1,0,root", "# ldd = 9,0,root,0.5", "# ldd_threshold = z",
             "# constituency = (ROOT (X a)", "# text = a b", "# newdoc id = d", "# sent_id = s"]


def _with_cycle(cols_rows: list[list[str]], a: int, b: int) -> None:
    """Make word b's head word a and word a's head word b (a 2-cycle), when both exist."""
    words = [r for r in cols_rows if len(r) == 10 and r[0].isdigit()]
    if len(words) >= 2:
        a, b = a % len(words), b % len(words)
        if a != b:
            words[a][6], words[b][6] = words[b][0], words[a][0]


@st.composite
def conllu_bytes(draw, blocks: list[list[str]]) -> bytes:
    """Real sentence blocks, mutated (module docstring)."""
    chosen = [list(blocks[draw(st.integers(0, len(blocks) - 1))]) for _ in range(draw(st.integers(1, 3)))]
    rows = [line.split("\t") for b in chosen for line in [*b, ""]]
    for _ in range(draw(st.integers(1, 4))):
        k = draw(st.integers(0, len(rows) - 1))
        op = draw(st.sampled_from(["value", "value", "head", "cycle", "drop_col", "add_col", "drop_line",
                                   "dup_line", "swap", "comment", "mwt"]))
        r = rows[k]
        if op == "value" and r[0]:
            r[draw(st.integers(0, len(r) - 1))] = draw(st.sampled_from(_HOSTILE))
        elif op == "head" and len(r) == 10:
            r[6] = str(draw(st.integers(-2, 60)))
        elif op == "cycle":
            _with_cycle(rows, draw(st.integers(0, 50)), draw(st.integers(0, 50)))
        elif op == "drop_col" and len(r) > 1:
            del r[draw(st.integers(0, len(r) - 1))]
        elif op == "add_col":
            r.append(draw(st.sampled_from(_HOSTILE)))
        elif op == "drop_line":
            del rows[k]
        elif op == "dup_line":
            rows.insert(k, list(r))
        elif op == "swap":
            j = draw(st.integers(0, len(rows) - 1))
            rows[k], rows[j] = rows[j], rows[k]
        elif op == "comment":
            rows.insert(k, [draw(st.sampled_from(_COMMENTS))])
        else:  # a multiword range line before this word (mostly starting at it, as it must)
            first = int(r[0]) if r[0].isdigit() and draw(st.integers(0, 3)) else draw(st.integers(0, 40))
            rows.insert(k, [f"{first}-{first + draw(st.integers(-1, 3))}", "zum"] + ["_"] * 8)
        if not rows:
            rows = [[""]]
    data = bytearray("\n".join("\t".join(r) for r in rows).encode("utf-8"))
    for _ in range(draw(st.integers(0, 2))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["byte", "nul", "latin1", "truncate", "crlf"]))
        if op == "byte":
            data[i] = draw(st.integers(0, 255))
        elif op == "nul":
            data[i:i] = b"\x00"
        elif op == "latin1":
            data[i:i] = "ü".encode("latin-1")
        elif op == "truncate":
            del data[i:]
        else:
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
    return bytes(data)


def check_conllu_bytes(data: bytes, path: Path) -> int:
    """read_conllu (both word modes) over a file of these bytes; returns the sentences read.

    What it returns must be a valid dependency tree per sentence: annotations of one length,
    heads in [0, n], exactly one root, no cycle.
    """
    path.write_bytes(data)
    n = 0
    for mode in ("surface", "syntactic"):
        try:
            for pl in read_conllu(path, words=mode):
                assert pl.line >= 1
                for s in pl.sentences:
                    _assert_tree(s.words, s.upos, s.heads, s.deprels)
                    n += 1
        except SynprepError:
            pass
    return n


def _assert_tree(words: list[str], upos: list[str], heads: list[int], deprels: list[str]) -> None:
    m = len(words)
    assert m >= 1 and len(upos) == len(heads) == len(deprels) == m
    assert all(0 <= h <= m for h in heads) and sum(h == 0 for h in heads) == 1
    for i in range(1, m + 1):  # every word reaches the root in at most m steps
        k, steps = i, 0
        while k != 0:
            k, steps = heads[k - 1], steps + 1
            assert steps <= m, f"cycle through word {i}: {heads}"


# --- output folders ---------------------------------------------------------------------------


def reseal(folder: Path) -> None:
    """:func:`builders.reseal`, leaving a manifest that does not load as it is (the fuzzers damage it too)."""
    builders.reseal(folder, missing_ok=True)


_JSON_VALUES: list[Any] = [None, True, 0, -1, 7, 2**31, 10**30, 1.5, float("nan"), float("inf"), "", "x",
                           "\x00", "train.00000.h5", [], [1, "a", "b"], {}, {"a": 1}, [[1, "clean:ratio", "d"]]]
_ATTR_VALUES: list[Any] = [5, -1, 2**40, "x", "[1,2]", "{}", "[]", np.float64(np.nan), np.array([1, 2]), 0.5,
                           "train", "dependency"]
_DTYPES = [np.uint8, np.uint16, np.int32, np.int64, np.float16, np.float64, np.int8, np.uint32]


def _json_paths(o: Any, pre: tuple = ()) -> Iterator[tuple]:
    yield pre
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _json_paths(v, (*pre, k))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from _json_paths(v, (*pre, i))


def damage_folder(folder: Path, data: st.DataObject) -> bool:
    """Apply 1-2 random kinds of damage to a valid output folder.

    Returns:
        True when the damage certainly breaks an invariant (check must report a violation).
    """
    certain = False  # broken whatever happens next
    checksum = False  # broken as long as the manifest is not re-sealed
    for _ in range(data.draw(st.integers(1, 2), label="n_damages")):
        kind = data.draw(st.sampled_from(["flip", "truncate", "delete_file", "h5_dataset", "h5_delete",
                                          "h5_attr", "h5_attr_delete", "manifest"]), label="kind")
        shards = sorted(folder.glob("*.h5"))
        if not shards and kind not in ("flip", "delete_file"):
            kind = "manifest"
        shard = shards[data.draw(st.integers(0, len(shards) - 1), label="shard")] if shards else None
        files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.endswith(".lock"))
        if kind in ("flip", "delete_file") and not files:
            continue
        if kind == "flip":
            p = files[data.draw(st.integers(0, len(files) - 1), label="file")]
            b = bytearray(p.read_bytes())
            if b:
                i = data.draw(st.integers(0, len(b) - 1), label="at")
                b[i] ^= 1 << data.draw(st.integers(0, 7), label="bit")
                p.write_bytes(bytes(b))
                if p.name == "dict.txt":
                    certain = True  # its sha256 is in the manifest, never re-sealed
                elif p.suffix == ".h5":
                    checksum = True
                    if data.draw(st.booleans(), label="reseal"):
                        reseal(folder)
                        checksum = False
        elif kind == "truncate":
            assert shard is not None
            b = shard.read_bytes()
            if not b:
                continue
            shard.write_bytes(b[: data.draw(st.integers(0, len(b) - 1), label="keep")])
            if data.draw(st.booleans(), label="reseal"):
                reseal(folder)
                checksum = False
            certain = True  # HDF5 keeps its end-of-file address: a shorter file never opens
        elif kind == "delete_file":
            files[data.draw(st.integers(0, len(files) - 1), label="file")].unlink()
            certain = True
        elif kind in ("h5_dataset", "h5_delete", "h5_attr", "h5_attr_delete"):
            assert shard is not None
            certain = _damage_h5(shard, kind, data) or certain
            reseal(folder)
            checksum = False
        else:
            certain = _damage_manifest(folder, data) or certain
    return certain or checksum


def _damage_h5(shard: Path, kind: str, data: st.DataObject) -> bool:
    try:
        return _damage_h5_file(shard, kind, data)
    except (OSError, RuntimeError, KeyError, ValueError, TypeError):  # already too damaged for h5py to edit
        return False


def _damage_h5_file(shard: Path, kind: str, data: st.DataObject) -> bool:
    with h5py.File(shard, "r+") as f:
        names: list[str] = []
        f.visit(lambda n: names.append(n) if isinstance(f[n], h5py.Dataset) else None)
        attrs = sorted(f.attrs)
        if kind == "h5_attr_delete" and attrs:
            attr = data.draw(st.sampled_from(attrs), label="attr")
            del f.attrs[attr]
            return attr not in DEFAULTED_ATTRS  # an older shard may lack it: the default applies
        if kind == "h5_attr" and attrs:
            f.attrs[data.draw(st.sampled_from(attrs), label="attr")] = data.draw(st.sampled_from(_ATTR_VALUES),
                                                                                 label="value")
            return False  # may happen to be a valid value
        if not names:
            return False
        name = data.draw(st.sampled_from(sorted(names)), label="dataset")
        a = f[name][()]
        del f[name]
        if kind == "h5_delete":
            return True
        a = np.array(a)
        op = data.draw(st.sampled_from(["value", "dtype", "shorter", "2d"]), label="op")
        if op == "value" and a.size:
            i = data.draw(st.integers(0, a.size - 1), label="at")
            v = data.draw(st.sampled_from([0, 1, 2, 255, 999, 65535, -1, 1e9, float("nan")]), label="value")
            with np.errstate(all="ignore"):
                a.flat[i] = np.array(v).astype(a.dtype)
        elif op == "dtype":
            with np.errstate(all="ignore"):
                a = a.astype(data.draw(st.sampled_from(_DTYPES), label="dtype"))
        elif op == "shorter":
            a = a[: data.draw(st.integers(0, max(len(a) - 1, 0)), label="keep")]
        else:
            a = a.reshape(1, -1)
        f.create_dataset(name, data=a)
        return op == "2d"


def _damage_manifest(folder: Path, data: st.DataObject) -> bool:
    path = folder / "manifest.json"
    if not path.exists():
        return True
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:  # an earlier flip made it unreadable (UnicodeDecodeError is a ValueError too)
        return False
    paths = list(_json_paths(d))[1:]
    if not paths:
        return False
    p = paths[data.draw(st.integers(0, len(paths) - 1), label="path")]
    parent = d
    for k in p[:-1]:
        parent = parent[k]
    if data.draw(st.booleans(), label="remove"):
        del parent[p[-1]]
    else:
        parent[p[-1]] = data.draw(st.sampled_from(_JSON_VALUES), label="value")
    path.write_text(json.dumps(d), encoding="utf-8")
    return p in (("splits",), ("vocab",), ("format",))


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def check_damaged_folder(base: Path, work: Path, data: st.DataObject) -> CheckReport | None:
    """Copy ``base``, damage it, run check_dir: a report (a violation when certainly broken) or a SynprepError."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(base, work)
    certain = damage_folder(work, data) and _contents(work) != _contents(base)  # two flips may cancel out
    try:
        report = check_dir(work)
    except SynprepError:
        return None
    assert isinstance(report, CheckReport)
    if certain:
        assert not report.ok, "check passed a folder that was certainly broken"
    return report


# --- hostile shards: declared sizes, damaged metadata, undecodable chunks -------------


def declare_huge(shard: Path, n_pairs: int, axis: str = "src") -> None:
    """Make ``shard`` declare ``n_pairs`` pairs: ``/line`` and every offsets dataset resized (unwritten
    chunks cost no bytes in the file) and ``n_pairs`` set, so the file stays a few KB."""
    with h5py.File(shard, "r+") as f:
        for name, length in [("line", n_pairs)] + [(f"offsets/{a}", n_pairs + 1) for a in AXES_]:
            dtype = f[name].dtype
            del f[name]
            f.create_dataset(name, shape=(length,), dtype=dtype, chunks=(1 << 16,), compression="gzip")
        f.attrs["n_pairs"] = np.int64(n_pairs)


def damage_attribute_metadata(shard: Path) -> int:
    """Flip one byte of the root attributes' metadata so that h5py's attribute iteration fails
    (``RuntimeError: Error iterating over attributes``); returns the byte's offset."""
    data = shard.read_bytes()
    anchor = data.find(b"config")
    for i in range(max(anchor - 400, 0), anchor + 40):
        b = bytearray(data)
        b[i] ^= 0x55
        shard.write_bytes(bytes(b))
        try:
            with h5py.File(shard, "r") as f:
                dict(f.attrs.items())
        except RuntimeError:
            return i
        except Exception:
            pass
    shard.write_bytes(data)
    raise AssertionError(f"no single byte flip breaks the attribute metadata of {shard}")


def shift_heap_range(shard: Path, length: int = 64) -> int:
    """Shift ``length`` bytes inside the shard's global heap (the attributes' strings) one byte down, keeping the
    file's size, so that one heap object declares size 0 (HDF5 2.0 then loads the heap forever); returns the
    range's offset."""
    from synprep.errors import InputError
    from synprep.shards.heap import check_global_heaps

    data = shard.read_bytes()
    heap = data.find(b"GCOL")
    for at in range(heap + 16, heap + 4096 - length, 8):
        shard.write_bytes(data[:at] + data[at - 1:at + length - 1] + data[at + length:])
        try:
            check_global_heaps(shard, shard.name)
        except InputError:
            return at
    shard.write_bytes(data)
    raise AssertionError(f"no shifted range stalls the global heap of {shard}")


def damage_gzip_chunk(shard: Path, dataset: str, at: float = 0.5) -> None:
    """Overwrite two bytes inside the first (gzip) chunk of ``dataset``: it no longer decodes."""
    with h5py.File(shard, "r") as f:
        info = f[dataset].id.get_chunk_info(0)
    b = bytearray(shard.read_bytes())
    i = info.byte_offset + int(info.size * at)
    b[i] ^= 0xFF
    b[i + 1] ^= 0xFF
    shard.write_bytes(bytes(b))


def deflate_bomb(shard: Path, n_values: int, chunk: int = 1 << 20) -> None:
    """Make ``shard``'s ``/sent_start`` (the only field on its axis) ``n_values`` zero bytes stored in
    real gzip chunks (~1000:1, so the file grows by ~n_values/1000 bytes), and end ``/offsets/sent``
    at ``n_values``: the layout stays consistent and only the declared size gives the shard away."""
    import zlib

    packed = zlib.compress(bytes(chunk), 4)  # one deflate chunk, written as is for every chunk
    with h5py.File(shard, "r+") as f:
        del f["sent_start"]
        d = f.create_dataset("sent_start", shape=(n_values,), dtype=np.uint8, chunks=(chunk,), compression="gzip")
        for start in range(0, n_values - n_values % chunk, chunk):
            d.id.write_direct_chunk((start,), packed)
        if n_values % chunk:
            d[n_values - n_values % chunk:] = 0
        f["offsets/sent"][-1] = n_values


def hostile_shard(shard: Path, data: st.DataObject) -> str:
    """One hostile change to a valid shard, drawn by hypothesis; returns its kind."""
    kind = data.draw(st.sampled_from(["declare", "declare_field", "n_pairs", "attr_meta", "gzip", "offsets",
                                      "dtype", "flip", "vocab_path", "bomb", "shift"]), label="hostile")
    if kind == "declare":
        declare_huge(shard, data.draw(st.sampled_from([1 << 20, 1 << 24, 1 << 28, (1 << 31) - 1]), label="n"))
    elif kind == "declare_field":
        with h5py.File(shard, "r+") as f:
            name = data.draw(st.sampled_from(["src_ids", "ldd_prob", "heads", "gaps_cnf"]), label="field")
            dtype = f[name].dtype
            del f[name]
            f.create_dataset(name, shape=(data.draw(st.sampled_from([1 << 26, 1 << 30, 1 << 34]), label="len"),),
                             dtype=dtype, chunks=(1 << 16,), compression="gzip")
    elif kind == "n_pairs":
        with h5py.File(shard, "r+") as f:
            f.attrs["n_pairs"] = data.draw(st.sampled_from([np.int64(-1), np.int64(1 << 40), np.int64(0), "x",
                                                            np.float64(3.0)]), label="value")
    elif kind == "attr_meta":
        with contextlib.suppress(AssertionError):
            damage_attribute_metadata(shard)
    elif kind == "shift":
        with contextlib.suppress(AssertionError):
            shift_heap_range(shard)
    elif kind == "gzip":
        with contextlib.suppress(Exception):
            damage_gzip_chunk(shard, data.draw(st.sampled_from(["src_ids", "tgt_ids", "heads", "ldd_prob"]),
                                               label="dataset"), data.draw(st.floats(0.1, 0.9), label="at"))
    elif kind == "offsets":
        with h5py.File(shard, "r+") as f:
            axis = data.draw(st.sampled_from(list(AXES_)), label="axis")
            o = f[f"offsets/{axis}"]
            i = data.draw(st.integers(0, len(o) - 1), label="i")
            o[i] = data.draw(st.sampled_from([-1, 0, 1, 1 << 40, -(1 << 62)]), label="value")
    elif kind == "vocab_path":  # a vocabulary outside the folder (check_hostile_folder may drop the manifest's)
        with h5py.File(shard, "r+") as f:
            f.attrs["vocab_path"] = data.draw(st.sampled_from(["../dict.txt", "/etc/passwd", "", "a/../../dict.txt",
                                                               "dict.txt\x00x"]), label="vocab_path")
    elif kind == "bomb":  # real gzip chunks expanding past MAX_SHARD_BYTES (under it, check would take GBs)
        from synprep.constants import MAX_SHARD_BYTES

        deflate_bomb(shard, MAX_SHARD_BYTES + data.draw(st.sampled_from([1, 1 << 20, 16 << 20]), label="by"))
    elif kind == "dtype":
        with h5py.File(shard, "r+") as f:
            name = data.draw(st.sampled_from(["line", "offsets/src", "src_ids"]), label="dataset")
            a = f[name][()]
            del f[name]
            f[name] = a.astype(data.draw(st.sampled_from(["S4", "f8", "u1", "c8"]), label="dtype"))
    else:
        b = bytearray(shard.read_bytes())
        for _ in range(data.draw(st.integers(1, 4), label="flips")):
            b[data.draw(st.integers(0, len(b) - 1), label="at")] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        shard.write_bytes(bytes(b))
    return kind


def read_everything(folder: Path) -> int:
    """What ``train``/``show``/``check`` do with a folder: verified open, every pair read (cached, mapped
    from decoded arrays as ``train`` reads them, and from the file), one pair shown, the folder checked.
    Returns the pairs read; only SynprepError may escape."""
    from synprep.show import load_pair
    from synprep.train.data import ShardDataset

    n = 0
    arrays = folder.parent / f"{folder.name}.arrays"
    shutil.rmtree(arrays, ignore_errors=True)
    for split in ("train", "valid"):
        for mode in ("cache", "mapped", "file"):
            try:
                ds = ShardDataset(folder, split, map_dir=arrays if mode == "mapped" else None) if mode != "file" else None
                readers = ds.reader if ds is not None else SplitReader(open_split(folder, split, cache=False))
                for i in range(len(readers)):
                    readers[i]
                    n += 1
            except SynprepError:
                pass
        try:
            load_pair(folder, split, index=0)
        except SynprepError:
            pass
    check_dir(folder)
    return n


def check_hostile_folder(base: Path, work: Path, data: st.DataObject) -> str:
    """Copy ``base``, make one shard hostile (re-sealing the manifest or not), read everything."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(base, work)
    shards = sorted(work.glob("*.h5"))
    shard = shards[data.draw(st.integers(0, len(shards) - 1), label="shard")]
    try:
        kind = hostile_shard(shard, data)
    except (OSError, RuntimeError, KeyError, ValueError, TypeError):  # h5py could not make this change
        return "none"
    if kind == "vocab_path" and data.draw(st.booleans(), label="manifest_vocab_null"):
        m = json.loads((work / "manifest.json").read_text())
        m["vocab"] = None
        (work / "manifest.json").write_text(json.dumps(m))
    if data.draw(st.booleans(), label="reseal"):
        reseal(work)
    read_everything(work)
    return kind

