"""``synprep pipeline``: raw (or tokenized) parallel text of one split → shards (:mod:`synprep.pipeline`)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from synprep.annotate import DEFAULT_SHARD_SIZE, Parallel, ParseOptions, annotate_split, items_from_files
from synprep.config import DEFAULTS
from synprep.errors import ConfigError, InputError
from synprep.lock import folder_lock, hold_split, writer
from synprep.pipeline.checks import (
    _check_later_split,
    check_language_codes,
    check_side_languages,
    refuse_tokenized,
)
from synprep.pipeline.dictionary import _refuse_without_vocabulary, _vocab_split, split_vocab
from synprep.pipeline.folder import (
    TRAIN,
    TextFiles,
    TextOptions,
    _check_config,
    _check_inputs,
    _refuse_overwritten_same_language,
    _remove_stale_temps,
    check_output_folder,
    data_config,
)
from synprep.pipeline.record import (
    _finish,
    _input_digests,
    _manifest,
    _record_clean_drops,
    _signature,
    _split_signature,
    _write_drop_report,
    trees_for,
)
from synprep.pipeline.text import _apply_bpe, _clean, _codes, _raw_kept, _segment, _subword_model, _tokenize
from synprep.shards import Manifest
from synprep.signature import file_sha256
from synprep.textio import atomic_write, count_lines, display_name, iter_lines, refuse_pipes

log = logging.getLogger(__name__)

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
