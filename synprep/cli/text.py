"""``synprep tokenize``, ``synprep clean``, ``synprep bpe learn|apply``: thin wrappers over synprep.text.

Line tools: stdin → stdout by default (files by option), one output line per input line for
``tokenize`` and ``bpe apply``, logs and the signature line on stderr. Output files are written
atomically: on any error nothing is left under the output name.
"""

from __future__ import annotations

import contextlib
import logging
import os

import click

from synprep.cli.common import (
    backend_options,
    backend_params,
    input_option,
    jobs_options,
    output_option,
    refuse_unused,
    spacy_options,
    tokenizer_option,
)
from synprep.cli.fields import with_field_options
from synprep.errors import ConfigError, InputError
from synprep.signature import signature
from synprep.subword.config import SubwordConfig
from synprep.text.config import TextConfig
from synprep.textio import display_name, iter_line_pairs, iter_lines, open_output, write_lines

log = logging.getLogger("synprep")


def _warn_if_empty(n: int, path: str) -> None:
    if n == 0:
        log.warning("warning: %s is empty: wrote an empty output", display_name(path))


def check_outputs(*paths: str | None) -> None:
    """Refuse an output path that is a directory before any work starts (ConfigError)."""
    for path in paths:
        if path and path != "-" and os.path.isdir(path):
            raise ConfigError(f"output {path} is a directory; give a file name")


def _sig(**fields: object) -> None:
    click.echo(signature(**fields), err=True)


@click.command("tokenize")
@click.option("-l", "--lang", required=True, metavar="LANG",
              help="Language code (de, en, …): nonbreaking prefixes.")
@with_field_options(TextConfig, only=("lowercase",))
@click.option("--no-escape", is_flag=True, help="Do not Moses-escape & | < > ' \" [ ].")
@with_field_options(TextConfig, only=("fairseq_compat",))
@tokenizer_option
@click.option("--parser", "parser_name", default=None, metavar="NAME",
              help="With --tokenizer parser: the parser whose tokenizer makes the words (spacy).")
@spacy_options
@input_option()
@output_option()
@jobs_options
@backend_options
def tokenize_cmd(lang: str, lowercase: bool, no_escape: bool, fairseq_compat: bool, tokenizer: str,
                 parser_name: str | None, backend_opts: dict, input_path: str,
                 output_path: str, jobs: int, backend: str, scheduler: str | None) -> None:
    """Moses-tokenize text (sacremoses), one line out per line in.

    With --tokenizer parser the words come from the parser's own tokenizer instead (Japanese:
    --parser spacy --spacy-model ja_ginza, i.e. Sudachi), Moses-escaped like sacremoses' output.
    """
    check_outputs(output_path)
    if tokenizer == "parser":
        from synprep.parse.base import ParserSpec
        from synprep.parse.run import parser_identity
        from synprep.parse.tokenize import parser_tokenize_stream, parser_tokenizer_signature

        if parser_name is None:
            raise ConfigError("--tokenizer parser needs --parser (e.g. --parser spacy --spacy-model ja_ginza)")
        if fairseq_compat:
            raise ConfigError("--fairseq-compat is a Moses rule: it has no effect with --tokenizer parser")
        spec = ParserSpec(name=parser_name, lang=lang, **backend_opts)
        identity = parser_identity(spec)
        lines = parser_tokenize_stream(iter_lines(input_path), spec, lowercase=lowercase, escape=not no_escape,
                                       jobs=jobs, backend=backend, scheduler=scheduler)
        sig = parser_tokenizer_signature(identity, lowercase=lowercase, escape=not no_escape)
    else:
        from synprep.text.tokenize import MosesRules, tokenize_stream, tokenizer_signature

        refuse_unused(["parser_name", *backend_params()], "with --tokenizer moses")
        rules = MosesRules(lowercase=lowercase, escape=not no_escape, fairseq_compat=fairseq_compat)
        lines = tokenize_stream(iter_lines(input_path), lang, rules, jobs=jobs, backend=backend, scheduler=scheduler)
        sig = tokenizer_signature(lang, lowercase=lowercase, escape=not no_escape, fairseq_compat=fairseq_compat)
    with open_output(output_path) as out:  # one line out per line in: the count is the input's
        n = write_lines(out, lines)
    _warn_if_empty(n, input_path)
    log.info("tokenize: %d lines", n)
    _sig(**sig)


def _lang_suffix(path: str) -> str:
    base = os.path.basename(path)
    return base.rsplit(".", 1)[1] if "." in base.strip(".") else ""


