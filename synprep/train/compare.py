"""Compare trained systems over several seeds: BLEU mean ± sd and paired significance tests.

A *run* is a training folder (``synprep train --out RUN``) that also holds its test translation:
``RUN/config.json`` (the run's :class:`~synprep.train.config.TrainConfig`), ``RUN/test.hyp``
(``synprep translate -o``, BPE'd or not) and, when the translated split dropped lines,
``RUN/test.lines`` (``translate --lines-out``: the 1-based reference lines, in order).

The *system* of a run is its folder name without a trailing ``.seedN`` (``gated.seed2`` →
``gated``); its seed is the config's. Runs of one system must share every config field except
``seed`` and the bookkeeping ones (:data:`~synprep.train.config.RESUME_OVERRIDABLE`), and every run
must translate the same reference lines — otherwise the comparison is refused.

Per system: detokenized and tokenized BLEU (:func:`synprep.train.metrics.bleu_scores`, each with
its sacreBLEU signature) as mean ± sample standard deviation over the seeds. Against the baseline:
sacreBLEU's own paired bootstrap resampling (``sacrebleu.significance.PairedTest``, ``bs``, Koehn
2004, 1000 resamples) and approximate randomization (``ar``, Riezler & Maxwell 2005, 10 000
trials), both two-sided, seeded by sacreBLEU (``SACREBLEU_SEED``, default 12345). With several
seeds the test is run once on the seed-paired concatenation: the baseline's and the system's
translations of every seed they share, in seed order, against the references repeated once per
seed, so that one p-value covers the seeds (a per-seed test is what a single seed gives).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synprep.errors import ConfigError, InputError

SEED_SUFFIX = re.compile(r"\.seed\d+$")
BS_SAMPLES = 1000
AR_TRIALS = 10000


@dataclass
class Run:
    """One training run and its test translation (BPE removed unless ``keep_bpe``)."""

    path: Path
    system: str
    seed: int
    config: dict[str, Any]
    hyps: list[str]
    lines: list[int] | None


def read_run(run_dir: str | Path, hyp_name: str = "test.hyp", lines_name: str = "test.lines",
             keep_bpe: bool = False) -> Run:
    """Read a run folder (see the module docstring).

    Raises:
        InputError: a missing or unreadable ``config.json`` / hypothesis file.
    """
    from synprep.textio import read_lines
    from synprep.train.config import config_from_dict
    from synprep.train.metrics import remove_bpe

    d = Path(run_dir)
    cfg_path = d / "config.json"
    if not cfg_path.is_file():
        raise InputError("not a training run (no config.json)", str(d))
    try:
        data = json.loads(cfg_path.read_text("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"unreadable config.json: {e}", str(cfg_path)) from None
    cfg = config_from_dict(data, str(cfg_path))
    hyp_path = d / hyp_name
    if not hyp_path.is_file():
        raise InputError(f"no {hyp_name} (translate the test split with synprep translate -o {hyp_path})", str(d))
    hyps = read_lines(hyp_path)
    if not keep_bpe:
        hyps = [remove_bpe(h) for h in hyps]
    lines = None
    if (d / lines_name).is_file():
        lines = []
        for n, x in enumerate(read_lines(d / lines_name), 1):
            if not x.strip().isdigit():
                raise InputError(f"not a line number: {x!r}", f"{d / lines_name}:{n}")
            lines.append(int(x))
    return Run(d, SEED_SUFFIX.sub("", d.resolve().name), cfg.seed, cfg.to_dict(), hyps, lines)


def group_runs(runs: Sequence[Run]) -> dict[str, list[Run]]:
    """Runs by system (first-seen order), each sorted by seed.

    Raises:
        ConfigError: two runs of one system differ in a model/training field, or share a seed.
    """
    from synprep.train.config import RESUME_OVERRIDABLE

    groups: dict[str, list[Run]] = {}
    for r in runs:
        groups.setdefault(r.system, []).append(r)
    for name, rs in groups.items():
        rs.sort(key=lambda r: r.seed)
        ref = {k: v for k, v in rs[0].config.items() if k not in RESUME_OVERRIDABLE and k != "seed"}
        for r in rs[1:]:
            cur = {k: v for k, v in r.config.items() if k not in RESUME_OVERRIDABLE and k != "seed"}
            if cur != ref:
                diff = sorted(k for k in set(ref) | set(cur) if ref.get(k) != cur.get(k))
                raise ConfigError(f"runs {rs[0].path} and {r.path} of system {name!r} differ in {', '.join(diff)}: "
                                  f"one system's runs may differ only in their seed")
        seeds = [r.seed for r in rs]
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"system {name!r} has two runs with one seed ({seeds})")
    return groups


def _mean_sd(xs: Sequence[float]) -> dict[str, Any]:
    return {"mean": round(statistics.fmean(xs), 2), "sd": round(statistics.stdev(xs), 2) if len(xs) > 1 else None,
            "n": len(xs), "values": list(xs)}


def _paired(named: list[tuple[str, Sequence[str]]], refs: list[str], tokenized: bool, lowercase: bool,
            test_type: str) -> tuple[float, str]:
    """p-value of the second system against the first, and the test's sacreBLEU signature."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest, Result

    metric = BLEU(tokenize="none", force=True, lowercase=lowercase) if tokenized else BLEU(lowercase=lowercase)
    test = PairedTest(named, {"BLEU": metric}, [refs], test_type=test_type,
                      n_samples=BS_SAMPLES if test_type == "bs" else AR_TRIALS)
    sigs, scores = test()
    (name,) = [k for k in scores if k != "System"]
    res = scores[name][1]
    assert isinstance(res, Result) and res.p_value is not None
    return float(res.p_value), str(sigs[name])


