"""The main job: raw (or already prepared) parallel text → checked syntax-annotated shards.

``synprep pipeline`` (:func:`run_pipeline`): tokenize (sacremoses) → clean (clean-corpus-n.perl
rules; the train split only, unless told) → lowercase (optional) → joint BPE (learned on the
train split or given) → vocabulary → parse → features → shards → ``synprep check``.
``synprep annotate`` (:func:`run_annotate`): the same from already tokenized and BPE'd text
(fairseq's prepared ``train/valid/test.{de,en}``).

Everything is written under ``OUT`` (README "Output folder"):

``OUT/text/SPLIT.tok.L``      tokenized, cased, Moses-escaped (one line per input line)
``OUT/text/SPLIT.clean.L``    the kept pairs, lowercased if asked (the BPE input; fairseq's tmp/)
``OUT/text/SPLIT.words.SRC``  the kept source lines, cased: what the parser reads (``--lowercase`` only)
``OUT/text/SPLIT.lines``      the original 1-based line number of every kept pair
``OUT/text/SPLIT.dropped.tsv`` every pair cleaning dropped, with its reason
``OUT/text/SPLIT.bpe.L``      BPE pieces
``OUT/code``, ``OUT/dict.txt``, ``OUT/SPLIT.NNNNN.h5``, ``OUT/manifest.json``, ``OUT/pipeline.json``,
``OUT/inputs.json`` (the sha256 of every split's input files)

``L`` is the side's language. When both sides have the same language (``-s en -t en``:
paraphrase, simplification, post-editing) the side is named too, ``SPLIT.tok.src.en`` and
``SPLIT.tok.tgt.en`` (:class:`TextFiles`), so the two sides never overwrite each other.

Every file is written atomically, so a step whose output exists is complete and is skipped when
the command runs again (after a crash, or for the next split). ``OUT/pipeline.json`` records the
configuration and ``OUT/inputs.json`` the inputs: running into the same folder with another
configuration, or resuming a split whose input files changed, is an error, never a silent mix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synprep.annotate import DEFAULT_SHARD_SIZE, Parallel, ParseOptions, annotate_split, items_from_files
from synprep.config import DEFAULTS, DataConfig, differences
from synprep.constants import MANIFEST_NAME, SHARD_FORMAT_VERSION, VOCAB_NAME
from synprep.errors import ConfigError, InputError
from synprep.lock import folder_lock, hold_split, sweep_stale_temps, writer
from synprep.shards import Manifest, check_dir
from synprep.signature import file_sha256, signature
from synprep.textio import atomic_write, count_lines, display_name, iter_lines, iter_pairs, refuse_pipes
from synprep.types import ParsedLine
from synprep.vocab import Vocab

log = logging.getLogger(__name__)

CONFIG_NAME = "pipeline.json"
CODES_NAME = "code"
TRAIN = "train"
FEATURES = "cnf+nary+ldd"


@dataclass
class TextOptions:
    """Text preparation settings (part of the configuration).

    Attributes:
        tokenized: the input is already Moses-tokenized and escaped (``pipeline --tokenized``): it
            is used as it is (escapes kept for BPE and the shards; the parser sees the unescaped words).
        lowercase: lowercase after tokenizing (the parser still sees the cased words).
        fairseq_compat: the old perl tokenizer's final-period rule (``synprep tokenize --fairseq-compat``).
        clean: clean this split (None: the train split only, as fairseq's recipes do; other splits
            only lose pairs with an empty side).
        ratio, min_len, max_len: clean-corpus-n.perl bounds.
        merges: BPE merge operations when the codes are learned (``--subword bpe``).
        subword: the subword scheme (:data:`synprep.subword.SCHEMES`): ``bpe`` segments the
            tokenized text; ``spm``/``hf`` segment the raw text and align by character offsets.
        vocab_size: the SentencePiece vocabulary size when a model is learned (``--subword spm``).
        tokenizer: ``moses`` (sacremoses) or ``parser``: the source side's words come from the parser's own
            tokenizer (:mod:`synprep.text.parser_tokenize`; Japanese with ja_ginza); the target side stays Moses.
    """

    tokenized: bool = DEFAULTS.tokenized
    lowercase: bool = DEFAULTS.lowercase
    fairseq_compat: bool = DEFAULTS.fairseq_compat
    clean: bool | None = None
    ratio: float = DEFAULTS.ratio
    min_len: int = DEFAULTS.min_len
    max_len: int = DEFAULTS.max_len
    merges: int = DEFAULTS.merges
    subword: str = DEFAULTS.subword
    vocab_size: int = DEFAULTS.vocab_size
    tokenizer: str = "moses"


@dataclass(frozen=True)
class TextFiles:
    """The names of one split's intermediate text files in ``OUT/text`` (module docstring).

    A file of one side is ``SPLIT.STAGE.L``; with the same language on both sides it is
    ``SPLIT.STAGE.SIDE.L`` (``SIDE`` = ``src`` / ``tgt``). Folders of differing languages keep the
    layout of earlier versions, so they resume unchanged.
    """

    work: Path
    split: str
    src_lang: str
    tgt_lang: str

    def side(self, stage: str, side: str) -> Path:
        """``stage`` = ``tok`` | ``clean`` | ``bpe`` | ``words``; ``side`` = ``src`` | ``tgt``."""
        lang = self.src_lang if side == "src" else self.tgt_lang
        infix = f"{side}." if self.src_lang == self.tgt_lang else ""
        return self.work / f"{self.split}.{stage}.{infix}{lang}"

    @property
    def lines(self) -> Path:
        return self.work / f"{self.split}.lines"

    @property
    def dropped(self) -> Path:
        return self.work / f"{self.split}.dropped.tsv"


def _refuse_overwritten_same_language(work: Path, lang: str) -> None:
    """A same-language folder of the old layout holds targets that are copies of their sources."""
    old = sorted(p.name for p in work.glob(f"*.tok.{lang}")) if work.is_dir() else []
    if old:
        raise ConfigError(
            f"{work} holds {old[0]}: it was written by an earlier synprep that named the text files by language "
            f"only, so with both sides in '{lang}' the target files overwrote the source files (or the reverse) "
            f"and its shards hold wrong pairs; delete {work.parent} and run again")


# --- configuration guard --------------------------------------------------------------------------


def data_config(mode: str, src_lang: str, tgt_lang: str, parse: ParseOptions, ldd_threshold: float,
                shard_size: int, text: TextOptions | None = None, vocab_split: str = TRAIN,
                language_check: bool = DEFAULTS.language_check) -> DataConfig:
    """The :class:`~synprep.config.DataConfig` of a run given as the library's options."""
    text = text or TextOptions()
    spec = parse.spec
    return DataConfig(
        mode=mode, src_lang=src_lang, tgt_lang=tgt_lang, tokenized=text.tokenized, lowercase=text.lowercase,
        fairseq_compat=text.fairseq_compat, merges=text.merges, ratio=text.ratio, min_len=text.min_len,
        max_len=text.max_len, subword=text.subword, vocab_size=text.vocab_size, parser=parse.parser, stanza_package=spec.package if spec is not None else None,
        tokenizer=text.tokenizer, spacy_model=spec.spacy_model if spec is not None else None,
        label_map=spec.label_map if spec is not None else None, device=spec.device if spec is not None else "cpu",
        ssplit=parse.ssplit,
        max_words=spec.max_words if spec is not None else parse.max_words or DEFAULTS.max_words,
        batch_size=parse.batch_size, ldd_threshold=ldd_threshold, shard_size=shard_size, vocab_split=vocab_split,
        language_check=language_check)


