"""The text stage's section of a data folder's configuration (:class:`TextConfig`; composed by
:class:`synprep.pipeline.config.DataConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synprep.constants import TOKENIZERS
from synprep.defaults import CLEAN_DEFAULTS
from synprep.settings import check_bounds, option


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

    tokenized: bool = field(default=False, metadata=option(
        "The input is already Moses-tokenized and escaped (&quot; &apos; ...): use it as it is (the parser sees "
        "the unescaped words). Text that does not look tokenized is refused."))
    lowercase: bool = field(default=False, metadata=option(
        "Lowercase after tokenizing, like lowercase.perl (the parser still sees cased words)."))
    fairseq_compat: bool = field(default=False, metadata=option(
        "Split a final '.' off the last token like the old tokenizer.perl fairseq used."))
    tokenizer: str = field(default="moses", metadata=option(
        "Where the words come from: sacremoses, or the parser's own tokenizer (--parser spacy --spacy-model "
        "ja_ginza: Sudachi) for languages written without spaces.", choices=TOKENIZERS, optional=True))
    ratio: float = field(default=CLEAN_DEFAULTS.ratio, metadata=option(
        "clean: maximum token-count ratio between the sides.", low=0, low_open=True))
    min_len: int = field(default=CLEAN_DEFAULTS.min_len, metadata=option("clean: minimum tokens per side.", low=0))
    max_len: int = field(default=CLEAN_DEFAULTS.max_len, metadata=option("clean: maximum tokens per side.", low=1))
    language_check: bool = field(default=True, metadata=option(
        "Do not check that a sample of each side is in the language -s/-t give (py3langid); recorded in "
        "OUT/pipeline.json.", param="no_language_check", negated=True, optional=True))

    def __post_init__(self) -> None:
        check_bounds(self)
