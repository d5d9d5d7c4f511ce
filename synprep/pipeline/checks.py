"""Checks of a split's inputs and options before anything is written into the folder."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from synprep.errors import ConfigError, InputError
from synprep.escape import moses_entity
from synprep.langcode import close_code, iso_code, stanza_codes, wrong_code_message
from synprep.lock import wait_for_split
from synprep.parse.conllu_io import read_numbered
from synprep.pipeline.config import DataConfig
from synprep.pipeline.dictionary import vocab_wait_s
from synprep.pipeline.folder import (
    CODES_NAME,
    TRAIN,
    SplitInputs,
    check_output_folder,
    refuse_overwritten_same_language,
)
from synprep.text.langid import (
    base_code,
    check_language,
    check_language_code,
    known_languages,
    looks_lowercased,
    sample_lines,
    sample_numbered,
)
from synprep.text.tokenized import GLUED_SHARE_LIMIT, looks_untokenized
from synprep.textio import count_lines, display_name, iter_lines, refuse_pipes

log = logging.getLogger(__name__)

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


#: a line holding a subword-nmt continuation marker (``pyrami@@ de``)
_BPE_MARK = re.compile(r"\S@@(?: |$)")
#: BPE'd text: at least this many of the first :data:`BPE_SAMPLE` lines hold a marker
BPE_LINES_MIN = 3
BPE_SAMPLE = 200


def refuse_bpe(path: str | None) -> None:
    """Stop when ``synprep pipeline`` is given text already split into subword-nmt pieces (at least
    :data:`BPE_LINES_MIN` of its first :data:`BPE_SAMPLE` lines hold a ``@@`` marker): segmenting it again
    would learn pieces of pieces, and the parser would read ``pyrami@@``. A file that is not there (or a
    pipe) is left to the later checks.

    Raises:
        InputError: naming the first marked token and ``synprep annotate``, the command for BPE'd text.
    """
    if path is None or not os.path.isfile(path):
        return
    marked = []
    for lineno, text in enumerate(iter_lines(path), 1):
        if lineno > BPE_SAMPLE:
            break
        if m := _BPE_MARK.search(text):
            marked.append((lineno, text[:m.end()].split()[-1]))
    if len(marked) >= BPE_LINES_MIN:
        raise InputError(f"'{marked[0][1]}': {len(marked)} of the first {min(lineno, BPE_SAMPLE)} lines hold "
                         "subword-nmt's '@@' marker: this text is already split into subwords; use `synprep annotate "
                         "--src S --tgt T -s L1 -t L2 --out OUT` (with --parse-src CASED: the cased tokenized text "
                         "the pieces were made from)", display_name(path), marked[0][0])


def refuse_untokenized(sides: list[tuple[str | None, str, str]], *, insist: bool = False) -> None:
    """Stop when text given as Moses-tokenized (``--tokenized``) does not look it: more than
    :data:`synprep.text.tokenized.GLUED_SHARE_LIMIT` of its tokens end in ``, . : ; ? !`` glued to a
    letter (:func:`synprep.text.tokenized.looks_untokenized`). Kept as it is, ``Morgen,`` would be one
    word to the parser and BPE. A file that is not there (or a pipe) is left to the later checks.

    Args:
        sides: ``(file or None, language, option)`` per side (``option`` ``--src`` or ``--tgt``).
        insist: warn instead of refusing (``--allow-untokenized``).

    Raises:
        InputError: ``FILE:LINE: 'Morgen,': N % of the tokens ...`` naming the fix (exit status 2).
    """
    for path, lang, option in sides:
        if path is None or not os.path.isfile(path):
            continue
        counts = looks_untokenized(iter_lines(path), lang)
        if counts is None:
            continue
        what = (f"'{counts.example}': {100 * counts.share:.1f} % of the tokens of {option} end in punctuation glued "
                f"to a word (Moses-tokenized text: under {100 * GLUED_SHARE_LIMIT:g} %)")
        if insist:
            log.warning("warning: %s:%d: %s; used as it is (--allow-untokenized): the parser and the subwords see "
                        "those tokens whole", display_name(path), counts.first_line, what)
            continue
        raise InputError(f"{what}: this text is not tokenized; leave out --tokenized (--no-tokenized: synprep "
                         "tokenizes it), or give --allow-untokenized to use it as it is",
                         display_name(path), counts.first_line)


def _check_later_split(out: Path, split: str, codes: str | None, model: str | None, scheme: Any) -> None:
    """A split other than ``train`` applies the train split's codes (or subword model): they must be there,
    or given, before any work (else a test set would be cut by codes of its own). While a train run of
    the folder is starting or running it waits for them (:func:`synprep.lock.wait_for_split`).

    Raises:
        ConfigError: naming what is missing and the options that give it (no train run in ``out``).
    """
    if split == TRAIN:
        return
    fix = f"run the train split into {out} first, or give"
    if scheme.reads_raw:
        if model is None:
            target = out / scheme.model_name
            wait_for_split(out, TRAIN, target.exists, what=str(target), wait_s=vocab_wait_s(),
                           why=f"the {split} split applies its {scheme.name} model",
                           refusal=f"no {scheme.name} model in {out}: the {split} split applies the train split's; "
                                   f"{fix} {scheme.model_option} TRAIN_OUT/{scheme.model_name} --vocab TRAIN_OUT/dict.txt")
    elif codes is None:
        target = out / CODES_NAME
        wait_for_split(out, TRAIN, target.exists, what=str(target), wait_s=vocab_wait_s(),
                       why=f"the {split} split applies its BPE codes",
                       refusal=f"no BPE codes in {out}: the {split} split applies the train split's codes; "
                               f"{fix} --codes TRAIN_OUT/code --vocab TRAIN_OUT/dict.txt")


def check_language_codes(src_lang: str, tgt_lang: str) -> None:
    """``-s``/``-t`` must look like language codes (``de``, ``pt-br``), checked before anything is written.

    Raises:
        ConfigError: naming the option and the value.
    """
    for lang, option in ((src_lang, "-s/--source-lang"), (tgt_lang, "-t/--target-lang")):
        check_language_code(lang, option)
        wrong = wrong_code_message(lang)
        if wrong is not None and base_code(iso_code(lang) or lang) != base_code(lang):
            raise ConfigError(wrong)  # -s ger: the code, before the language check warns about 'ger'
        _refuse_unknown_code(lang, option)


def _refuse_unknown_code(lang: str, option: str) -> None:
    """A code that neither the language check (py3langid) nor stanza knows, one letter off one they know
    (``dee``): a typing mistake, answered with the code it likely meant.

    Raises:
        ConfigError: ``-s 'dee' is no language code py3langid or stanza knows: did you mean 'de'? ...``.
    """
    known = known_languages() | stanza_codes()
    if base_code(lang) in known:
        return
    guess = close_code(base_code(lang), known)
    if guess is not None:
        short = option.split("/")[0]
        raise ConfigError(f"{short} {lang!r} is no language code py3langid or stanza knows: did you mean "
                          f"{guess!r}? run with {short} {guess}")


def check_side_languages(sides: list[tuple[str, int, str, str]], src_lang: str, tgt_lang: str) -> None:
    """Each side's sample must be in its language, and a warning names the lines of a sizeable minority in
    the other side's language (:func:`synprep.text.langid.check_language`).

    Args:
        sides: ``(file, its line count, language, option)`` per side (``option`` ``-s`` or ``-t``).
        src_lang: the source language (``-s``).
        tgt_lang: the target language (``-t``).

    Raises:
        InputError: ``FILE: this text looks German ... not 'en' as -s says ...`` (exit status 2).
    """
    for path, n, lang, option in sides:
        numbered = sample_numbered(iter_lines(path), n)
        check_language([t for _, t in numbered], lang, option, display_name(path),
                       other=tgt_lang if option == "-s" else src_lang, numbers=[i for i, _ in numbered])


#: lines read for the lowercase test of annotate's source
LOWERCASE_SAMPLE = 1000


def warn_if_lowercased(src: str, n_lines: int) -> bool:
    """Warn when the source the parser is about to read looks lowercased (fairseq's prepared data is);
    returns whether it did."""
    if not looks_lowercased(sample_lines(iter_lines(src), n_lines, LOWERCASE_SAMPLE)):
        return False
    log.warning("warning: %s: the source looks lowercased (no capitalised word in a sample of %d lines): the "
                "parser will read lowercased words and parse them worse (German: UAS 71.0 -> 54.6, UPOS 87.1 -> "
                "68.5); give the cased tokenized source with --parse-src FILE (synprep iwslt14 writes "
                "tmp/SPLIT.cased.de)", display_name(src), min(n_lines, LOWERCASE_SAMPLE))
    return True


def check_pipeline_inputs(inputs: SplitInputs, out: Path, config: DataConfig, source: Any, scheme: Any) -> int:
    """Every input and option of a ``synprep pipeline`` split, before anything is written; returns the
    target's line count. The inputs first: a missing file or sides of different lengths fail before the rest.

    Args:
        inputs: the split's inputs.
        out: the output folder.
        config: the run's configuration (the languages, the text stage's section).
        source: where the parses come from (:class:`~synprep.parse.source.ParseSource`).
        scheme: the subword scheme's class.

    Raises:
        InputError: a missing or piped input, sides of different lengths, tokenized input without
            ``--tokenized``, a side in another language.
        ConfigError: options without effect, a later split without the train split's codes or subword model.
    """
    src, tgt, conllu, trees, codes, subword_model = (inputs.src, inputs.tgt, inputs.conllu, inputs.trees, inputs.codes,
                                                     inputs.subword_model)
    src_lang, tgt_lang, text = config.src_lang, config.tgt_lang, config.text
    refuse_pipes("pipeline", src, tgt, conllu, trees)  # a <(...) input reads once
    if not os.path.exists(tgt):
        raise InputError("no such file", tgt)
    check_language_codes(src_lang, tgt_lang)
    source.check_inputs(src, conllu)
    n_tgt = count_lines(tgt)
    if src is not None and (n_raw := count_lines(src)) != n_tgt:
        raise InputError(f"line counts differ: {src} has {n_raw} lines, {tgt} has {n_tgt}", tgt)
    if src_lang == tgt_lang:
        refuse_overwritten_same_language(out / "text", src_lang)
    if text.tokenized and text.fairseq_compat:
        raise ConfigError("--fairseq-compat has no effect with --tokenized (nothing is tokenized)")
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
    _check_later_split(out, inputs.split, codes, subword_model, scheme)
    if text.language_check:
        check_side_languages(([(src, n_tgt, src_lang, "-s")] if src else []) + [(tgt, n_tgt, tgt_lang, "-t")],
                             src_lang, tgt_lang)
        if src is None and conllu is not None:
            numbered = sample_numbered((" ".join(p.words) for p in read_numbered(conllu)), n_tgt)
            check_language([t for _, t in numbered], src_lang, "-s", display_name(conllu), other=tgt_lang,
                           numbers=[i for i, _ in numbered])
    return n_tgt


def check_annotate_inputs(inputs: SplitInputs, out: Path, config: DataConfig, source: Any) -> int:
    """Every input and option of an ``annotate`` split, before anything is written; returns the line count.

    Args:
        inputs: the split's inputs (``src``: the BPE'd source).
        out: the output folder.
        config: the run's configuration (the languages, the language check).
        source: where the parses come from (:class:`~synprep.parse.source.ParseSource`).

    Raises:
        InputError: a missing or piped input, line counts that differ (both named), a side in another
            language.
        ConfigError: ``--parse-src`` with imported parses.
    """
    assert inputs.src is not None
    src, tgt, conllu, parse_src = inputs.src, inputs.tgt, inputs.conllu, inputs.parse_src
    src_lang, tgt_lang = config.src_lang, config.tgt_lang
    refuse_pipes("annotate", src, tgt, conllu, inputs.trees)  # a <(...) input reads once
    source.check_inputs(src, conllu)  # before anything is written into OUT
    if not os.path.exists(tgt):
        raise InputError("no such file", tgt)
    check_language_codes(src_lang, tgt_lang)
    if parse_src is not None:
        if not source.runs_parser:
            raise ConfigError("--parse-src has no effect with --parser conllu (the parser reads the CoNLL-U words)")
        if not os.path.isfile(parse_src):
            raise InputError("no such file (--parse-src)", parse_src)
    check_output_folder(out)
    n_src, n_tgt = count_lines(src), count_lines(tgt)
    if n_src != n_tgt:
        raise InputError(f"line counts differ: {src} has {n_src} lines, {tgt} has {n_tgt}", tgt)
    if parse_src is not None and (n_cased := count_lines(parse_src)) != n_src:
        raise InputError(f"line counts differ: --parse-src has {n_cased} lines, --src {src} {n_src}", parse_src)
    if config.text.language_check:
        check_side_languages([(src, n_src, src_lang, "-s"), (tgt, n_tgt, tgt_lang, "-t")], src_lang, tgt_lang)
    if parse_src is None and source.runs_parser:
        warn_if_lowercased(src, n_src)
    return n_src