def _check_config(out: Path, config: DataConfig) -> None:
    """Record the folder's configuration (``OUT/pipeline.json``), or refuse a different one, naming
    each field that differs (a folder written by an earlier version is read in its layout)."""
    path = out / CONFIG_NAME
    if path.exists():
        diff = differences(DataConfig.load(path), config)
        if diff:
            raise ConfigError(
                f"{out} was made with another configuration ({'; '.join(diff)}): give the folder's values (an "
                f"option left out is inherited from {path}), use a new --out, or delete {out}")
        return
    with atomic_write(path) as f:
        f.write(config.to_json())


INPUTS_NAME = "inputs.json"


def _check_inputs(out: Path, split: str, files: dict[str, str | None], made: list[Path]) -> dict[str, str]:
    """Record the split's input files (sha256), or refuse to resume from inputs that changed.

    A resumed run reuses every finished step; had an input been edited in between, the folder
    would mix old and new data. ``OUT/inputs.json`` maps each split to its inputs' hashes.
    Changed inputs are accepted (and recorded anew) while nothing was made from the split yet:
    a run that failed on bad input must not block its own retry once the input is fixed.

    Args:
        made: the files a run of this split writes (intermediate text, shards): when none exists
            and the manifest knows no shard of the split, nothing was made from the old inputs.

    Returns:
        The sha256 (hex) of each given file, by role.
    """
    path = out / INPUTS_NAME
    known = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    now = {role: {"path": str(f), "sha256": file_sha256(f)} for role, f in files.items() if f is not None}
    old = known.get(split)
    if old is not None:
        changed = [role for role in sorted(set(old) | set(now))
                   if (old.get(role) or {}).get("sha256") != (now.get(role) or {}).get("sha256")]
        if changed and not _split_started(out, split, made):
            log.info("the %s split's inputs changed since a run that made nothing from them: recording them anew",
                     split)
            old = None
        elif changed:
            names = ", ".join(str((now.get(r) or old.get(r))["path"]) for r in changed)
            raise ConfigError(f"the {split} split of {out} was made from other input ({names} changed): "
                              f"use a new --out, or delete {out}")
    if old is None:
        known[split] = now
        with atomic_write(path) as f:
            f.write(json.dumps(known, indent=2, sort_keys=True) + "\n")
    return {role: entry["sha256"] for role, entry in now.items()}


def _split_started(out: Path, split: str, made: list[Path]) -> bool:
    """Whether anything of the split exists: one of ``made``, a shard file, or a manifest entry."""
    if any(p.exists() for p in made) or any(out.glob(f"{split}.*.h5")):
        return True
    if not (out / MANIFEST_NAME).is_file():
        return False
    try:
        return split in json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8")).get("splits", {})
    except (ValueError, UnicodeDecodeError):
        return True  # cannot tell: refuse rather than mix


def check_output_folder(out: Path) -> None:
    """``--out`` must be a folder, or not exist yet (it is created later, with its parents).

    Raises:
        InputError: ``out`` or one of its parents is an existing file, not a folder (exit status 2).
    """
    for p in (out, *out.parents):
        if p.exists():
            if not p.is_dir():
                raise InputError("is a file, not a folder (--out)" if p == out else
                                 f"{p} is a file, not a folder (--out)", str(out))
            return


def _remove_stale_temps(out: Path) -> None:
    """Temporary files a killed run left behind are removed (only those whose owner is gone: synprep.lock)."""
    sweep_stale_temps(out, out / "text")


# --- text stage -------------------------------------------------------------------------------

#: raw input with Moses escapes (``&quot;``) in tokenized-looking lines on more lines than this is
#: refused as already tokenized
ESCAPED_LINES_LIMIT = 5
#: a free-standing ``.`` or ``,`` token: Moses tokenization separates them, raw text (in any language
#: synprep's tokenizer knows; French spaces only ``! ? ; :``) never does
_FREE_PUNCT = re.compile(r"(?:^|\s)[.,](?:\s|$)")


def refuse_tokenized(path: str, limit: int = ESCAPED_LINES_LIMIT) -> None:
    """Stop when raw input looks already Moses-tokenized: more than ``limit`` lines hold a Moses
    escape *and* a free-standing ``.``/``,`` token.

    Tokenizing such text again escapes the escapes (``&amp;quot;``): the parser would see the
    words ``&``, ``quot``, ``;`` and BPE would learn them. An escape alone is no proof: untokenized
    corpora carry HTML escapes (Multi30k's raw training captions write ``stone &amp; tile.`` on 16
    of 29,000 lines); such lines are tokenized as text, with one warning naming the first.
    In IWSLT14's tokenized test set 98 % (en) / 93 % (de) of the lines with an escape also hold a
    free-standing ``.`` or ``,``.

    Raises:
        InputError: naming the first tokenized-looking line that holds an escape, pointing at ``--tokenized``.
    """
    from synprep.text.escape import moses_entity

    first: tuple[int, str] | None = None
    first_any: tuple[int, str] | None = None
    n = n_any = 0
    for lineno, text in enumerate(iter_lines(path), 1):
        entity = moses_entity(text)
        if entity is None:
            continue
        n_any += 1
        first_any = first_any or (lineno, entity)
        if not _FREE_PUNCT.search(text):
            continue
        n += 1
        first = first or (lineno, entity)
        if n > limit:
            raise InputError(
                f"'{first[1]}' is a Moses escape in a tokenized line, and more than {limit} lines look like "
                "that: this input is already tokenized; use `synprep pipeline --tokenized` (or `synprep "
                "annotate` for BPE'd text)", display_name(path), first[0])
    if first_any is not None:
        log.warning("warning: %s:%d: '%s': %d line(s) of this untokenized text hold HTML/Moses escapes; they are "
                    "kept as text (the parser reads '%s' as a word)", display_name(path), first_any[0],
                    first_any[1], n_any, first_any[1])


