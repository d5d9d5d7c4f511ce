"""Shard commands: ``synprep shard`` (BPE'd text + CoNLL-U → shards), ``check`` and ``show``."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from click.core import ParameterSource

from synprep.cli.common import ldd_threshold_option, lowercase_option, shard_size_option, split_name
from synprep.constants import GAP_MODES, SHARD_FORMAT_VERSION
from synprep.signature import signature


@click.command("check")
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False, path_type=str))
@click.option("--json", "as_json", is_flag=True,
              help="Print the report as one JSON object on stdout (ok, folder, pairs, shards, violation, signature).")
def check_cmd(folder: str, as_json: bool) -> None:
    """Verify every invariant of an output folder DIR (shards, manifest, vocabulary).

    Prints one OK line (pairs per split) on stdout and exits 0, or names the first violation
    (file, pair index, original line, what) on stderr and exits 1. A missing DIR exits 2.
    With --json the report is one JSON object on stdout either way (same exit statuses).
    docs/shards.md lists what is verified.
    """
    from synprep.shards.check import check_dir
    from synprep.shards.manifest import Manifest

    report = check_dir(folder)
    note = None
    if not report.ok:
        from pathlib import Path

        from synprep.pipeline.parts import parts_note

        note = parts_note(Path(folder))
    if as_json:
        try:
            sig = Manifest.load(folder).signature
        except Exception:
            sig = ""
        v = report.violation
        click.echo(json.dumps({
            "ok": report.ok, "folder": str(folder), "pairs": report.pairs, "shards": report.shards,
            "violation": None if v is None else {"file": v.file, "pair": v.pair, "line": v.line, "what": v.what},
            "signature": sig, "summary": report.summary(), "note": note}, indent=2, sort_keys=True))
        if not report.ok:
            sys.exit(1)
        return
    if report.ok:
        click.echo(f"synprep check: {report.summary()}")
        try:
            sig = Manifest.load(folder).signature
        except Exception:
            sig = ""
        click.echo(sig or signature(shard=f"v{SHARD_FORMAT_VERSION}"), err=True)
        return
    click.echo(f"synprep check: {report.summary()}", err=True)
    if note is not None:
        click.echo(f"synprep check: {note}", err=True)
    click.echo(signature(shard=f"v{SHARD_FORMAT_VERSION}"), err=True)
    sys.exit(1)


@click.command("shard")
@click.option("--src", "src", required=True, metavar="FILE", help="BPE'd source text (@@ pieces, Moses escapes).")
@click.option("--tgt", "tgt", required=True, metavar="FILE", help="BPE'd target text, one line per source line.")
@click.option("--conllu", "conllu_path", required=True, metavar="FILE",
              help="Parses of the source words, as `synprep parse` writes them ('# line = N' groups, '# error' "
                   "blocks for failed lines) or one sentence per line.")
@click.option("-s", "--source-lang", "src_lang", required=True, metavar="LANG", help="Source language.")
@click.option("-t", "--target-lang", "tgt_lang", required=True, metavar="LANG", help="Target language.")
@click.option("--out", required=True, metavar="DIR", help="Output folder (shared by every split of a corpus).")
@click.option("--split", callback=split_name, default="train", show_default=True, help="Split name.")
@click.option("--vocab", default=None, metavar="FILE",
              help="fairseq dict to use (default: OUT/dict.txt, built from the train split's --src and --tgt).")
@click.option("--vocab-split", "vocab_split", callback=split_name, default=None, metavar="SPLIT",
              help="The split whose --src/--tgt make OUT/dict.txt (default: the folder's, else train); another "
                   "split waits for it while it runs, else is refused.")
@shard_size_option
@ldd_threshold_option
@lowercase_option
@click.option("--no-language-check", "no_language_check", is_flag=True,
              help="Do not check that a sample of each side is in the language -s/-t give (py3langid).")
def shard_cmd(src: str, tgt: str, conllu_path: str, src_lang: str, tgt_lang: str, out: str, split: str,
              vocab: str | None, vocab_split: str | None, lowercase: bool, no_language_check: bool,
              **settings: Any) -> None:
    """The shard stage on its own: BPE'd parallel text + CoNLL-U parses → features → shards → check.

    Line k of --src and --tgt is a pair; its parse is line k of --conllu, whose words must be the
    words of the source pieces (@@ removed, Moses escapes undone), else the line is named (exit 2).
    A line the parser failed on ('# error') is recorded as dropped in the manifest. Running again
    resumes (finished shards are skipped). This is `synprep annotate --parser conllu`.

    \b
    synprep parse -l en -i train.tok.en -o train.conllu
    synprep shard --src train.bpe.en --tgt train.bpe.de --conllu train.conllu -s en -t de --out data/
    """
    from pathlib import Path

    from synprep.cli.pipeline import _report
    from synprep.pipeline import SplitInputs, run_annotate
    from synprep.pipeline.config import DataConfig
    from synprep.pipeline.dictionary import folder_vocab_split

    # settings: the shard and parse sections' generated options (--shard-size, --ldd-threshold), their parameters
    # named as the configuration's flat names (DataConfig.of), passed on whole
    cfg = DataConfig.of(mode="annotate", src_lang=src_lang, tgt_lang=tgt_lang, parser="conllu", lowercase=lowercase,
                        vocab_split=folder_vocab_split(Path(out), vocab_split),
                        language_check=not no_language_check, **settings)
    manifest = run_annotate(SplitInputs(split=split, src=src, tgt=tgt, vocab=vocab, conllu=conllu_path), out, cfg)
    _report(manifest, split)


@click.command("show")
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False, path_type=str))
@click.option("--split", callback=split_name, default="train", show_default=True, help="Split name.")
@click.option("--index", "index", type=int, default=None, metavar="I",
              help="0-based pair index over the split's shards (negative counts from the end).")
@click.option("--line", "line", type=click.IntRange(min=1), default=None, metavar="N",
              help="The pair of original input line N (1-based, as the manifest counts).")
@click.option("--png", "png_path", default=None, metavar="FILE",
              help="Also draw the pair (dependency arcs, gaps, SLR masks, PASCAL weights) into this PNG.")
@click.option("--tau", type=click.FloatRange(min=0.0, min_open=True), default=10.0, show_default=True,
              help="Temperature of the soft SLR mask in the figure.")
@click.option("--mode", type=click.Choice(GAP_MODES), default="cnf", show_default=True,
              help="Which stored gaps the figure's SLR masks use.")
@click.option("--ldd-top", type=click.IntRange(min=1), default=3, show_default=True,
              help="LDD entries shown per word (most probable first).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the pair as one JSON object (every stored field, decoded pieces, words, label names).")
def show_cmd(folder: str, split: str, index: int | None, line: int | None, png_path: str | None, tau: float,
             mode: str, ldd_top: int, as_json: bool) -> None:
    """One sentence pair of an output folder DIR, as text (and as a figure with --png).

    The text lists the source pieces with their word, cnf/nary gaps and PASCAL parent, the words
    with head, deprel, UPOS and best LDD entries, the sentence starts and the target pieces
    (docs/shards.md). Give --index I or --line N.

    \b
    synprep show build/sample --line 7 --png line7.png
    """
    from synprep.show import load_pair, pair_json, pair_text, save_png

    if (index is None) == (line is None):
        raise click.UsageError("give one of --index I and --line N")
    if as_json and click.get_current_context().get_parameter_source("ldd_top") != ParameterSource.DEFAULT:
        raise click.UsageError("--ldd-top shapes the text table; --json prints every LDD entry")
    view = load_pair(folder, split, index=index, line=line)
    if as_json:
        click.echo(json.dumps(pair_json(view), ensure_ascii=False))
    else:
        click.echo(pair_text(view, ldd_top=ldd_top), nl=False)
    if png_path is not None:
        size = save_png(view, png_path, tau=tau, mode=mode)
        click.echo(f"synprep: wrote {png_path} ({size} bytes)", err=True)
    click.echo(view.attrs.get("signature") or signature(shard=f"v{SHARD_FORMAT_VERSION}"), err=True)