def compare_runs(runs: Sequence[Run], refs: Sequence[str], *, lang: str = "en", lowercase: bool = False,
                 baseline: str | None = None, tests: Sequence[str] = ("bs", "ar")) -> dict[str, Any]:
    """BLEU per run and system, and paired tests of every system against the baseline.

    Args:
        runs: from :func:`read_run`. refs: the tokenized reference file's lines (BPE removed),
            indexed by each run's ``lines`` (all lines when a run has none).
        baseline: the system every other is tested against (default: the first run's).
        tests: ``bs`` (paired bootstrap) and/or ``ar`` (approximate randomization).

    Returns:
        ``{"baseline", "systems": [{"system", "seeds", "runs": [...], "bleu": {mean, sd, n, values},
        "tok_bleu": {...}, "p": {"bleu": {"bs", "ar"}, "tok_bleu": {...}}}], "signatures": {...}}``.

    Raises:
        InputError: a run's lines outside the references, or a hypothesis count that does not match.
        ConfigError: an unknown baseline, runs translating different reference lines, inconsistent
            systems (:func:`group_runs`), or a system sharing no seed with the baseline.
    """
    from synprep.train.metrics import bleu_scores, detokenize

    if not runs:
        raise ConfigError("compare needs at least one run")
    groups = group_runs(runs)
    baseline = baseline or runs[0].system
    if baseline not in groups:
        raise ConfigError(f"--baseline {baseline!r} is none of the systems ({', '.join(groups)})")
    picked: list[int] | None = None
    for r in runs:
        lines = r.lines or list(range(1, len(refs) + 1))
        bad = [n for n in lines if not 1 <= n <= len(refs)]
        if bad:
            raise InputError(f"line {bad[0]} is outside the {len(refs)} references", str(r.path))
        if len(lines) != len(r.hyps):
            raise InputError(f"{len(r.hyps)} hypotheses but {len(lines)} reference lines", str(r.path))
        if picked is None:
            picked = lines
        elif lines != picked:
            raise ConfigError(f"{r.path} translated other reference lines than {runs[0].path}: "
                              f"paired tests need one test set")
    assert picked is not None
    sel = [refs[n - 1] for n in picked]
    sel_detok = detokenize(sel, lang)
    sigs: dict[str, str] = {}
    systems: list[dict[str, Any]] = []
    for name, rs in groups.items():
        per_run = []
        for r in rs:
            s = bleu_scores(r.hyps, sel, lang, lowercase=lowercase)
            sigs["bleu"], sigs["tok_bleu"] = s["bleu_signature"], s["tok_bleu_signature"]
            per_run.append({"run": str(r.path), "seed": r.seed, "bleu": s["bleu"], "tok_bleu": s["tok_bleu"]})
        systems.append({"system": name, "baseline": name == baseline, "seeds": [r.seed for r in rs], "runs": per_run,
                        "config": rs[0].config,
                        "bleu": _mean_sd([x["bleu"] for x in per_run]),
                        "tok_bleu": _mean_sd([x["tok_bleu"] for x in per_run])})
    base_runs = {r.seed: r for r in groups[baseline]}
    for entry in systems:
        if entry["baseline"]:
            entry["p"] = None
            continue
        shared = [s for s in entry["seeds"] if s in base_runs]
        if not shared:
            raise ConfigError(f"system {entry['system']!r} shares no seed with the baseline {baseline!r} "
                              f"({entry['seeds']} vs {sorted(base_runs)}): paired tests pair runs by seed")
        mine = {r.seed: r for r in groups[entry["system"]]}
        tok_a = [h for s in shared for h in base_runs[s].hyps]
        tok_b = [h for s in shared for h in mine[s].hyps]
        refs_tok = sel * len(shared)
        det_a, det_b = detokenize(tok_a, lang), detokenize(tok_b, lang)
        refs_det = sel_detok * len(shared)
        p: dict[str, dict[str, float]] = {"bleu": {}, "tok_bleu": {}}
        for t in tests:
            p["bleu"][t], sigs[f"bleu_{t}"] = _paired([(baseline, det_a), (entry["system"], det_b)], refs_det,
                                                     False, lowercase, t)
            p["tok_bleu"][t], sigs[f"tok_bleu_{t}"] = _paired([(baseline, tok_a), (entry["system"], tok_b)], refs_tok,
                                                             True, lowercase, t)
        entry["p"] = p
        entry["paired_seeds"] = shared
    return {"baseline": baseline, "sentences": len(sel), "lowercase": lowercase, "lang": lang,
            "systems": systems, "signatures": sigs}