def _tokenize(inp: str, out_path: Path, lang: str, opts: TextOptions, par: Parallel, spec: Any = None) -> None:
    """Tokenize one side; with ``spec`` (the source side under ``--tokenizer parser``) by that parser's tokenizer."""
    from synprep.text.tokenize import tokenize_stream

    if out_path.exists():
        return
    if opts.tokenized:  # used as it is: one line per line, CRLF/BOM/gzip normalized by iter_lines
        log.info("already tokenized: %s → %s", display_name(inp), out_path)
        with atomic_write(out_path) as f:
            for line in iter_lines(inp):
                f.write(" ".join(line.split()) + "\n")
        return
    log.info("tokenize %s → %s", display_name(inp), out_path)
    if spec is not None:
        from synprep.text.parser_tokenize import parser_tokenize_stream

        lines = parser_tokenize_stream(iter_lines(inp), spec, jobs=par.jobs, backend=par.backend,
                                       scheduler=par.scheduler)
    else:
        lines = tokenize_stream(iter_lines(inp), lang, fairseq_compat=opts.fairseq_compat, jobs=par.jobs,
                                backend=par.backend, scheduler=par.scheduler)
    with atomic_write(out_path) as f:
        for line in lines:
            f.write(line + "\n")


def _clean(files: TextFiles, opts: TextOptions) -> None:
    """Clean the tokenized pair into SPLIT.clean.L (+ words, lines, dropped.tsv), all or nothing."""
    from synprep.text.clean import CleanStats, clean_pairs, nothing_kept_error, report_header, report_row
    from synprep.text.tokenize import moses_lowercase

    split = files.split
    outputs = {
        "src": files.side("clean", "src"), "tgt": files.side("clean", "tgt"),
        "lines": files.lines, "report": files.dropped,
    }
    if opts.lowercase:
        outputs["words"] = files.side("words", "src")
    if all(p.exists() for p in outputs.values()):
        return
    do_clean = opts.clean if opts.clean is not None else split == TRAIN
    bounds: dict[str, Any] = (
        {"ratio": opts.ratio, "min_len": opts.min_len, "max_len": opts.max_len} if do_clean
        else {"ratio": math.inf, "min_len": 1, "max_len": 1 << 62, "max_word_length": 1 << 30})
    tok_src, tok_tgt = files.side("tok", "src"), files.side("tok", "tgt")
    stats = CleanStats()
    with contextlib.ExitStack() as stack:
        f = {k: stack.enter_context(atomic_write(p)) for k, p in outputs.items()}
        f["report"].write(report_header() + "\n")
        for r in clean_pairs(iter_pairs(tok_src, tok_tgt), names=(str(tok_src), str(tok_tgt)), **bounds):
            stats.add(r)
            if not r.kept:
                f["report"].write(report_row(r) + "\n")
                continue
            src, tgt = (moses_lowercase(r.src), moses_lowercase(r.tgt)) if opts.lowercase else (r.src, r.tgt)
            f["src"].write(src + "\n")
            f["tgt"].write(tgt + "\n")
            f["lines"].write(f"{r.line}\n")
            if opts.lowercase:
                f["words"].write(r.src + "\n")
        error = nothing_kept_error(stats, src_lang=files.src_lang, tgt_lang=files.tgt_lang, ratio=opts.ratio,
                                   min_len=opts.min_len, max_len=opts.max_len, path=f"{tok_src}, {tok_tgt}")
        if error is not None:  # raised inside: nothing is written
            raise error


def _codes(out: Path, files: TextFiles, codes: str | None, opts: TextOptions) -> Path:
    from synprep.text.bpe import learn_bpe

    target = out / CODES_NAME
    if codes is not None:
        if not os.path.isfile(codes):
            raise InputError("no such file (--codes)", codes)
        if target.exists() and file_sha256(target) != file_sha256(codes):
            raise ConfigError(f"{target} holds other BPE codes than --codes {codes}: use a new --out")
        if not target.exists():
            with atomic_write(target, "wb") as f, open(codes, "rb") as g:
                shutil.copyfileobj(g, f)
        return target
    if target.exists():
        return target
    if files.split != TRAIN:
        raise ConfigError(f"no BPE codes in {out}: run the train split first, or give --codes")
    clean = [files.side("clean", "src"), files.side("clean", "tgt")]
    split = files.split
    names = f"{split}.clean.{{{','.join(p.name[len(split) + len('.clean.'):] for p in clean)}}}"  # train.clean.{de,en}
    log.info("learning BPE codes on %s (at most %d merges)", names, opts.merges)
    n = learn_bpe(clean, opts.merges, target)
    log.info("learned %d BPE merges on %s%s", n, names,
             f" (of {opts.merges} asked: no pair occurs twice any more)" if n < opts.merges else "")
    return target


def _subword_model(out: Path, split: str, raw_files: list[Path], model: str | None, opts: TextOptions,
                   scheme: Any) -> Path:
    """``OUT/<model_name>``: copied from ``model``, reused, or learned on the train split's kept raw
    lines ``raw_files`` (both sides, joint) — :func:`_codes` for the schemes that read raw text."""
    from synprep.subword import load_scheme

    target = out / scheme.model_name
    if model is not None:
        given = load_scheme(scheme.name, model)
        if target.exists() and file_sha256(target) != given.sha256:
            raise ConfigError(f"{target} holds another {scheme.name} model than {scheme.model_option} {model}: "
                              "use a new --out")
        if not target.exists():
            given.save(target)
        return target
    if target.exists():
        return target
    if split != TRAIN:
        raise ConfigError(f"no {scheme.name} model in {out}: run the train split first, or give {scheme.model_option}")
    log.info("learn a %s model (size %d) on %s", scheme.name, opts.vocab_size, ", ".join(map(str, raw_files)))
    scheme.learn(raw_files, target, opts.vocab_size)
    return target


def _raw_kept(files: TextFiles, side: str, raw: str, opts: TextOptions) -> Path:
    """``text/SPLIT.raw.L`` (named by side as well with the same language on both sides,
    :class:`TextFiles`): the raw lines of the kept pairs (lowercased with ``--lowercase``): what a
    scheme that reads raw text segments."""
    from synprep.text.tokenize import moses_lowercase

    target = files.side("raw", side)
    if target.exists():
        return target
    keep = (int(n) for n in iter_lines(files.lines))
    want = next(keep, None)
    with atomic_write(target) as f:
        for i, line in enumerate(iter_lines(raw), 1):
            if i == want:
                f.write((moses_lowercase(line) if opts.lowercase else line) + "\n")
                want = next(keep, None)
    return target


def _segment(files: TextFiles, src: str, tgt: str, words_file: Path,
             model: Path, opts: TextOptions, name: str, par: Parallel) -> tuple[Path, Path, Path]:
    """Segment the kept raw lines: ``text/SPLIT.NAME.SRC`` (the source pieces as stored: split at word
    boundaries), ``text/SPLIT.NAME.wi`` (each source piece's word, and the line's rule counts),
    ``text/SPLIT.NAME.TGT``. Returns the three paths."""
    from synprep.subword.stream import align_stream, encode_stream
    from synprep.text.escape import unescape_tokens
    from synprep.text.tokenize import moses_lowercase

    raw_src, raw_tgt = _raw_kept(files, "src", src, opts), _raw_kept(files, "tgt", tgt, opts)
    out_src, out_idx, out_tgt = files.side(name, "src"), files.work / f"{files.split}.{name}.wi", \
        files.side(name, "tgt")
    if not (out_src.exists() and out_idx.exists()):
        def source_lines() -> Iterator[tuple[int, str, list[str]]]:
            lines = (int(n) for n in iter_lines(files.lines))
            for n, text, words in zip(lines, iter_lines(raw_src), iter_lines(words_file), strict=True):
                w = unescape_tokens(words.split())
                yield n, text, [moses_lowercase(x) for x in w] if opts.lowercase else w

        with atomic_write(out_src) as f, atomic_write(out_idx) as g:
            for pieces, index in align_stream(source_lines(), name, model, path=src, jobs=par.jobs,
                                              backend=par.backend, scheduler=par.scheduler):
                f.write(pieces + "\n")
                g.write(index + "\n")
    if not out_tgt.exists():
        with atomic_write(out_tgt) as f:
            for pieces in encode_stream(iter_lines(raw_tgt), name, model, jobs=par.jobs, backend=par.backend,
                                        scheduler=par.scheduler):
                f.write(pieces + "\n")
    return out_src, out_tgt, out_idx


