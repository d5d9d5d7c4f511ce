"""The parser a spec names: loaded (:func:`make_parser`), and its identity and names (no model loaded).

The identity keys the parse cache (per batch: :func:`batch_identity`) and fills the signature's parser
field; a GPU parse's identity carries the device kind.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
from collections.abc import Iterator

from synprep.parse.base import ParserBackend, ParserSpec, backend_class, backend_for_identity, identity_digest


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside (as it was after): for a process importing a parser's libraries and
    loading its models, which make hundreds of thousands of objects that live as long as the process and almost
    no garbage, so every full collection they would set off walks all the earlier ones again, for nothing
    (stanza with torch: more CPU time than one of a parse's batches). A parse worker collects once after it, then
    freezes them (:func:`synprep.parse.run.worker_parser`)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def make_parser(spec: ParserSpec, device: str | None = None) -> ParserBackend:
    """Load the parser a spec names (its registered :class:`~synprep.parse.base.ParserBackend`), the cyclic
    collector paused (:func:`collector_paused`).

    Args:
        device: this process's torch/spaCy device (``cpu``, ``cuda:1``); None follows ``spec.device``.
    """
    with collector_paused():
        return backend_class(spec.name)(spec, device=device)


def parser_identity(spec: ParserSpec) -> str:
    """The identity string of a spec's parser (cache key prefix, signature); loads no model.

    The backend's identity, with ``|device=cuda`` appended for a GPU parse: GPU and CPU kernels give
    slightly different scores (docs/parse.md), so the device kind is part of the identity — the
    cache key, the signature's parser field and the folder's configuration keep them apart. A CPU
    identity carries no device field (as every identity before the field existed).

    Raises:
        ConfigError: models missing (stanza resources, spaCy package, CoreNLP).
    """
    identity = backend_class(spec.name).identity(spec)
    return identity if spec.device == "cpu" else f"{identity}|device={spec.device}"


def short_identity(identity: str) -> str:
    """The signature line's compact form of a parser identity (its backend's
    :meth:`~synprep.parse.base.ParserBackend.short_identity`; ``NAME#DIGEST`` for an unknown one)."""
    backend = backend_for_identity(identity)
    if backend is None:
        return f"{identity.split('|', 1)[0]}#{identity_digest(identity)}"
    return backend.short_identity(identity)


def batch_identity(identity: str, batch: list[tuple[str, ...]]) -> str:
    """The cache key prefix of one batch's parses: the parser identity and the batch's sentences.

    A parse depends on its batch-mates (stanza's floats, in the 7th digit), so each is cached
    under its whole batch: ``IDENTITY|batch=SHA`` (sha256 of the batch's word lists, 16 hex digits).
    """
    digest = hashlib.sha256(json.dumps([list(s) for s in batch], ensure_ascii=False).encode("utf-8")).hexdigest()
    return f"{identity}|batch={digest[:16]}"


def parser_signature_name(spec: ParserSpec) -> str:
    """The pipeline signature's ``parser:`` field for a spec (no file hashed)."""
    return backend_class(spec.name).signature_name(spec)
