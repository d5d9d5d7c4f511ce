"""The main process's side of a parse block: lines in, sentences out, parsed lines back, throughput.

:func:`prepare_line` splits a line into sentences (or takes the user's trees) and checks its bounds;
:func:`assemble` builds a line's :class:`ParsedLine` from its sentences' parses; :data:`THROUGHPUT`
counts what the parse stage delivered (the command's closing line). Used by
:func:`synprep.parse.run.parse_block`.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING

from synprep.errors import InputError
from synprep.parse.base import ParserSpec, bound_error
from synprep.parse.ssplit import split_sentences
from synprep.parse.trees import TreeLeavesError, leaves_differ_message, match_leaves, tree_to_str
from synprep.types import ParsedLine, ParsedSentence

if TYPE_CHECKING:  # nltk only where a tree is built (synprep.tree): a dependency parse never loads it
    from nltk import Tree


@dataclasses.dataclass
class Throughput:
    """What this process's :func:`parse_block` calls delivered, for the command's closing line.

    Attributes:
        sentences: sentences of the successfully parsed lines (cache hits included).
        words: words of the successfully parsed lines (cache hits included).
        cached: of those sentences, the ones read from the cache.
        seconds: wall time spent in :func:`parse_block` (the parse stage only).
        device: the device kind of the latest block (``cpu`` / ``cuda``).
        forward_seconds: time in the parse's first stage (the models' forward), summed over the processes
            that ran it (0 for a backend without the split); pipelined, it overlaps the decode in wall time.
        decode_seconds: time in the second stage (trees, relations and LDD), summed over the processes that
            ran it (0 for a backend without the split); pipelined, it overlaps the forward in wall time.
        decode_jobs: the decode stage's worker processes when pipelined (0: decoded where the forward ran).
    """

    sentences: int = 0
    words: int = 0
    cached: int = 0
    seconds: float = 0.0
    device: str = "cpu"
    forward_seconds: float = 0.0
    decode_seconds: float = 0.0
    decode_jobs: int = 0

    def line(self) -> str | None:
        """``parse: 7511 sentences, 125754 words in 48.2 s: 155.8 sentences/s, 2608 words/s on cpu (0 from the
        cache)``, then ``; forward F s, decode D s`` (``in N decode processes`` when pipelined) when the
        backend has the two stages; None when nothing was parsed."""
        if self.sentences == 0:
            return None
        s = max(self.seconds, 1e-9)
        return (f"parse: {self.sentences} sentences, {self.words} words in {self.seconds:.1f} s: "
                f"{self.sentences / s:.1f} sentences/s, {self.words / s:.0f} words/s on {self.device} "
                f"({self.cached} from the cache)" + self.stages())

    def reset(self) -> None:
        """Count from zero (a command run in a process that ran one before: tests, scripts)."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, f.default)

    def stages(self) -> str:
        """``; forward 3.1 s, decode 1.2 s in 4 decode processes`` (empty without the split)."""
        if self.forward_seconds == 0 and self.decode_seconds == 0:
            return ""
        where = f" in {self.decode_jobs} decode processes" if self.decode_jobs else ""
        return f"; forward {self.forward_seconds:.1f} s, decode {self.decode_seconds:.1f} s{where}"


#: this process's parse throughput (:func:`parse_block` adds to it; the CLI prints :meth:`Throughput.line`)
THROUGHPUT = Throughput()


@dataclasses.dataclass
class Line:
    """One input line of a block: its number, its sentences (or why it has none), the user's trees."""

    line: int
    error: str | None = None
    sentences: list[tuple[str, ...]] = dataclasses.field(default_factory=list)
    trees: list[str] | None = None


def prepare_line(lineno: int, words: list[str], trees: list[Tree] | None, spec: ParserSpec,
                 trees_name: str | None) -> Line:
    """The line's sentences: the user's trees' (checked against the words), else split (``spec.config.ssplit``);
    none, with the reason, for an empty line or one over the spec's bounds (:func:`bound_error`).

    Raises:
        InputError: trees that do not match the words (naming ``trees_name`` and the line).
    """
    if trees is not None and (words or trees):
        if not trees:
            raise InputError("no tree for a non-empty line", trees_name, lineno)
        sizes = [len(t.leaves()) for t in trees]  # leaves per tree, counted once
        n_leaves = sum(sizes)
        if n_leaves != len(words):
            leaves = [leaf for t in trees for leaf in t.leaves()]
            raise TreeLeavesError(f"the tree(s) have {n_leaves} leaves but the line has {len(words)} words; "
                                  f"{leaves_differ_message(leaves, words)}", trees_name, lineno)
        spans, start, strs = [], 0, []
        for t, k in zip(trees, sizes, strict=True):
            match_leaves(t, words[start : start + k], trees_name, lineno)
            spans.append((start, start + k))
            strs.append(tree_to_str(t))
            start += k
        rec = Line(lineno, trees=strs)
    else:
        spans = split_sentences(words, enabled=spec.config.ssplit)
        rec = Line(lineno)
    if not words:
        rec.error = "empty line"
        return rec
    rec.sentences = [tuple(words[a:b]) for a, b in spans]
    rec.error = bound_error(rec.sentences, spec.config.max_words)  # too many words, or a word too long
    if rec.error is not None:
        rec.sentences = []
    return rec


def assemble(rec: Line, parses: dict[tuple[str, ...], ParsedSentence | str],
              used: set[tuple[str, ...]]) -> ParsedLine:
    """The line's :class:`ParsedLine`; ``used``: the sentences of the block already handed out."""
    if rec.error is not None:
        return ParsedLine(line=rec.line, error=rec.error)
    out = []
    for k, s in enumerate(rec.sentences, 1):
        p = parses[s]
        if isinstance(p, str):
            where = f"sentence {k}: " if len(rec.sentences) > 1 else ""
            return ParsedLine(line=rec.line, error=f"parser failed: {where}{p}")
        if s in used:  # a sentence repeated in the block: each use gets its own object and lists
            p = copy.deepcopy(p)
        else:
            used.add(s)
        if rec.trees is not None:
            p.tree, p.tree_source = rec.trees[k - 1], "constituency"
        out.append(p)
    return ParsedLine(line=rec.line, sentences=out)


#: the :attr:`ParseStats.reasons` key (logged by ``synprep parse``) of each :func:`error_kind`
STATS_REASON = {"empty": "empty line", "too_long": "too long", "word_too_long": "word too long",
                 "failed": "parser failed"}


def repeats(recs: list[Line], lines: list[ParsedLine], cached: set[tuple[str, ...]]) -> int:
    """Sentences of the block's parsed lines that repeat an earlier one the parser parsed (not cached)."""
    seen: set[tuple[str, ...]] = set()
    n = 0
    for rec, pl in zip(recs, lines, strict=True):
        if pl.error is None:
            for s in rec.sentences:
                if s not in cached:
                    n += s in seen
                    seen.add(s)
    return n