def _apply_bpe(inp: Path, out_path: Path, codes: Path, par: Parallel) -> None:
    from synprep.text.bpe import apply_bpe_stream

    if out_path.exists():
        return
    with atomic_write(out_path) as f:
        for line in apply_bpe_stream(iter_lines(inp), codes, jobs=par.jobs, backend=par.backend,
                                     scheduler=par.scheduler):
            f.write(line + "\n")


#: how long a split waits for the vocabulary split (``train``) to write ``dict.txt`` while that split's
#: writer runs (seconds; ``SYNPREP_VOCAB_WAIT`` overrides): then it stops, naming the writer
VOCAB_WAIT_S = 6 * 3600.0


def load_or_build_vocab(out: Path, split: str, bpe_files: list[Path], vocab: str | None,
                        vocab_split: str = TRAIN) -> Vocab:
    """``OUT/dict.txt``: copied from ``vocab``, reused, or built jointly from the split's BPE files.

    Only ``vocab_split`` (the train split, or the split ``pipeline.json`` names) builds it; the
    caller holds the folder lock. Another split uses the one that split made (:func:`split_vocab`
    waits for it).

    Raises:
        ConfigError: ``vocab`` differs from the folder's ``dict.txt``; no ``dict.txt`` yet and
            ``split`` is not ``vocab_split`` ("run the train split first").
    """
    target = out / VOCAB_NAME
    if vocab is not None:
        v = Vocab.load(vocab)
        if target.exists() and Vocab.load(target).sha256 != v.sha256:
            raise ConfigError(f"{target} differs from --vocab {vocab}: use a new --out")
        if target.exists():
            return v  # the same vocabulary: nothing to write (a read-only folder resumes)
    elif target.exists():
        return Vocab.load(target)
    elif split != vocab_split:
        raise ConfigError(_no_vocab_message(out, vocab_split))
    else:
        v = Vocab.build(bpe_files)
    v.save(target)
    return v


def _no_vocab_message(out: Path, vocab_split: str) -> str:
    return (f"no {VOCAB_NAME} in {out} yet: run the {vocab_split} split first (the folder's vocabulary is built "
            f"from it), or give --vocab")


def split_vocab(out: Path, split: str, bpe_files: list[Path], vocab: str | None, vocab_split: str,
                wait_s: float | None = None) -> Vocab:
    """The split's vocabulary (:func:`load_or_build_vocab`), waiting for the vocabulary split.

    A split other than ``vocab_split`` whose folder has no ``dict.txt`` yet waits while a live
    process writes ``vocab_split`` (:func:`synprep.lock.split_writer`), at most ``wait_s`` seconds
    (default :data:`VOCAB_WAIT_S`), so splits started side by side encode with the vocabulary a
    sequential run gives. Nothing is held while waiting (the writer needs the folder lock).

    Raises:
        ConfigError: no ``dict.txt`` and no live writer of ``vocab_split`` ("run the train split
            first"), or the wait ran out (naming the writer).
    """
    import time

    from synprep.lock import split_writer

    if wait_s is None:
        wait_s = float(os.environ.get("SYNPREP_VOCAB_WAIT", VOCAB_WAIT_S))
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        with folder_lock(out):
            if vocab is not None or split == vocab_split or (out / VOCAB_NAME).exists():
                return load_or_build_vocab(out, split, bpe_files, vocab, vocab_split)
        owner = split_writer(out, vocab_split)
        if owner is None:
            if (out / VOCAB_NAME).exists():  # it finished between the two looks
                continue
            raise ConfigError(_no_vocab_message(out, vocab_split))
        if time.monotonic() >= deadline:
            raise ConfigError(f"no {VOCAB_NAME} in {out} after waiting {wait_s:g} s for the {vocab_split} split, "
                              f"which {owner} is writing: run this split again once it has finished")
        if not told:
            log.info("waiting for the %s split (%s) to write %s: the folder's vocabulary comes from it",
                     vocab_split, owner, VOCAB_NAME)
            told = True
        time.sleep(0.2)


def _refuse_without_vocabulary(out: Path, split: str, vocab: str | None, vocab_split: str) -> None:
    """Refuse a split that will need ``dict.txt`` when the folder has none and no live process writes
    the vocabulary split (so a refused command writes nothing; :func:`split_vocab` waits otherwise)."""
    from synprep.lock import split_writer

    if vocab is None and split != vocab_split and not (out / VOCAB_NAME).exists() \
            and split_writer(out, vocab_split) is None:
        raise ConfigError(_no_vocab_message(out, vocab_split))


def _vocab_split(out: Path, given: str | None) -> str:
    """The folder's vocabulary split: ``given``, else ``pipeline.json``'s, else ``train``."""
    if given is not None:
        return given
    path = out / CONFIG_NAME
    return DataConfig.load(path).vocab_split if path.is_file() else TRAIN


# --- the two commands ---------------------------------------------------------------------------


def _signature(tok: str, lowercase: bool, codes_sha: str | None, opts: ParseOptions,
               legacy: bool = False, sub: str | None = None, words: str | None = None,
               inputs: dict[str, str] | None = None, older: bool = False) -> str:
    """The signature line; its ``parser:`` field names the parser and its models' digest, as
    ``synprep parse`` prints it (``legacy``: without the digest, as folders of earlier versions have it).

    ``trees:`` names the user's trees (``--trees``), ``pwords:cased`` the parser's words given with
    ``annotate --parse-src``. With ``inputs`` (the split's input digests by role, :func:`_check_inputs`)
    it is the split's signature: ``parser:conllu#SHA`` and ``trees:SHA`` name the files' sha256 (8 hex
    digits); without, the folder's (``trees:given``), the same for every split. ``older``: the form
    versions before these fields wrote (a folder made then resumes with it).
    """
    source = opts.source()
    parser = source.legacy_signature() if legacy else source.signature()
    trees = None
    if not (legacy or older):
        if inputs is not None and "conllu" in inputs:
            parser = f"{parser}#{inputs['conllu'][:8]}"
        if opts.trees:
            trees = inputs["trees"][:8] if inputs is not None and "trees" in inputs else "given"
    return signature(tok=tok, lc=lowercase, bpe=codes_sha[:8] if codes_sha else None, sub=sub, parser=parser,
                     trees=trees, pwords=None if legacy or older else words, feat=FEATURES,
                     shard=f"v{SHARD_FORMAT_VERSION}")


