"""Where a split's parses come from: a parser run, or parses the user already has.

The annotation stage (:mod:`synprep.annotate`) asks a :class:`ParseSource` for the parses of each
block of pairs and never branches on where they come from. A new kind is one class here (or in
its own module) and one line in :data:`SOURCES`:

* :class:`RunParser` (``stanza``, ``corenlp``): parses the items' words with
  :func:`synprep.parse.run.parse_block` (cache, workers, the user's ``--trees``);
* :class:`ImportConllu` (``conllu``): the parses the items carry, read from the user's CoNLL-U
  file (:func:`synprep.parse.conllu_io.read_numbered`), checked to belong to their line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from synprep.defaults import PARSE_DEFAULTS
from synprep.errors import ConfigError, InputError
from synprep.escape import escape
from synprep.parse.base import backend_class, bound_error, identity_fields
from synprep.parse.conllu_io import read_numbered
from synprep.parse.options import ParseRun
from synprep.parse.registry import PARSE_SOURCES, RUN_PARSER, parse_source_class  # noqa: F401 - re-exported
from synprep.parse.run import parse_block_stream, parser_identity, parser_signature_name
from synprep.parse.trees import TreeLeavesError
from synprep.textio import iter_lines
from synprep.timeline import mark
from synprep.types import ParsedLine

if TYPE_CHECKING:
    from synprep.parse.options import Item, Parallel, ParseOptions

#: ``--parser`` name → ``"module:Class"`` of its :class:`ParseSource` (imported when used); every
#: parser backend of :data:`synprep.parse.registry.PARSER_BACKENDS` is a :class:`RunParser` besides
SOURCES = PARSE_SOURCES


class ParseSource:
    """The parses of a split's source side.

    Attributes:
        runs_parser: whether a parser runs (then the parse cache and the parser's options apply).
    """

    runs_parser: ClassVar[bool] = False

    def __init__(self, opts: ParseOptions):
        self.opts = opts

    def identity(self) -> str:
        """What determines the parses, as one string (the cache key prefix)."""
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        """The JSON-able part of the configuration that determines the parses (stored in every shard)."""
        raise NotImplementedError

    def signature(self) -> str:
        """The ``parser:`` field of the signature line (the same as ``synprep parse`` prints)."""
        return self.opts.config.parser

    def legacy_signature(self) -> str:
        """The ``parser:`` field as versions before the model digest wrote it (folders made then resume)."""
        return self.signature()

    def check_inputs(self, src: str | None, conllu: str | None) -> None:
        """The source-side inputs this source reads are given and exist (checked before anything is written).

        Raises:
            ConfigError: a needed option is missing.
            InputError: a missing file.
        """
        raise NotImplementedError

    def source_tokens(self, src: str | None, conllu: str | None) -> Iterator[str] | None:
        """The source side's Moses tokens (escaped), one line per input line, when this source
        brings them (imported parses); None: ``pipeline`` tokenizes ``src``."""
        return None

    def imported(self, conllu: str | None, lines: Iterable[int], n_lines: int) -> Iterator[ParsedLine] | None:
        """The parses this source carries for the kept ``lines`` (1-based, increasing) of an input
        of ``n_lines`` lines, in order; None when the parser runs on the words instead."""
        return None

    def parse(self, items: list[Item], par: Parallel, cache: Any, identity: str | None,
              progress: Any = None) -> list[ParsedLine]:
        """One :class:`ParsedLine` per item, in order (``error`` set for a line without a parse).

        Raises:
            InputError: a parse that does not belong to its line, or trees that do not match.
        """
        raise NotImplementedError

    def parse_stream(self, items: list[Item], par: Parallel, cache: Any, identity: str | None,
                     progress: Any = None) -> Iterator[ParsedLine]:
        """:meth:`parse`'s lines one by one, each as soon as it is ready (here: all at once, after the parse).

        Raises:
            InputError: as :meth:`parse`.
        """
        yield from self.parse(items, par, cache, identity, progress)


class RunParser(ParseSource):
    """Run the parser backend that the :class:`~synprep.parse.base.ParserSpec` names (any entry of
    :data:`synprep.parse.registry.PARSER_BACKENDS`: stanza, spaCy, CoreNLP, a plugin) on the items' words."""

    runs_parser = True

    def identity(self) -> str:
        return parser_identity(self.opts.spec)

    def config(self) -> dict[str, Any]:
        cfg = self.opts.config
        out: dict[str, Any] = {"ssplit": cfg.ssplit, **self.opts.spec.recorded()}
        if not backend_class(cfg.parser).has_scores:  # no arc scores: the LDD features are one-hot rows
            out["ldd"] = "one-hot"
        out["identity"] = self.identity()
        out["constituency"] = bool(out.get("constituency")) and produces_trees(cfg.parser, out["identity"])
        out["batch_size"] = cfg.batch_size
        return out

    def check_inputs(self, src: str | None, conllu: str | None) -> None:
        if src is None:
            raise ConfigError("--src is required unless --parser conllu")
        if not os.path.exists(src):
            raise InputError("no such file", src)

    def signature(self) -> str:
        """``stanza-1.15.0/synprep/de#1a2b3c4d``: the parser, its package and the digest of its identity
        (which names every model file's sha256), as ``synprep parse`` prints it."""
        from synprep.parse.run import short_identity  # the backend's own (spaCy: model and version)

        return short_identity(self.identity())

    def legacy_signature(self) -> str:
        return parser_signature_name(self.opts.spec)

    def parse(self, items: list[Item], par: Parallel, cache: Any, identity: str | None,
              progress: Any = None) -> list[ParsedLine]:
        return list(self.parse_stream(items, par, cache, identity, progress))

    def parse_stream(self, items: list[Item], par: Parallel, cache: Any, identity: str | None,
                     progress: Any = None) -> Iterator[ParsedLine]:
        """The block's lines as its batches finish (:func:`synprep.parse.run.parse_block_stream`): consume
        it to the end (the cache is written after the last line)."""
        opts = self.opts
        trees = [it.trees if it.trees is not None else [] for it in items] if opts.trees is not None else None
        try:
            run = ParseRun(opts.spec, cache=cache, par=par, identity=identity)
            yield from parse_block_stream([it.words for it in items], run, trees=trees, trees_name=opts.trees,
                                          progress=progress.block(items[0].line - 1, items[-1].line) if progress
                                          else None)
            mark(f"parsed {items[0].line}-{items[-1].line}")  # the block's last batch is back (and cached)
        except InputError as e:  # parse_block numbers the block's lines 1..n: name the input line
            if e.line is not None and 1 <= e.line <= len(items):
                kind = TreeLeavesError if isinstance(e, TreeLeavesError) else InputError  # pipeline adds its fix
                raise kind(e.reason, e.path, items[e.line - 1].line) from None
            raise


def produces_trees(parser: str, identity: str) -> bool:
    """Whether the parser of ``identity`` has a constituency model that runs: stanza names its processors
    (a language without a constituency model, German in the offline models, has none); spaCy never has
    one; CoreNLP always does. ``config.parser.constituency`` is this, not what was asked."""
    _, kv = identity_fields(identity)
    if "processors" in kv:
        return "constituency" in kv["processors"].split(",")
    return backend_class(parser).has_trees


class ImportConllu(ParseSource):
    """The user's CoNLL-U parses, carried by the items (gold treebanks, any parser's output)."""

    def identity(self) -> str:
        return "conllu-import"

    def max_words(self) -> int:
        return int(self.opts.config.max_words)

    def config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.opts.config.parser, "ssplit": self.opts.config.ssplit}
        if self.max_words() != PARSE_DEFAULTS.max_words:  # only then: folders of earlier versions keep their config
            out["max_words"] = self.max_words()
        return out

    def check_inputs(self, src: str | None, conllu: str | None) -> None:
        if conllu is None:
            raise ConfigError("--parser conllu needs --conllu FILE")
        if not os.path.exists(conllu):
            raise InputError("no such file", conllu)
        if os.path.isdir(conllu):
            raise InputError("is a folder, not a CoNLL-U file (--conllu)", conllu)

    def source_tokens(self, src: str | None, conllu: str | None) -> Iterator[str]:
        """The CoNLL-U surface tokens, Moses-escaped; with ``src`` each raw line must be the text of its
        parse (:func:`same_text`)."""
        assert conllu is not None
        raw = iter_lines(src) if src is not None else None
        for p in read_numbered(conllu):
            if raw is not None:
                same_text(next(raw, None), p, str(src), conllu)
            yield " ".join(escape(w) for w in p.words)

    def imported(self, conllu: str | None, lines: Iterable[int], n_lines: int) -> Iterator[ParsedLine]:
        """Raises InputError: no parse for a kept line, or a CoNLL-U file of another length."""
        assert conllu is not None
        reader = read_numbered(conllu, n_lines)
        for n in lines:
            for p in reader:
                if p.line == n:
                    yield p
                    break
            else:
                raise InputError(f"no parse for line {n}", conllu)
        for _ in reader:  # to the end: more parses than lines is an error too
            pass

    def parse(self, items: list[Item], par: Parallel, cache: Any, identity: str | None,
              progress: Any = None) -> list[ParsedLine]:
        out = []
        for it in items:
            if it.parse is None:
                raise InputError("no CoNLL-U parse for this line", None, it.line)
            if it.parse.line != it.line:
                raise InputError(f"the CoNLL-U parse of line {it.parse.line} was given for line {it.line}",
                                 None, it.line)
            error = None if it.parse.error is not None else bound_error([s.words for s in it.parse.sentences],
                                                                         self.max_words())
            # a sentence over --max-words or a word over MAX_WORD_CHARS is dropped before any W×W feature array
            out.append(it.parse if error is None else ParsedLine(line=it.line, error=error))
        return out


