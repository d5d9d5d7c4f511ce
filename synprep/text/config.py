"""The text stage's section of a data folder's configuration (:class:`TextConfig`; composed by
:class:`synprep.pipeline.config.DataConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synprep.constants import TOKENIZERS
from synprep.defaults import CLEAN_DEFAULTS
from synprep.errors import ConfigError
from synprep.settings import at_least


@dataclass(frozen=True)
class TextConfig:
    """The text stage's settings (``synprep pipeline``; an ``annotate`` folder records their defaults).

    Attributes:
        tokenized: the ``pipeline`` input is already Moses-tokenized and escaped (``--tokenized``).
        lowercase: lowercase after tokenizing; the parser still reads the cased words.
        fairseq_compat: the old tokenizer.perl's final-period rule.
        tokenizer: where the source words come from (``moses``, or ``parser``: the parser's own tokenizer).
        ratio: cleaning: maximum token-count ratio either way (clean-corpus-n.perl ``-ratio``).
        min_len: cleaning: the smallest token count of each side, inclusive.
        max_len: cleaning: the largest token count of each side, inclusive.
        language_check: refuse a side whose sampled text is in another language than ``-s``/``-t``
            say (:mod:`synprep.text.langid`); False: ``--no-language-check``.
    """

    tokenized: bool = False
    lowercase: bool = False
    fairseq_compat: bool = False
    tokenizer: str = field(default="moses", metadata={"optional": True})
    ratio: float = CLEAN_DEFAULTS.ratio
    min_len: int = CLEAN_DEFAULTS.min_len
    max_len: int = CLEAN_DEFAULTS.max_len
    language_check: bool = field(default=True, metadata={"optional": True, "param": "no_language_check",
                                                          "negated": True})

    def __post_init__(self) -> None:
        at_least(self, min_len=0, max_len=1)
        if not self.ratio > 0:
            raise ConfigError(f"ratio must be > 0, got {self.ratio}")
        if self.tokenizer not in TOKENIZERS:
            raise ConfigError(f"tokenizer must be one of {', '.join(TOKENIZERS)}, got {self.tokenizer!r}")
