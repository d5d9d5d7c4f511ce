"""``synprep pipeline`` (raw text → shards) and ``synprep annotate`` (BPE'd text → shards).

Thin wrappers over :mod:`synprep.pipeline`; the stages, the output folder and the resume rules are
described there and in the README.
"""

from __future__ import annotations

import functools
import logging

import click

from synprep.cli.common import jobs_options, parser_jobs, shard_size_option, stanza_options

log = logging.getLogger("synprep")


def parser_options(f):
    """Options that choose and configure the parser (shared by pipeline, annotate and shard)."""

    @click.option("--parser", "parser_name", type=click.Choice(["stanza", "corenlp", "conllu"]), default="stanza",
                  show_default=True, help="stanza, CoreNLP (CORENLP_HOME), or parses imported from --conllu.")
    @click.option("--conllu", "conllu_path", default=None, metavar="FILE",
                  help="CoNLL-U parses of the source (--parser conllu): one sentence per line, or '# line = N'"
                       " groups as `synprep parse` writes them.")
    @shard_size_option
    @stanza_options
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


#: the options of the parser stage, which no parser reads when the parses are imported
RUN_PARSER_OPTIONS = ("stanza_dir", "stanza_package", "device", "batch_size", "no_ssplit", "max_words", "cache_path",
                      "no_cache")


def refuse_unused_parser_options(parser_name: str, codes: str | None = None) -> None:
    """Options that have no effect with the chosen parser (or with --codes) are errors (README)."""
    from synprep.cli.common import refuse_unused

    if parser_name == "conllu":
        refuse_unused(RUN_PARSER_OPTIONS, "with --parser conllu (the parses are imported, no parser runs)")
    else:
        refuse_unused(["conllu_path"], f"with --parser {parser_name} (--conllu is read with --parser conllu only)")
        if parser_name == "corenlp":
            refuse_unused(["stanza_dir", "stanza_package"], "with --parser corenlp")
    refuse_unused(["cache_path"] if _no_cache() else [], "with --no-cache")
    if codes is not None:
        refuse_unused(["merges"], "with --codes (no BPE codes are learned)")


def _no_cache() -> bool:
    return bool(click.get_current_context().params.get("no_cache"))


def _parse_options(src_lang: str, parser_name: str, stanza_dir, stanza_package, device, batch_size, no_ssplit,
                   max_words, ldd_threshold, cache_path, no_cache):
    from synprep.annotate import ParseOptions
    from synprep.parse.base import ParserSpec
    from synprep.parse.cache import default_cache_path

    spec = None
    if parser_name != "conllu":
        spec = ParserSpec(name=parser_name, lang=src_lang, dir=stanza_dir, package=stanza_package, device=device,
                          max_words=max_words, ldd_threshold=ldd_threshold)
    cache = None if no_cache else str(cache_path or default_cache_path())
    return ParseOptions(parser=parser_name, spec=spec, ssplit=not no_ssplit, batch_size=batch_size, cache=cache)


def _report(manifest, split: str) -> None:
    from synprep.pipeline import split_summary

    click.echo(split_summary(manifest, split), err=True)
    click.echo(manifest.signature, err=True)


@click.command("pipeline")
@click.option("--src", "src", default=None, metavar="FILE", help="Raw source text of the split (one pair per line).")
@click.option("--tgt", "tgt", required=True, metavar="FILE", help="Raw target text of the split.")
@click.option("-s", "--source-lang", "src_lang", required=True, metavar="LANG", help="Source language (parsed).")
@click.option("-t", "--target-lang", "tgt_lang", required=True, metavar="LANG", help="Target language.")
@click.option("--out", required=True, metavar="DIR", help="Output folder (shared by every split of a corpus).")
@click.option("--split", default="train", show_default=True,
              help="Split name; train learns the BPE codes and the vocabulary, later splits reuse them.")
@click.option("--codes", default=None, metavar="FILE", help="Apply these BPE codes instead of learning them.")
@click.option("--merges", type=click.IntRange(min=1), default=10000, show_default=True,
              help="BPE merge operations when learning codes (joint, on the train split).")
@click.option("--vocab", default=None, metavar="FILE", help="Use this fairseq dict instead of building one.")
@click.option("--tokenized", is_flag=True,
              help="The input is already Moses-tokenized and escaped (&quot; &apos; ...): use it as it is "
                   "(the parser sees the unescaped words).")
