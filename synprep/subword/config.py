"""The subword stage's section of a data folder's configuration (:class:`SubwordConfig`; composed by
:class:`synprep.pipeline.config.DataConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synprep.settings import check_bounds, option
from synprep.subword import DEFAULT_SCHEME, SCHEMES


@dataclass(frozen=True)
class SubwordConfig:
    """How the text becomes subword pieces.

    Attributes:
        scheme: the subword scheme (:data:`synprep.subword.SCHEMES`: ``bpe``, ``spm``, ``hf``; saved and
            given as ``subword``).
        merges: joint BPE merge operations learned on the train split (fairseq IWSLT14: 10000).
        vocab_size: the SentencePiece vocabulary size when a model is learned (``--subword spm``).
    """

    merges: int = field(default=10000, metadata=option(
        "Joint BPE merge operations to learn (pipeline: on the train split; fairseq IWSLT14: 10000).", low=1))
    scheme: str = field(default=DEFAULT_SCHEME, metadata=option(
        "Subword scheme: subword-nmt BPE on the tokenized text, or SentencePiece / a HuggingFace tokenizer on the "
        "raw text, aligned to the words by character offsets (docs/subwords.md).", choices=SCHEMES,
        flag="subword", saved="subword"))
    vocab_size: int = field(default=8000, metadata=option(
        "Vocabulary size of the SentencePiece model learned (pipeline: --subword spm, on the train split).", low=1))

    def __post_init__(self) -> None:
        check_bounds(self)
