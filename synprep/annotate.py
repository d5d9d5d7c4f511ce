"""The annotation stage: BPE'd parallel text + word-level parses → syntax features → HDF5 shards.

This is the part of the pipeline after text preparation (SPEC.md §1): for every pair, the source
words are parsed (stanza / CoreNLP, or a CoNLL-U parse the user already has), the parse is checked
against the BPE pieces (:func:`synprep.align.align`; a mismatch is an error naming the line), the
features are computed (:func:`synprep.features.line.line_features`), and pairs are written into
shards of ``shard_size`` input pairs (:func:`synprep.shards.write_shard`) with the manifest updated
after each shard.

Resume and determinism: shard ``k`` of a split always holds the pairs ``k*shard_size ..
(k+1)*shard_size - 1`` of the (cleaned) input, a shard whose file matches its manifest entry is
skipped, and every shard is parsed as one block (:func:`synprep.parse.run.parse_block`) whose
batches depend only on the input and the cache's content at the block's start, never on timing,
``--jobs`` or the backend. So a run killed at any point and started again writes byte-identical
shards, and so does a run with another number of workers. With a GPU parse the records of a shard's first
lines are built in CPU workers while its later batches parse (:func:`build_records_streamed`): the same bytes.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from synprep.align import bpe_words, first_difference
from synprep.defaults import SHARD_DEFAULTS
from synprep.errors import ConfigError, InputError
from synprep.escape import unescape_tokens
from synprep.features.line import line_features, tree_source
from synprep.parallel import chunked, parallel_map, stage_map
from synprep.parse.cache import ParseCache
from synprep.parse.options import Item, Parallel, ParseOptions
from synprep.parse.pipelining import ParseAhead, local_pool, pipelined, records_while_parsing
from synprep.parse.warming import wait_for_warm_workers, warm_parse_workers
from synprep.progress import Progress
from synprep.shards import shard_name
from synprep.shards.target import SplitShards
from synprep.subword.offsets import AlignStats
from synprep.subword.stream import parse_index_line
from synprep.text.case import moses_lowercase
from synprep.timeline import mark
from synprep.types import PairRecord, ParsedLine
from synprep.vocab import Vocab

log = logging.getLogger(__name__)

#: pairs per shard unless told otherwise (synprep.defaults, as synprep.pipeline.config.DataConfig)
DEFAULT_SHARD_SIZE = SHARD_DEFAULTS.shard_size

#: drop reasons the annotation stage can record (the text stage adds ``clean:*``)
PARSE_REASONS = ("parse:empty", "parse:too_long", "parse:failed", "annotate:empty_target")
#: (``parse:word_too_long``, a word longer than :data:`synprep.constants.MAX_WORD_CHARS` characters, is
#: recorded when it happens, never listed with 0: the manifests of earlier versions keep their bytes)


@dataclass
class SplitResult:
    """What :func:`annotate_split` did: pairs written, shards written or skipped, drops by reason."""

    pairs: int = 0
    written: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)


def drop_reason(error: str) -> str:
    """The manifest reason for a parser error message (``parse:empty|too_long|failed``)."""
    from synprep.parse.base import error_kind  # here: importing synprep.parse is not free

    return f"parse:{error_kind(error)}"


def build_records(items: list[Item], parses: list[ParsedLine], vocab: Vocab, *, ldd_threshold: float,
                  lowercase: bool, path: str | None, alignment: AlignStats | None = None
                  ) -> tuple[list[PairRecord], list[tuple[int, str, str]], set[str], list[list[str]]]:
    """Turn parsed items into shard records; returns ``(records, drops, tree sources, words)``, ``words``
    the words the parser read of each record (stored in the shard).

    ``alignment``, when given, adds up the subword alignment rule counts of the stored pairs.

    Raises:
        InputError: the parse does not match the pieces (names the line), or is malformed.
    """
    records: list[PairRecord] = []
    drops: list[tuple[int, str, str]] = []
    sources: set[str] = set()
    words: list[list[str]] = []
    for it, parsed in zip(items, parses, strict=True):
        if parsed.error is not None:
            drops.append((it.line, drop_reason(parsed.error), parsed.error))
            continue
        if not it.tgt:
            drops.append((it.line, "annotate:empty_target", "the target side is empty"))
            continue
        if it.word_index is not None:
            # aligned by offsets to it.words: the parse must be of exactly those words
            diff = first_difference(it.words, parsed.words)
            if diff is not None:
                k, x, y = diff
                raise InputError(f"the parsed words differ from the aligned words at word {k + 1}: "
                                 f"aligned {x!r} vs parser {y!r}", path, it.line)
            feats = line_features(parsed, it.src, it.line, path=path, ldd_threshold=ldd_threshold,
                                  word_index=it.word_index)
            if alignment is not None and it.alignment is not None:
                alignment += AlignStats.from_tuple(it.alignment)
        elif it.compare is not None:
            # the parser read the cased words of --parse-src; the pieces rebuild them up to case
            diff = first_difference(it.words, parsed.words)
            if diff is not None:
                k, x, y = diff
                raise InputError(f"the parsed words differ from --parse-src at word {k + 1}: "
                                 f"{x!r} vs parser {y!r}", path, it.line)
            feats = line_features(parsed, it.src, it.line, path=path, ldd_threshold=ldd_threshold,
                                  compare_words=it.compare)
        else:
            # a lowercased corpus: the parser saw the cased words; compare the lowercased ones
            feats = line_features(parsed, it.src, it.line, path=path, ldd_threshold=ldd_threshold,
                                  compare_words=[moses_lowercase(w) for w in parsed.words] if lowercase else None)
        sources.add(tree_source(parsed))
        records.append(PairRecord(line=it.line, src_ids=vocab.encode(it.src), tgt_ids=vocab.encode(it.tgt),
                                  **feats.as_dict()))
        words.append(list(parsed.words))
    return records, drops, sources, words


#: input lines per work item of :func:`build_records_parallel` (at most; fewer when a shard is small)
RECORD_CHUNK_LINES = 512


def _records_work(item: tuple) -> tuple:
    """Worker entry point: :func:`build_records` of one chunk, with its own alignment counts."""
    items, parses, vocab, ldd_threshold, lowercase, path = item
    stats = AlignStats()
    return (*build_records(items, parses, vocab, ldd_threshold=ldd_threshold, lowercase=lowercase, path=path,
                           alignment=stats), stats)


@dataclass(frozen=True)
class RecordRules:
    """How a pair's record is built from its parse (:func:`build_records`' settings, one value for a split).

    Attributes:
        vocab: the joint vocabulary (the pieces' ids).
        ldd_threshold: LDD entries under it are dropped (each word keeps its best entry).
        lowercase: the pieces were lowercased after the parse (the words are compared lowercased).
        path: the source file, for error messages.
    """

    vocab: Vocab
    ldd_threshold: float
    lowercase: bool = False
    path: str | None = None

    def work(self, items: list[Item], parses: list[ParsedLine]) -> tuple:
        """One work item of :func:`_records_work`."""
        return items, parses, self.vocab, self.ldd_threshold, self.lowercase, self.path


def build_records_parallel(items: list[Item], parses: list[ParsedLine], rules: RecordRules, par: Parallel, *,
                           alignment: AlignStats | None = None, stage_pool: bool = False
                           ) -> tuple[list[PairRecord], list[tuple[int, str, str]], set[str], list[list[str]]]:
    """:func:`build_records` of a shard's lines in ``par.jobs`` workers (the features are per-line Python:
    4.5 ms a line, the whole of annotate's time after a GPU parse). The chunks are consecutive lines and
    their results are joined in input order, so the records are the same bytes with any ``jobs``.

    ``stage_pool``: run the chunks in the decode stage's pool (:func:`synprep.parallel.stage_map`), not joblib's
    (``par.backend``): while the next block parses in a thread (:class:`synprep.parse.pipelining.ParseAhead`),
    joblib's one reusable executor may be in that thread's use.

    Raises:
        InputError: as :func:`build_records`, for the first failing chunk (its line named).
    """
    if par.jobs <= 1 or len(items) < 2:
        return build_records(items, parses, rules.vocab, ldd_threshold=rules.ldd_threshold, lowercase=rules.lowercase,
                             path=rules.path, alignment=alignment)
    size = max(1, min(RECORD_CHUNK_LINES, -(-len(items) // par.jobs)))
    work = (rules.work(items[i:i + size], parses[i:i + size]) for i in range(0, len(items), size))
    jobs = min(par.jobs, -(-len(items) // size))
    results = (stage_map(_records_work, work, jobs=par.jobs) if stage_pool else
               parallel_map(_records_work, work, jobs=jobs, backend=par.backend, scheduler=par.scheduler))
    return _joined(results, alignment)


def _joined(results: Iterable[tuple], alignment: AlignStats | None
            ) -> tuple[list[PairRecord], list[tuple[int, str, str]], set[str], list[list[str]]]:
    """The chunks' :func:`_records_work` results joined in their order (records, drops, sources, words); their
    alignment counts added to ``alignment``."""
    records: list[PairRecord] = []
    drops: list[tuple[int, str, str]] = []
    sources: set[str] = set()
    words: list[list[str]] = []
    for r, d, s, w, stats in results:
        records += r
        drops += d
        sources |= s
        words += w
        if alignment is not None:
            alignment += stats
    return records, drops, sources, words


#: input lines per work item of :func:`build_records_streamed` (at most): small, because the last chunk's
#: records are built after the parse has ended (128 lines: about 0.6 s of one core)
STREAM_CHUNK_LINES = 128


def build_records_streamed(items: list[Item], parses: Iterable[ParsedLine], rules: RecordRules, par: Parallel, *,
                           alignment: AlignStats | None = None, chunk_lines: int | None = None,
                           stream: bool = True
                           ) -> tuple[list[PairRecord], list[tuple[int, str, str]], set[str], list[list[str]]]:
    """:func:`build_records` of a shard's lines while their parse still runs (``stream``, with ``-j`` > 1 on
    this machine: :func:`synprep.parse.pipelining.records_while_parsing` decides for ``annotate``).

    ``parses`` yields each line's parse as soon as it is ready
    (:meth:`synprep.parse.source.ParseSource.parse_stream`); every ``chunk_lines`` consecutive lines
    (default :data:`STREAM_CHUNK_LINES`, fewer when the shard is small) go to ``par.jobs`` worker processes
    (:func:`synprep.parallel.stage_map`, a pool apart from the parse's) at once, so the features of the early
    lines are computed while the later batches parse (a GPU parse leaves the CPU cores free). The stream is
    read to its end before any result is taken (the parse writes its cache last), and the chunks' results
    are joined in input order: the same records, drops and bytes as :func:`build_records` of the whole
    shard, with any ``jobs`` and ``chunk_lines``. Without ``stream``, or with one worker, dask or threading:
    the parse first, then :func:`build_records_parallel` (in the parse's own pool).

    Raises:
        InputError: as :func:`build_records`, for the first failing chunk (its line named), after the parse.
    """
    if not (stream and par.jobs > 1 and local_pool(par.backend, par.scheduler)) or len(items) < 2:
        return build_records_parallel(items, list(parses), rules, par, alignment=alignment)
    size = chunk_lines if chunk_lines is not None else max(1, min(STREAM_CHUNK_LINES, -(-len(items) // par.jobs)))
    if size < 1:
        raise ConfigError(f"chunk_lines must be >= 1, got {size}")

    def work() -> Iterator[tuple]:
        start, buf = 0, []
        for _, parsed in zip(items, parses, strict=True):  # strict: one parse per line
            buf.append(parsed)
            if len(buf) == size or start + len(buf) == len(items):
                yield rules.work(items[start:start + len(buf)], buf)
                start, buf = start + len(buf), []

    # every chunk may be in flight: the parse is never held up, and a shard's records are in memory anyway
    return _joined(stage_map(_records_work, work(), jobs=par.jobs, bound=-(-len(items) // size)), alignment)


def annotate_split(target: SplitShards, items: Iterable[Item], opts: ParseOptions, par: Parallel,
                   source_name: str | None = None) -> SplitResult:
    """Parse, annotate and shard one split, skipping shards already finished.

    Args:
        target: the split's shards: where, with which vocabulary, manifest and attributes.
        items: the split's pairs in input order (streamed: one shard's worth is held at a time).
        opts: how to parse (``opts.config.ldd_threshold``: LDD entries under it are dropped, each word
            keeping its best entry).
        par: where the work runs.
        source_name: the source file, for error messages.

    Returns:
        :class:`SplitResult`.

    Raises:
        InputError: a parse that does not match its pieces, malformed input.
        ConfigError: bad options.
    """
    out, split, manifest = target.out, target.split, target.manifest
    result = SplitResult()
    manifest.declare_reasons(split, list(PARSE_REASONS))
    source = opts.source()
    cache, identity = _split_cache(opts, source)  # the cache key prefix: computed once per split, not per shard
    progress = Progress(manifest.split(split).input_lines, f"parse {split}")
    stream = source.runs_parser and _records_while_parsing(opts, par)
    ahead = _parse_ahead(source, opts, par, cache, identity, progress)  # the next block parses while this one is written
    rules = RecordRules(target.vocab, opts.config.ldd_threshold, opts.lowercase, source_name)
    try:
        for k, block in ahead.blocks(enumerate(chunked(items, target.section.shard_size)),
                                     lambda k: target.mine(k) and not manifest.is_done(out, shard_name(split, k))):
            name = shard_name(split, k)
            if not target.mine(k) or manifest.is_done(out, name):  # another part's (--part), or finished
                if target.mine(k):
                    result.skipped.append(name)
                progress.skip_to(block[-1].line)
                continue
            if any(it.skipped for it in block):
                raise ValueError(f"{name}: items skipped for another part reached a shard of this run")
            stats = AlignStats()
            if ahead.enabled:  # this block was parsed in the background: build its records now
                built = build_records_parallel(block, ahead.parses(k, block), rules, par, alignment=stats,
                                               stage_pool=True)
            else:  # the records of the first lines are built while the later ones parse
                built = build_records_streamed(block, source.parse_stream(block, par, cache, identity, progress),
                                               rules, par, alignment=stats, stream=stream)
            progress.update_to(block[-1].line)
            mark(f"records {name}")
            written = target.write(k, block, built, stats, opts.config.ldd_threshold)
            if written is not None:
                result.written.append(written)
        if target.save is not None:
            target.save(manifest, True)
    finally:
        progress.close()
        if cache is not None:
            cache.close()
    entry = manifest.split(split)
    result.pairs = entry.pairs
    result.dropped = {k: v for k, v in entry.dropped.items() if v}
    return result


def _split_cache(opts: ParseOptions, source: Any) -> tuple[Any, str | None]:
    """The split's parse cache and its key prefix (None, None without a cache or a parser); with a parser, once
    its warmed workers are up."""
    cache, identity = None, None
    if opts.cache and source.runs_parser:
        identity = source.identity()
        cache = ParseCache(opts.cache)
    if source.runs_parser:
        wait_for_warm_workers()  # warm_parse's workers, started before the input was read
        mark("workers ready")
    return cache, identity


def warm_parse(opts: ParseOptions, par: Parallel) -> None:
    """Start the parse's workers (imports, CUDA context, models) in the background, before the input is read
    (:func:`synprep.parse.warming.warm_parse_workers`); :func:`annotate_split` waits for them."""
    if not opts.source().runs_parser:
        return
    spec = dataclasses.replace(opts.spec, constituency=False) if opts.trees is not None else opts.spec  # as parsed
    warm_parse_workers(spec, par.jobs, par.backend, par.scheduler)


def _records_while_parsing(opts: ParseOptions, par: Parallel) -> bool:
    return records_while_parsing(opts.spec.device, par.jobs, par.backend, par.scheduler)


def _parse_ahead(source: Any, opts: ParseOptions, par: Parallel, cache: Any, identity: str | None,
                 progress: Progress) -> Any:
    """The shard loop's parses (:class:`synprep.parse.pipelining.ParseAhead`): one block ahead in a thread when
    the parse is pipelined (``$SYNPREP_PARSE_PIPELINE=1``: the GPU goes on while a shard is written), else in turn."""
    on = source.runs_parser and pipelined(opts.spec, par.backend, par.scheduler, None)
    return ParseAhead(lambda block: source.parse(block, par, cache, identity, progress), enabled=on)


def with_parse_src(items: Iterable[Item], cased: Iterator[str], name: str) -> Iterator[Item]:
    """The items with the parser's words taken from ``annotate --parse-src`` (one cased, tokenized,
    Moses-escaped line per input line): each line's tokens must be the words the pieces rebuild, up to
    case (:func:`synprep.text.tokenize.moses_lowercase`); the pieces are then compared with those words.

    Raises:
        InputError: ``FILE:LINE:`` the first word that differs (both named), or the file ends early.
    """
    def same(x: str, y: str) -> bool:
        return x == y or moses_lowercase(x) == moses_lowercase(y)

    for it in items:
        line = next(cased, None)
        if line is None:
            raise InputError(f"--parse-src ends before line {it.line}", name, it.line)
        if it.skipped:
            yield it
            continue
        words = unescape_tokens(line.split())
        diff = first_difference(it.words, words, same=same)
        if diff is not None:
            k, x, y = diff
            raise InputError(f"word {k + 1} is {y!r} here but {x!r} in --src: --parse-src must hold the same "
                             "tokens as --src (its pieces joined), up to case", name, it.line)
        yield dataclasses.replace(it, words=words, compare=it.words)


def _pieces(line: str) -> list[str]:
    """A line's pieces, each one string object per distinct piece (``sys.intern``): a shard's block of items then
    holds a pointer per piece, not a string, whatever its lines' lengths (a line of random characters is a
    piece or two per character, ~60 bytes each as separate strings; benchmarks/hostile_rss.py, longwords)."""
    return list(map(sys.intern, line.split()))


def items_from_files(bpe_src: Iterator[str], bpe_tgt: Iterator[str], lines: Iterator[int],
                     words: Iterator[list[str]] | Iterator[str] | None = None,
                     parses: Iterator[ParsedLine] | None = None,
                     trees: Iterator[list[Any]] | None = None,
                     word_index: Iterator[tuple[list[int], tuple[int, ...]]] | Iterator[str] | None = None,
                     skip: Callable[[int], bool] | None = None) -> Iterator[Item]:
    """Zip the per-line streams of a split into :class:`Item` s.

    Args:
        bpe_src: BPE'd lines (or a scheme's pieces).
        bpe_tgt: BPE'd lines (or a scheme's pieces).
        lines: each pair's original 1-based line number.
        words: the parser's words per line (default: the source pieces' words, unescaped), or its lines as
            written (tokens Moses-escaped, split and unescaped here, for the pairs not skipped).
        parses: imported parses, one per pair, in order.
        trees: the user's trees, one list per pair, in order (``--trees``).
        word_index: per line, each source piece's word and the alignment's rule counts, when a
            scheme aligned the pieces by offsets (then ``words`` must be given); or the lines of the file
            that holds them (:func:`synprep.subword.stream.parse_index_line`, read for the pairs not skipped).
        skip: called with each pair's 0-based index: True gives a placeholder (``Item.skipped``, its line only;
            the streams advanced, nothing split): a part's pairs of the other parts' shards
            (:func:`synprep.pipeline.parts.skip_others`), which it never makes.
    """
    if word_index is not None and words is None:
        raise ValueError("word_index needs the words it indexes")
    index_it: Iterator[Any] | None = iter(word_index) if word_index is not None else None
    parse_it = iter(parses) if parses is not None else None
    word_it: Iterator[Any] | None = iter(words) if words is not None else None
    tree_it = iter(trees) if trees is not None else None
    for i, (s, t, n) in enumerate(zip(bpe_src, bpe_tgt, lines, strict=True)):
        if skip is not None and skip(i):
            for stream in (word_it, parse_it, tree_it, index_it):
                if stream is not None:
                    next(stream, None)
            yield Item(line=n, words=[], src=[], tgt=[], skipped=True)
            continue
        src, tgt = _pieces(s), _pieces(t)
        if word_it is not None:
            raw = next(word_it)
            w: list[str] = unescape_tokens(raw.split()) if isinstance(raw, str) else raw
        else:
            w = unescape_tokens(bpe_words(src, line=n)[0])
        p = next(parse_it, None) if parse_it is not None else None  # a missing parse: _parse_block names it
        tr = next(tree_it, None) if tree_it is not None else None
        if index_it is not None:
            got = next(index_it)
            wi, counts = parse_index_line(got) if isinstance(got, str) else got
            yield Item(line=n, words=w, src=src, tgt=tgt, parse=p, trees=tr, word_index=wi, alignment=counts)
        else:
            yield Item(line=n, words=w, src=src, tgt=tgt, parse=p, trees=tr)
