"""``synprep pipeline`` (raw text → shards) and ``synprep annotate`` (BPE'd text → shards).

Thin wrappers over :mod:`synprep.pipeline`; the stages, the output folder and the resume rules are
described there and in the README.
"""

from __future__ import annotations

import contextlib
import functools
import logging

import click
from click.core import ParameterSource

from synprep.cli.common import (
    backend_options,
    jobs_options,
    parser_choice,
    parser_jobs,
    shard_size_option,
    spacy_options,
    split_name,
    stanza_options,
)
from synprep.cli.fields import with_field_options
from synprep.errors import ConfigError
from synprep.pipeline.config import DEFAULTS, DataConfig
from synprep.shards.config import ShardConfig
from synprep.subword.config import SubwordConfig
from synprep.text.config import TextConfig

log = logging.getLogger("synprep")


def parser_options(f):
    """Options that choose and configure the parser (shared by pipeline, annotate and shard)."""

    @parser_choice(extra=("conllu",))
    @click.option("--conllu", "conllu_path", default=None, metavar="FILE",
                  help="CoNLL-U parses of the source (--parser conllu): one sentence per line, or '# line = N'"
                       " groups as `synprep parse` writes them.")
    @click.option("--trees", "trees_path", default=None, metavar="FILE",
                  type=click.Path(exists=True, dir_okay=False),
                  help="Your own bracketed constituency trees of the source, one line of tree(s) per input line "
                       "(leaves = the Moses tokens): used for the syntactic distances instead of the parser's.")
    @shard_size_option
    @stanza_options
    @spacy_options
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapper


#: the options of the parser stage, which no parser reads when the parses are imported (nor any
#: backend's own options: :func:`synprep.cli.common.backend_params`)
RUN_PARSER_OPTIONS = ("device", "batch_size", "no_ssplit", "cache_path", "no_cache")


def refuse_unused_parser_options(parser_name: str, codes: str | None = None) -> None:
    """Options that have no effect with the chosen parser (or with --codes) are errors (README)."""
    from synprep.cli.common import backend_params, refuse_other_backends_options, refuse_unused
    from synprep.parse.registry import parse_source_class

    if not parse_source_class(parser_name).runs_parser:
        refuse_unused([*backend_params(), *RUN_PARSER_OPTIONS, "trees_path"],
                      f"with --parser {parser_name} (the parses are imported, no parser runs)")
    else:
        refuse_unused(["conllu_path"], f"with --parser {parser_name} (--conllu is read with --parser conllu only)")
        refuse_other_backends_options(parser_name)
    refuse_unused(["cache_path"] if _no_cache() else [], "with --no-cache")
    if codes is not None:
        refuse_unused(["merges"], "with --codes (no BPE codes are learned)")


def _no_cache() -> bool:
    return bool(click.get_current_context().params.get("no_cache"))


def resolve_config(mode: str, out: str, config_path: str | None, params: dict):
    """The run's :class:`~synprep.pipeline.config.DataConfig`: ``--config FILE``, else the folder's
    ``OUT/pipeline.json`` (a later split or a resume inherits it), else the defaults; then every
    option given on the command line on top (a value that differs from the folder's is refused later,
    naming the field).

    Raises:
        ConfigError: no source/target language anywhere; a bad configuration file.
    """
    from pathlib import Path

    from synprep.pipeline.config import DataConfig, option_fields
    from synprep.pipeline.inherit import check_remake, inherited_line, refuse_left_out

    ctx = click.get_current_context()
    folder = Path(out) / "pipeline.json"

    def given(param: str) -> bool:
        return param in params and ctx.get_parameter_source(param) not in (None, ParameterSource.DEFAULT)

    if params.get("remake_split"):
        check_remake(Path(out), params["split"])
    if config_path is not None:
        base = DataConfig.load(config_path)
    elif folder.is_file() and not params.get("remake_split"):
        base = DataConfig.load(folder)
        refuse_left_out(ctx.command, Path(out), params["split"], base, given)
        if line := inherited_line(ctx.command, base, folder, given):
            click.echo(f"synprep: {line}", err=True)
    else:
        base = DEFAULTS

    changes = {field: not params[param] if negated else params[param]
               for param, field, negated in option_fields() if given(param)}
    parser = str(changes.get("parser", base.parse.parser))
    # the backend's own options that change its parses (a plugin's Options without a ParserSpec field): the
    # folder's (when the parser is the folder's), those given on top
    from synprep.parse.base import plugin_options

    plugin = dict(base.parse.parser_options) if parser == base.parse.parser else {}
    plugin.update({o.param: params[o.param] for o in plugin_options()
                   if o.backend == parser and o.spec is None and given(o.param)})
    cfg = base.replace(mode=mode, parser_options=tuple(sorted(plugin.items())), **changes)
    for field, option in (("src_lang", "-s/--source-lang"), ("tgt_lang", "-t/--target-lang")):
        if not getattr(cfg, field):
            raise ConfigError(f"{option} is required (or --config FILE that names it)")
    return cfg