def same_text(line: str | None, parsed: ParsedLine, src: str, conllu: str) -> None:
    """``--src`` beside ``--parser conllu``: the raw line must be the text of its parse.

    The parse's surface tokens joined must equal the raw line without its spaces (tokenization
    may differ, the characters may not). A ``# error`` block (a line without a parse) is not compared.

    Raises:
        InputError: the source ends early, or a line's characters differ (names the line and column).
    """
    if line is None:
        raise InputError(f"the source ends before line {parsed.line}, the CoNLL-U file {conllu} goes on", src,
                         parsed.line)
    if parsed.error is not None:
        return
    have, want = "".join(line.split()), "".join(parsed.words)
    if have != want:
        k = next((i for i, (a, b) in enumerate(zip(have, want, strict=False)) if a != b), min(len(have), len(want)))
        raise InputError(f"this line is not the text of the CoNLL-U parse of line {parsed.line} in {conllu} "
                         f"(they differ at the {k + 1}th non-space character: {have[k:k + 12]!r} vs "
                         f"{want[k:k + 12]!r}); --src must be the text that was parsed, or leave it out", src,
                         parsed.line)


#: kept for callers of earlier versions: the one numbered CoNLL-U reader is in synprep.parse.conllu_io
def source_for(opts: ParseOptions) -> ParseSource:
    """The :class:`ParseSource` of ``opts.config.parser``. Raises ConfigError: an unknown parser name."""
    source: ParseSource = parse_source_class(opts.config.parser)(opts)
    return source
