"""The text stage of ``synprep pipeline``: tokenize, clean (+ lowercase), BPE codes or a subword model, segment."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synprep.annotate import Parallel
from synprep.constants import BPE_SEPARATOR
from synprep.errors import ConfigError, InputError
from synprep.escape import unescape_tokens
from synprep.lock import folder_lock
from synprep.parse.tokenize import parser_tokenize_stream, parser_tokenizer_signature
from synprep.pipeline.config import DataConfig
from synprep.pipeline.folder import CODES_NAME, TRAIN, SplitInputs, TextFiles
from synprep.signature import file_sha256
from synprep.subword import load_scheme
from synprep.subword.config import SubwordConfig
from synprep.subword.stream import align_stream, encode_stream
from synprep.text.case import moses_lowercase
from synprep.text.config import TextConfig
from synprep.textio import atomic_write, count_lines, display_name, iter_line_pairs, iter_lines

log = logging.getLogger(__name__)



def _tokenize(inp: str, out_path: Path, lang: str, text: TextConfig, par: Parallel, spec: Any = None) -> None:
    """Tokenize one side; with ``spec`` (the source side under ``--tokenizer parser``) by that parser's tokenizer."""
    # imported here: loads sacremoses, not needed to import this module
    from synprep.text.tokenize import MosesRules, tokenize_stream

    if out_path.exists():
        return
    if text.tokenized:  # used as it is: one line per line, CRLF/BOM/gzip normalized by iter_lines
        log.info("already tokenized: %s → %s", display_name(inp), out_path)
        with atomic_write(out_path) as f:
            for line in iter_lines(inp):
                f.write(" ".join(line.split()) + "\n")
        return
    log.info("tokenize %s → %s", display_name(inp), out_path)
    if spec is not None:
        lines = parser_tokenize_stream(iter_lines(inp), spec, jobs=par.jobs, backend=par.backend,
                                       scheduler=par.scheduler)
    else:
        lines = tokenize_stream(iter_lines(inp), lang, MosesRules(fairseq_compat=text.fairseq_compat), jobs=par.jobs,
                                backend=par.backend, scheduler=par.scheduler)
    with atomic_write(out_path) as f:
        for line in lines:
            f.write(line + "\n")


def clean_split(files: TextFiles, text: TextConfig, clean: bool | None) -> None:
    """Step 2: clean the tokenized pair into SPLIT.clean.L (+ words, lines, dropped.tsv), all or nothing;
    ``clean``: the split's ``--clean/--no-clean`` (None: the train split only)."""
    # imported here: loads sacremoses, not needed to import this module
    from synprep.text.clean import CleanStats, clean_pairs, nothing_kept_error, report_header, report_row

    split = files.split
    outputs = {
        "src": files.side("clean", "src"), "tgt": files.side("clean", "tgt"),
        "lines": files.lines, "report": files.dropped,
    }
    if text.lowercase:
        outputs["words"] = files.side("words", "src")
    if all(p.exists() for p in outputs.values()):
        return
    do_clean = clean if clean is not None else split == TRAIN
    bounds: dict[str, Any] = (
        {"ratio": text.ratio, "min_len": text.min_len, "max_len": text.max_len} if do_clean
        else {"ratio": math.inf, "min_len": 1, "max_len": 1 << 62, "max_word_length": 1 << 30})
    tok_src, tok_tgt = files.side("tok", "src"), files.side("tok", "tgt")
    stats = CleanStats()
    with contextlib.ExitStack() as stack:
        f = {k: stack.enter_context(atomic_write(p)) for k, p in outputs.items()}
        f["report"].write(report_header() + "\n")
        # keep_pipes: a "|" of --tokenized text is a token (the shards hold no Moses factors)
        for r in clean_pairs(iter_line_pairs(tok_src, tok_tgt), names=(str(tok_src), str(tok_tgt)), keep_pipes=True,
                             **bounds):
            stats.add(r)
            if not r.kept:
                f["report"].write(report_row(r) + "\n")
                continue
            src, tgt = (moses_lowercase(r.src), moses_lowercase(r.tgt)) if text.lowercase else (r.src, r.tgt)
            f["src"].write(src + "\n")
            f["tgt"].write(tgt + "\n")
            f["lines"].write(f"{r.line}\n")
            if text.lowercase:
                f["words"].write(r.src + "\n")
        error = nothing_kept_error(stats, src_lang=files.src_lang, tgt_lang=files.tgt_lang, ratio=text.ratio,
                                   min_len=text.min_len, max_len=text.max_len, path=f"{tok_src}, {tok_tgt}")
        if error is not None:  # raised inside: nothing is written
            raise error


def _codes(out: Path, files: TextFiles, codes: str | None, sub: SubwordConfig) -> Path:
    # imported here: loads subword_nmt, not needed to import this module
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
    log.info("learning BPE codes on %s (at most %d merges)", names, sub.merges)
    n = learn_bpe(clean, sub.merges, target)
    log.info("learned %d BPE merges on %s%s", n, names,
             f" (of {sub.merges} asked: no pair occurs twice any more)" if n < sub.merges else "")
    return target


