"""Optional dependencies: which pip extra installs which library, and one clear error when one is missing.

The core install (``pip install synprep``) carries what the main job needs (text → parse → features
→ shards → check, and the trainer). Plotting and the exporters' libraries are extras
(pyproject.toml): ``plot`` (matplotlib: ``show --png``, the trainer's ``gates.png``), ``parquet``
(pyarrow: ``export --format parquet|hf``), ``hf`` (pyarrow + datasets, to load those exports),
``dask``, ``docs`` (mkdocs), ``all``.
"""

from __future__ import annotations

import importlib

from synprep.errors import ConfigError

#: importable module → the extra that installs it
EXTRA_OF = {"matplotlib": "plot", "pyarrow": "parquet", "datasets": "hf", "dask": "dask", "mkdocs": "docs",
            "treetools": "trees", "spacy": "spacy"}


def available(module: str) -> bool:
    """Whether ``module`` imports (it is imported: call this where the module is about to be used)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def require(module: str, what: str, extra: str | None = None) -> None:
    """Raise ConfigError ``WHAT needs MODULE: pip install 'synprep[EXTRA]'`` unless ``module`` is installed.

    Args:
        module: the importable module.
        what: the feature that needs it, as the message names it.
        extra: the pip extra to name (default: the one that installs ``module``, :data:`EXTRA_OF`).

    Raises:
        ConfigError: ``module`` is not installed.
    """
    if not available(module):
        raise ConfigError(f"{what} needs the Python package {module!r}, which is not installed: "
                          f"pip install 'synprep[{extra or EXTRA_OF.get(module, 'all')}]'")