@click.command("clean")
@click.argument("src", metavar="SRC")
@click.argument("tgt", metavar="TGT")
@with_field_options(TextConfig, only=("ratio", "min_len", "max_len"))
@click.option("--max-word-length", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Longest token in characters.")
@click.option("-o", "--out-prefix", default=None, metavar="PREFIX",
              help="Write PREFIX.L1 and PREFIX.L2, L1/L2 being the suffixes of SRC and TGT "
                   "(like clean-corpus-n.perl's CLEAN argument).")
@click.option("--out-src", default=None, metavar="FILE", help="Kept source lines.")
@click.option("--out-tgt", default=None, metavar="FILE", help="Kept target lines.")
@click.option("--report", default=None, metavar="FILE",
              help="TSV of every dropped pair: line, reason, src_tokens, tgt_tokens (with a header line).")
def clean_cmd(src: str, tgt: str, ratio: float, min_len: int, max_len: int, max_word_length: int,
              out_prefix: str | None, out_src: str | None, out_tgt: str | None, report: str | None) -> None:
    """Drop sentence pairs like Moses' clean-corpus-n.perl; counts per reason on stderr.

    Reasons: empty, too_long, too_short, ratio, word_too_long (docs/text.md).
    """
    from synprep.text.clean import CleanStats, clean_pairs, clean_signature, report_header, report_row

    if out_prefix is not None:
        if out_src or out_tgt:
            raise ConfigError("give either -o/--out-prefix or --out-src and --out-tgt, not both")
        l1, l2 = _lang_suffix(src), _lang_suffix(tgt)
        if not l1 or not l2 or l1 == l2:
            raise ConfigError(f"cannot take two distinct language suffixes from {src} and {tgt}: "
                              "use --out-src and --out-tgt")
        out_src, out_tgt = f"{out_prefix}.{l1}", f"{out_prefix}.{l2}"
    if not out_src or not out_tgt:
        raise ConfigError("say where the kept pairs go: -o PREFIX, or --out-src FILE --out-tgt FILE")
    check_outputs(out_src, out_tgt, report)
    outs = [os.path.abspath(p) for p in (out_src, out_tgt, report) if p and p != "-"]
    if len(set(outs)) < len(outs) or set(outs) & {os.path.abspath(src), os.path.abspath(tgt)}:
        raise ConfigError("the outputs must differ from each other and from the inputs")
    for path in (src, tgt):
        if path != "-" and (not os.path.exists(path) or os.path.isdir(path)):  # a pipe <(...) is read once: fine
            raise InputError("no such file", display_name(path))

    stats = CleanStats()
    with contextlib.ExitStack() as stack:
        fs = stack.enter_context(open_output(out_src))
        ft = stack.enter_context(open_output(out_tgt))
        fr = stack.enter_context(open_output(report)) if report else None
        if fr:
            fr.write(report_header() + "\n")
        for r in clean_pairs(iter_line_pairs(src, tgt), ratio=ratio, min_len=min_len, max_len=max_len,
                             max_word_length=max_word_length, names=(display_name(src), display_name(tgt))):
            stats.add(r)
            if r.kept:
                fs.write(r.src + "\n")
                ft.write(r.tgt + "\n")
            elif fr:
                fr.write(report_row(r) + "\n")
        if stats.input == 0:
            raise InputError("empty input: no sentence pairs to clean", display_name(src))
    log.info("clean: %s", stats.summary())
    _sig(clean=clean_signature(ratio, min_len, max_len))


@click.group("bpe")
def bpe_group() -> None:
    """Joint BPE with subword-nmt: learn codes, apply them."""


@bpe_group.command("learn")
@click.argument("files", nargs=-1, required=True, metavar="FILES...")
@with_field_options(SubwordConfig, only=("merges",), aliases={"merges": ("-s", "--symbols")})  # subword-nmt's names too
@click.option("--min-frequency", type=click.IntRange(min=1), default=2, show_default=True,
              help="Stop when no pair occurs this often.")
@output_option(help="Codes file (default: stdout).")
def bpe_learn_cmd(files: tuple[str, ...], merges: int, min_frequency: int, output_path: str) -> None:
    """Learn joint BPE codes on the concatenation of FILES (like cat FILES | subword-nmt learn-bpe -s N)."""
    from synprep.text.bpe import bpe_signature, learn_bpe

    check_outputs(output_path)
    if output_path == "-":
        with open_output(None) as out:
            n = learn_bpe(list(files), merges, out, min_frequency=min_frequency)
    else:
        n = learn_bpe(list(files), merges, output_path, min_frequency=min_frequency)
    if n < merges:
        log.warning("warning: only %d of %d merges learned (no pair occurs %d times any more)",
                    n, merges, min_frequency)
    log.info("bpe learn: %d merges -> %s", n, "<stdout>" if output_path == "-" else output_path)
    _sig(**(bpe_signature(output_path) if output_path != "-" else {"bpe": f"subword-nmt-{n}merges"}))


@bpe_group.command("apply")
@click.option("-c", "--codes", required=True, metavar="CODES", help="subword-nmt codes file.")
@input_option()
@output_option()
@jobs_options
def bpe_apply_cmd(codes: str, input_path: str, output_path: str, jobs: int, backend: str,
                  scheduler: str | None) -> None:
    """Split tokenized text into BPE pieces ("ri@@ ver"), one line out per line in."""
    from synprep.text.bpe import apply_bpe_stream, bpe_signature

    check_outputs(output_path)
    stream = apply_bpe_stream(iter_lines(input_path), codes, jobs=jobs, backend=backend, scheduler=scheduler)
    with open_output(output_path) as out:  # one line out per line in: the count is the input's
        n = write_lines(out, stream)
    _warn_if_empty(n, input_path)
    log.info("bpe apply: %d lines", n)
    _sig(**bpe_signature(codes))
