"""fairseq's binarized dataset (``--dataset-impl mmap``): ``PREFIX.bin`` + ``PREFIX.idx``, numpy only.

The layout is fairseq 0.12's ``MMapIndexedDataset`` (fairseq/data/indexed_dataset.py), which
``fairseq-preprocess`` writes and every fairseq task reads:

* ``.bin``: the items' values back to back, in the dataset's dtype, native little-endian.
* ``.idx``: the magic ``b"MMIDIDX\\x00\\x00"``, version ``<Q`` 1, dtype code ``<B``
  (:data:`DTYPE_CODES`), item count ``<Q`` N, then ``sizes`` ``(N,) int32`` (values per item)
  and ``pointers`` ``(N,) int64`` (byte offset of each item in ``.bin``).

:class:`MMapIndexedWriter` streams: items are appended shard by shard to ``.bin`` and their sizes to
a scratch file, and the index is assembled at the end in fixed-size chunks, so memory does not grow
with the number of items. fairseq reads integer items as int64 tensors; float items need the
typed reader of the ``synprep_fairseq`` plugin (fairseq casts every item to int64).
"""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path
from typing import IO

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
#: fairseq 0.12's ``_code_to_dtype``, inverted as its ``_dtype_header_code`` does (float64 is 6, the
#: first of its two float64 codes)
DTYPE_CODES: dict[np.dtype, int] = {
    np.dtype(np.uint8): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
    np.dtype(np.int64): 5, np.dtype(np.float64): 6, np.dtype(np.uint16): 8, np.dtype(np.uint32): 9,
    np.dtype(np.uint64): 10}
#: items per chunk when the index is assembled
CHUNK = 1 << 20


def token_dtype(vocab_size: int) -> np.dtype:
    """fairseq's ``best_fitting_int_dtype(len(dictionary))``: uint16 under 65500 symbols, else uint32."""
    return np.dtype(np.uint16) if vocab_size < 65500 else np.dtype(np.uint32)


class MMapIndexedWriter:
    """Append items to one ``.bin`` and write the matching ``.idx`` at the end.

    Args:
        bin_file: the open (binary) ``.bin`` output.
        dtype: the dataset's dtype (a key of :data:`DTYPE_CODES`).
        scratch_dir: where the sizes are spooled (removed on close).

    Raises:
        ValueError: a dtype fairseq has no code for.
    """

    def __init__(self, bin_file: IO[bytes], dtype: np.dtype | type, scratch_dir: str | os.PathLike):
        self.dtype = np.dtype(dtype)
        if self.dtype not in DTYPE_CODES:
            raise ValueError(f"dtype {self.dtype} has no fairseq code")
        self._bin = bin_file
        self._sizes = tempfile.TemporaryFile(dir=os.fspath(scratch_dir))
        self.count = 0

    def add(self, values: np.ndarray, lengths: np.ndarray) -> None:
        """Append ``len(lengths)`` items: item k is the next ``lengths[k]`` values of ``values`` (flat).

        Raises:
            ValueError: ``sum(lengths) != len(values)`` or a value does not fit the dtype.
        """
        lengths = np.asarray(lengths, dtype=np.int64)
        if int(lengths.sum()) != values.size:
            raise ValueError(f"{values.size} values for items of total length {int(lengths.sum())}")
        if values.size and self.dtype.kind in "iu":
            info = np.iinfo(self.dtype)
            if values.min() < info.min or values.max() > info.max:
                raise ValueError(f"values in [{values.min()}, {values.max()}] do not fit {self.dtype}")
        self._bin.write(np.ascontiguousarray(values, dtype=self.dtype.newbyteorder("<")).data)
        self._sizes.write(lengths.astype("<i4").data)
        self.count += len(lengths)

    def write_index(self, idx_file: IO[bytes]) -> None:
        """Write the ``.idx`` of everything added (then the scratch file is closed)."""
        idx_file.write(MAGIC + struct.pack("<Q", VERSION) + struct.pack("<B", DTYPE_CODES[self.dtype])
                       + struct.pack("<Q", self.count))
        for pass_ in ("sizes", "pointers"):
            self._sizes.seek(0)
            address = 0
            while chunk := self._sizes.read(CHUNK * 4):
                sizes = np.frombuffer(chunk, dtype="<i4")
                if pass_ == "sizes":
                    idx_file.write(chunk)
                else:
                    ends = address + np.cumsum(sizes, dtype=np.int64) * self.dtype.itemsize
                    idx_file.write(np.r_[address, ends[:-1]].astype("<i8").tobytes())
                    address = int(ends[-1])
        self._sizes.close()

    def close(self) -> None:
        self._sizes.close()


def read_mmidx(prefix: str | os.PathLike) -> list[np.ndarray]:
    """Every item of ``PREFIX.bin``/``PREFIX.idx`` (for tests and checks; loads the whole dataset).

    Raises:
        ValueError: not an MMIDIDX index, or an unknown dtype code.
    """
    prefix = Path(prefix)
    raw = prefix.with_name(prefix.name + ".idx").read_bytes()
    if raw[:9] != MAGIC:
        raise ValueError(f"{prefix}.idx is not an MMIDIDX index")
    (version,), (code,), (n,) = struct.unpack("<Q", raw[9:17]), struct.unpack("<B", raw[17:18]), \
        struct.unpack("<Q", raw[18:26])
    codes: dict[int, np.dtype] = {c: d for d, c in DTYPE_CODES.items()}
    dtype = codes.get(code)
    if version != VERSION or dtype is None:
        raise ValueError(f"{prefix}.idx: version {version}, dtype code {code} unknown")
    sizes = np.frombuffer(raw, dtype="<i4", count=n, offset=26)
    pointers = np.frombuffer(raw, dtype="<i8", count=n, offset=26 + 4 * n)
    data = prefix.with_name(prefix.name + ".bin").read_bytes()
    return [np.frombuffer(data, dtype=dtype.newbyteorder("<"), count=int(s), offset=int(p))
            for s, p in zip(sizes, pointers, strict=True)]