def runtime_options(cfg, cache_path, no_cache, backend_opts, jobs, backend, scheduler):
    """Where the work runs (:class:`synprep.parse.options.Runtime`): the workers, the parse cache, and the
    parser's runtime options among ``backend_opts`` (:func:`synprep.cli.common.backend_options`; the others
    are folder settings, read from the configuration)."""
    import dataclasses

    from synprep.parse.base import ParserSpec
    from synprep.parse.cache import default_cache_path
    from synprep.parse.options import Parallel, Runtime

    runtime = {f.name for f in dataclasses.fields(ParserSpec) if f.metadata.get("runtime")}
    return Runtime(par=Parallel(jobs=parser_jobs(cfg.parse.device, jobs, backend, scheduler), backend=backend, scheduler=scheduler),
                   cache=None if no_cache else str(cache_path or default_cache_path()),
                   parser={k: v for k, v in backend_opts.items() if k in runtime})


vocab_split_option = with_field_options(ShardConfig, only=("vocab_split",), callbacks={"vocab_split": split_name})


language_check_option = with_field_options(TextConfig, only=("language_check",))

remake_option = click.option(
    "--remake-split", "remake_split", is_flag=True,
    help="Make the split again with this command's settings, replacing what the folder holds of it (its shards, "
         "text files, configuration, codes and vocabulary; named in the log): for the folder's only split.")

config_option = click.option(
    "--config", "config_path", default=None, metavar="FILE",
    help="Start from this data configuration (a folder's pipeline.json, or JSON with some of its fields); "
         "options given too override it. Default: OUT/pipeline.json when OUT exists.")


@contextlib.contextmanager
def _command_run():
    """The body of ``pipeline`` and ``annotate``: their timeline started (:mod:`synprep.timeline`: ``command``
    marks the interpreter, the imports and the options) and their parse throughput counted from zero, and at their end, also when it raises, their worker
    pools killed at once (the parse's, warmed early, and the text stage's: :func:`~synprep.parse.warming.
    release_workers`), not each waited for while it unloads its models; ``workers released`` marked after."""
    from synprep import timeline
    from synprep.parse.blocks import THROUGHPUT
    from synprep.parse.warming import release_workers

    timeline.reset()
    THROUGHPUT.reset()  # the closing parse line counts this command's blocks (the Python API adds up)
    timeline.mark("command")
    try:
        yield
    finally:
        release_workers()
    timeline.mark("workers released")


def _part_value(ctx, param, value):
    """``--part I/N`` as a :class:`synprep.pipeline.parts.Part` (a bad value: the usage, exit status 2)."""
    if value is None:
        return None
    from synprep.pipeline.parts import Part

    try:
        return Part.parse(value)
    except ConfigError as e:
        raise click.BadParameter(str(e).removeprefix("--part ")) from None