def _split_signature(manifest: Manifest, split: str, folder_sig: str, split_sig: str) -> str:
    """The signature the split's shards carry: the split's own (recorded in its manifest entry) when the
    folder has this version's signature and the split's inputs add digests to it; else the folder's."""
    if manifest.signature != folder_sig or split_sig == folder_sig:
        return manifest.signature
    manifest.split(split).signature = split_sig
    return split_sig


def split_summary(manifest: Manifest, split: str) -> str:
    """One line on a split: ``train: 8 input lines, 7 pairs in 3 shard(s); dropped: parse:too_long 1``."""
    entry = manifest.split(split)
    dropped = ", ".join(f"{k} {v}" for k, v in sorted(entry.dropped.items()) if v) or "none"
    return (f"{split}: {entry.input_lines} input lines, {entry.pairs} pairs in {len(entry.shards)} shard(s); "
            f"dropped: {dropped}")


def _finish(out: Path, manifest: Manifest, split: str) -> None:
    with folder_lock(out):  # other splits may be written meanwhile: check this one, in a consistent state
        manifest.save(out)
        report = check_dir(out, splits=[split])
    report.raise_if_failed()
    log.debug("%s", report.summary())  # the command prints the split's one summary line


@writer
def run_pipeline(src: str | None, tgt: str, out: str | os.PathLike, *, src_lang: str, tgt_lang: str,
                 split: str = TRAIN, text: TextOptions, parse: ParseOptions, par: Parallel,
                 codes: str | None = None, vocab: str | None = None, conllu: str | None = None,
                 ldd_threshold: float = DEFAULTS.ldd_threshold, shard_size: int = DEFAULT_SHARD_SIZE,
                 subword_model: str | None = None, vocab_split: str | None = None,
                 language_check: bool = DEFAULTS.language_check) -> Manifest:
    """Raw parallel text of one split → shards in ``out`` (module docstring).

    Args:
        src, tgt: raw (untokenized) source and target files of the split. With ``parse.parser ==
            "conllu"`` the source tokens are the CoNLL-U surface tokens of ``conllu`` and ``src``
            may be None (when given, its line count must match).
        out: the output folder, shared by every split of a corpus.
        split: the split's name; the train split learns the BPE codes and the vocabulary.
        codes: BPE codes to apply instead of learning them. vocab: a fairseq dict to use.
        conllu: the parses to import (``--parser conllu``).
        subword_model: the model of a ``text.subword`` scheme that reads raw text (``--spm-model``,
            ``--hf-tokenizer``) instead of learning one (docs/subwords.md).
        vocab_split: the split that builds ``dict.txt`` (default: the folder's ``pipeline.json``'s,
            else ``train``); another split waits for it (:func:`split_vocab`).
        language_check: refuse a side whose sampled text is in another language than given
            (:func:`synprep.text.langid.check_language`).

    Every input and the split's preconditions (a later split applies the train split's codes or subword
    model) are checked before anything is written into ``out``.

    Returns:
        The folder's manifest after the split was added.

    Raises:
        InputError: bad input (named with file and line); ConfigError: bad options, or a folder
            made with another configuration.
    """
    out = Path(out)
    check_output_folder(out)
    work = out / "text"
    from synprep.text.tokenize import tokenizer_signature

    # the inputs first: a missing file or sides of different lengths fail before anything else
    refuse_pipes("pipeline", src, tgt, conllu, parse.trees)  # a <(...) input reads once (issue 21 item 11)
    if not os.path.exists(tgt):
        raise InputError("no such file", tgt)
    check_language_codes(src_lang, tgt_lang)
    source = parse.source()
    source.check_inputs(src, conllu)
    n_tgt = count_lines(tgt)
    if src is not None and (n_raw := count_lines(src)) != n_tgt:
        raise InputError(f"line counts differ: {src} has {n_raw} lines, {tgt} has {n_tgt}", tgt)

    if src_lang == tgt_lang:
        _refuse_overwritten_same_language(work, src_lang)
    if text.tokenized and text.fairseq_compat:
        raise ConfigError("--fairseq-compat has no effect with --tokenized (nothing is tokenized)")
    from synprep.subword import scheme_class

    scheme = scheme_class(text.subword)
    if scheme.reads_raw:
        if codes is not None:
            raise ConfigError(f"--codes is for --subword bpe; --subword {scheme.name} takes {scheme.model_option}")
        if src is None:
            raise ConfigError(f"--subword {scheme.name} segments the raw source text: give --src")
        if subword_model is None and scheme.size_option is None:
            raise ConfigError(f"--subword {scheme.name} cannot learn a model: give {scheme.model_option}")
    elif subword_model is not None:
        raise ConfigError("a subword model option is for --subword spm or hf; --subword bpe takes --codes")
    if not text.tokenized:
        for path in (src, tgt):
            if path is not None:
                refuse_tokenized(path)
    _check_later_split(out, split, codes, subword_model, scheme)
    if language_check:
        check_side_languages(([(src, n_tgt, src_lang, "-s")] if src else []) + [(tgt, n_tgt, tgt_lang, "-t")])
        if src is None and conllu is not None:
            from synprep.parse.conllu_io import read_numbered
            from synprep.text.langid import check_language, sample_lines

            check_language(sample_lines((" ".join(p.words) for p in read_numbered(conllu)), n_tgt), src_lang, "-s",
                           display_name(conllu))
    tok_spec = None
    if text.tokenized:
        if text.tokenizer != "moses":
            raise ConfigError("--tokenizer has no effect with --tokenized (nothing is tokenized)")
        tok_sig: dict[str, object] = {"tok": "given"}
    elif text.tokenizer == "parser":
        if not source.runs_parser:
            raise ConfigError("--tokenizer parser has no effect with --parser conllu (the words are the CoNLL-U's)")
        if text.fairseq_compat:
            raise ConfigError("--fairseq-compat is a Moses rule: it has no effect with --tokenizer parser")
        from synprep.text.parser_tokenize import parser_tokenizer_signature

        tok_spec = parse.spec
        tok_sig = parser_tokenizer_signature(parse.identity(), lowercase=text.lowercase, escape=True)
    elif text.tokenizer == "moses":
        tok_sig = tokenizer_signature(src_lang, lowercase=text.lowercase, escape=True,
                                      fairseq_compat=text.fairseq_compat)
    else:
        raise ConfigError(f"unknown tokenizer {text.tokenizer!r} (moses or parser)")
    sig_tok = str(tok_sig["tok"])
    if not source.runs_parser:  # the source tokens are the CoNLL-U's; the target's are tokenized as said
        sig_tok = f"conllu/{sig_tok}"  # source/target
    shared = {"mode": "pipeline", "src_lang": src_lang, "tgt_lang": tgt_lang, "tokenizer": tok_sig["tok"],
              "lowercase": text.lowercase, "fairseq_compat": text.fairseq_compat, "merges": text.merges,
              "parser": parse.config(), "ldd_threshold": ldd_threshold, "shard_size": shard_size}
    if scheme.reads_raw:  # only then: folders made before schemes existed keep their configuration
        del shared["merges"]
        shared["subword"] = scheme.name
        if scheme.size_option is not None:
            shared["vocab_size"] = text.vocab_size
    files = TextFiles(work, split, src_lang, tgt_lang)
    work.mkdir(parents=True, exist_ok=True)
    hold_split(out, split)  # a second writer of this split is refused, naming this run (synprep.lock)
    with folder_lock(out):
        vocab_split = _vocab_split(out, vocab_split)
        _refuse_without_vocabulary(out, split, vocab, vocab_split)  # before anything is written
        _check_config(out, data_config("pipeline", src_lang, tgt_lang, parse, ldd_threshold, shard_size, text,
                                       vocab_split, language_check=language_check))
        made = [files.side(stage, side) for stage in ("tok", "clean", "bpe") for side in ("src", "tgt")]
        input_sha = _check_inputs(out, split, {"src": src, "tgt": tgt, "conllu": conllu, "trees": parse.trees},
                                  made + [files.lines, files.dropped])
    _remove_stale_temps(out)  # after the configuration check: a refused command leaves the folder alone
    if source.runs_parser and parse.cache:  # a damaged cache stops the run before the text stages
        from synprep.parse.cache import check_cache_usable

        check_cache_usable(parse.cache)

    # 1. tokenize (the source side comes from the CoNLL-U file when importing parses)
    src_tok = files.side("tok", "src")
    given = source.source_tokens(src, conllu)
    if given is None:
        assert src is not None
        _tokenize(src, src_tok, src_lang, text, par, spec=tok_spec)
    elif not src_tok.exists():
        with atomic_write(src_tok) as f:
            for line in given:
                f.write(line + "\n")
    n_src = count_lines(src_tok)
    if n_src != n_tgt:
        raise InputError(f"line counts differ: {conllu} has {n_src} lines, {tgt} has {n_tgt}", tgt)
    _tokenize(tgt, files.side("tok", "tgt"), tgt_lang, text, par)

    # 2. clean (+ lowercase), 3. subwords
    _clean(files, text)
    words_file = files.side("words" if text.lowercase else "clean", "src")
    index_file = None
    if scheme.reads_raw:
        assert src is not None
        raw_files = [_raw_kept(files, "src", src, text), _raw_kept(files, "tgt", tgt, text)]
        with folder_lock(out):
            model_path = _subword_model(out, split, raw_files, subword_model, text, scheme)
        from synprep.subword import load_scheme

        identity = load_scheme(scheme.name, model_path).identity()
        bpe_src, bpe_tgt, index_file = _segment(files, src, tgt, words_file, model_path, text, scheme.name, par)
        codes_sha, sub = None, identity
        model_config: dict[str, Any] = {"subword_identity": identity,
                                        "subword_model_sha256": file_sha256(model_path)}
    else:
        with folder_lock(out):
            code_path = _codes(out, files, codes, text)
        for side in ("src", "tgt"):
            _apply_bpe(files.side("clean", side), files.side("bpe", side), code_path, par)
        bpe_src, bpe_tgt = files.side("bpe", "src"), files.side("bpe", "tgt")
        from synprep.text.bpe import count_merges

        codes_sha, sub = file_sha256(code_path), None
        model_config = {"bpe_codes_sha256": codes_sha, "bpe_merges": count_merges(code_path)}
    v = split_vocab(out, split, [bpe_src, bpe_tgt], vocab, vocab_split)  # waits for the vocabulary split

    # 4. parse, features, shards
    sig = _signature(sig_tok, text.lowercase, codes_sha, parse, sub=sub)
    config = {**shared, "split": split, **model_config, "vocab_sha256": v.sha256,
              "clean": text.clean if text.clean is not None else split == TRAIN,
              "clean_bounds": [text.ratio, text.min_len, text.max_len], **_input_digests(input_sha),
              **({} if source.runs_parser else {"src_tokens": "conllu"}),
              **({} if language_check else {"language_check": False})}
    old_tok = str(tok_sig["tok"])
    manifest = _manifest(out, sig, shared, v, _signature(old_tok, text.lowercase, codes_sha, parse, legacy=True, sub=sub),
                         _signature(old_tok, text.lowercase, codes_sha, parse, older=True, sub=sub))
    sig = _split_signature(manifest, split, sig, _signature(sig_tok, text.lowercase, codes_sha, parse, sub=sub,
                                                            inputs=input_sha))
    manifest.set_input_lines(split, n_src)
    _record_clean_drops(manifest, split, files.dropped)

    from synprep.text.escape import unescape_tokens

    def line_numbers() -> Iterator[int]:
        return (int(n) for n in iter_lines(files.lines))

    from synprep.subword.stream import parse_index_line

    items = items_from_files(iter_lines(bpe_src), iter_lines(bpe_tgt), line_numbers(),
                             words=(unescape_tokens(w.split()) for w in iter_lines(words_file)),
                             parses=source.imported(conllu, line_numbers(), n_src),
                             trees=trees_for(parse.trees, line_numbers(), n_src) if parse.trees else None,
                             word_index=(parse_index_line(x) for x in iter_lines(index_file)) if index_file else None)
    from synprep.parse.trees import TreeLeavesError

    try:
        annotate_split(out, split, items, vocab=v, manifest=manifest,
                       opts=dataclasses.replace(parse, lowercase=text.lowercase), par=par, src_lang=src_lang,
                       tgt_lang=tgt_lang, signature=sig, config=config, ldd_threshold=ldd_threshold,
                       shard_size=shard_size, source_name=str(src or conllu), subword=scheme.name)
    except TreeLeavesError as e:  # issue 16 item 9: the trees' words are a treebank's tokenization, not sacremoses'
        if text.tokenized or text.tokenizer != "moses":
            raise
        raise InputError(f"{e.reason} (synprep tokenized --src with sacremoses; give text tokenized like the "
                         f"trees, one line per tree, with --tokenized)", e.path, e.line) from None
    _write_drop_report(files.dropped, manifest, split)
    _finish(out, manifest, split)
    return manifest


