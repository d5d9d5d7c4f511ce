"""The data side's one configuration, by its earlier path: :mod:`synprep.pipeline.config` holds it.

``synprep.config.DataConfig`` (README, docs) is :class:`synprep.pipeline.config.DataConfig`; its sections live
in their stages (:class:`~synprep.text.config.TextConfig`, :class:`~synprep.subword.config.SubwordConfig`,
:class:`~synprep.parse.config.ParseConfig`, :class:`~synprep.shards.config.ShardConfig`).
"""

from __future__ import annotations

from synprep.parse.config import ParseConfig
from synprep.pipeline.config import (
    _FIELDS,
    CONFIG_FORMAT,
    CONFIG_VERSION,
    DEFAULTS,
    FLAT,
    MIGRATIONS,
    MODES,
    OMIT_DEFAULT,
    SECTIONS,
    DataConfig,
    differences,
    migrate,
    option_fields,
    spec_fields,
)
from synprep.shards.config import ShardConfig
from synprep.subword.config import SubwordConfig
from synprep.text.config import TextConfig

__all__ = ["CONFIG_FORMAT", "CONFIG_VERSION", "DEFAULTS", "FLAT", "MIGRATIONS", "MODES", "OMIT_DEFAULT", "SECTIONS",
           "_FIELDS", "DataConfig", "ParseConfig", "ShardConfig", "SubwordConfig", "TextConfig", "differences", "migrate",
           "option_fields", "spec_fields"]