def parts_options(f):
    """``--part I/N``, ``--prepare-only`` and ``--merge-parts``: one split made by N array tasks (docs/cluster.md)."""

    @click.option("--part", "part", default=None, metavar="I/N", callback=_part_value,
                  help="Make only part I of N of the split (its shards k with k mod N = I-1), e.g. the I-th task of "
                       "an array job over a shared OUT; after --prepare-only, before --merge-parts (docs/cluster.md).")
    @click.option("--prepare-only", "prepare_only", is_flag=True,
                  help="Run only the steps that need the whole split (text, subwords, vocabulary), once, before "
                       "the parts.")
    @click.option("--merge-parts", "merge_parts", is_flag=True,
                  help="Once every part has finished: add their shards to manifest.json and check the split "
                       "(a part that has not finished is named, with the command that runs it).")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        chosen = [o for o, k in (("--part", "part"), ("--prepare-only", "prepare_only"),
                                 ("--merge-parts", "merge_parts")) if kwargs.get(k)]
        if len(chosen) > 1:
            raise click.UsageError(f"{' and '.join(chosen)} exclude each other: prepare, run the parts, then merge")
        return f(*args, **kwargs)

    return wrapper


def _report_parts(manifest, split: str, part, prepare_only: bool, shard_size: int) -> None:
    """The one line of ``--prepare-only`` (the shards the parts make) or of a ``--part`` (its shards)."""
    import sys

    from synprep.pipeline.parts import command_text, with_part

    entry = manifest.split(split)
    if prepare_only:
        left = entry.input_lines - sum(entry.dropped.values())
        click.echo(f"synprep: {split}: prepared: {entry.input_lines} input lines, {left} pairs to parse in "
                   f"{-(-left // shard_size)} shard(s) of {shard_size}; run it with --part I/N for I = 1..N "
                   "(at once, anywhere OUT is shared), then with --merge-parts", err=True)
        return
    mine = [s for s in entry.shards if part.owns(int(s.file.split(".")[-2]))]
    click.echo(f"synprep: {split}: part {part}: {len(mine)} shard(s), {sum(s.pairs for s in mine)} pairs; once "
               f"every part has finished: `{command_text(with_part(sys.argv, None))} --merge-parts`", err=True)


def _report(manifest, split: str) -> None:
    from synprep.pipeline import split_summary
    from synprep.report.flags import drop_warning

    entry = manifest.split(split)
    if warning := drop_warning(split, entry.dropped, entry.input_lines, manifest.config):
        click.echo(f"synprep: {warning}", err=True)
    # the one summary line of the split (synprep check passed, or run_* had raised) and the signature
    click.echo(f"synprep: {split_summary(manifest, split)}; check OK", err=True)
    from synprep.parse.run import THROUGHPUT  # the parse stage's sentences/s, words/s and device

    if THROUGHPUT.line():
        click.echo(f"synprep: {THROUGHPUT.line()}", err=True)
    from synprep import timeline

    if timeline.line():  # where the command's wall time went, before the signature (the last line)
        click.echo(f"synprep: {timeline.line()}", err=True)
    click.echo(manifest.split(split).signature or manifest.signature, err=True)  # the split's (its input digests)


@click.command("pipeline")
@click.option("--src", "src", default=None, metavar="FILE", help="Raw source text of the split (one pair per line).")
@click.option("--tgt", "tgt", required=True, metavar="FILE", help="Raw target text of the split.")
@with_field_options(DataConfig, only=("src_lang", "tgt_lang"))
@click.option("--out", required=True, metavar="DIR", help="Output folder (shared by every split of a corpus).")
@click.option("--split", callback=split_name, default="train", show_default=True,
              help="Split name; train learns the BPE codes and the vocabulary, later splits reuse them.")
@click.option("--codes", default=None, metavar="FILE", help="Apply these BPE codes instead of learning them.")
@with_field_options(SubwordConfig, only=("merges",))
@click.option("--vocab", default=None, metavar="FILE", help="Use this fairseq dict instead of building one.")
@vocab_split_option
@with_field_options(TextConfig, only=("tokenized",))
@click.option("--allow-untokenized", "allow_untokenized", is_flag=True,
              help="With --tokenized: use text that does not look Moses-tokenized (punctuation glued to words) "
                   "as it is, with a warning, instead of refusing it.")
@with_field_options(SubwordConfig, only=("scheme",))
@click.option("--spm-model", default=None, metavar="FILE",
              help="--subword spm: apply this SentencePiece model instead of learning one on the train split.")