def _fmt(ms: dict[str, Any]) -> str:
    return f"{ms['mean']:.2f} ± {ms['sd']:.2f}" if ms["sd"] is not None else f"{ms['mean']:.2f}"


def _p(x: float | None) -> str:
    return "–" if x is None else (f"{x:.4f}" if x >= 1e-4 else f"{x:.1e}")


def to_markdown(result: dict[str, Any]) -> str:
    """The comparison as a markdown table (one row per system) with the signatures below it."""
    rows = ["| system | seeds | BLEU detok (mean ± sd) | p bs | p ar | BLEU tok (mean ± sd) | p bs | p ar |",
            "|---|---|---|---|---|---|---|---|"]
    for e in result["systems"]:
        p = e["p"] or {"bleu": {}, "tok_bleu": {}}
        name = f"{e['system']} (baseline)" if e["baseline"] else e["system"]
        rows.append(f"| {name} | {','.join(map(str, e['seeds']))} | {_fmt(e['bleu'])} | {_p(p['bleu'].get('bs'))} | "
                    f"{_p(p['bleu'].get('ar'))} | {_fmt(e['tok_bleu'])} | {_p(p['tok_bleu'].get('bs'))} | "
                    f"{_p(p['tok_bleu'].get('ar'))} |")
    out = "\n".join(rows) + "\n\n"
    out += (f"{result['sentences']} test sentences; p: two-sided paired test against {result['baseline']} on the "
            f"seed-paired concatenation (bs: paired bootstrap, {BS_SAMPLES} resamples; ar: approximate "
            f"randomization, {AR_TRIALS} trials).\n\n")
    for k, v in result["signatures"].items():
        out += f"- `{k}`: `{v}`\n"
    per_run = ", ".join(f"{e['system']} s{x['seed']}: {x['bleu']:.2f}/{x['tok_bleu']:.2f}"
                        for e in result["systems"] for x in e["runs"])
    return out + f"\nPer run (detok/tok BLEU): {per_run}\n"
