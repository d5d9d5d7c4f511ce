"""``synprep annotate``: tokenized and BPE'd parallel text of one split → shards (:mod:`synprep.pipeline`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from synprep.annotate import DEFAULT_SHARD_SIZE, Parallel, ParseOptions, annotate_split, items_from_files
from synprep.config import DEFAULTS
from synprep.constants import VOCAB_NAME
from synprep.errors import ConfigError, InputError
from synprep.lock import folder_lock, hold_split, writer
from synprep.pipeline.checks import check_language_codes, check_side_languages, warn_if_lowercased
from synprep.pipeline.dictionary import _refuse_without_vocabulary, _vocab_split, split_vocab
from synprep.pipeline.folder import (
    TRAIN,
    TextOptions,
    _check_config,
    _check_inputs,
    _remove_stale_temps,
    check_output_folder,
    data_config,
)
from synprep.pipeline.record import (
    _finish,
    _input_digests,
    _manifest,
    _signature,
    _split_signature,
    trees_for,
)
from synprep.shards import Manifest
from synprep.textio import count_lines, display_name, iter_lines, refuse_pipes

log = logging.getLogger(__name__)

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