def _subword_model(out: Path, split: str, raw_files: list[Path], model: str | None, sub: SubwordConfig,
                   scheme: Any) -> Path:
    """``OUT/<model_name>``: copied from ``model``, reused, or learned on the train split's kept raw
    lines ``raw_files`` (both sides, joint) — :func:`_codes` for the schemes that read raw text."""
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
    log.info("learn a %s model (size %d) on %s", scheme.name, sub.vocab_size, ", ".join(map(str, raw_files)))
    scheme.learn(raw_files, target, sub.vocab_size)
    return target


def _raw_kept(files: TextFiles, side: str, raw: str, text: TextConfig) -> Path:
    """``text/SPLIT.raw.L`` (named by side as well with the same language on both sides,
    :class:`TextFiles`): the raw lines of the kept pairs (lowercased with ``--lowercase``): what a
    scheme that reads raw text segments."""
    target = files.side("raw", side)
    if target.exists():
        return target
    keep = (int(n) for n in iter_lines(files.lines))
    want = next(keep, None)
    with atomic_write(target) as f:
        for i, line in enumerate(iter_lines(raw), 1):
            if i == want:
                f.write((moses_lowercase(line) if text.lowercase else line) + "\n")
                want = next(keep, None)
    return target


def _segment(files: TextFiles, src: str, tgt: str, words_file: Path,
             model: Path, text: TextConfig, name: str, par: Parallel) -> tuple[Path, Path, Path]:
    """Segment the kept raw lines: ``text/SPLIT.NAME.SRC`` (the source pieces as stored: split at word
    boundaries), ``text/SPLIT.NAME.wi`` (each source piece's word, and the line's rule counts),
    ``text/SPLIT.NAME.TGT``. Returns the three paths."""
    raw_src, raw_tgt = _raw_kept(files, "src", src, text), _raw_kept(files, "tgt", tgt, text)
    out_src, out_idx, out_tgt = files.side(name, "src"), files.work / f"{files.split}.{name}.wi", \
        files.side(name, "tgt")
    if not (out_src.exists() and out_idx.exists()):
        def source_lines() -> Iterator[tuple[int, str, list[str]]]:
            lines = (int(n) for n in iter_lines(files.lines))
            for n, raw, words in zip(lines, iter_lines(raw_src), iter_lines(words_file), strict=True):
                w = unescape_tokens(words.split())
                yield n, raw, [moses_lowercase(x) for x in w] if text.lowercase else w

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


def _refuse_bpe_marker(files: TextFiles, side: str, name: str) -> None:
    """Refuse a kept token of ``side`` that ends in ``@@``: subword-nmt writes it unchanged (or cut, its last
    piece still ending in ``@@``), so that its last piece reads as joined to the next word (``x@@ comes`` →
    ``xcomes``). Sacremoses writes every ``@`` apart; such a token comes from ``--tokenized`` text or a CoNLL-U.

    Args:
        files: the split's text files (the kept tokens ``SPLIT.clean.L`` and their input lines ``SPLIT.lines``).
        side: ``src`` or ``tgt``.
        name: the input file named in the error (its line numbers are the input's).

    Raises:
        InputError: ``NAME:LINE:`` the first such token, its 1-based position, and the fix.
    """
    marker = BPE_SEPARATOR + " "
    for n, line in zip(iter_lines(files.lines), iter_lines(files.side("clean", side)), strict=True):
        if marker in line or line.endswith(BPE_SEPARATOR):  # substring tests: the usual line costs no split
            k, token = next((k, t) for k, t in enumerate(line.split(" "), 1) if t.endswith(BPE_SEPARATOR))
            raise InputError(f"token {k} {token!r} ends in {BPE_SEPARATOR!r}, subword-nmt's continuation marker: "
                             "its last BPE piece would be read as joined to the next word; write the token "
                             f"otherwise (e.g. {token[:-1] + ' ' + token[-1]!r}), or use --subword spm", name, int(n))


def _apply_bpe(inp: Path, out_path: Path, codes: Path, par: Parallel) -> None:
    # imported here: loads subword_nmt, not needed to import this module
    from synprep.text.bpe import apply_bpe_stream

    if out_path.exists():
        return
    with atomic_write(out_path) as f:
        for line in apply_bpe_stream(iter_lines(inp), codes, jobs=par.jobs, backend=par.backend,
                                     scheduler=par.scheduler):
            f.write(line + "\n")


@dataclass(frozen=True)
class Tokenizer:
    """How a split's words are made: ``spec`` (the parser's own tokenizer, ``--tokenizer parser``) or None
    (sacremoses, or the input as it is); ``name``, the signature's ``tok:`` (``sacremoses-0.2.0``, ``given``);
    ``field``, the signature's ``tok:`` of this run (``conllu/...`` when the source tokens are imported)."""

    spec: Any
    name: str
    field: str


