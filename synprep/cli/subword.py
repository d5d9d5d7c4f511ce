"""``synprep spm learn|apply``: a thin layer over the ``sentencepiece`` library (:mod:`synprep.subword.spm`).

``learn`` trains one model on the lines of several files (joint, like ``bpe learn``); ``apply``
writes each line's pieces separated by spaces (``spm_encode --output_format=piece``), one line
out per line in, and the signature line on stderr.
"""

from __future__ import annotations

import logging

import click

from synprep.cli.common import input_option, output_option
from synprep.cli.fields import with_field_options
from synprep.cli.text import check_outputs
from synprep.signature import signature
from synprep.subword.config import SubwordConfig
from synprep.subword.spm import (
    DEFAULT_CHARACTER_COVERAGE,
    DEFAULT_MODEL_TYPE,
    MODEL_TYPES,
)
from synprep.textio import iter_lines, open_output, write_lines

log = logging.getLogger("synprep")

#: lines per SentencePiece batch call in ``apply``
BATCH_LINES = 2000


@click.group("spm")
def spm_group() -> None:
    """SentencePiece: learn a model on raw text, apply it."""


@spm_group.command("learn")
@click.argument("files", nargs=-1, required=True, metavar="FILES...")
@click.option("-o", "--output", "output_path", required=True, metavar="MODEL",
              help="The model file to write (SentencePiece's .model).")
@with_field_options(SubwordConfig, only=("vocab_size",))
@click.option("--model-type", type=click.Choice(MODEL_TYPES), default=DEFAULT_MODEL_TYPE,
              show_default=True, help="SentencePiece's model type.")
@click.option("--character-coverage", type=click.FloatRange(0.0, 1.0, min_open=True), default=DEFAULT_CHARACTER_COVERAGE,
              show_default=True, help="Share of characters the model covers (0.9995 for CJK).")
@click.option("--byte-fallback", is_flag=True, help="Unknown characters as UTF-8 byte pieces instead of <unk>.")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="Training threads (1: the same model on every machine).")
def spm_learn_cmd(files: tuple[str, ...], output_path: str, vocab_size: int, model_type: str,
                  character_coverage: float, byte_fallback: bool, threads: int) -> None:
    """Learn one SentencePiece model on the raw lines of FILES (joint, read in order)."""
    from synprep.subword import load_scheme
    from synprep.subword.spm import SpmScheme

    check_outputs(output_path)
    SpmScheme.learn(list(files), output_path, vocab_size, model_type=model_type,
                    character_coverage=character_coverage, byte_fallback=byte_fallback, threads=threads)
    log.info("spm learn: %s, vocabulary %d -> %s", model_type, vocab_size, output_path)
    click.echo(signature(sub=load_scheme("spm", output_path).identity()), err=True)


@spm_group.command("apply")
@click.option("-m", "--model", required=True, metavar="MODEL", help="SentencePiece model file.")
@input_option(help="Raw text (default: stdin).")
@output_option()
def spm_apply_cmd(model: str, input_path: str, output_path: str) -> None:
    """Split raw text into SentencePiece pieces ("▁the ▁ri ver"), one line out per line in."""
    from synprep.parallel import chunked
    from synprep.subword import load_scheme

    check_outputs(output_path)
    scheme = load_scheme("spm", model)  # fails before any output
    with open_output(output_path) as out:
        n = 0
        for chunk in chunked(iter_lines(input_path), BATCH_LINES):
            n += write_lines(out, (" ".join(p) for p in scheme.encode_lines(chunk)))  # type: ignore[attr-defined]
    if n == 0:
        log.warning("warning: the input is empty: wrote an empty output")
    log.info("spm apply: %d lines", n)
    click.echo(signature(sub=scheme.identity()), err=True)
