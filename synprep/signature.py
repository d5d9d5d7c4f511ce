"""The reproducibility signature line (like sacrebleu's).

One line naming everything that determines an output, printed on stderr at the end of every
command and stored as the ``signature`` root attribute of every shard, e.g.::

    synprep:0.1.0|tok:sacremoses-0.2.0|lc:yes|bpe:3f2a9c1e|parser:stanza-1.15.0/synprep|feat:cnf+nary+ldd|shard:v1
"""

from __future__ import annotations

import hashlib
from importlib import metadata

import synprep


def package_version(name: str) -> str:
    """Installed version of a distribution, or ``"?"``."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def file_sha256(path, n: int | None = None) -> str:
    """Hex sha256 of a file's bytes (first ``n`` hex digits when given)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()[:n] if n else h.hexdigest()


def signature(**fields: object) -> str:
    """Build the signature line: ``synprep:VERSION`` then ``key:value`` fields in the given order.

    ``None`` values are left out; booleans print as ``yes``/``no``.
    """
    parts = [f"synprep:{synprep.__version__}"]
    for key, value in fields.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "yes" if value else "no"
        parts.append(f"{key}:{value}")
    return "|".join(parts)