def choose_tokenizer(text: TextConfig, parse: Any, source: Any, src_lang: str) -> Tokenizer:
    """The split's :class:`Tokenizer` (``--tokenized``, ``--tokenizer moses|parser``).

    Raises:
        ConfigError: ``--tokenizer`` or ``--fairseq-compat`` where it has no effect.
    """
    # imported here: loads sacremoses, not needed to import this module
    from synprep.text.tokenize import tokenizer_signature

    spec = None
    if text.tokenized:
        if text.tokenizer != "moses":
            raise ConfigError("--tokenizer has no effect with --tokenized (nothing is tokenized)")
        tok_sig: dict[str, object] = {"tok": "given"}
    elif text.tokenizer == "parser":
        if not source.runs_parser:
            raise ConfigError("--tokenizer parser has no effect with --parser conllu (the words are the CoNLL-U's)")
        if text.fairseq_compat:
            raise ConfigError("--fairseq-compat is a Moses rule: it has no effect with --tokenizer parser")

        spec = parse.spec
        tok_sig = parser_tokenizer_signature(parse.identity(), lowercase=text.lowercase, escape=True)
    elif text.tokenizer == "moses":
        tok_sig = tokenizer_signature(src_lang, lowercase=text.lowercase, escape=True,
                                      fairseq_compat=text.fairseq_compat)
    else:
        raise ConfigError(f"unknown tokenizer {text.tokenizer!r} (moses or parser)")
    name = str(tok_sig["tok"])
    # the source tokens are the CoNLL-U's; the target's are tokenized as said (source/target)
    return Tokenizer(spec, name, name if source.runs_parser else f"conllu/{name}")


def tokenize_split(files: TextFiles, inputs: SplitInputs, n_tgt: int, text: TextConfig, tok: Tokenizer, source: Any,
                   par: Parallel) -> int:
    """Step 1: ``text/SPLIT.tok.L`` of both sides (the source's from the CoNLL-U file when the parses are
    imported); returns the source's line count.

    Raises:
        InputError: the CoNLL-U file has another number of lines than the target.
    """
    src, tgt, conllu = inputs.src, inputs.tgt, inputs.conllu
    src_tok = files.side("tok", "src")
    given = source.source_tokens(src, conllu)
    if given is None:
        assert src is not None
        _tokenize(src, src_tok, files.src_lang, text, par, spec=tok.spec)
    elif not src_tok.exists():
        with atomic_write(src_tok) as f:
            for line in given:
                f.write(line + "\n")
    n_src = count_lines(src_tok)
    if n_src != n_tgt:
        raise InputError(f"line counts differ: {conllu} has {n_src} lines, {tgt} has {n_tgt}", tgt)
    _tokenize(tgt, files.side("tok", "tgt"), files.tgt_lang, text, par)
    return n_src


@dataclass(frozen=True)
class Pieces:
    """What step 3 made: the pieces of both sides, each source piece's word (``index``: schemes that
    align by offsets), the BPE codes' digest or the subword model's identity (``sub``), and the
    model's facts for the shards' configuration."""

    src: Path
    tgt: Path
    index: Path | None
    codes_sha: str | None
    sub: str | None
    facts: dict[str, Any]


def subwords(out: Path, files: TextFiles, inputs: SplitInputs, words_file: Path, config: DataConfig, scheme: Any,
             par: Parallel) -> Pieces:
    """Step 3: BPE codes (learned on the train split, or given) applied to the kept tokens, or a
    scheme that reads raw text (its model learned or given) applied to the kept raw lines."""
    src, tgt, text, sub = inputs.src, inputs.tgt, config.text, config.subword
    if scheme.reads_raw:
        assert src is not None
        raw_files = [_raw_kept(files, "src", src, text), _raw_kept(files, "tgt", tgt, text)]
        with folder_lock(out):
            model_path = _subword_model(out, files.split, raw_files, inputs.subword_model, sub, scheme)

        identity = load_scheme(scheme.name, model_path).identity()
        bpe_src, bpe_tgt, index_file = _segment(files, src, tgt, words_file, model_path, text, scheme.name, par)
        return Pieces(bpe_src, bpe_tgt, index_file, None, identity,
                      {"subword_identity": identity, "subword_model_sha256": file_sha256(model_path)})
    for side, name in (("src", src or str(files.side("tok", "src"))), ("tgt", tgt)):
        if not files.side("bpe", side).exists():  # before the codes are learned on them
            _refuse_bpe_marker(files, side, name)
    with folder_lock(out):
        code_path = _codes(out, files, inputs.codes, sub)
    for side in ("src", "tgt"):
        _apply_bpe(files.side("clean", side), files.side("bpe", side), code_path, par)
    # imported here: loads subword_nmt, not needed to import this module
    from synprep.text.bpe import count_merges

    codes_sha = file_sha256(code_path)
    return Pieces(files.side("bpe", "src"), files.side("bpe", "tgt"), None, codes_sha, None,
                  {"bpe_codes_sha256": codes_sha, "bpe_merges": count_merges(code_path)})
