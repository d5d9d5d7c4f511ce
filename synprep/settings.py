"""What every stage's configuration section shares: the check of its fields' lower bounds.

A section (:class:`synprep.text.config.TextConfig`, :class:`synprep.subword.config.SubwordConfig`,
:class:`synprep.parse.config.ParseConfig`, :class:`synprep.shards.config.ShardConfig`) lives in its stage's
package and is composed by :class:`synprep.pipeline.config.DataConfig`; this module imports nothing of
synprep but the errors, so every floor may read it.
"""

from __future__ import annotations

from typing import Any

from synprep.errors import ConfigError


def at_least(section: Any, **bounds: int) -> None:
    """Check that each named integer field of ``section`` is at least its bound.

    Args:
        section: a configuration section (a dataclass instance).
        bounds: field name → its smallest allowed value.

    Raises:
        ConfigError: ``NAME must be >= LOW, got VALUE`` for the first field below its bound.
    """
    for name, low in bounds.items():
        if int(getattr(section, name)) < low:
            raise ConfigError(f"{name} must be >= {low}, got {getattr(section, name)}")