@click.option("--lowercase", is_flag=True, help="Lowercase after tokenizing (the parser still sees cased words).")
@click.option("--fairseq-compat", is_flag=True, help="Tokenize like fairseq's old tokenizer.perl (final period).")
@click.option("--clean/--no-clean", "clean", default=None,
              help="Clean this split (default: the train split only; others lose only empty pairs).")
@click.option("--ratio", type=float, default=1.5, show_default=True, help="clean: max length ratio.")
@click.option("--min-len", type=int, default=1, show_default=True, help="clean: min tokens per side.")
@click.option("--max-len", type=int, default=175, show_default=True, help="clean: max tokens per side.")
@parser_options
@jobs_options
def pipeline_cmd(src, tgt, src_lang, tgt_lang, out, split, codes, merges, vocab, tokenized, lowercase, fairseq_compat,
                 clean,
                 ratio, min_len, max_len, parser_name, conllu_path, stanza_dir, stanza_package, device, batch_size,
                 no_ssplit, max_words, ldd_threshold, cache_path, no_cache, shard_size, jobs, backend, scheduler):
    """Raw parallel text → tokenize → clean → BPE → parse → features → shards → check.

    Run once per split into the same --out (train first: it learns the BPE codes and the
    vocabulary). Running the same command again resumes: finished steps and shards are skipped.
    """
    from synprep.annotate import Parallel
    from synprep.pipeline import TextOptions, run_pipeline

    refuse_unused_parser_options(parser_name, codes)
    opts = _parse_options(src_lang, parser_name, stanza_dir, stanza_package, device, batch_size, no_ssplit,
                          max_words, ldd_threshold, cache_path, no_cache)
    text = TextOptions(tokenized=tokenized, lowercase=lowercase, fairseq_compat=fairseq_compat, clean=clean, ratio=ratio,
                       min_len=min_len, max_len=max_len, merges=merges)
    par = Parallel(jobs=parser_jobs(device, jobs), backend=backend, scheduler=scheduler)
    manifest = run_pipeline(src, tgt, out, src_lang=src_lang, tgt_lang=tgt_lang, split=split, text=text,
                            parse=opts, par=par, codes=codes, vocab=vocab, conllu=conllu_path,
                            ldd_threshold=ldd_threshold, shard_size=shard_size)
    _report(manifest, split)


@click.command("annotate")
@click.option("--src", "src", required=True, metavar="FILE", help="Tokenized, BPE'd source text (@@ pieces).")
@click.option("--tgt", "tgt", required=True, metavar="FILE", help="Tokenized, BPE'd target text.")
@click.option("-s", "--source-lang", "src_lang", required=True, metavar="LANG", help="Source language (parsed).")
@click.option("-t", "--target-lang", "tgt_lang", required=True, metavar="LANG", help="Target language.")
@click.option("--out", required=True, metavar="DIR", help="Output folder.")
@click.option("--split", default="train", show_default=True, help="Split name.")
@click.option("--vocab", default=None, metavar="FILE",
              help="fairseq dict to use (default: OUT/dict.txt, else built from this split).")
@parser_options
@jobs_options
def annotate_cmd(src, tgt, src_lang, tgt_lang, out, split, vocab, parser_name, conllu_path, stanza_dir,
                 stanza_package, device, batch_size, no_ssplit, max_words, ldd_threshold, cache_path, no_cache,
                 shard_size, jobs, backend, scheduler):
    """Already tokenized and BPE'd parallel text (e.g. fairseq's prepared data) → shards → check.

    The source words are rebuilt from the pieces (@@ removed, Moses escapes undone) and parsed;
    with --parser conllu the parses come from --conllu and must match those words.
    """
    from synprep.annotate import Parallel
    from synprep.pipeline import run_annotate

    refuse_unused_parser_options(parser_name)
    opts = _parse_options(src_lang, parser_name, stanza_dir, stanza_package, device, batch_size, no_ssplit,
                          max_words, ldd_threshold, cache_path, no_cache)
    par = Parallel(jobs=parser_jobs(device, jobs), backend=backend, scheduler=scheduler)
    manifest = run_annotate(src, tgt, out, src_lang=src_lang, tgt_lang=tgt_lang, split=split, parse=opts, par=par,
                            vocab=vocab, conllu=conllu_path, ldd_threshold=ldd_threshold, shard_size=shard_size)
    _report(manifest, split)