def trees_for(path: str, lines: Iterable[int], n_lines: int) -> Iterator[list[Any]]:
    """The user's trees (``--trees``: one line of bracketed tree(s) per input line) of the kept lines.

    Args:
        path: the trees file. lines: the kept lines' 1-based numbers, increasing. n_lines: the
            input's line count, which the trees file must have too.

    Raises:
        InputError: a malformed tree (named by file and line), or a trees file of another length.
    """
    from synprep.parse.trees import read_tree_lines

    name = display_name(path)
    n_trees = count_lines(path)
    if n_trees != n_lines:
        raise InputError(f"line counts differ: the trees file has {n_trees} lines, the input {n_lines} (one line "
                         "of tree(s) per input line)", name)
    reader = read_tree_lines(path)
    for n in lines:
        for k, trees in reader:
            if k == n:
                yield trees
                break


def numbered_parses(conllu: str, n_lines: int) -> Iterator[ParsedLine]:
    """:func:`synprep.parse.conllu_io.read_numbered` (the parses of lines ``1..n_lines``), kept for
    callers of earlier versions: the one numbered CoNLL-U reader is in :mod:`synprep.parse.conllu_io`."""
    from synprep.parse.conllu_io import read_numbered

    return read_numbered(conllu, n_lines)


def _manifest(out: Path, sig: str, shared: dict[str, Any], v: Vocab, legacy_sig: str,
              older_sig: str | None = None) -> Manifest:
    """The folder's manifest (new, or the one a resume or an earlier split left), checked against this run.

    A folder of an earlier version keeps its signature: one whose signature names the parser without
    its models' digest (``legacy_sig``), or one without the fields this version added (``older_sig``:
    ``trees:``, ``pwords:``, ``tok:conllu``); its shards and the rest of the split agree. Its
    configuration may say ``parser.constituency: true`` where no constituency model ran (earlier
    versions wrote what was asked): kept as well.
    """
    manifest = Manifest.load_or_new(out, signature=sig, config=shared)
    if manifest.signature in (legacy_sig, older_sig) and manifest.signature != sig:
        log.info("%s has the signature format of an earlier version: kept", out / MANIFEST_NAME)
    elif manifest.signature != sig:
        raise ConfigError(f"{out / MANIFEST_NAME} has signature {manifest.signature}, this run {sig}: use a new --out")
    if manifest.config and manifest.config != shared and _asked_constituency(manifest.config, shared):
        log.info("%s names the constituency model that was asked, not the one that ran (an earlier version): "
                 "kept", out / MANIFEST_NAME)
    elif manifest.config and manifest.config != shared:  # e.g. the parser's models changed (its identity)
        diff = sorted(k for k in set(manifest.config) | set(shared) if manifest.config.get(k) != shared.get(k))
        raise ConfigError(f"{out / MANIFEST_NAME} was made with another {', '.join(diff)} (the parser's identity "
                          "names its models' digest): use a new --out")
    manifest.set_vocab(VOCAB_NAME, v.sha256, len(v))
    return manifest


