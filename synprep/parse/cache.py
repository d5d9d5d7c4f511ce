"""The parse cache: each unique sentence is parsed once per parser identity (SPEC.md §1).

One sqlite3 database (stdlib, WAL journal) shared by every run, BPE setting and translation
direction. Key: ``sha256(parser identity + "\\n" + JSON list of the words)`` — JSON makes the word
boundaries unambiguous whatever the words contain, and the identity (parser, version, language,
package, model file hashes, processors, LDD threshold; see
:func:`synprep.parse.stanza_parser.stanza_identity`) changes whenever a parse could change.
Value: the :class:`~synprep.types.ParsedSentence` as zlib-compressed JSON (words, upos, heads,
deprels, tree, tree_source, ldd); float32 probabilities are stored as the floats they are and
read back to identical float32 values.

A damaged file is a :class:`CacheError` (exit status 1, saying to use ``--no-cache`` or delete it),
checked before a pipeline's text stages (:func:`check_cache_usable`); a cache locked by another process
past the timeout is skipped for that block (the shard is still written).

An entry is checked as a fresh parse is before it is used (:func:`entry_problem`): it is inflated to at
most :func:`entry_bound` bytes (derived from its sentence: a few KB a word), holds the parse of its own
words, with known labels (:data:`~synprep.types.UPOS_TAGS`, :data:`~synprep.types.DEPRELS`), one tree
per sentence (heads in range, one root, no cycle; a constituency tree's leaves are the words) and LDD
entries in range. An entry that is not is a cache problem, never the input's: it is ignored and its
batch parsed again (and overwritten); the problems are reported once, in one warning line with their
count and the fix, when the cache is closed.

Durability: every batch of puts is one transaction, and sqlite's journal makes a transaction
all-or-nothing, so a writer killed at any point (``kill -9``) leaves each entry either complete
or absent. A value that still fails to decode (disk damage) is treated as a miss, logged, and
overwritten by the next put. Failures are **not** cached: a failure may be transient (out of
memory, a killed worker) and the length limit is checked before parsing anyway, so a later run
simply tries again. Only the main process opens the cache; workers only parse.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import sqlite3
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from synprep.errors import ConfigError, EnvironmentProblem
from synprep.parse.wellformed import sentence_problem
from synprep.types import DEPRELS, UPOS_TAGS, ParsedSentence, SparseLDD

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
#: environment variable naming the default cache file
CACHE_ENV = "SYNPREP_CACHE"


def default_cache_path() -> Path:
    """``$SYNPREP_CACHE``, else ``$XDG_CACHE_HOME/synprep/parse.sqlite`` (``~/.cache/...``)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "synprep" / "parse.sqlite"


def cache_key(identity: str, words: Sequence[str]) -> bytes:
    """sha256 digest (32 bytes) of the parser identity and the sentence's words."""
    text = identity + "\n" + json.dumps(list(words), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).digest()


def sentence_to_json(sent: ParsedSentence) -> dict:
    """A JSON-able dict of a :class:`ParsedSentence` (inverse: :func:`sentence_from_json`)."""
    d: dict = {
        "words": list(sent.words),
        "upos": list(sent.upos),
        "heads": [int(h) for h in sent.heads],
        "deprels": list(sent.deprels),
        "tree": sent.tree,
        "tree_source": sent.tree_source,
        "ldd": None,
    }
    if sent.ldd is not None:
        d["ldd"] = {
            "dep": sent.ldd.dep.astype(int).tolist(),
            "head": sent.ldd.head.astype(int).tolist(),
            "rel": list(sent.ldd.rel),
            "prob": np.asarray(sent.ldd.prob, dtype=np.float32).astype(float).tolist(),
            "threshold": float(sent.ldd.threshold),
        }
    return d


def sentence_from_json(d: dict) -> ParsedSentence:
    """Rebuild a :class:`ParsedSentence` from :func:`sentence_to_json`'s dict."""
    ldd = None
    if d.get("ldd") is not None:
        x = d["ldd"]
        ldd = SparseLDD(
            dep=np.asarray(x["dep"], dtype=np.int32),
            head=np.asarray(x["head"], dtype=np.int32),
            rel=list(x["rel"]),
            prob=np.asarray(x["prob"], dtype=np.float32),
            threshold=float(x["threshold"]),
        )
    return ParsedSentence(
        words=list(d["words"]),
        upos=list(d["upos"]),
        heads=[int(h) for h in d["heads"]],
        deprels=list(d["deprels"]),
        tree=d.get("tree"),
        tree_source=d.get("tree_source"),
        ldd=ldd,
    )