@click.option("--hf-tokenizer", default=None, metavar="FILE_OR_DIR",
              help="--subword hf: a tokenizers tokenizer.json, or a local directory holding one.")
@with_field_options(SubwordConfig, only=("vocab_size",))
@with_field_options(TextConfig, only=("lowercase", "fairseq_compat", "tokenizer"))
@click.option("--clean/--no-clean", "clean", default=None,
              help="Clean this split (default: the train split only; others lose only empty pairs).")
@with_field_options(TextConfig, only=("ratio", "min_len", "max_len"))
@language_check_option
@config_option
@remake_option
@parts_options
@parser_options
@jobs_options
@backend_options
def pipeline_cmd(src, tgt, out, split, codes, vocab, allow_untokenized, spm_model, hf_tokenizer, clean, config_path,
                 remake_split, part, prepare_only, merge_parts, conllu_path, trees_path, cache_path, no_cache,
                 backend_opts, jobs, backend, scheduler, **settings):
    """Raw parallel text → tokenize → clean → BPE → parse → features → shards → check.

    Run once per split into the same --out (train first: it learns the BPE codes and the
    vocabulary). Running the same command again resumes: finished steps and shards are skipped.
    """
    # settings: the DataConfig's options (-s/-t, --parser and the sections' generated options), read whole by
    # resolve_config from the command's parameters, never one by one here
    from synprep.pipeline import SplitInputs, run_pipeline

    with _command_run():
        cfg = resolve_config("pipeline", out, config_path, click.get_current_context().params)
        if clean is False:  # the bounds of a cleaning that does not run
            from synprep.cli.common import refuse_unused

            refuse_unused(["ratio", "min_len", "max_len"], "with --no-clean (the split is not cleaned)")
        refuse_unused_parser_options(cfg.parse.parser, codes)
        _check_tokenized(cfg, src, tgt, allow_untokenized)
        model = _subword_model_option(cfg.subword.scheme, codes=codes, merges=cfg.subword.merges,
                                      spm_model=spm_model, hf_tokenizer=hf_tokenizer, vocab_size=cfg.subword.vocab_size)
        runtime = runtime_options(cfg, cache_path, no_cache, backend_opts, jobs, backend, scheduler)
        if _before_run(remake_split, out, split, part):
            return
        inputs = SplitInputs(split=split, src=src, tgt=tgt, clean=clean, codes=codes, vocab=vocab, conllu=conllu_path,
                             trees=trees_path, subword_model=model)
        manifest = run_pipeline(inputs, out, cfg, runtime=runtime, part=part, prepare_only=prepare_only,
                                merge_parts=merge_parts)
    if part is not None or prepare_only:
        _report_parts(manifest, split, part, prepare_only, cfg.shards.shard_size)
        return
    _report(manifest, split)


def _before_run(remake: bool, out: str, split: str, part) -> bool:
    """``--remake-split``: what the folder holds of the split is removed before the run makes it again. A part
    beside the records of another N is refused; a part of a merged split has nothing to do (said; True)."""
    from pathlib import Path

    if remake:
        from synprep.pipeline.inherit import remake_split

        remake_split(Path(out), split)
    if part is not None:
        from synprep.pipeline.parts import already_merged, refuse_other_count

        if already_merged(Path(out), split):
            click.echo(f"synprep: {split}: part {part}: the split is merged already (its parts finished and "
                       f"--merge-parts ran): nothing to do; `synprep check {out}` verifies it", err=True)
            return True
        refuse_other_count(Path(out), split, part)
    return False


def _check_tokenized(cfg, src: str | None, tgt: str, insist: bool) -> None:
    """Text already split into subwords is for ``synprep annotate``
    (:func:`synprep.pipeline.checks.refuse_bpe`); text taken as Moses-tokenized must look it (:func:`synprep.pipeline.checks.refuse_untokenized`);
    ``--allow-untokenized`` without ``--tokenized`` has no effect (an error)."""
    from synprep.cli.common import refuse_unused
    from synprep.pipeline.checks import refuse_bpe, refuse_untokenized

    for path in (src, tgt):
        refuse_bpe(path)
    if not cfg.text.tokenized:
        refuse_unused(["allow_untokenized"], "without --tokenized (synprep tokenizes the text)")
        return
    refuse_untokenized([(src, cfg.src_lang, "--src"), (tgt, cfg.tgt_lang, "--tgt")], insist=insist)


