"""Parse lines of words, streaming and in order: sentence splitting, the cache, parallel workers.

:func:`parse_block` parses a bounded block of lines (the pipeline's unit: one shard);
:func:`parse_lines` streams any input through blocks. The main process splits each line into
sentences (:mod:`synprep.parse.blocks`, :mod:`synprep.parse.ssplit`, or the user's trees), checks
lengths, cuts the block's unique sentences into batches by a fixed rule (whatever the cache holds),
looks each batch up in the cache (:mod:`synprep.parse.cache`, keyed per batch: :func:`batch_identity`)
and parses only the batches not found. A parse is two stages: the forward (:func:`forward_work`: the
models) and the decode (:func:`decode_work`: trees, relations, LDD, a pure function of the forward's
scores). Unpipelined, each of ``jobs`` workers (:func:`synprep.parallel.parallel_map`) runs both on
whole batches; pipelined (:func:`pipelined`: by default with ``device="cuda"``), the forward runs in
this process or one worker per visible GPU and the decode in ``jobs`` CPU processes behind a bounded
queue (:func:`synprep.parallel.stage_map`), so the GPU goes on with the next batch. Each worker
process loads one parser, kept in a module-level global so it is loaded once per process, with
torch limited to one thread; a GPU worker takes one visible GPU. Results come back in input order;
the main process stores them in the cache and yields one :class:`ParsedLine` per input line — never
dropping one: an empty line, a too-long sentence or a parser failure gives a ``ParsedLine`` with
``error`` set.
"""

from __future__ import annotations

import dataclasses
import fcntl
import gc
import itertools
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

from synprep.defaults import PARSE_DEFAULTS as DEFAULTS
from synprep.errors import InputError
from synprep.parallel import chunked, keep_loky_worker, limit_threads, parallel_map, stage_map
from synprep.parse.backends import (  # noqa: F401 - parser_identity, short_identity, parser_signature_name: their old home
    batch_identity,
    make_parser,
    parser_identity,
    parser_signature_name,
    short_identity,
)
from synprep.parse.base import ParserSpec, ParseStats, _reason, error_kind, parse_isolated
from synprep.parse.blocks import (  # noqa: F401 - Throughput, THROUGHPUT: imported from here by the CLI
    STATS_REASON,
    THROUGHPUT,
    Throughput,
    assemble,
    prepare_line,
    repeats,
)
from synprep.parse.cache import ParseCache
from synprep.parse.options import Parallel, ParseRun  # noqa: F401 - Parallel: for the callers of parse_lines
from synprep.parse.pipelining import forward_workers, gpu_parse_jobs, pipelined  # noqa: F401 - pipelined: its old home
from synprep.types import ParsedLine, ParsedSentence

if TYPE_CHECKING:  # nltk only where a tree is built (synprep.tree): a dependency parse never loads it
    from nltk import Tree

log = logging.getLogger(__name__)

#: sentences per work item sent to a worker (one parser call; synprep.pipeline.config.DataConfig)
DEFAULT_BATCH_SIZE = DEFAULTS.batch_size
#: lines parsed as one deterministic block by :func:`parse_lines`
DEFAULT_BLOCK_LINES = 2048
#: a batch is also cut before its words' characters would pass this (a sentence over it goes alone): stanza's
#: character models take about 2.6 KB a character, so a batch costs at most what one sentence at the default
#: bounds (``max_words`` × ``max_word_chars``) costs; a batch of 64 sentences of real text holds at most 9,000
#: (IWSLT14, Multi30k, UD treebanks). Not part of a folder's configuration: real text never reaches it, and the
#: parses do not depend on the batching (benchmarks/hostile_rss.py, case longwords)
BATCH_CHARS = 250_000
#: ... and before its words × its longest word would pass this: the character models pad every word to the
#: batch's longest (about 0.4 KB a padded character). Real text reaches 270,000 (a URL in a batch of the English
#: Web Treebank)
BATCH_PADDED_CHARS = 1_000_000

