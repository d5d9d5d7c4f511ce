"""IWSLT14 de-en, step for step as fairseq's ``examples/translation/prepare-iwslt14.sh``.

Source: fairseq ``examples/translation/prepare-iwslt14.sh``; mosesdecoder ``tokenizer.perl``,
``lowercase.perl``, ``clean-corpus-n.perl``; subword-nmt. The steps:

train (``train.tags.de-en.{de,en}``)
    drop lines containing ``<url>``, ``<talkid>`` or ``<keywords>``; delete the tags ``<title>``,
    ``</title>``, ``<description>``, ``</description>`` (their text stays); tokenize (no
    lowercasing yet); clean (ratio 1.5, 1–175 tokens, :mod:`synprep.text.clean`); lowercase.
    Of the cleaned pairs, every 23rd (1-based line ``n`` with ``n % 23 == 0``) is **valid**,
    the rest is **train**.
test
    from each ``IWSLT14.*.de-en.L.xml`` keep the ``<seg id`` lines, delete ``<seg id="N">`` and
    ``</seg>`` with the whitespace around them, turn ``’`` into ``'``; tokenize and lowercase
    into ``tmp/IWSLT14.*.de-en.L``. ``tmp/test.L`` is dev2010 + TEDX.dev2012 + tst2010 + tst2011
    + tst2012, in that order.
BPE
    joint codes, 10000 merges, learned on ``tmp/train.de`` then ``tmp/train.en``
    (``OUT/code``), or the given ``codes`` (copied to ``OUT/code``); applied to every split.

Tokenization is sacremoses with ``fairseq_compat=True`` (:mod:`synprep.text.tokenize`), which
reproduces the perl output fairseq used.

The cased tokenized text is kept beside it (fairseq throws it away): ``OUT/tmp/{split}.cased.{de,en}``,
the same tokens before lowercasing, line for line. The parser needs the case (German UAS 71.0 cased
vs 54.6 lowercased): ``synprep annotate --src OUT/test.de --parse-src OUT/tmp/test.cased.de ...``.

Output layout (fairseq's): ``OUT/tmp/{split}.{de,en}`` (tokenized, lowercased),
``OUT/tmp/IWSLT14.*.de-en.{de,en}`` (per test set), ``OUT/tmp/train.tags.de-en.dropped.tsv``
(the clean report), ``OUT/{split}.{de,en}`` (BPE) and ``OUT/code``.
Everything is written in a temporary folder inside ``OUT`` and moved into place at the end;
every input is checked before anything is written.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from synprep.errors import ConfigError, InputError
from synprep.text.bpe import apply_bpe_stream, count_merges, learn_bpe
from synprep.text.clean import CleanStats, clean_pairs, report_header, report_row
from synprep.text.tokenize import MosesRules, moses_lowercase, tokenize_stream
from synprep.textio import PathLike, atomic_write, iter_line_pairs, iter_lines, write_lines

log = logging.getLogger(__name__)

SRC, TGT = "de", "en"
LANGS = (SRC, TGT)
PAIR = f"{SRC}-{TGT}"
SPLITS = ("train", "valid", "test")
#: the test sets, in the order fairseq concatenates them into test.L
TEST_SETS = ("IWSLT14.TED.dev2010", "IWSLT14.TEDX.dev2012", "IWSLT14.TED.tst2010",
             "IWSLT14.TED.tst2011", "IWSLT14.TED.tst2012")
BPE_MERGES = 10000
VALID_EVERY = 23
CLEAN = {"ratio": 1.5, "min_len": 1, "max_len": 175}
#: fairseq's mirror of the WIT3 archive (prepare-iwslt14.sh)
URL = "http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz"
ARCHIVE_FOLDER = PAIR  # de-en.tgz holds de-en/…

_DROP_LINE = ("<url>", "<talkid>", "<keywords>")
_DELETE_TAGS = ("<title>", "</title>", "<description>", "</description>")
_SEG_OPEN = re.compile(r'<seg id="[0-9]*">\s*')
_SEG_CLOSE = re.compile(r"\s*</seg>\s*")


def train_file(lang: str) -> str:
    """``train.tags.de-en.LANG``"""
    return f"train.tags.{PAIR}.{lang}"


def xml_file(test_set: str, lang: str) -> str:
    """``IWSLT14.TED.dev2010.de-en.LANG.xml`` …"""
    return f"{test_set}.{PAIR}.{lang}.xml"


def filter_train_line(line: str) -> str | None:
    """The train-side ``grep -v``/``sed`` of prepare-iwslt14.sh: None drops the line."""
    if any(tag in line for tag in _DROP_LINE):
        return None
    for tag in _DELETE_TAGS:
        line = line.replace(tag, "")
    return line


def extract_segments(lines: Iterator[str]) -> Iterator[str]:
    """The test-side ``grep '<seg id' | sed …`` of prepare-iwslt14.sh: one line per ``<seg id`` line."""
    for line in lines:
        if "<seg id" in line:
            line = _SEG_OPEN.sub("", line)
            line = _SEG_CLOSE.sub("", line)
            yield line.replace("\u2019", "'")


@dataclass
class PrepareReport:
    """What :func:`prepare` did.

    Attributes:
        lines: text file written (relative to OUT) → number of lines.
        clean: the train cleaning counts (None when train was not read).
        merges: number of BPE merges in OUT/code.
        codes_learned: True when the codes were learned here, False when given.
    """

    lines: dict[str, int] = field(default_factory=dict)
    clean: CleanStats | None = None
    merges: int = 0
    codes_learned: bool = False


class _Orig:
    """The input: a directory (files directly in it or in ``de-en/``) or the ``de-en.tgz`` archive."""

    def __init__(self, orig: PathLike):
        self.path = Path(orig)
        self.tar_members: dict[str, tarfile.TarInfo] = {}
        self.dir: Path | None
        if self.path.is_dir():
            sub = self.path / ARCHIVE_FOLDER
            here = [train_file(lang) for lang in LANGS]
            here += [xml_file(t, lang) for t in TEST_SETS for lang in LANGS]
            use_sub = sub.is_dir() and not any((self.path / n).exists() for n in here)
            self.dir = sub if use_sub else self.path
        elif self.path.is_file():
            self.dir = None
            try:
                with tarfile.open(self.path, "r:*") as tar:
                    for m in tar.getmembers():
                        if m.isfile():
                            self.tar_members[m.name.lstrip("./")] = m
            except (tarfile.TarError, OSError, EOFError) as e:
                raise InputError(f"not a directory nor a readable .tgz archive ({e})", str(orig)) from None
        else:
            raise InputError("no such directory or archive", str(orig))

    def where(self, name: str) -> str:
        """How to name the file ``name`` in messages."""
        if self.dir is not None:
            return str(self.dir / name)
        return f"{self.path}:{ARCHIVE_FOLDER}/{name}"

    def exists(self, name: str) -> bool:
        if self.dir is not None:
            return (self.dir / name).is_file()
        return f"{ARCHIVE_FOLDER}/{name}" in self.tar_members

    def materialize(self, names: Sequence[str], into: Path) -> dict[str, Path]:
        """Paths to read each file from (extracted into ``into`` for an archive)."""
        if self.dir is not None:
            return {n: self.dir / n for n in names}
        wanted = {f"{ARCHIVE_FOLDER}/{n}": n for n in names}
        into.mkdir(parents=True, exist_ok=True)
        with tarfile.open(self.path, "r:*") as tar:
            for member in tar:  # one pass in archive order: no seeking back in the gzip stream
                n = wanted.get(member.name.lstrip("./"))
                src = tar.extractfile(member) if n and member.isfile() else None
                if n and src is not None:
                    with src, open(into / n, "wb") as dst:  # our own file name, never the member's
                        shutil.copyfileobj(src, dst, 1 << 20)
        return {n: into / n for n in names}


def parse_splits(splits: str | Sequence[str]) -> tuple[str, ...]:
    """``"train,valid"`` or a sequence → validated tuple in the order train, valid, test."""
    names = [s.strip() for s in splits.split(",")] if isinstance(splits, str) else list(splits)
    bad = [s for s in names if s not in SPLITS]
    if bad or not names:
        raise ConfigError(f"unknown split(s) {', '.join(bad) or '(none)'}: choose from {', '.join(SPLITS)}")
    return tuple(s for s in SPLITS if s in names)


def needed_inputs(splits: Sequence[str], codes: PathLike | None) -> dict[str, str]:
    """Input file name → why it is needed."""
    need: dict[str, str] = {}
    for split in ("train", "valid"):
        if split in splits:
            for lang in LANGS:
                need.setdefault(train_file(lang), f"the {split} split" + (
                    " (valid is every 23rd cleaned train pair)" if split == "valid" else ""))
    if codes is None:
        for lang in LANGS:
            need.setdefault(train_file(lang), "learning the BPE codes (or give --codes)")
    if "test" in splits:
        for ts in TEST_SETS:
            for lang in LANGS:
                need[xml_file(ts, lang)] = "the test split"
    return need


def _write(path: Path, lines) -> int:
    with atomic_write(path) as f:
        return write_lines(f, lines)


def prepare(orig: PathLike, out: PathLike, splits: Sequence[str] = SPLITS, codes: PathLike | None = None,
            jobs: int = 1, *, backend: str = "loky", scheduler: str | None = None,
            bpe_merges: int = BPE_MERGES) -> PrepareReport:
    """Run prepare-iwslt14.sh (module docstring) from ``orig`` into ``out``.

    Args:
        orig: the folder holding the WIT3 files (or their ``de-en/`` folder), or ``de-en.tgz``.
        out: output folder (created); existing files of the same names are replaced.
        splits: which of ``train``, ``valid``, ``test`` to write (valid needs the train file).
        codes: BPE codes to apply (copied to ``OUT/code``); None learns joint codes on the train
            text (``bpe_merges`` merges), which needs the train files.
        jobs: worker processes for tokenization and BPE (:func:`synprep.parallel.parallel_map`).

    Returns:
        PrepareReport with the line count of every file written.

    Raises:
        InputError: a needed input is missing (the message names it and why it is needed), is not
            UTF-8, or the two sides of a set have different numbers of lines/segments. Nothing is
            written into ``out`` in that case.
        ConfigError: unknown split.
    """
    splits = parse_splits(splits)
    src = _Orig(orig)
    need = needed_inputs(splits, codes)
    for name, why in need.items():
        if not src.exists(name):
            raise InputError(f"missing input file, needed for {why}", src.where(name))
    if codes is not None and not os.path.isfile(codes):
        raise InputError("no such BPE codes file", str(codes))

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a directory")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".synprep-iwslt14-", dir=out))
    try:
        report = _run(src, work, splits, codes, jobs, backend, scheduler, bpe_merges)
        for path in sorted(work.joinpath("final").rglob("*")):
            if path.is_file():
                dest = out / path.relative_to(work / "final")
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()  # only succeeds when nothing was written
    return report


def _prepare_test(src: _Orig, inputs: dict[str, Path], tmp: Path, scratch: Path, tokenize: Callable[..., Iterable[str]],
                  note: Callable[[Path, int], None], tok_text: dict[str, Path], cased: dict[str, Path]) -> None:
    """:func:`_run`'s test split: XML segments, tokenized (kept cased) and lowercased, the test sets concatenated
    in fairseq's order into ``tmp/test.L`` (into ``tok_text``) and ``tmp/test.cased.L`` (into ``cased``).

    Raises:
        InputError: a test set's two sides with different segment counts.
    """
    per_set = {}
    per_set_cased = {}
    for ts in TEST_SETS:
        counts = {}
        for lang in LANGS:
            p = tmp / f"{ts}.{PAIR}.{lang}"
            c = scratch / f"{ts}.{PAIR}.cased.{lang}"
            segs = extract_segments(iter_lines(inputs[xml_file(ts, lang)]))
            _write(c, tokenize(segs, lang))  # tokenizer.perl | lowercase.perl: lowercasing comes after
            counts[lang] = _write(p, (moses_lowercase(x) for x in iter_lines(c)))
            per_set[ts, lang], per_set_cased[ts, lang] = p, c
            note(p, counts[lang])
        if counts[SRC] != counts[TGT]:
            raise InputError(f"segment counts differ: {src.where(xml_file(ts, SRC))} has {counts[SRC]} "
                             f"<seg> lines, {src.where(xml_file(ts, TGT))} has {counts[TGT]}")
    for lang in LANGS:
        p = tmp / f"test.{lang}"
        note(p, _write(p, (x for ts in TEST_SETS for x in iter_lines(per_set[ts, lang]))))
        tok_text[f"test.{lang}"] = p
        cased[f"test.{lang}"] = tmp / f"test.cased.{lang}"
        note(cased[f"test.{lang}"], _write(cased[f"test.{lang}"],
                                           (x for ts in TEST_SETS for x in iter_lines(per_set_cased[ts, lang]))))


def _run(src: _Orig, work: Path, splits: tuple[str, ...], codes: PathLike | None, jobs: int, backend: str,
         scheduler: str | None, bpe_merges: int) -> PrepareReport:
    """:func:`prepare`'s work, in the folder ``work`` (its results under ``work/final``); returns its report."""
    report, need = PrepareReport(), needed_inputs(splits, codes)
    final = work / "final"
    tmp = final / "tmp"
    scratch = work / "scratch"
    scratch.mkdir(parents=True)
    inputs = src.materialize(sorted(need), scratch / "orig")
    tok_text: dict[str, Path] = {}  # split.lang → tokenized, lowercased text (before BPE)
    cased: dict[str, Path] = {}  # split.lang → the same, cased (OUT/tmp/SPLIT.cased.L)
    tokenize = partial(tokenize_stream, rules=MosesRules(fairseq_compat=True), jobs=jobs, backend=backend,
                       scheduler=scheduler)
    apply_bpe = partial(apply_bpe_stream, jobs=jobs, backend=backend, scheduler=scheduler)

    def note(path: Path, n: int) -> None:
        if final in path.parents:
            report.lines[str(path.relative_to(final))] = n

    # ---- train and valid: filter, tokenize, clean, lowercase, every 23rd line is valid --------
    if train_file(SRC) in need:
        tok = {}
        for lang in LANGS:
            path = inputs[train_file(lang)]
            log.info("iwslt14: tokenizing %s", src.where(train_file(lang)))
            lines = (x for x in map(filter_train_line, iter_lines(path)) if x is not None)
            tok[lang] = scratch / f"train.tags.{PAIR}.tok.{lang}"
            _write(tok[lang], tokenize(lines, lang))
        stats = CleanStats()
        part = {s: {lang: (tmp if s in splits else scratch) / f"{s}.{lang}" for lang in LANGS}
                for s in ("train", "valid")}
        for s in part:
            for lang in LANGS:
                cased[f"{s}.{lang}"] = part[s][lang].with_name(f"{s}.cased.{lang}")
        with contextlib.ExitStack() as stack:
            fo = {(s, lang): stack.enter_context(atomic_write(p)) for s in part for lang, p in part[s].items()}
            fc = {(s, lang): stack.enter_context(atomic_write(cased[f"{s}.{lang}"])) for s in part for lang in LANGS}
            rep = stack.enter_context(atomic_write(tmp / f"train.tags.{PAIR}.dropped.tsv"))
            rep.write(report_header() + "\n")
            for r in clean_pairs(iter_line_pairs(tok[SRC], tok[TGT]), **CLEAN,  # type: ignore[arg-type]
                                 names=(src.where(train_file(SRC)), src.where(train_file(TGT)))):
                stats.add(r)
                if not r.kept:
                    rep.write(report_row(r) + "\n")
                    continue
                split = "valid" if stats.kept % VALID_EVERY == 0 else "train"
                fo[split, SRC].write(moses_lowercase(r.src) + "\n")
                fo[split, TGT].write(moses_lowercase(r.tgt) + "\n")
                fc[split, SRC].write(r.src + "\n")
                fc[split, TGT].write(r.tgt + "\n")
        if stats.kept == 0:
            raise InputError("no sentence pair left after cleaning", src.where(train_file(SRC)))
        report.clean = stats
        log.info("iwslt14: clean train: %s", stats.summary())
        n_valid = stats.kept // VALID_EVERY
        for s in part:
            for lang, p in part[s].items():
                tok_text[f"{s}.{lang}"] = p
                note(p, n_valid if s == "valid" else stats.kept - n_valid)
                note(cased[f"{s}.{lang}"], n_valid if s == "valid" else stats.kept - n_valid)

    # ---- test: XML segments, tokenize (kept cased) + lowercase, concatenate in fairseq's order ---
    if "test" in splits:
        _prepare_test(src, inputs, tmp, scratch, tokenize, note, tok_text, cased)

    # ---- BPE ----------------------------------------------------------------------------------
    code = final / "code"
    if codes is None:
        log.info("iwslt14: learning %d joint BPE merges on train.%s + train.%s", bpe_merges, SRC, TGT)
        report.merges = learn_bpe([tok_text[f"train.{SRC}"], tok_text[f"train.{TGT}"]], bpe_merges, code)
        report.codes_learned = True
    else:
        shutil.copyfile(codes, code)
        report.merges = count_merges(code)
    for split in splits:
        for lang in LANGS:
            p = final / f"{split}.{lang}"
            log.info("iwslt14: applying BPE to %s.%s", split, lang)
            note(p, _write(p, apply_bpe(iter_lines(tok_text[f"{split}.{lang}"]), code)))
    return report
