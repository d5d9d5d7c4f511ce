"""``synprep train``, ``synprep translate``, ``synprep evaluate``: thin wrappers over synprep.train."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import click

from synprep.cli.common import split_name
from synprep.defaults import DECODE_DEFAULTS, RUNTIME_DEFAULTS
from synprep.errors import ConfigError, InputError
from synprep.textio import open_output, read_lines, write_lines

log = logging.getLogger("synprep.train")


def _preset_help() -> str:
    from synprep.train.config import preset_names

    return f"A shipped preset: {', '.join(preset_names())} (docs/train.md)."


def _system_help() -> str:
    from synprep.train.sources import SOURCES

    return ("Apply a named system's syntax settings to the preset/config, before --set: vanilla; gated "
            "(gated SLR in every head); a syntax source as its paper uses it, i.e. the syntax fields of its "
            f"SOURCE_iwslt14_de_en preset ({', '.join(SOURCES)}); gated-SOURCE (that source, gated, in every "
            "head). Names the systems of make multi30k-seeds (docs/train.md).")


def _device_option(f):
    return click.option("--device", default=None, metavar="D",
                        help="cpu, cuda, cuda:1, … (default: CUDA when available, else the CPU).")(f)


# --------------------------------------------------------------------------------------------
# train
# --------------------------------------------------------------------------------------------
@click.command("train")
@click.option("--shards", "shards_dir", default=None, type=click.Path(file_okay=False),
              help="Shard folder of the pipeline (dict.txt, train.*.h5, valid.*.h5). Required unless --print-config.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Config JSON (keys of synprep.train.config.TrainConfig; missing keys take defaults; "
                   "keys starting with '_' are comments).")
@click.option("--preset", default=None, help=_preset_help())
@click.option("--system", default=None, metavar="NAME", help=_system_help())
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Run folder: metrics.jsonl, gates.png, config.json, checkpoint_{last,best}.pt. "
                   "Required unless --print-config.")
@click.option("--print-config", is_flag=True,
              help="Print the resolved configuration (preset/config + overrides; with --resume the "
                   "checkpoint's with the overrides --resume applies, or its refusal) as JSON on stdout "
                   "and exit without training.")
@click.option("--max-steps", type=click.IntRange(min=0), default=None, help="Stop after N updates (0: no limit).")
@click.option("--epochs", "max_epochs", type=click.IntRange(min=0), default=None, help="Stop after N epochs (0: no limit).")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="Tokens per batch (padding included).")
@click.option("--seed", type=int, default=None, help="Random seed (batch order, initialisation, dropout).")
@click.option("--num-workers", type=click.IntRange(min=-1), default=None,
              help="DataLoader worker processes (default: the config's; -1 = auto: "
                   f"{RUNTIME_DEFAULTS.cuda_loader_workers} on CUDA, 0 on the CPU).")
@click.option("--resume", is_flag=True, help="Continue exactly from OUT/checkpoint_last.pt (its config is used).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a config field (value parsed as JSON), e.g. --set syntax=vanilla; a syntax "
                   "source's option as SOURCE_FIELD or SOURCE.FIELD (--set sla.threshold=2). Repeatable.")
@click.option("--train-split", default="train", show_default=True, help="Split to train on.")
@click.option("--valid-split", default="valid", show_default=True, help="Split to validate on.")
@click.option("--progress/--no-progress", default=None, help="tqdm progress bars (default: when stderr is a terminal).")
@_device_option
def train_cmd(shards_dir, config_path, preset, system, out_dir, print_config, max_steps, max_epochs, max_tokens, seed,
              num_workers, resume, sets, train_split, valid_split, progress, device):
    """Train the (gated syntax-attention) Transformer on a shard folder.

    \b
    One GPU or CPU:  synprep train --shards build/iwslt14/shards --preset gated_iwslt14_de_en --out runs/gated
    Several GPUs:    torchrun --nproc_per_node 4 -m synprep train --shards ... --preset ... --out ...
    Vanilla baseline: --preset vanilla_iwslt14_de_en (or add --set syntax=vanilla).
    See the resolved configuration: synprep train --preset gated_iwslt14_de_en --print-config
    """
    from synprep.train.checkpoint import LAST, load_checkpoint
    from synprep.train.config import (
        load_config,
        load_preset,
        parse_override,
        resume_config,
        system_overrides,
        with_overrides,
    )
    from synprep.train.run import train
    from synprep.train.rundir import check_not_busy

    overrides = dict(system_overrides(system)) if system else {}
    overrides.update(parse_override(s) for s in sets)
    for key, value in (("max_steps", max_steps), ("max_epochs", max_epochs), ("max_tokens", max_tokens),
                       ("seed", seed), ("num_workers", num_workers)):
        if value is not None:
            overrides[key] = value
    if not print_config:
        for name, value in (("--shards", shards_dir), ("--out", out_dir)):
            if value is None:
                raise click.UsageError(f"Missing option '{name}' (needed unless --print-config).")
    elif shards_dir is not None or progress is not None or device is not None:
        raise ConfigError("--print-config trains nothing: drop --shards, --device and --progress")
    if resume:
        if config_path or preset or system:
            raise ConfigError("--resume takes the configuration from the checkpoint: drop --config/--preset/--system")
        if out_dir is None:
            raise click.UsageError("--resume needs --out (the run folder to continue)")
        out = Path(out_dir)
        if not print_config and int(os.environ.get("RANK", 0)) == 0:
            check_not_busy(out)  # a running run is named before its checkpoints are looked at (train/rundir.py)
        if not (out / LAST).is_file():
            raise InputError(f"nothing to resume: no {LAST}", str(out))
        cfg = None
        if print_config:  # the trainer's merge (resume_config): what --resume would run, or its refusal
            click.echo(resume_config(load_checkpoint(out / LAST)["config"], overrides, str(out / LAST)).to_json(),
                       nl=False)
            return
    else:
        if bool(config_path) == bool(preset):
            raise ConfigError("give exactly one of --config FILE and --preset NAME")
        cfg = load_config(config_path) if config_path else load_preset(preset)
        cfg = with_overrides(cfg, overrides) if overrides else cfg
        if print_config:
            click.echo(cfg.to_json(), nl=False)
            return
        out = Path(out_dir)
        if int(os.environ.get("RANK", 0)) == 0:
            check_not_busy(out)
        if (out / LAST).exists():
            raise ConfigError(f"{out} already holds {LAST}: pass --resume to continue it, or choose another --out")
    summary = train(shards_dir, out, cfg, device=device, resume=resume, overrides=overrides if resume else None,
                    progress=progress, train_split=train_split, valid_split=valid_split)
    if int(os.environ.get("RANK", 0)) == 0:
        log.info("%s", done_line(summary))
        click.echo(summary["signature"], err=True)


# --------------------------------------------------------------------------------------------
# translate
# --------------------------------------------------------------------------------------------
def _postprocess(pieces: list[str], remove_bpe: bool) -> str:
    from synprep.train.metrics import remove_bpe as _rb

    line = " ".join(pieces)
    return _rb(line) if remove_bpe else line


def _translate_dataset(checkpoint, shards_dir, split, input_path, cfg, symbols, remove_bpe, detok_lang):
    """What ``translate`` reads: the shards' split, or (a vanilla model only) BPE'd text, checked against the model.

    Raises:
        ConfigError: plain text for a model that uses source syntax, or --remove-bpe/--detok with shards of
            another subword scheme.
        InputError: shards whose vocabulary is not the checkpoint's.
    """
    import numpy as np

    from synprep.constants import UNK_ID
    from synprep.train.data import RecordDataset, ShardDataset
    from synprep.types import PairRecord

    if shards_dir is None:
        if cfg.uses_syntax:
            raise ConfigError(f"this model's encoder uses source syntax ({cfg.describe()}): plain text has no parse; "
                              f"translate a shard split instead (--shards DIR --split {split})")
        index = {s: i for i, s in enumerate(symbols)}
        empty = np.zeros(0, dtype=np.int64)
        recs = []
        for n, line in enumerate(read_lines(input_path), 1):
            ids = np.array([index.get(p, UNK_ID) for p in line.split()], dtype=np.int64)
            recs.append(PairRecord(line=n, src_ids=ids, tgt_ids=empty, word_index=empty, heads=empty, deprel=empty,
                                   upos=empty, sent_start=empty, gaps_cnf=empty, gaps_nary=empty, ldd_dep=empty,
                                   ldd_head=empty, ldd_rel=empty, ldd_prob=empty))
        dataset = RecordDataset(recs)
    else:
        from synprep.shards import Manifest
        from synprep.subword import DEFAULT_SCHEME, scheme_class
        from synprep.train.data import load_symbols

        scheme = Manifest.load(shards_dir).config.get("subword", DEFAULT_SCHEME)
        if not scheme_class(scheme).bpe_markers and (remove_bpe or detok_lang is not None):
            raise ConfigError(f"--remove-bpe and --detok undo subword-nmt BPE and Moses tokenization; these shards "
                              f"use --subword {scheme}: write the pieces and decode them with the {scheme} model "
                              "(docs/subwords.md)")
        dataset = ShardDataset(shards_dir, split)
        shard_symbols = load_symbols(shards_dir, dataset.attrs)
        if shard_symbols != symbols:
            raise InputError(f"the shards' vocabulary ({len(shard_symbols)} symbols) is not the checkpoint's "
                             f"({len(symbols)} symbols): translate the shards the model was trained on", checkpoint)
    return dataset


@click.command("translate")
@click.option("--checkpoint", "checkpoint", required=True, type=click.Path(dir_okay=False),
              help="checkpoint_best.pt / checkpoint_last.pt of synprep train.")
@click.option("--shards", "shards_dir", default=None, type=click.Path(file_okay=False),
              help="Translate a split of a shard folder (carries the source parses): the real path.")
@click.option("--split", callback=split_name, default="test", show_default=True, help="Split to translate with --shards.")
@click.option("-i", "--input", "input_path", default="-", metavar="FILE",
              help="BPE'd source text, one sentence per line (vanilla models only; default: stdin).")
@click.option("-o", "--output", "output_path", default="-", metavar="FILE", help="Hypotheses (default: stdout).")
@click.option("--beam", type=click.IntRange(min=1), default=None, help="Beam size (1 = greedy; default: config's).")
@click.option("--lenpen", type=float, default=None, help="Length penalty (default: config's).")
@click.option("--max-len-a", type=float, default=None, help="Max length = a · source length + b.")
@click.option("--max-len-b", type=int, default=None, help="See --max-len-a.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None,
              help=f"Source tokens per batch (default: {DECODE_DEFAULTS.max_tokens_cpu} on the CPU, "
                   f"{DECODE_DEFAULTS.max_tokens_cuda} on a GPU, where larger batches cost about the same per "
                   "search step).")
@click.option("--remove-bpe", is_flag=True, help="Join BPE pieces (drop '@@ ') in the output.")
@click.option("--detok", "detok_lang", default=None, metavar="LANG",
              help="Moses-detokenize the output for LANG (implies --remove-bpe).")
@click.option("--ref-out", default=None, metavar="FILE",
              help="With --shards: also write the split's target side (same postprocessing), aligned.")
@click.option("--lines-out", default=None, metavar="FILE",
              help="With --shards: also write the original 1-based line number of every pair.")
@click.option("--average-last", type=click.IntRange(min=1), default=None, metavar="N",
              help="Translate with the mean of the last N epoch checkpoints (checkpoint{EPOCH}.pt, kept with "
                   "keep_last_epochs) of the run folder holding --checkpoint, instead of --checkpoint itself "
                   "(fairseq's average_checkpoints --num-epoch-checkpoints N).")
@click.option("--progress/--no-progress", default=None, help="tqdm progress bar.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="CPU: batches decoded at once, each in a thread of this process (torch's threads shared out "
                   "between them); try the number of cores. Same hypotheses. 1 on a GPU.")
@_device_option
def translate_cmd(checkpoint, shards_dir, split, input_path, output_path, beam, lenpen, max_len_a, max_len_b,
                  max_tokens, remove_bpe, detok_lang, ref_out, lines_out, average_last, progress, jobs, device):
    """Translate with a trained model (beam search).

    \b
    A syntax-aware model needs the source parses, so translate a shard split:
        synprep translate --checkpoint runs/gated/checkpoint_best.pt --shards SHARDS --split test > hyp.bpe
    Plain BPE'd text on stdin works for vanilla models only (any other model stops with an error).
    Output: BPE'd hypotheses in the split's order (--remove-bpe / --detok LANG to postprocess).
    """
    from synprep.train.decode import check_jobs, load_model, translate_dataset
    from synprep.train.distributed import resolve_device

    dev = resolve_device(device)
    check_jobs(jobs, dev)  # before the model is loaded
    average = _last_epochs(Path(checkpoint).parent, average_last) if average_last else None
    model, cfg, symbols = load_model(checkpoint, dev, average=average)
    beam = beam or cfg.beam
    lenpen = cfg.lenpen if lenpen is None else lenpen
    dataset = _translate_dataset(checkpoint, shards_dir, split, input_path, cfg, symbols, remove_bpe, detok_lang)
    import time

    t0 = time.perf_counter()
    hyps = translate_dataset(model, dataset, beam=beam, lenpen=lenpen,
                             max_len_a=cfg.max_len_a if max_len_a is None else max_len_a,
                             max_len_b=cfg.max_len_b if max_len_b is None else max_len_b, max_tokens=max_tokens,
                             device=dev, progress=progress, jobs=jobs)
    seconds = max(time.perf_counter() - t0, 1e-9)
    pieces = sum(map(len, hyps))
    log.info("translate: %d sentences, %d pieces out in %.1f s: %.1f sentences/s, %.0f pieces/s on %s (beam %d, -j %d)",
             len(hyps), pieces, seconds, len(hyps) / seconds, pieces / seconds, dev.type, beam, jobs)
    rb = remove_bpe or detok_lang is not None

    def post(lines: list[str]) -> list[str]:
        if detok_lang:
            from synprep.train.metrics import detokenize

            return detokenize(lines, detok_lang)
        return lines

    with open_output(output_path) as f:
        write_lines(f, post([_postprocess([symbols[i] for i in h], rb) for h in hyps]))
    if shards_dir is not None and ref_out:
        with open_output(ref_out) as f:
            write_lines(f, post([_postprocess([symbols[i] for i in dataset[i][1].tgt_ids], rb)
                                 for i in range(len(dataset))]))
    if shards_dir is not None and lines_out:
        with open_output(lines_out) as f:
            write_lines(f, (str(dataset.line(i)) for i in range(len(dataset))))
    from synprep.signature import signature

    click.echo(signature(task="translate", model=cfg.describe(), beam=beam, lenpen=lenpen,
                         post="detok" if detok_lang else ("nobpe" if rb else "bpe")), err=True)


# --------------------------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------------------------
@click.command("evaluate")
@click.option("--hyp", "hyp_path", required=True, metavar="FILE", help="Hypotheses, tokenized (BPE'd is fine).")
@click.option("--ref", "ref_path", required=True, metavar="FILE", help="References, tokenized (BPE'd is fine).")
@click.option("--lang", default="en", show_default=True, help="Target language (Moses detokenizer).")
@click.option("--ref-lines", default=None, metavar="FILE",
              help="Score only these 1-based lines of --ref (translate --lines-out), in this order.")
@click.option("--keep-bpe", is_flag=True, help="Do not remove '@@ ' before scoring.")
@click.option("--lowercase", is_flag=True, help="Case-insensitive BLEU (e.g. a lowercased model against cased references).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def evaluate_cmd(hyp_path, ref_path, lang, ref_lines, keep_bpe, lowercase, as_json):
    """BLEU of hypotheses: detokenized sacrebleu (13a) and the tokenized BLEU fairseq prints.

    Both inputs are Moses-tokenized text (BPE pieces are joined first unless --keep-bpe); the
    detokenized score Moses-detokenizes both sides for --lang. The sacrebleu signature line is
    printed with each score.
    """
    from synprep.train.metrics import bleu_scores, case_mismatch, remove_bpe

    hyps = read_lines(hyp_path)
    refs = read_lines(ref_path)
    if ref_lines:
        picks = [int(x) for x in read_lines(ref_lines) if x.strip()]
        bad = [n for n in picks if not 1 <= n <= len(refs)]
        if bad:
            raise InputError(f"line {bad[0]} is outside the {len(refs)} references", ref_lines)
        refs = [refs[n - 1] for n in picks]
    if len(hyps) != len(refs):
        raise InputError(f"{len(hyps)} hypotheses but {len(refs)} references", hyp_path)
    if not keep_bpe:
        hyps = [remove_bpe(h) for h in hyps]
        refs = [remove_bpe(r) for r in refs]
    warning = None if lowercase else case_mismatch(hyps, refs)
    if warning:
        log.warning(warning)
    res = bleu_scores(hyps, refs, lang, lowercase=lowercase)
    res["sentences"] = len(hyps)
    if as_json:
        click.echo(json.dumps(res))
    else:
        click.echo(f"detokenized: {res['bleu_text']}")
        click.echo(f"tokenized:   {res['tok_bleu_text']}")
    from synprep.signature import signature

    click.echo(signature(task="evaluate", lang=lang, bpe="kept" if keep_bpe else "removed", lc=lowercase), err=True)


# --------------------------------------------------------------------------------------------
# average
# --------------------------------------------------------------------------------------------
def _last_epochs(run_dir: Path, n: int) -> list[Path]:
    from synprep.train.checkpoint import epoch_checkpoints

    found = epoch_checkpoints(run_dir) if run_dir.is_dir() else []
    if len(found) < n:
        raise InputError(f"--average-last {n}: only {len(found)} epoch checkpoint(s) (checkpoint{{EPOCH}}.pt); train "
                         f"with keep_last_epochs >= {n}", str(run_dir))
    return found[-n:]


@click.command("average")
@click.argument("checkpoints", nargs=-1, type=click.Path(exists=True))
@click.option("-o", "--output", "output_path", required=True, type=click.Path(dir_okay=False),
              help="The averaged checkpoint (written atomically).")
@click.option("--last", "last_n", type=click.IntRange(min=1), default=None, metavar="N",
              help="Average the last N epoch checkpoints (checkpoint{EPOCH}.pt) of the one run folder given.")
def average_cmd(checkpoints, output_path, last_n):
    """Average the parameters of checkpoints (fairseq's scripts/average_checkpoints.py).

    \b
    synprep average runs/gated/checkpoint91.pt ... runs/gated/checkpoint100.pt -o runs/gated/avg10.pt
    synprep average runs/gated --last 10 -o runs/gated/avg10.pt      # the paper's Tables 4-6

    The result is the first checkpoint with its model replaced by the element-wise mean (integer
    buffers floor-divided); every checkpoint is loaded safely and validated, and all must describe
    the same model and vocabulary. Translate with it like any checkpoint.
    """
    from synprep.train.checkpoint import average_checkpoints, save_checkpoint

    if last_n is not None:
        if len(checkpoints) != 1 or not Path(checkpoints[0]).is_dir():
            raise ConfigError("--last N takes exactly one run folder")
        paths = _last_epochs(Path(checkpoints[0]), last_n)
    else:
        if not checkpoints:
            raise ConfigError("give the checkpoints to average, or one run folder with --last N")
        paths = [Path(c) for c in checkpoints]
        folders = [p for p in paths if p.is_dir()]
        if folders:
            raise ConfigError(f"{folders[0]} is a folder: name checkpoint files, or use --last N")
    avg = average_checkpoints(paths)
    avg.pop("format", None)
    avg.pop("version", None)
    save_checkpoint(output_path, avg)
    log.info("averaged %d checkpoints: %s", len(paths), ", ".join(p.name for p in paths))


# --------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------
@click.command("compare")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@click.option("--ref", "ref_path", required=True, metavar="FILE",
              help="Tokenized reference file of the translated split (e.g. OUT/text/test.tok.en).")
@click.option("--lang", default="en", show_default=True, help="Target language (Moses detokenizer).")
@click.option("--lowercase", is_flag=True, help="Case-insensitive BLEU (a lowercased model).")
@click.option("--keep-bpe", is_flag=True, help="Do not remove '@@ ' before scoring.")
@click.option("--hyp-name", default="test.hyp", show_default=True, help="Hypothesis file inside each run folder.")
@click.option("--lines-name", default="test.lines", show_default=True,
              help="Reference line numbers inside each run folder (translate --lines-out), when present.")
@click.option("--baseline", default=None, metavar="SYSTEM", help="System the others are tested against (default: the first).")
@click.option("--test", "tests", type=click.Choice(["bs", "ar"]), multiple=True, default=("bs", "ar"), show_default=True,
              help="Paired test(s), per seed and concatenated: bs = paired bootstrap resampling, "
                   "ar = approximate randomization.")
@click.option("-o", "--output", "output_path", default="-", metavar="FILE", help="Markdown table (default: stdout).")
@click.option("--json", "json_path", default=None, metavar="FILE", help="Also write the full result as JSON.")
def compare_cmd(run_dirs, ref_path, lang, lowercase, keep_bpe, hyp_name, lines_name, baseline, tests, output_path,
                json_path):
    """Compare systems over seeds: BLEU mean ± sd and paired significance tests.

    \b
    synprep compare runs/vanilla.seed{1,2,3} runs/gated.seed{1,2,3} --ref OUT/text/test.tok.en --lowercase

    Each RUN_DIR is a training folder holding test.hyp (synprep translate -o) and test.lines
    (--lines-out); its system is the folder name without '.seedN'. Prints, per system, detokenized
    and tokenized BLEU (sacreBLEU signatures below the tables) as mean ± sd over the seeds and,
    against the baseline: Welch's t-test on the per-seed BLEU scores (the test over seeds),
    sacreBLEU's paired bootstrap / approximate randomization of each seed against the same seed of
    the baseline ("significant in k of n seeds"), and the same paired tests once on the seed-paired
    concatenation (test-set sampling variance only; it ignores seed variance).
    """
    from synprep.train.compare import compare_runs, read_run, to_markdown
    from synprep.train.metrics import remove_bpe

    runs = [read_run(d, hyp_name, lines_name, keep_bpe=keep_bpe) for d in run_dirs]
    refs = read_lines(ref_path)
    if not keep_bpe:
        refs = [remove_bpe(r) for r in refs]
    result = compare_runs(runs, refs, lang=lang, lowercase=lowercase, baseline=baseline, tests=tests)
    md = to_markdown(result)
    if json_path:
        from synprep.textio import atomic_write

        with atomic_write(json_path) as f:
            f.write(json.dumps(result, indent=2) + "\n")
    with open_output(output_path) as f:
        f.write(md)


def done_line(summary: dict) -> str:
    """The last line of ``train``: updates, the epochs finished and the batches of an epoch a ``max_steps``
    stop cut short, numbered as the log's ``epoch N step S`` lines number them (1-based, the epoch under way)."""
    epochs, batches = summary["epoch"], summary.get("batches_in_epoch", 0)
    done = f"{epochs} full epoch{'s' if epochs != 1 else ''}"
    if batches:
        done += f" and {batches} batch{'es' if batches != 1 else ''} of epoch {epochs + 1}"
    return f"done: {summary['step']} updates, {done}, best valid loss {summary['best_valid_loss']:.3f}"