# --- worker side --------------------------------------------------------------------------------

_PARSER: tuple[ParserSpec, Any] | None = None
_GPU_LOCK: IO | None = None
#: number of sentences this process has given to a parser (tests count parser calls with it)
PARSER_CALLS = 0


def cut_batches(sentences: list[tuple[str, ...]], batch_size: int, *, max_chars: int | None = None,
                max_padded: int | None = None) -> list[list[tuple[str, ...]]]:
    """Cut sentences, in order, into batches: a batch ends before a sentence that would give it more than
    ``batch_size`` sentences, more than ``max_chars`` characters, or more than ``max_padded`` padded
    characters (its words × its longest word: what the character models hold); a sentence over a
    budget on its own goes alone. Real text never reaches the character budgets
    (:class:`synprep.defaults.ParseDefaults`), so its batches are every ``batch_size`` sentences.

    Args:
        sentences: each sentence's words.
        batch_size: sentences per batch (>= 1).
        max_chars: characters per batch (the sum of its words' lengths; None: :data:`BATCH_CHARS`).
        max_padded: the batch's word count × the length of its longest word (None: :data:`BATCH_PADDED_CHARS`).

    Returns:
        The batches, in order; concatenated they are ``sentences``.
    """
    max_chars = BATCH_CHARS if max_chars is None else max_chars
    max_padded = BATCH_PADDED_CHARS if max_padded is None else max_padded
    batches: list[list[tuple[str, ...]]] = []
    batch: list[tuple[str, ...]] = []
    chars = words = longest = 0
    for s in sentences:
        s_chars, s_longest = sum(map(len, s)), max(map(len, s), default=0)
        if batch and (len(batch) == batch_size or chars + s_chars > max_chars
                      or (words + len(s)) * max(longest, s_longest) > max_padded):
            batches.append(batch)
            batch, chars, words, longest = [], 0, 0, 0
        batch.append(s)
        chars, words, longest = chars + s_chars, words + len(s), max(longest, s_longest)
    if batch:
        batches.append(batch)
    return batches


_SLOT_DIR: tempfile.TemporaryDirectory | None = None


def gpu_slot_dir() -> str:
    """The folder of GPU slot locks shared by this run's parser workers (one per main process).

    It lives as long as the main process, not one block: workers keep their parser — and the GPU
    they claimed — from block to block, so a worker started for a later block must see their locks.
    """
    global _SLOT_DIR
    if _SLOT_DIR is None:
        _SLOT_DIR = tempfile.TemporaryDirectory(prefix="synprep-gpu-")
    return _SLOT_DIR.name