def _asked_constituency(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether ``old`` differs from ``new`` only by ``parser.constituency`` true where no model ran."""
    p_old, p_new = old.get("parser"), new.get("parser")
    if not (isinstance(p_old, dict) and isinstance(p_new, dict)) or p_new.get("constituency") is not False:
        return False
    return {**old, "parser": {**p_old, "constituency": False}} == new


def _record_clean_drops(manifest: Manifest, split: str, report: Path) -> None:
    from synprep.text.clean import REASONS

    manifest.declare_reasons(split, [f"clean:{r}" for r in REASONS])
    drops = []
    for i, row in enumerate(iter_lines(report)):
        if i == 0:
            continue  # header
        line, reason, n_src, n_tgt = row.split("\t")[:4]
        if ":" in reason:
            continue  # a later stage's drop, added by _write_drop_report
        drops.append((int(line), f"clean:{reason}", f"{n_src} source / {n_tgt} target tokens"))
    manifest.record_drops(split, drops)


def _write_drop_report(report: Path, manifest: Manifest, split: str) -> None:
    """``text/SPLIT.dropped.tsv``: one record of every dropped line, the cleaning's and the later stages'.

    The cleaning writes its rows (``line  reason  src_tokens  tgt_tokens``); when the split is
    done, the drops of the parse and annotation stages are merged in by line number, with their
    manifest reason (``parse:too_long``), ``-`` for the token counts and the detail in a fifth
    column ``detail`` (empty for the cleaning's rows).
    """
    from synprep.text.clean import report_header

    rows: dict[int, str] = {}
    for i, row in enumerate(iter_lines(report)):
        if i > 0:
            cols = row.split("\t")
            if ":" not in cols[1]:
                rows[int(cols[0])] = "\t".join([*cols[:4], ""])
    for line, reason, detail in manifest.split(split).dropped_lines:
        if not reason.startswith("clean:"):
            rows[int(line)] = "\t".join([str(line), reason, "-", "-", " ".join(str(detail).split())])
    text = "".join([report_header() + "\tdetail\n", *(rows[line] + "\n" for line in sorted(rows))])
    if report.read_text(encoding="utf-8") == text:
        return  # a finished split resumed: nothing to write (a read-only folder resumes too)
    with atomic_write(report) as f:
        f.write(text)


@writer
def run_annotate(src: str, tgt: str, out: str | os.PathLike, *, src_lang: str, tgt_lang: str,
                 split: str = TRAIN, parse: ParseOptions, par: Parallel, vocab: str | None = None,
                 conllu: str | None = None, ldd_threshold: float = DEFAULTS.ldd_threshold,
                 shard_size: int = DEFAULT_SHARD_SIZE, vocab_split: str | None = None, parse_src: str | None = None,
                 language_check: bool = DEFAULTS.language_check) -> Manifest:
    """Already tokenized and BPE'd parallel text of one split → shards in ``out``.

    ``src``/``tgt`` hold BPE pieces (``@@ `` markers, Moses escapes), one pair per line, such as
    fairseq's prepared ``test.de``/``test.en``. The parser reads the source words rebuilt from the
    pieces (unescaped), or with ``parse_src`` the words of that file: the cased, Moses-tokenized
    source the pieces were made from (fairseq lowercases before BPE; the parser needs the case),
    checked line by line to hold the pieces' words up to case (:func:`synprep.annotate.with_parse_src`).
    Without it, source text that looks lowercased (:func:`synprep.text.langid.looks_lowercased`)
    gets a warning naming ``--parse-src``. With ``--parser conllu`` the parses come from ``conllu``
    (one CoNLL-U sentence per line, or ``# line = N`` groups) and must match the pieces' words.
    A pair with an empty side is dropped (``parse:empty`` / ``annotate:empty_target``).
    ``dict.txt`` is built from ``vocab_split`` (:func:`run_pipeline`); another split waits for it.
    ``language_check``: refuse a side whose sampled text is in another language than given
    (:func:`synprep.text.langid.check_language`).

    Raises:
        InputError: bad input, line counts that differ (both named), a parse that does not match, a
            side in another language; ConfigError: bad options. Nothing is written into ``out`` then.
    """
    source = parse.source()
    refuse_pipes("annotate", src, tgt, conllu, parse.trees)  # a <(...) input reads once (issue 21 item 11)
    source.check_inputs(src, conllu)  # before anything is written into OUT
    if not os.path.exists(tgt):
        raise InputError("no such file", tgt)
    check_language_codes(src_lang, tgt_lang)
    if parse_src is not None:
        if not source.runs_parser:
            raise ConfigError("--parse-src has no effect with --parser conllu (the parser reads the CoNLL-U words)")
        if not os.path.isfile(parse_src):
            raise InputError("no such file (--parse-src)", parse_src)
    out = Path(out)
    check_output_folder(out)
    n_src, n_tgt = count_lines(src), count_lines(tgt)
    if n_src != n_tgt:
        raise InputError(f"line counts differ: {src} has {n_src} lines, {tgt} has {n_tgt}", tgt)
    if parse_src is not None and (n_cased := count_lines(parse_src)) != n_src:
        raise InputError(f"line counts differ: --parse-src has {n_cased} lines, --src {src} {n_src}", parse_src)
    if language_check:
        check_side_languages([(src, n_src, src_lang, "-s"), (tgt, n_tgt, tgt_lang, "-t")])
    if parse_src is None and source.runs_parser:
        warn_if_lowercased(src, n_src)
    out.mkdir(parents=True, exist_ok=True)
    hold_split(out, split)  # a second writer of this split is refused, naming this run (synprep.lock)
    shared = {"mode": "annotate", "src_lang": src_lang, "tgt_lang": tgt_lang, "parser": parse.config(),
              "ldd_threshold": ldd_threshold, "shard_size": shard_size}
    if parse.lowercase:  # only when set: folders made before the option keep their configuration
        shared["lowercase"] = True
    if parse_src is not None:  # the same: every split of the folder then gives the parser's words
        shared["parse_src"] = True
    with folder_lock(out):
        vocab_split = _vocab_split(out, vocab_split)
        _refuse_without_vocabulary(out, split, vocab, vocab_split)  # before anything is written
        _check_config(out, data_config("annotate", src_lang, tgt_lang, parse, ldd_threshold, shard_size,
                                       TextOptions(lowercase=parse.lowercase), vocab_split,
                                       language_check=language_check))
        builds_vocab = split == vocab_split and vocab is None  # then dict.txt is made from this split
        input_sha = _check_inputs(out, split, {"src": src, "tgt": tgt, "conllu": conllu, "trees": parse.trees,
                                               "parse_src": parse_src},
                                  [out / VOCAB_NAME] if builds_vocab else [])
    v = split_vocab(out, split, [Path(src), Path(tgt)], vocab, vocab_split)  # waits for the vocabulary split
    _remove_stale_temps(out)  # after the configuration check: a refused command leaves the folder alone
    if source.runs_parser and parse.cache:
        from synprep.parse.cache import check_cache_usable

        check_cache_usable(parse.cache)
    words = "cased" if parse_src is not None else None
    sig = _signature("given", parse.lowercase, None, parse, words=words)
    config = {**shared, "split": split, "vocab_sha256": v.sha256, "src_sha256": input_sha["src"],
              **_input_digests(input_sha), **({} if language_check else {"language_check": False})}
    manifest = _manifest(out, sig, shared, v, _signature("given", parse.lowercase, None, parse, legacy=True),
                         _signature("given", parse.lowercase, None, parse, older=True))
    sig = _split_signature(manifest, split, sig,
                           _signature("given", parse.lowercase, None, parse, words=words, inputs=input_sha))
    manifest.set_input_lines(split, n_src)
    parses = source.imported(conllu, range(1, n_src + 1), n_src)
    trees = trees_for(parse.trees, range(1, n_src + 1), n_src) if parse.trees else None
    items: Iterable[Any] = items_from_files(iter_lines(src), iter_lines(tgt), iter(range(1, n_src + 1)),
                                            parses=parses, trees=trees)
    if parse_src is not None:
        from synprep.annotate import with_parse_src

        items = with_parse_src(items, iter_lines(parse_src), display_name(parse_src))
    annotate_split(out, split, items, vocab=v, manifest=manifest, opts=parse, par=par, src_lang=src_lang,
                   tgt_lang=tgt_lang, signature=sig, config=config, ldd_threshold=ldd_threshold,
                   shard_size=shard_size, source_name=src)
    _finish(out, manifest, split)
    return manifest


# --- checks of the inputs before anything is written ---------------------------------------------


def _check_later_split(out: Path, split: str, codes: str | None, model: str | None, scheme: Any) -> None:
    """A split other than ``train`` applies the train split's codes (or subword model): they must be there,
    or given, before any work (else a test set would be cut by codes of its own).

    Raises:
        ConfigError: naming what is missing and the options that give it.
    """
    if split == TRAIN:
        return
    fix = f"run the train split into {out} first, or give"
    if scheme.reads_raw:
        if model is None and not (out / scheme.model_name).exists():
            raise ConfigError(f"no {scheme.name} model in {out}: the {split} split applies the train split's; "
                              f"{fix} {scheme.model_option} TRAIN_OUT/{scheme.model_name} --vocab TRAIN_OUT/dict.txt")
    elif codes is None and not (out / CODES_NAME).exists():
        raise ConfigError(f"no BPE codes in {out}: the {split} split applies the train split's codes; "
                          f"{fix} --codes TRAIN_OUT/code --vocab TRAIN_OUT/dict.txt")
    # the vocabulary (the train split's, waited for or refused) is load_or_build_vocab's



def check_language_codes(src_lang: str, tgt_lang: str) -> None:
    """``-s``/``-t`` must look like language codes (``de``, ``pt-br``), checked before anything is written.

    Raises:
        ConfigError: naming the option and the value.
    """
    from synprep.text.langid import check_language_code

    check_language_code(src_lang, "-s/--source-lang")
    check_language_code(tgt_lang, "-t/--target-lang")


def check_side_languages(sides: list[tuple[str, int, str, str]]) -> None:
    """Each side's sample must be in its language (:func:`synprep.text.langid.check_language`).

    Args:
        sides: ``(file, its line count, language, option)`` per side.

    Raises:
        InputError: ``FILE: this text looks German ... not 'en' as -s says ...`` (exit status 2).
    """
    from synprep.text.langid import check_language, sample_lines

    for path, n, lang, option in sides:
        check_language(sample_lines(iter_lines(path), n), lang, option, display_name(path))


#: lines read for the lowercase test of annotate's source
LOWERCASE_SAMPLE = 1000


def warn_if_lowercased(src: str, n_lines: int) -> bool:
    """Warn when the source the parser is about to read looks lowercased (fairseq's prepared data is);
    returns whether it did."""
    from synprep.text.langid import looks_lowercased, sample_lines

    if not looks_lowercased(sample_lines(iter_lines(src), n_lines, LOWERCASE_SAMPLE)):
        return False
    log.warning("warning: %s: the source looks lowercased (no capitalised word in a sample of %d lines): the "
                "parser will read lowercased words and parse them worse (German: UAS 71.0 -> 54.6, UPOS 87.1 -> "
                "68.5); give the cased tokenized source with --parse-src FILE (synprep iwslt14 writes "
                "tmp/SPLIT.cased.de)", display_name(src), min(n_lines, LOWERCASE_SAMPLE))
    return True


def _input_digests(sha: dict[str, str]) -> dict[str, str]:
    """The sha256 of the split's inputs beside its two sides (CoNLL-U, trees, --parse-src), for its config."""
    return {f"{role}_sha256": digest for role, digest in sha.items() if role not in ("src", "tgt")}
