"""Export shards to other trainers' formats (``synprep export``; docs/export.md).

Each format is one :class:`~synprep.export.base.Exporter` subclass in its own module, registered in
:data:`EXPORTERS` (name → ``"module:Class"``, imported lazily: a format's libraries are needed only
when it is used). A new format is one module and one line here.
"""

from __future__ import annotations

from typing import Any

from synprep.errors import ConfigError
from synprep.export.base import Exporter, ExportRecord, run_export
from synprep.extras import EXTRA_OF, require
from synprep.registry import Registry

#: format name → "module:Class" of its exporter
EXPORTERS: Registry[Any] = Registry("export format", {
    "parquet": "synprep.export.parquet:ParquetExporter",
    "hf": "synprep.export.parquet:ParquetExporter",
    "fairseq": "synprep.export.fairseq:FairseqExporter",
    "factors": "synprep.export.factors:FactorsExporter",
})


def get_exporter(name: str) -> type[Exporter]:
    """The exporter class of format ``name``.

    Raises:
        ConfigError: an unknown format, or one whose library is not installed (the message names
            the pip extra that installs it, e.g. ``pip install 'synprep[hf]'``).
    """
    cls: type[Exporter] = EXPORTERS.load(name)
    for m in cls.requires:
        # a format named as an extra (hf: pyarrow to write, datasets to load) names that extra
        require(m, f"export format {name!r}", extra=name if name in EXTRA_OF.values() else None)
    return cls


def export(source: str, fmt: str, dest: str, splits: list[str] | None = None,
           options: dict[str, Any] | None = None) -> ExportRecord:
    """Export the shard folder ``source`` as ``fmt`` into ``dest`` (see :func:`synprep.export.base.run_export`).

    Raises:
        ConfigError: an unknown format or one whose library is missing (:func:`get_exporter`); and as
            :func:`~synprep.export.base.run_export`.
        InputError: as :func:`~synprep.export.base.run_export`.
    """
    for key, value in (options or {}).items():
        owners = [n for n in sorted(EXPORTERS) if key in EXPORTERS.load(n).options]
        if value is not None and fmt not in owners:
            raise ConfigError(f"--{key.replace('_', '-')} applies to --format {' or '.join(owners) or '(none)'} only")
    return run_export(get_exporter(fmt), source, dest, splits, options)


__all__ = ["EXPORTERS", "ExportRecord", "Exporter", "export", "get_exporter", "run_export"]
