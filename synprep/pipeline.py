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

Every file is written atomically, so a step whose output exists is complete and is skipped when
the command runs again (after a crash, or for the next split). ``OUT/pipeline.json`` records the
configuration and ``OUT/inputs.json`` the inputs: running into the same folder with another
configuration, or resuming a split whose input files changed, is an error, never a silent mix.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synprep.annotate import DEFAULT_SHARD_SIZE, Parallel, ParseOptions, annotate_split, items_from_files
from synprep.constants import MANIFEST_NAME, SHARD_FORMAT_VERSION, VOCAB_NAME
from synprep.errors import ConfigError, InputError
from synprep.shards import Manifest, check_dir
from synprep.signature import file_sha256, signature
from synprep.subword import DEFAULT_SCHEME
from synprep.subword.spm import DEFAULT_VOCAB_SIZE
from synprep.textio import atomic_write, count_lines, display_name, iter_lines, iter_pairs
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

    lowercase: bool = False
    fairseq_compat: bool = False
    clean: bool | None = None
    ratio: float = 1.5
    min_len: int = 1
    max_len: int = 175
    merges: int = 10000
    subword: str = DEFAULT_SCHEME
    vocab_size: int = DEFAULT_VOCAB_SIZE
    tokenizer: str = "moses"


# --- configuration guard --------------------------------------------------------------------------


def _check_config(out: Path, shared: dict[str, Any]) -> None:
    """Record the folder's shared configuration, or refuse a different one."""
    path = out / CONFIG_NAME
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        diff = sorted(k for k in set(old) | set(shared) if old.get(k) != shared.get(k))
        if diff:
            raise ConfigError(
                f"{out} was made with another configuration ({', '.join(diff)} differ): "
                f"use a new --out, or delete {out}")
        return
    with atomic_write(path) as f:
        f.write(json.dumps(shared, indent=2, sort_keys=True) + "\n")


INPUTS_NAME = "inputs.json"


def _check_inputs(out: Path, split: str, files: dict[str, str | None]) -> dict[str, str]:
    """Record the split's input files (sha256), or refuse to resume from inputs that changed.

    A resumed run reuses every finished step; had an input been edited in between, the folder
    would mix old and new data. ``OUT/inputs.json`` maps each split to its inputs' hashes.

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
        if changed:
            names = ", ".join(str((now.get(r) or old.get(r))["path"]) for r in changed)
            raise ConfigError(f"the {split} split of {out} was made from other input ({names} changed): "
                              f"use a new --out, or delete {out}")
    else:
        known[split] = now
        with atomic_write(path) as f:
            f.write(json.dumps(known, indent=2, sort_keys=True) + "\n")
    return {role: entry["sha256"] for role, entry in now.items()}


def _remove_stale_temps(out: Path) -> None:
    """Temporary files a killed run left behind (``.NAME.XXXX.tmp``) are removed before a re-run."""
    for d in (out, out / "text"):
        if d.is_dir():
            for p in d.glob(".*.tmp"):
                log.debug("removing stale %s", p)
                p.unlink()


# --- text stage -------------------------------------------------------------------------------


def _tokenize(inp: str, out_path: Path, lang: str, opts: TextOptions, par: Parallel, spec: Any = None) -> None:
    """Tokenize one side; with ``spec`` (the source side under ``--tokenizer parser``) by that parser's tokenizer."""
    from synprep.text.tokenize import tokenize_stream

    if out_path.exists():
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


def _clean(split: str, text: Path, src_lang: str, tgt_lang: str, opts: TextOptions) -> None:
    """Clean the tokenized pair into SPLIT.clean.L (+ words, lines, dropped.tsv), all or nothing."""
    from synprep.text.clean import clean_pairs, report_header, report_row
    from synprep.text.tokenize import moses_lowercase

    outputs = {
        "src": text / f"{split}.clean.{src_lang}", "tgt": text / f"{split}.clean.{tgt_lang}",
        "lines": text / f"{split}.lines", "report": text / f"{split}.dropped.tsv",
    }
    if opts.lowercase:
        outputs["words"] = text / f"{split}.words.{src_lang}"
    if all(p.exists() for p in outputs.values()):
        return
    do_clean = opts.clean if opts.clean is not None else split == TRAIN
    bounds: dict[str, Any] = (
        {"ratio": opts.ratio, "min_len": opts.min_len, "max_len": opts.max_len} if do_clean
        else {"ratio": math.inf, "min_len": 1, "max_len": 1 << 62, "max_word_length": 1 << 30})
    tok_src, tok_tgt = text / f"{split}.tok.{src_lang}", text / f"{split}.tok.{tgt_lang}"
    with contextlib.ExitStack() as stack:
        f = {k: stack.enter_context(atomic_write(p)) for k, p in outputs.items()}
        f["report"].write(report_header() + "\n")
        for r in clean_pairs(iter_pairs(tok_src, tok_tgt), names=(str(tok_src), str(tok_tgt)), **bounds):
            if not r.kept:
                f["report"].write(report_row(r) + "\n")
                continue
            src, tgt = (moses_lowercase(r.src), moses_lowercase(r.tgt)) if opts.lowercase else (r.src, r.tgt)
            f["src"].write(src + "\n")
            f["tgt"].write(tgt + "\n")
            f["lines"].write(f"{r.line}\n")
            if opts.lowercase:
                f["words"].write(r.src + "\n")