def _claim_gpu(slot_dir: str | None) -> str:
    """Pick this worker's GPU: the first free slot (a lock file held for the process's life).

    Args:
        slot_dir: :func:`gpu_slot_dir` of the main process, or None (one worker: ``cuda:0``).

    Returns:
        ``cuda:K`` for the first of the visible GPUs no other live worker holds; with more workers
        than GPUs, a GPU chosen by process id (shared).

    Raises:
        RuntimeError: no GPU visible.
    """
    global _GPU_LOCK
    import torch

    n = torch.cuda.device_count()
    if n == 0:
        raise RuntimeError("--device cuda but no GPU is visible")
    if slot_dir is None:
        return "cuda:0"
    for k in range(n):
        f = open(os.path.join(slot_dir, f"gpu{k}.lock"), "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        _GPU_LOCK = f
        return f"cuda:{k}"
    return f"cuda:{os.getpid() % n}"  # more workers than GPUs: share


def worker_parser(spec: ParserSpec, slot_dir: str | None = None):
    """This process's parser for ``spec`` (loaded on first use, then reused)."""
    global _PARSER
    if _PARSER is not None and _PARSER[0] == spec:
        return _PARSER[1]
    if _PARSER is not None:
        old, _PARSER = _PARSER[1], None
        old.close()
    limit_threads(1)
    if logging.getLogger("stanza").getEffectiveLevel() < logging.WARNING and not log.isEnabledFor(logging.DEBUG):
        logging.getLogger("stanza").setLevel(logging.WARNING)
    device = _claim_gpu(slot_dir) if spec.device == "cuda" else "cpu"
    if spec.device == "cuda":
        log.info("parser worker %d uses %s", os.getpid(), device)
    parser = make_parser(spec, device=device)
    # the models' objects (stanza: ~375,000, vocabularies and word maps) out of the cyclic collector's generations:
    # every full collection would walk them again (a fifth of stanza's constituency parse). No collection first:
    # one walks them all (0.1 s CPU a process) and finds next to nothing (7 objects after stanza's load, none
    # after spaCy's)
    gc.freeze()
    _PARSER = (spec, parser)
    keep_loky_worker()
    return parser


class _Stage:
    """A parser seen as its forward stage (:func:`parse_isolated` calls ``.parse``)."""

    def __init__(self, parser: Any):
        self.parse = parser.forward


def forward_work(item: tuple[ParserSpec, str | None, list[list[str]]]) -> tuple[Any, list[Any], float]:
    """Worker entry point of the forward stage: the parser's models over one batch (a GPU's part).

    Returns:
        ``(context, results, seconds)``: for a backend with the two stages (``forward`` and
        ``decode_context``, as :class:`~synprep.parse.stanza_parser.StanzaParser`) its decode context and
        per sentence its forward result; for any other backend None and the finished parses. A sentence
        the parser failed on gives the reason (str), isolated as :func:`parse_isolated` does.
    """
    global PARSER_CALLS
    spec, slot_dir, sentences = item
    if not sentences:
        return None, [], 0.0
    PARSER_CALLS += len(sentences)
    parser = worker_parser(spec, slot_dir)
    # one intra-op thread in the thread that runs the models, whichever loaded them: under OpenMP a thread's count
    # is its own, and a parser loaded by the warm-up's thread where torch was imported already (a notebook,
    # a test process) would otherwise run with every core, giving other floats than a worker's
    limit_threads(1)
    t0 = time.perf_counter()
    if not hasattr(parser, "forward"):
        return None, parse_isolated(parser, sentences), 0.0
    results = parse_isolated(_Stage(parser), sentences)  # type: ignore[arg-type]  # has .parse: all it calls
    return parser.decode_context(), results, time.perf_counter() - t0


def decode_work(item: tuple[Any, list[Any], float]) -> tuple[list[ParsedSentence | str], float, float]:
    """Worker entry point of the decode stage: a pure function of :func:`forward_work`'s result.

    Returns:
        ``(parses, forward seconds, decode seconds)``; each sentence's :class:`ParsedSentence` or the reason
        it failed (a decode failure is isolated to its sentence).
    """
    ctx, results, forward_s = item
    if ctx is None:
        return results, forward_s, 0.0
    t0 = time.perf_counter()
    out: list[ParsedSentence | str] = []
    for r in results:
        if isinstance(r, str):
            out.append(r)
            continue
        try:
            out.append(ctx.decode(r))
        except Exception as e:  # any parser failure is recorded, never fatal (as parse_isolated words it)
            out.append(_reason(e))
    return out, forward_s, time.perf_counter() - t0


def parse_work(item: tuple[ParserSpec, str | None, list[list[str]]]) -> tuple[list[ParsedSentence | str], float, float]:
    """Worker entry point of an unpipelined parse: :func:`decode_work` of :func:`forward_work`, here."""
    return decode_work(forward_work(item))


def _results(spec: ParserSpec, batches: list[list[list[str]]], *, jobs: int, backend: str, scheduler: str | None,
             pipeline: bool) -> Iterator[tuple[list[ParsedSentence | str], float, float]]:
    """:func:`parse_work`'s result of every batch, in order.

    Unpipelined: ``jobs`` workers each parse whole batches (:func:`synprep.parallel.parallel_map`).
    Pipelined: the forward stage runs in this process (one GPU, or the CPU) or in :func:`forward_workers`
    loky workers (one per visible GPU), and its results go through a bounded queue to ``jobs`` decode processes
    (:func:`synprep.parallel.stage_map`): the next batch's forward runs while the earlier ones decode.
    """
    if not pipeline:
        jobs = gpu_parse_jobs(jobs, spec.device, backend, scheduler)
        slot_dir = gpu_slot_dir() if spec.device == "cuda" and jobs > 1 else None
        work = ((spec, slot_dir, b) for b in batches)
        yield from parallel_map(parse_work, work, jobs=min(jobs, len(batches)), backend=backend, scheduler=scheduler)
        return
    n = forward_workers(spec)
    slot_dir = gpu_slot_dir() if spec.device == "cuda" and n > 1 else None
    forward = parallel_map(forward_work, ((spec, slot_dir, b) for b in batches), jobs=max(1, min(n, len(batches))),
                           backend=backend, scheduler=scheduler)
    yield from stage_map(decode_work, forward, jobs=jobs)


# --- main process -------------------------------------------------------------------------------


def _run_spec(spec: ParserSpec, with_trees: bool, identity: str | None,
              cache: ParseCache | None) -> tuple[ParserSpec, str | None]:
    """The spec the parser really runs with, and its identity (computed when a cache needs one).

    With the user's trees the constituency model is not run, so the parses must be cached under the
    identity of the spec without it — never under the identity of the spec as given, which a later
    run without trees looks up and would then get parses without a tree.
    """
    if with_trees and spec.constituency:
        spec = dataclasses.replace(spec, constituency=False)
    if identity is None and cache is not None:
        identity = parser_identity(spec)
    return spec, identity


def parse_block(word_lines: list[list[str]], run: ParseRun, **kwargs: Any) -> list[ParsedLine]:
    """Parse a bounded block of lines as one unit: :func:`parse_block_stream`'s lines, as a list.

    Returns:
        One :class:`ParsedLine` per input line (``line = first_line + index``).

    Raises:
        InputError: trees that do not match the words.
        ConfigError: missing models.
    """
    return list(parse_block_stream(word_lines, run, **kwargs))


def parse_block_stream(
    word_lines: list[list[str]],
    run: ParseRun,
    *,
    trees: list[list[Tree]] | None = None,
    trees_name: str | None = None,
    first_line: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> Iterator[ParsedLine]:
    """Parse a bounded block of lines as one unit, with batches that depend on nothing but the block;
    each line is yielded, in order, as soon as its sentences' batches are parsed (``annotate`` builds
    its records while the later batches parse). Consume it to the end: the cache is written, and the
    statistics and :data:`THROUGHPUT` counted, after the last line.

    stanza's probabilities depend (in the 7th digit) on which sentences share a batch, so a
    sentence's parse must not depend on what else happened: the batches are the block's unique
    sentences, in order of first occurrence, cut every ``batch_size`` sentences, or sooner where
    their characters would pass a budget (:func:`cut_batches`) — whatever the cache holds. The cache stores each batch's parses under the batch's own key
    (:func:`batch_identity`): a batch is read back only when the cache holds that very batch, else
    it is parsed again. So a block gives the same parses with a fresh cache, with no cache, with a
    cache another folder filled (other blocks, other batch-mates), after a crash, with any ``jobs``
    or backend. Parses are stored in one transaction when the whole block is done.

    Args:
        word_lines: each line's words (Moses tokens, unescaped).
        run: how the lines are parsed (:class:`~synprep.parse.options.ParseRun`).
        progress: called as ``progress(done, total)`` after each batch, with the sentences parsed so far
            and the block's sentences to parse (:mod:`synprep.progress`).
        trees: as :func:`parse_lines`.
        trees_name: as :func:`parse_lines`.
        first_line: as :func:`parse_lines`.

    Yields:
        One :class:`ParsedLine` per input line (``line = first_line + index``).

    Raises:
        InputError: trees that do not match the words (before the first line).
        ConfigError: missing models.
    """
    started = time.perf_counter()
    spec, identity = _run_spec(run.spec, trees is not None, run.identity, run.cache)
    stats = run.stats if run.stats is not None else ParseStats()
    if trees is not None and len(trees) != len(word_lines):
        raise InputError(f"{len(trees)} lines of trees for {len(word_lines)} input lines", trees_name)
    recs = [prepare_line(first_line + i, list(w), trees[i] if trees is not None else None, spec, trees_name)
            for i, w in enumerate(word_lines)]
    unique = list(dict.fromkeys(s for r in recs for s in r.sentences))
    # the batches: a fixed rule over the block's full sentence list, whatever the cache holds
    batches = cut_batches(unique, spec.config.batch_size)
    parses: dict[tuple[str, ...], ParsedSentence | str] = {}
    todo = _cache_misses(batches, parses, run.cache, identity, spec.ldd_threshold)
    cached = set(parses)
    misses = [s for k in todo for s in batches[k]]
    out: list[ParsedLine] = []
    used: set[tuple[str, ...]] = set()

    def ready() -> Iterator[ParsedLine]:  # the next lines whose sentences are all parsed, in order
        while len(out) < len(recs) and all(s in parses for s in recs[len(out)].sentences):
            pl = assemble(recs[len(out)], parses, used)
            _count_line(stats, recs[len(out)].sentences, pl, cached)
            out.append(pl)
            yield pl

    yield from ready()
    if misses:
        pending: list[tuple[str, list[tuple[tuple[str, ...], ParsedSentence]]]] = []
        for k in _parse_batches(spec, run, batches, todo, parses):
            fresh = [(s, p) for s in batches[k] if not isinstance(p := parses[s], str)]
            if run.cache is not None and fresh:
                assert identity is not None
                pending.append((batch_identity(identity, batches[k]), fresh))
            if progress is not None:
                progress(len(parses) - len(cached), len(misses))
            yield from ready()
        if run.cache is not None and pending:
            run.cache.put_batches(pending)
    stats.parsed += len(misses)
    assert len(out) == len(recs)  # every sentence is parsed now: ready() handed out every line
    stats.repeats += repeats(recs, out, cached)
    _count_throughput(recs, out, cached, started, spec.device)


def _count_line(stats: ParseStats, sentences: list[tuple[str, ...]], pl: ParsedLine, cached: set) -> None:
    """Add a parsed line to ``stats`` (its sentences, those the cache held, or its failure's reason)."""
    stats.lines += 1
    if pl.error is not None:
        stats.failed_lines += 1
        stats.reasons[STATS_REASON[error_kind(pl.error)]] += 1
    else:
        stats.sentences += len(pl.sentences)
        stats.cache_hits += sum(1 for s in sentences if s in cached)


def _cache_misses(batches: list[list[tuple[str, ...]]], parses: dict, cache: ParseCache | None,
                  identity: str | None, ldd_threshold: float) -> list[int]:
    """The batches the cache does not hold whole (their indexes); the parses of those it holds go into
    ``parses``."""
    if cache is None or not batches:
        return list(range(len(batches)))
    assert identity is not None
    todo = []
    for k, batch in enumerate(batches):
        found = cache.get_many(batch_identity(identity, batch), batch, ldd_threshold)
        if all(p is not None for p in found):
            parses.update(zip(batch, found, strict=True))
        else:
            todo.append(k)
    return todo


def _parse_batches(spec: ParserSpec, run: ParseRun, batches: list[list[tuple[str, ...]]], todo: list[int],
                   parses: dict) -> Iterator[int]:
    """Parse the batches ``todo`` (in the run's workers), each one's parses put into ``parses`` before its index
    is yielded."""
    par = run.par
    pipe = pipelined(spec, par.backend, par.scheduler, run.pipeline)
    THROUGHPUT.decode_jobs = par.jobs if pipe else 0
    work = [[list(s) for s in batches[k]] for k in todo]
    for k, (result, forward_s, decode_s) in zip(todo, _results(spec, work, jobs=par.jobs, backend=par.backend,
                                                                scheduler=par.scheduler, pipeline=pipe), strict=True):
        THROUGHPUT.forward_seconds += forward_s
        THROUGHPUT.decode_seconds += decode_s
        parses.update(zip(batches[k], result, strict=True))
        yield k


def _count_throughput(recs: list, out: list[ParsedLine], cached: set, started: float, device: str) -> None:
    """Add a parsed block to :data:`THROUGHPUT` (its parsed sentences and words, those from the cache, its time)."""
    ok = [s for pl in out if pl.error is None for s in pl.sentences]
    THROUGHPUT.sentences += len(ok)
    THROUGHPUT.words += sum(len(s.words) for s in ok)
    THROUGHPUT.cached += sum(1 for rec, pl in zip(recs, out, strict=True) if pl.error is None
                             for s in rec.sentences if s in cached)
    THROUGHPUT.seconds += time.perf_counter() - started
    THROUGHPUT.device = device


def parse_lines(
    word_lines: Iterable[list[str]],
    run: ParseRun,
    *,
    trees: Iterable[list[Tree]] | None = None,
    trees_name: str | None = None,
    block_lines: int = DEFAULT_BLOCK_LINES,
    first_line: int = 1,
) -> Iterator[ParsedLine]:
    """Parse lines of words into :class:`ParsedLine`, one per input line, in order, streaming.

    The input is cut into blocks of ``block_lines`` lines, each parsed by :func:`parse_block`
    (deterministic batches; memory holds one block).

    Args:
        word_lines: each line's words: Moses tokens, *unescaped* (:func:`synprep.escape.unescape_tokens`).
        run: how the lines are parsed (:class:`~synprep.parse.options.ParseRun`): ``run.spec`` the parser (with
            ``trees`` its constituency model is not run); ``run.cache`` a :class:`ParseCache` or None to parse
            everything; ``run.par`` the workers (``device="cuda"``: each takes one visible GPU); the spec's
            ``config.ssplit`` split lines into sentences on sentence-final punctuation (SPEC.md §1; False: each
            line one sentence; ignored when ``trees`` are given), its ``config.batch_size`` sentences per work
            item (one parser call); ``run.identity`` the parser identity if already computed (:func:`parser_identity`
            of the spec, with ``constituency=False`` when ``trees`` are given); ``run.stats`` a
            :class:`ParseStats` to fill; ``run.pipeline`` the forward stage apart from the decode stage
            (:func:`pipelined` decides when None; the same bytes either way).
        trees: per line, the user's normalized trees (``[]`` for an empty line); each tree is one
            sentence of the line and its leaves must be the words.
        trees_name: the trees file's name, for error messages.
        block_lines: lines parsed as one block (the unit of determinism and of caching).
        first_line: number of the first line (1-based).

    Yields:
        :class:`ParsedLine` with ``line = first_line + index``; sentences in order, each with
        sentence-relative 1-based heads; or ``error`` ("empty line", "sentence 2 has 300 words
        (more than max_words=250)", "parser failed: ...").

    Raises:
        InputError: trees that do not match the words (naming ``trees_name`` and the line).
        ConfigError: the parser's models cannot be found.
    """
    spec, identity = _run_spec(run.spec, trees is not None, run.identity, run.cache)
    run = dataclasses.replace(run, spec=spec, identity=identity)
    tree_it = iter(trees) if trees is not None else None
    line = first_line
    for block in chunked(word_lines, block_lines):
        block_trees = None
        if tree_it is not None:
            block_trees = list(itertools.islice(tree_it, len(block)))
            if len(block_trees) < len(block):
                raise InputError(f"the trees file ends before input line {line + len(block_trees)}", trees_name)
        yield from parse_block(block, run, trees=block_trees, trees_name=trees_name, first_line=line)
        line += len(block)
    if tree_it is not None and next(tree_it, None) is not None:
        raise InputError("the trees file has more lines than the input", trees_name)
