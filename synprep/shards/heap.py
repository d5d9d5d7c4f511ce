"""A walk of an HDF5 file's global heap collections (``GCOL``: where the variable-length strings of a shard's
attributes live), before HDF5 reads one.

HDF5 2.0 loads a collection by stepping from object to object by each object's declared size; a free-space
object (index 0) that declares size 0 makes that step 0, and the load loops forever at full CPU, holding
Python's lock, so that no signal handler runs (SIGTERM included). One byte range of a shard shifted by one
is enough. This walk takes the same steps over the file's bytes and refuses such a collection first: the
reader then names the shard in one line instead of hanging.
"""

from __future__ import annotations

import mmap
import os

from synprep.errors import InputError

_SIGNATURE = b"GCOL"
#: the header of a collection (signature, version 1, 3 reserved bytes, its size) and of each object in it
#: (index, reference count, 4 reserved bytes, its size), for 8-byte lengths (what h5py writes)
_HEADER = 16
_MIN_COLLECTION = 4096


def check_global_heaps(path: str | os.PathLike, name: str) -> None:
    """Refuse a file holding a global heap collection that HDF5 would load forever.

    A ``GCOL`` that is not a collection's header (not version 1, a size out of the file) is left to HDF5, which
    refuses it with an error of its own.

    Args:
        path: the HDF5 file.
        name: the file as messages name it.

    Raises:
        InputError: a collection holds an object that does not advance (named by its byte offset).
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < _HEADER:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            at = m.find(_SIGNATURE)
            while at != -1:
                stall = _stall(m, at, size)
                if stall is not None:
                    raise InputError(f"damaged HDF5 global heap at byte {at}: its object at byte {stall} declares "
                                     "no size, so HDF5 would read it forever (a hostile or corrupt shard)", name)
                at = m.find(_SIGNATURE, at + 1)


def _stall(m: mmap.mmap, at: int, size: int) -> int | None:
    """The offset of the object where HDF5's walk of the collection at ``at`` stops advancing, or None."""
    if at + _HEADER > size or m[at + 4] != 1 or m[at + 5:at + 8] != b"\0\0\0":
        return None
    length = int.from_bytes(m[at + 8:at + 16], "little")
    if length < _MIN_COLLECTION or at + length > size:
        return None
    p, end = at + _HEADER, at + length
    while p + _HEADER <= end:  # a shorter tail is free space
        index = int.from_bytes(m[p:p + 2], "little")
        declared = int.from_bytes(m[p + 8:p + 16], "little")
        step = _HEADER + -(-declared // 8) * 8 if index > 0 else declared
        if step == 0:
            return p
        p += step
    return None