def _subword_model_option(subword: str, **given) -> str | None:
    """The model option of the chosen scheme; an option given for another scheme is an error.

    Raises:
        ConfigError: e.g. ``--spm-model`` with ``--subword bpe``, ``--merges`` with ``--subword spm``.
    """
    from synprep.subword import scheme_class

    scheme = scheme_class(subword)
    ctx = click.get_current_context()
    for name in given:
        option = "--" + name.replace("_", "-")
        explicit = ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)
        if explicit and option not in (scheme.model_option, scheme.size_option):
            raise ConfigError(f"{option} has no effect with --subword {subword} (it takes {scheme.model_option}"
                              + (f" or {scheme.size_option}" if scheme.size_option else "") + ")")
    model = given.get(scheme.model_option[2:].replace("-", "_"))
    if model is not None and scheme.size_option is not None \
            and ctx.get_parameter_source(scheme.size_option[2:].replace("-", "_")) != ParameterSource.DEFAULT:
        raise ConfigError(f"{scheme.size_option} has no effect with {scheme.model_option}: the model is given")
    return model if scheme.reads_raw else None


@click.command("annotate")
@click.option("--src", "src", required=True, metavar="FILE", help="Tokenized, BPE'd source text (@@ pieces).")
@click.option("--tgt", "tgt", required=True, metavar="FILE", help="Tokenized, BPE'd target text.")
@with_field_options(DataConfig, only=("src_lang", "tgt_lang"))
@click.option("--out", required=True, metavar="DIR", help="Output folder.")
@click.option("--split", callback=split_name, default="train", show_default=True, help="Split name.")
@click.option("--vocab", default=None, metavar="FILE",
              help="fairseq dict to use (default: OUT/dict.txt, built from the train split; another split "
                   "waits for it while the train split runs).")
@vocab_split_option
@click.option("--parse-src", "parse_src", default=None, metavar="FILE",
              help="The cased, Moses-tokenized source the pieces of --src were made from (fairseq lowercases "
                   "before BPE): the parser reads its words, checked line by line to be the pieces' words up to "
                   "case. synprep iwslt14 writes it as OUT/tmp/SPLIT.cased.de.")
@language_check_option
@config_option
@remake_option
@parts_options
@parser_options
@jobs_options
@backend_options
def annotate_cmd(src, tgt, out, split, vocab, parse_src, config_path, remake_split, part, prepare_only, merge_parts,
                 conllu_path, trees_path, cache_path, no_cache, backend_opts, jobs, backend, scheduler, **settings):
    """Already tokenized and BPE'd parallel text (e.g. fairseq's prepared data) → shards → check.

    The source words are rebuilt from the pieces (@@ removed, Moses escapes undone) and parsed, or
    taken from --parse-src (the cased text: lowercased words parse much worse, and lowercased
    input without it gets a warning); with --parser conllu the parses come from --conllu and must
    match those words.
    """
    # settings: the DataConfig's options (-s/-t, --parser and the sections' generated options), read whole by
    # resolve_config from the command's parameters, never one by one here
    from synprep.pipeline import SplitInputs, run_annotate

    with _command_run():
        cfg = resolve_config("annotate", out, config_path, click.get_current_context().params)
        refuse_unused_parser_options(cfg.parse.parser)
        runtime = runtime_options(cfg, cache_path, no_cache, backend_opts, jobs, backend, scheduler)
        if _before_run(remake_split, out, split, part):
            return
        inputs = SplitInputs(split=split, src=src, tgt=tgt, vocab=vocab, conllu=conllu_path, trees=trees_path,
                             parse_src=parse_src)
        manifest = run_annotate(inputs, out, cfg, runtime=runtime, part=part, prepare_only=prepare_only,
                                merge_parts=merge_parts)
    if part is not None or prepare_only:
        _report_parts(manifest, split, part, prepare_only, cfg.shards.shard_size)
        return
    _report(manifest, split)