def _codes(out: Path, split: str, text: Path, src_lang: str, tgt_lang: str, codes: str | None,
           opts: TextOptions) -> Path:
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
    if split != TRAIN:
        raise ConfigError(f"no BPE codes in {out}: run the train split first, or give --codes")
    log.info("learning BPE codes on %s.clean.{%s,%s} (at most %d merges)", split, src_lang, tgt_lang, opts.merges)
    n = learn_bpe([text / f"{split}.clean.{src_lang}", text / f"{split}.clean.{tgt_lang}"], opts.merges, target)
    log.info("learned %d BPE merges on %s.clean.{%s,%s}%s", n, split, src_lang, tgt_lang,
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


def _raw_kept(split: str, work: Path, raw: str, lang: str, opts: TextOptions) -> Path:
    """``text/SPLIT.raw.L``: the raw lines of the kept pairs (lowercased with ``--lowercase``): what a
    scheme that reads raw text segments."""
    from synprep.text.tokenize import moses_lowercase

    target = work / f"{split}.raw.{lang}"
    if target.exists():
        return target
    keep = (int(n) for n in iter_lines(work / f"{split}.lines"))
    want = next(keep, None)
    with atomic_write(target) as f:
        for i, line in enumerate(iter_lines(raw), 1):
            if i == want:
                f.write((moses_lowercase(line) if opts.lowercase else line) + "\n")
                want = next(keep, None)
    return target


def _segment(split: str, work: Path, src: str, tgt: str, src_lang: str, tgt_lang: str, words_file: Path,
             model: Path, opts: TextOptions, name: str, par: Parallel) -> tuple[Path, Path, Path]:
    """Segment the kept raw lines: ``text/SPLIT.NAME.SRC`` (the source pieces as stored: split at word
    boundaries), ``text/SPLIT.NAME.wi`` (each source piece's word, and the line's rule counts),
    ``text/SPLIT.NAME.TGT``. Returns the three paths."""
    from synprep.subword.stream import align_stream, encode_stream
    from synprep.text.escape import unescape_tokens
    from synprep.text.tokenize import moses_lowercase

    raw_src, raw_tgt = _raw_kept(split, work, src, src_lang, opts), _raw_kept(split, work, tgt, tgt_lang, opts)
    out_src, out_idx, out_tgt = work / f"{split}.{name}.{src_lang}", work / f"{split}.{name}.wi", \
        work / f"{split}.{name}.{tgt_lang}"
    if not (out_src.exists() and out_idx.exists()):
        def source_lines() -> Iterator[tuple[int, str, list[str]]]:
            lines = (int(n) for n in iter_lines(work / f"{split}.lines"))
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


def load_or_build_vocab(out: Path, split: str, bpe_files: list[Path], vocab: str | None) -> Vocab:
    """``OUT/dict.txt``: copied from ``vocab``, reused, or built jointly from the split's BPE files.

    The vocabulary is built from the train split; a folder whose first split is another one
    builds it from that split (logged), so that a test-only folder can still be annotated.
    """
    target = out / VOCAB_NAME
    if vocab is not None:
        v = Vocab.load(vocab)
        if target.exists() and Vocab.load(target).sha256 != v.sha256:
            raise ConfigError(f"{target} differs from --vocab {vocab}: use a new --out")
    elif target.exists():
        return Vocab.load(target)
    else:
        if split != TRAIN:
            log.warning("no %s in %s yet: building the vocabulary from the %s split", VOCAB_NAME, out, split)
        v = Vocab.build(bpe_files)
    v.save(target)
    return v


# --- the two commands ---------------------------------------------------------------------------


def _signature(tok: str, lowercase: bool, codes_sha: str | None, opts: ParseOptions, sub: str | None = None) -> str:
    parser = opts.parser
    if opts.parser != "conllu":
        from synprep.parse.run import parser_signature_name

        parser = parser_signature_name(opts.spec)
    return signature(tok=tok, lc=lowercase, bpe=codes_sha[:8] if codes_sha else None, sub=sub, parser=parser,
                     feat=FEATURES, shard=f"v{SHARD_FORMAT_VERSION}")


def split_summary(manifest: Manifest, split: str) -> str:
    """One line on a split: ``train: 8 input lines, 7 pairs in 3 shard(s); dropped: parse:too_long 1``."""
    entry = manifest.split(split)
    dropped = ", ".join(f"{k} {v}" for k, v in sorted(entry.dropped.items()) if v) or "none"
    return (f"{split}: {entry.input_lines} input lines, {entry.pairs} pairs in {len(entry.shards)} shard(s); "
            f"dropped: {dropped}")


def _finish(out: Path, manifest: Manifest, split: str) -> None:
    manifest.save(out)
    report = check_dir(out)
    report.raise_if_failed()
    log.debug("%s", report.summary())  # the command prints the split's one summary line


def run_pipeline(src: str | None, tgt: str, out: str | os.PathLike, *, src_lang: str, tgt_lang: str,
                 split: str = TRAIN, text: TextOptions, parse: ParseOptions, par: Parallel,
                 codes: str | None = None, vocab: str | None = None, conllu: str | None = None,
                 ldd_threshold: float = 0.01, shard_size: int = DEFAULT_SHARD_SIZE,
                 subword_model: str | None = None) -> Manifest:
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

    Returns:
        The folder's manifest after the split was added.

    Raises:
        InputError: bad input (named with file and line); ConfigError: bad options, or a folder
            made with another configuration.
    """
    out = Path(out)
    work = out / "text"
    from synprep.text.escape import escape
    from synprep.text.tokenize import tokenizer_signature

    # the inputs first: a missing file or sides of different lengths fail before anything else
    if not os.path.exists(tgt):
        raise InputError("no such file", tgt)
    if parse.parser == "conllu":
        if conllu is None:
            raise ConfigError("--parser conllu needs --conllu FILE")
        if not os.path.exists(conllu):
            raise InputError("no such file", conllu)
    elif src is None:
        raise ConfigError("--src is required unless --parser conllu")
    elif not os.path.exists(src):
        raise InputError("no such file", src)
    n_tgt = count_lines(tgt)
    if src is not None and (n_raw := count_lines(src)) != n_tgt:
        raise InputError(f"line counts differ: {src} has {n_raw} lines, {tgt} has {n_tgt}", tgt)

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
    tok_spec = None
    if text.tokenizer == "parser":
        if parse.parser == "conllu":
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
    shared = {"mode": "pipeline", "src_lang": src_lang, "tgt_lang": tgt_lang, "tokenizer": tok_sig["tok"],
              "lowercase": text.lowercase, "fairseq_compat": text.fairseq_compat, "merges": text.merges,
              "parser": parse.config(), "ldd_threshold": ldd_threshold, "shard_size": shard_size}
    if scheme.reads_raw:  # only then: folders made before schemes existed keep their configuration
        del shared["merges"]
        shared["subword"] = scheme.name
        if scheme.size_option is not None:
            shared["vocab_size"] = text.vocab_size
    work.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(out)
    _check_config(out, shared)
    _check_inputs(out, split, {"src": src, "tgt": tgt, "conllu": conllu})

    # 1. tokenize (the source side comes from the CoNLL-U file when importing parses)
    src_tok = work / f"{split}.tok.{src_lang}"
    if parse.parser == "conllu":
        from synprep.parse.conllu_io import read_conllu

        n_src = 0
        if not src_tok.exists():
            with atomic_write(src_tok) as f:
                for p in read_conllu(str(conllu)):
                    n_src += 1
                    if p.line != n_src:
                        raise InputError(f"expected line {n_src}, found '# line = {p.line}'", conllu)
                    f.write(" ".join(escape(w) for w in p.words) + "\n")
        n_src = count_lines(src_tok)
    else:
        assert src is not None
        n_src = n_tgt
        _tokenize(src, src_tok, src_lang, text, par, spec=tok_spec)
    if n_src != n_tgt:
        raise InputError(f"line counts differ: {conllu} has {n_src} lines, {tgt} has {n_tgt}", tgt)
    _tokenize(tgt, work / f"{split}.tok.{tgt_lang}", tgt_lang, text, par)

    # 2. clean (+ lowercase), 3. subwords
    _clean(split, work, src_lang, tgt_lang, text)
    words_file = work / f"{split}.words.{src_lang}" if text.lowercase else work / f"{split}.clean.{src_lang}"
    index_file = None
    if scheme.reads_raw:
        assert src is not None
        raw_files = [_raw_kept(split, work, src, src_lang, text), _raw_kept(split, work, tgt, tgt_lang, text)]
        model_path = _subword_model(out, split, raw_files, subword_model, text, scheme)
        from synprep.subword import load_scheme

        identity = load_scheme(scheme.name, model_path).identity()
        bpe_src, bpe_tgt, index_file = _segment(split, work, src, tgt, src_lang, tgt_lang, words_file, model_path,
                                                text, scheme.name, par)
        codes_sha, sub = None, identity
        model_config: dict[str, Any] = {"subword_identity": identity,
                                        "subword_model_sha256": file_sha256(model_path)}
    else:
        code_path = _codes(out, split, work, src_lang, tgt_lang, codes, text)
        for lang in (src_lang, tgt_lang):
            _apply_bpe(work / f"{split}.clean.{lang}", work / f"{split}.bpe.{lang}", code_path, par)
        bpe_src, bpe_tgt = work / f"{split}.bpe.{src_lang}", work / f"{split}.bpe.{tgt_lang}"
        from synprep.text.bpe import count_merges

        codes_sha, sub = file_sha256(code_path), None
        model_config = {"bpe_codes_sha256": codes_sha, "bpe_merges": count_merges(code_path)}
    v = load_or_build_vocab(out, split, [bpe_src, bpe_tgt], vocab)

    # 4. parse, features, shards
    sig = _signature(str(tok_sig["tok"]), text.lowercase, codes_sha, parse, sub)
    config = {**shared, "split": split, **model_config, "vocab_sha256": v.sha256,
              "clean": text.clean if text.clean is not None else split == TRAIN,
              "clean_bounds": [text.ratio, text.min_len, text.max_len]}
    manifest = _manifest(out, sig, shared, v)
    manifest.set_input_lines(split, n_src)
    _record_clean_drops(manifest, split, work / f"{split}.dropped.tsv")

    from synprep.text.escape import unescape_tokens

    def line_numbers() -> Iterator[int]:
        return (int(n) for n in iter_lines(work / f"{split}.lines"))

    from synprep.subword.stream import parse_index_line

    items = items_from_files(iter_lines(bpe_src), iter_lines(bpe_tgt), line_numbers(),
                             words=(unescape_tokens(w.split()) for w in iter_lines(words_file)),
                             parses=_parses_for(str(conllu), line_numbers()) if parse.parser == "conllu" else None,
                             word_index=(parse_index_line(x) for x in iter_lines(index_file)) if index_file else None)
    parse.lowercase = text.lowercase
    annotate_split(out, split, items, vocab=v, manifest=manifest, opts=parse, par=par, src_lang=src_lang,
                   tgt_lang=tgt_lang, signature=sig, config=config, ldd_threshold=ldd_threshold,
                   shard_size=shard_size, source_name=str(src or conllu), subword=scheme.name)
    _finish(out, manifest, split)
    return manifest


def _parses_for(conllu: str, lines: Iterable[int]) -> Iterator[ParsedLine]:
    """The imported parses of the kept lines (1-based, increasing), in order, streaming.

    Raises:
        InputError: no parse for a kept line.
    """
    from synprep.parse.conllu_io import read_conllu

    reader = read_conllu(conllu)
    for n in lines:
        for p in reader:
            if p.line == n:
                yield p
                break
        else:
            raise InputError(f"no parse for line {n}", conllu)


def numbered_parses(conllu: str, n_lines: int) -> Iterator[ParsedLine]:
    """The CoNLL-U parses of lines ``1..n_lines`` in order, for a source of ``n_lines`` lines.

    Lines are numbered by ``# line = N`` (as ``synprep parse`` writes them, a failed line as an
    ``# error`` block) or, without those comments, one sentence per line.

    Raises:
        InputError: a line without a parse (a gap in the numbering), fewer or more parsed lines
            than ``n_lines`` (naming the CoNLL-U file), or malformed CoNLL-U.
    """
    from synprep.parse.conllu_io import read_conllu

    name = display_name(conllu)
    reader = read_conllu(conllu)
    for k in range(1, n_lines + 1):
        p = next(reader, None)
        if p is None:
            raise InputError(f"the parses end after line {k - 1}, the source has {n_lines} lines", name)
        if p.line != k:
            raise InputError(f"expected the parse of line {k}, found '# line = {p.line}' (every source line "
                             "needs a block, as `synprep parse` writes)", name)
        if k == n_lines:
            extra = next(reader, None)
            if extra is not None:
                raise InputError(f"more parses than source lines: the source has {n_lines} lines, the parses "
                                 f"go on with line {extra.line}", name)
        yield p
    if n_lines == 0 and next(reader, None) is not None:
        raise InputError("the source is empty but the CoNLL-U file holds parses", name)


def _manifest(out: Path, sig: str, shared: dict[str, Any], v: Vocab) -> Manifest:
    manifest = Manifest.load_or_new(out, signature=sig, config=shared)
    if manifest.signature != sig:
        raise ConfigError(f"{out / MANIFEST_NAME} has signature {manifest.signature}, this run {sig}: use a new --out")
    manifest.set_vocab(VOCAB_NAME, v.sha256, len(v))
    return manifest


def _record_clean_drops(manifest: Manifest, split: str, report: Path) -> None:
    from synprep.text.clean import REASONS

    manifest.declare_reasons(split, [f"clean:{r}" for r in REASONS])
    drops = []
    for i, row in enumerate(iter_lines(report)):
        if i == 0:
            continue  # header
        line, reason, n_src, n_tgt = row.split("\t")
        drops.append((int(line), f"clean:{reason}", f"{n_src} source / {n_tgt} target tokens"))
    manifest.record_drops(split, drops)


def run_annotate(src: str, tgt: str, out: str | os.PathLike, *, src_lang: str, tgt_lang: str,
                 split: str = TRAIN, parse: ParseOptions, par: Parallel, vocab: str | None = None,
                 conllu: str | None = None, ldd_threshold: float = 0.01,
                 shard_size: int = DEFAULT_SHARD_SIZE) -> Manifest:
    """Already tokenized and BPE'd parallel text of one split → shards in ``out``.

    ``src``/``tgt`` hold BPE pieces (``@@ `` markers, Moses escapes), one pair per line, such as
    fairseq's prepared ``test.de``/``test.en``. The parser reads the source words rebuilt from the
    pieces (unescaped); with ``--parser conllu`` the parses come from ``conllu`` (one CoNLL-U
    sentence per line, or ``# line = N`` groups) and must match the pieces' words.
    A pair with an empty side is dropped (``parse:empty`` / ``annotate:empty_target``).

    Raises:
        InputError: bad input, line counts that differ (both named), a parse that does not match.
    """
    if parse.parser == "conllu" and conllu is None:  # before anything is written into OUT
        raise ConfigError("--parser conllu needs --conllu FILE")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(out)
    n_src, n_tgt = count_lines(src), count_lines(tgt)
    if n_src != n_tgt:
        raise InputError(f"line counts differ: {src} has {n_src} lines, {tgt} has {n_tgt}", tgt)
    shared = {"mode": "annotate", "src_lang": src_lang, "tgt_lang": tgt_lang, "parser": parse.config(),
              "ldd_threshold": ldd_threshold, "shard_size": shard_size}
    if parse.lowercase:  # only when set: folders made before the option keep their configuration
        shared["lowercase"] = True
    _check_config(out, shared)
    input_sha = _check_inputs(out, split, {"src": src, "tgt": tgt, "conllu": conllu})
    v = load_or_build_vocab(out, split, [Path(src), Path(tgt)], vocab)
    sig = _signature("given", parse.lowercase, None, parse)
    config = {**shared, "split": split, "vocab_sha256": v.sha256, "src_sha256": input_sha["src"]}
    manifest = _manifest(out, sig, shared, v)
    manifest.set_input_lines(split, n_src)
    parses = numbered_parses(conllu, n_src) if conllu is not None and parse.parser == "conllu" else None
    items = items_from_files(iter_lines(src), iter_lines(tgt), iter(range(1, n_src + 1)), parses=parses)
    annotate_split(out, split, items, vocab=v, manifest=manifest, opts=parse, par=par, src_lang=src_lang,
                   tgt_lang=tgt_lang, signature=sig, config=config, ldd_threshold=ldd_threshold,
                   shard_size=shard_size, source_name=src)
    _finish(out, manifest, split)
    return manifest
