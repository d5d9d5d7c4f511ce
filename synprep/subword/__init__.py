"""Subword schemes behind one registry: subword-nmt BPE, SentencePiece, HuggingFace tokenizers.

A scheme (:class:`~synprep.subword.base.SubwordScheme`) segments a line into pieces and aligns
them to the parser's words (:mod:`synprep.subword.offsets` for the schemes that read raw text).
Add a scheme by writing one module with a subclass and adding one line to :data:`SCHEMES`;
``--subword`` choices come from here. Modules are imported on first use (``synprep tokenize``
never imports sentencepiece).
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from synprep.registry import Registry

if TYPE_CHECKING:
    from synprep.subword.base import SubwordScheme

#: scheme name -> "module:Class" of its :class:`~synprep.subword.base.SubwordScheme`
SCHEMES: Registry[Any] = Registry("subword scheme", {
    "bpe": "synprep.subword.bpe:BpeScheme",
    "spm": "synprep.subword.spm:SpmScheme",
    "hf": "synprep.subword.hf:HfScheme",
})

#: the scheme of shards and folders that do not name one (made before schemes existed)
DEFAULT_SCHEME = "bpe"


def scheme_class(name: str) -> type[SubwordScheme]:
    """The class registered as ``name``.

    Raises:
        ConfigError: no such scheme (the message lists the known ones).
    """
    cls: type[SubwordScheme] = SCHEMES.load(name)
    return cls


def load_scheme(name: str, model: str | os.PathLike) -> SubwordScheme:
    """The scheme ``name`` with its model file (codes, SentencePiece model, tokenizer.json), cached
    per process and file state (a worker loads a model once).

    Raises:
        ConfigError: unknown scheme.
        InputError: the model file is missing or unreadable.
    """
    path = os.path.abspath(model)
    try:
        st = os.stat(path)
        key: tuple[int, int] = (st.st_mtime_ns, st.st_size)
    except OSError:
        key = (0, 0)  # the class names the missing file
    return _load(name, path, *key)


@lru_cache(maxsize=8)
def _load(name: str, path: str, _mtime: int, _size: int) -> SubwordScheme:
    return scheme_class(name)(path)
