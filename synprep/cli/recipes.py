"""``synprep iwslt14``: fairseq's prepare-iwslt14.sh (:mod:`synprep.recipes.iwslt14`)."""

from __future__ import annotations

import logging

import click

from synprep.cli.common import jobs_options
from synprep.signature import signature

log = logging.getLogger("synprep")


@click.command("iwslt14")
@click.option("--orig", required=True, metavar="DIR_OR_TGZ",
              help="The WIT3 de-en folder (or its parent) or de-en.tgz.")
@click.option("--out", required=True, metavar="DIR", help="Output folder (fairseq's iwslt14.tokenized.de-en).")
@click.option("--splits", default="train,valid,test", show_default=True,
              help="Comma-separated splits to write; valid needs the train file.")
@click.option("--codes", default=None, metavar="FILE",
              help="Apply these BPE codes (copied to OUT/code) instead of learning 10000 joint merges.")
@jobs_options
def iwslt14_cmd(orig: str, out: str, splits: str, codes: str | None, jobs: int, backend: str,
                scheduler: str | None) -> None:
    """Prepare IWSLT14 de-en exactly like fairseq's prepare-iwslt14.sh.

    Writes OUT/tmp/{split}.{de,en} (tokenized, lowercased), OUT/{split}.{de,en} (BPE) and OUT/code,
    and OUT/tmp/{split}.cased.{de,en} (tokenized, cased: annotate's --parse-src).
    """
    from synprep.recipes.iwslt14 import CLEAN, parse_splits, prepare
    from synprep.text.bpe import bpe_signature
    from synprep.text.clean import clean_signature
    from synprep.text.tokenize import tokenizer_signature

    report = prepare(orig, out, parse_splits(splits), codes=codes, jobs=jobs, backend=backend,
                     scheduler=scheduler)
    if report.clean is not None:
        log.info("iwslt14: train cleaning: %s", report.clean.summary())
    log.info("iwslt14: BPE codes %s (%d merges)", "learned" if report.codes_learned else "given",
             report.merges)
    for name, n in sorted(report.lines.items()):
        if "/" not in name:
            log.info("iwslt14: %s/%s: %d lines", out, name, n)
    log.info("iwslt14: the cased tokenized text is in %s/tmp/SPLIT.cased.{de,en}: annotate with --parse-src "
             "%s/tmp/SPLIT.cased.de, so that the parser reads cased words", out, out)
    tok = tokenizer_signature("de-en", lowercase=True, escape=True, fairseq_compat=True)
    clean = clean_signature(CLEAN["ratio"], int(CLEAN["min_len"]), int(CLEAN["max_len"]))
    click.echo(signature(recipe="iwslt14", **tok, clean=clean, **bpe_signature(f"{out}/code")), err=True)
