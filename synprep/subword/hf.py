"""``hf``: a HuggingFace tokenizer (the ``tokenizers`` library) on raw text.

The model is a ``tokenizer.json`` file, or a local directory holding one; a directory without
one (an old "slow" tokenizer) is loaded with ``transformers.AutoTokenizer`` when that optional
package is installed, and must convert to a fast tokenizer. Pieces are the tokenizer's token
strings (``Ġthe``, ``▁the``, ``##ing``), special tokens are never added, and the character
offsets are the tokenizer's offset mapping (``Encoding.offsets``) into the original text.
Byte-level tokenizers give every byte token of a character that character's span: rule
``overlap`` of :mod:`synprep.subword.offsets` keeps them with their character's word.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from synprep.errors import InputError
from synprep.subword.base import SubwordScheme
from synprep.textio import PathLike, atomic_write, display_name

TOKENIZER_FILE = "tokenizer.json"


def _load_tokenizer(path: str):
    from tokenizers import Tokenizer

    file = os.path.join(path, TOKENIZER_FILE) if os.path.isdir(path) else path
    if os.path.isfile(file):
        try:
            return Tokenizer.from_file(file)
        except Exception as e:  # tokenizers raises a plain Exception on a malformed file
            raise InputError(f"not a tokenizers tokenizer file: {e}", display_name(file)) from None
    try:
        from transformers import AutoTokenizer  # optional
    except ImportError:
        raise InputError(f"no {TOKENIZER_FILE} in this directory (install transformers to load other "
                         "tokenizer files)", display_name(path)) from None
    try:
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True, use_fast=True)
    except Exception as e:
        raise InputError(f"transformers cannot load a tokenizer from this directory: {e}", display_name(path)) from None
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:
        raise InputError("the tokenizer has no fast (tokenizers) version, so no offset mapping", display_name(path))
    return backend


class HfScheme(SubwordScheme):
    """A ``tokenizers`` tokenizer file or a local tokenizer directory (``--hf-tokenizer``)."""

    name = "hf"
    library = "tokenizers"
    model_name = TOKENIZER_FILE
    model_option = "--hf-tokenizer"
    byte_level = True

    def __init__(self, path: PathLike):
        path = str(path)
        if os.path.isdir(path):
            self.path = path
            self.tok = _load_tokenizer(path)
            from hashlib import sha256

            # a directory: the identity hashes the tokenizer as serialized, whatever its files
            self.sha256 = sha256(self.tok.to_str().encode("utf-8")).hexdigest()
            return
        super().__init__(path)
        self.tok = _load_tokenizer(self.path)

    def encode(self, text: str) -> list[str]:
        return self.tok.encode(text, add_special_tokens=False).tokens

    def segment(self, text: str) -> tuple[list[str], list[tuple[int, int]]]:
        enc = self.tok.encode(text, add_special_tokens=False)
        return enc.tokens, enc.offsets

    def decode(self, pieces: Sequence[str]) -> str:
        ids = [self.tok.token_to_id(p) for p in pieces]
        if any(i is None for i in ids):  # a split part (or <unk>): not a token of the tokenizer
            return " ".join(pieces)
        return self.tok.decode([int(i) for i in ids if i is not None])

    def save(self, out: PathLike) -> None:
        """Write the tokenizer as one ``tokenizer.json`` (atomically; a directory's tokenizer as
        serialized, whose sha256 is then this scheme's)."""
        if not os.path.isdir(self.path):
            return super().save(out)

        with atomic_write(out) as f:
            f.write(self.tok.to_str())