def encode(sent: ParsedSentence) -> bytes:
    return zlib.compress(json.dumps(sentence_to_json(sent), ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


#: most UD relation labels (subtypes counted) a parser's LDD may spread one word's probability over
MAX_RELATIONS = 128
#: most bytes one LDD entry takes in an entry's JSON (dependent, head, relation label, float32 as text)
LDD_ENTRY_BYTES = 96
#: most bytes of an entry's JSON per word besides its text and its LDD (tag, head, relation, tree brackets)
WORD_BYTES = 256


class EntryTooLarge(ValueError):
    """A cache entry that inflates to more than its bound (:func:`entry_bound`)."""


def entry_bound(words: Sequence[str], ldd_threshold: float | None = None) -> int:
    """The most bytes the JSON of the parse of ``words`` can take: what an entry may inflate to.

    Twice the words' JSON (the word list and the tree's leaves) plus 4 KB, and per word
    :data:`WORD_BYTES` and its LDD row: at most ``1/threshold + 1`` entries (probabilities of one word sum
    to 1; the best entry is kept whatever its probability), at most ``(n + 1) * MAX_RELATIONS`` (every
    head, every relation: threshold 0), each :data:`LDD_ENTRY_BYTES`. With the default threshold
    0.01 about 10 KB a word: 2.6 MB for 250 words.

    Args:
        words: the sentence (n words).
        ldd_threshold: the parser's LDD threshold; None: unknown (taken as 0, the largest bound).
    """
    n = len(words)
    row = (n + 1) * MAX_RELATIONS
    if ldd_threshold is not None and ldd_threshold > 0:
        row = min(row, int(1.0 / ldd_threshold) + 2)
    text = len(json.dumps(list(words), ensure_ascii=False).encode("utf-8"))
    return 4096 + 2 * text + n * (WORD_BYTES + row * LDD_ENTRY_BYTES)


def inflate(blob: bytes, limit: int) -> bytes:
    """The zlib stream ``blob`` inflated, never to more than ``limit`` bytes.

    Raises:
        EntryTooLarge: it inflates to more than ``limit`` bytes (nothing beyond ``limit + 1`` is inflated).
        zlib.error: not a complete zlib stream.
    """
    d = zlib.decompressobj()
    out = d.decompress(blob, limit + 1)
    if len(out) > limit:
        raise EntryTooLarge(f"inflates to more than {limit} bytes")
    if not d.eof:
        raise zlib.error("incomplete zlib stream")
    return out


def decode(blob: bytes, limit: int | None = None) -> ParsedSentence:
    """The :class:`ParsedSentence` of an entry (:func:`encode`), inflated to at most ``limit`` bytes
    (None: no bound; only for values this process encoded).

    Raises:
        EntryTooLarge, zlib.error, ValueError, KeyError, TypeError, AttributeError: not an entry.
    """
    raw = zlib.decompress(blob) if limit is None else inflate(blob, limit)
    return sentence_from_json(json.loads(raw.decode("utf-8")))


#: :func:`entry_problem`'s reason for an entry that holds the parse of another sentence
OTHER_WORDS = "holds the parse of other words"


def entry_problem(words: Sequence[str], sent: ParsedSentence) -> str | None:
    """Why a cached parse may not stand for the parse of ``words``, or None: the checks a fresh parse passes
    on its way into a shard (:func:`synprep.parse.wellformed.sentence_problem`: lengths, one tree, the tree's
    leaves), its words, and known labels (a fresh parse's labels are its parser's: an unknown label in a
    cache would be stored as ``dep`` silently) and LDD entries in range.
    """
    if list(sent.words) != list(words):
        return OTHER_WORDS
    if sent.tree is not None and not isinstance(sent.tree, str):
        return f"a tree of type {type(sent.tree).__name__}"
    problem = sentence_problem(sent)
    if problem is not None:
        return problem
    bad = next((t for t in sent.upos if t not in _UPOS), None)
    if bad is not None:
        return f"unknown part-of-speech tag {bad!r}"
    bad = next((r for r in sent.deprels if not _known_relation(r)), None)
    if bad is not None:
        return f"unknown relation {bad!r}"
    if sent.tree_source not in (None, "constituency", "dependency"):
        return f"tree source {sent.tree_source!r}"
    if sent.ldd is not None:
        x, n = sent.ldd, len(words)
        if not (len(x.dep) == len(x.head) == len(x.rel) == len(x.prob)):
            return "LDD arrays of different lengths"
        if x.dep.size and (x.dep.min() < 1 or x.dep.max() > n or x.head.min() < 0 or x.head.max() > n):
            return "an LDD entry's word out of range"
        if not (np.isfinite(x.prob).all() and (x.prob > 0).all() and (x.prob <= 1).all()):
            return "an LDD probability outside (0, 1]"
        if not 0.0 <= x.threshold <= 1.0:
            return f"LDD threshold {x.threshold}"
        bad = next((r for r in x.rel if not _known_relation(r)), None)
        if bad is not None:
            return f"unknown LDD relation {bad!r}"
    return None


_UPOS = frozenset(UPOS_TAGS)
_RELATIONS = frozenset(DEPRELS)


def _known_relation(label: object) -> bool:
    """A UD relation: its base (before ``:``) in :data:`~synprep.types.DEPRELS` (what :func:`deprel_id` knows)."""
    return isinstance(label, str) and label.split(":", 1)[0].lower() in _RELATIONS


class CacheError(EnvironmentProblem):
    """The parse cache file is damaged or not a synprep cache (exit status 1; the message says how to recover)."""


def _recover(path: Path) -> str:
    return f"run with --no-cache, or delete {path} (it is rebuilt as sentences are parsed again)"


def _storage_error(path: Path, e: sqlite3.Error) -> Exception:
    """The error to raise for a failed sqlite call: a full disk is ENOSPC (one line in the CLI)."""
    if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "full" in str(e):
        return OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (parse cache: {e})", str(path))
    return CacheError(f"parse cache {path} cannot be used: {e}: {_recover(path)}")


def _busy(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(e)


def check_cache_usable(path: str | os.PathLike | None) -> None:
    """Open the cache once and read its schema, so a damaged file stops a run before the text stages.

    Raises:
        CacheError: the file is not a synprep parse cache (exit status 1; the message says to use
            ``--no-cache`` or delete the file). Nothing happens for ``path=None``.
    """
    if path is not None:
        ParseCache(path).close()


class ParseCache:
    """A persistent map ``(parser identity, words) -> ParsedSentence`` in one sqlite file.

    Args:
        path: the database file (created with its folder when missing).
        timeout: seconds to wait for another process's write lock.

    Raises:
        CacheError: the file cannot be opened as a synprep cache (damaged, or another schema).
    """

    def __init__(self, path: str | os.PathLike, timeout: float = 60.0):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # check_same_thread=False: parse_lines looks up from joblib's dispatch thread (serialized by its lock)
            self._db = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS parses (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
            )
            row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif row[0] != str(SCHEMA_VERSION):
                raise CacheError(f"parse cache {self.path} has schema {row[0]}, this synprep writes {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as e:
            self._db_close()
            if _busy(e):
                raise ConfigError(f"parse cache {self.path} is locked by another process: {e}") from None
            raise CacheError(f"cannot use {self.path} as a parse cache ({e}): {_recover(self.path)}") from None
        self.hits = 0
        self.misses = 0
        self.wrong = 0  # entries that held another sentence's parse (ignored, re-parsed)
        #: entries ignored (a cache problem), by kind; reported in one line by :meth:`close`
        self.problems: Counter[str] = Counter()
        self._first_problem: str | None = None

    def _db_close(self) -> None:
        with contextlib.suppress(Exception):
            self._db.close()

    def get_many(self, identity: str, sentences: Iterable[Sequence[str]],
                 ldd_threshold: float | None = None) -> list[ParsedSentence | None]:
        """Look up sentences (word lists); ``None`` where not cached. One read transaction.

        Each entry is read and inflated only up to its bound (:func:`entry_bound`) and checked
        (:func:`entry_problem`); one that fails is a cache problem (counted in :attr:`problems`, reported
        by :meth:`close`) and given as ``None``, so its sentence is parsed again.

        Args:
            ldd_threshold: the parser's LDD threshold, for the entries' bound (None: unknown, the largest bound).
        """
        sentences = [list(words) for words in sentences]
        keys = [cache_key(identity, words) for words in sentences]
        bounds = [entry_bound(words, ldd_threshold) for words in sentences]
        found: dict[bytes, bytes] = {}
        try:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                # no more of a value than its bound can use is read (zlib adds a few bytes to what it cannot shrink)
                cap = max(bounds[i : i + 500]) + 1024
                q = f"SELECT key, substr(value, 1, ?) FROM parses WHERE key IN ({','.join('?' * len(part))})"
                found.update(self._db.execute(q, [cap, *part]).fetchall())
        except sqlite3.Error as e:
            raise _storage_error(self.path, e) from None
        out: list[ParsedSentence | None] = []
        for k, words, limit in zip(keys, sentences, bounds, strict=True):
            blob = found.get(k)
            sent = None
            if blob is not None:
                kind: str | None = None
                what = ""
                try:
                    sent = decode(blob, limit)
                    problem = entry_problem(words, sent)
                    if problem == OTHER_WORDS:
                        self.wrong += 1
                        kind, what = "held another sentence's parse", OTHER_WORDS
                    elif problem is not None:
                        kind, what = "invalid parses", f"is not a valid parse ({problem})"
                except EntryTooLarge as e:
                    kind, what = "inflated past their bound", str(e)
                except (zlib.error, ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError) as e:
                    kind, what = "unreadable", f"is unreadable ({type(e).__name__}: {e})"
                if kind is not None:  # a cache problem, never the input's
                    self._problem(len(words), kind, what)
                    sent = None
            if sent is None:
                self.misses += 1
            else:
                self.hits += 1
            out.append(sent)
        return out

    def _problem(self, n_words: int, kind: str, what: str) -> None:
        """Count an entry ignored as a cache problem of ``kind`` (reported once, by :meth:`close`); ``what``
        ends the sentence ``the entry of a N-word sentence …``."""
        self.problems[kind] += 1
        if self._first_problem is None:
            self._first_problem = f"the entry of a {n_words}-word sentence {what}"
        log.debug("parse cache %s: the entry of a %d-word sentence ignored: %s", self.path, n_words, what)

    def report_problems(self) -> None:
        """Log the entries ignored so far, in one warning line with their count and the fix, and forget them."""
        total = sum(self.problems.values())
        if total:
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.problems.items()))
            log.warning("parse cache %s: %s (a damaged or foreign cache); %d %s ignored (%s), their sentences "
                        "parsed again: a cache problem, not the input's. If this repeats, %s", self.path,
                        self._first_problem, total, "entry" if total == 1 else "entries", kinds,
                        _recover(self.path))
        self.problems.clear()
        self._first_problem = None

    def put_many(self, identity: str, items: Iterable[tuple[Sequence[str], ParsedSentence]]) -> int:
        """Store ``(words, parse)`` pairs in one transaction; returns the number stored.

        A cache still locked by another process after ``timeout`` seconds is skipped with a
        warning (returns 0): the parses are used, only not cached.

        Raises:
            OSError: ENOSPC, the disk holding the cache is full (nothing of this batch is stored).
            CacheError: another sqlite failure (a damaged file).
        """
        return self._put_rows([(cache_key(identity, words), encode(sent)) for words, sent in items])

    def _put_rows(self, rows: list[tuple[bytes, bytes]]) -> int:
        if not rows:
            return 0
        try:
            with self._transaction():
                self._db.executemany("INSERT OR REPLACE INTO parses (key, value) VALUES (?, ?)", rows)
        except sqlite3.Error as e:
            if _busy(e):  # the parses are fine: only caching them is skipped
                log.warning("parse cache %s stayed locked by another process past the timeout: %d parses not "
                            "cached (the run goes on)", self.path, len(rows))
                return 0
            raise _storage_error(self.path, e) from None
        return len(rows)

    def put_batches(self, batches: Iterable[tuple[str, Iterable[tuple[Sequence[str], ParsedSentence]]]]) -> int:
        """Store several ``(key prefix, [(words, parse), ...])`` groups in one transaction (see :meth:`put_many`)."""
        rows = [(cache_key(prefix, words), encode(sent)) for prefix, items in batches for words, sent in items]
        return self._put_rows(rows)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._db.execute("COMMIT")  # a full disk fails here: roll back below
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM parses").fetchone()[0])

    def close(self) -> None:
        """Close the file, reporting the entries ignored (:meth:`report_problems`)."""
        self.report_problems()
        self._db.close()

    def __enter__(self) -> ParseCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
