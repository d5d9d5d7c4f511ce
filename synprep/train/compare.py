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
its sacreBLEU signature) as mean ± sample standard deviation over the seeds. Against the baseline,
three tests that answer different questions (:func:`compare_runs`):

* **Welch's t-test over seeds** (:func:`welch_t_test`): the per-seed BLEU scores of the system vs
  the baseline's, two-sided, unequal variances (Welch–Satterthwaite degrees of freedom), the
  t-distribution's CDF from mpmath's regularized incomplete beta. The only test here that counts
  the variance between training seeds — whether another seed would keep the gap; it needs ≥ 2
  seeds per system and has little power with 3.
* **Per-seed paired tests**: sacreBLEU's own paired bootstrap resampling
  (``sacrebleu.significance.PairedTest``, ``bs``, Koehn 2004, 1000 resamples) and approximate
  randomization (``ar``, Riezler & Maxwell 2005, 10 000 trials), both two-sided and seeded by
  sacreBLEU (``SACREBLEU_SEED``, default 12345), of seed s of the system against seed s of the
  baseline, for every seed both have; reported as the p of each seed and as "significant at
  :data:`ALPHA` in k of n seeds".
* **The concatenated paired test**: the same sacreBLEU tests once on the seed-paired
  concatenation (the baseline's and the system's translations of every shared seed, in seed
  order, against the references repeated once per seed), in the spirit of MultEval's
  multi-replicate AR (Clark et al. 2011). It measures the *test-set sampling* variance only: it
  treats the n × N sentences as independent although each seed's N translate the same N sources,
  and it ignores seed variance, so a small p here says nothing about other seeds.
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
from synprep.textio import read_lines
from synprep.train.config import RESUME_OVERRIDABLE, config_from_dict
from synprep.train.metrics import bleu_scores, detokenize, remove_bpe

SEED_SUFFIX = re.compile(r"\.seed\d+$")
BS_SAMPLES = 1000
AR_TRIALS = 10000
#: the level at which a per-seed test counts as significant ("significant in k of n seeds")
ALPHA = 0.05


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


def welch_t_test(baseline: Sequence[float], system: Sequence[float]) -> dict[str, Any]:
    """Welch's two-sample t-test (unequal variances), two-sided, of ``system`` against ``baseline``.

    ``t = (mean(system) − mean(baseline)) / sqrt(s_a²/n_a + s_b²/n_b)`` with sample variances s²,
    ``df`` by Welch–Satterthwaite, and ``p = I_{df/(df+t²)}(df/2, 1/2)`` — the two tails of
    Student's t with ``df`` degrees of freedom, through mpmath's regularized incomplete beta.

    Returns:
        ``{"t", "df", "p"}``; ``{"t": None, "df": None, "p": None, "reason"}`` when the test is not
        possible: fewer than 2 values on a side, or no variance on either side.
    """
    import mpmath

    na, nb = len(baseline), len(system)
    if min(na, nb) < 2:
        return {"t": None, "df": None, "p": None,
                "reason": f"needs >= 2 seeds per system (baseline {na}, system {nb})"}
    va, vb = statistics.variance(baseline) / na, statistics.variance(system) / nb
    if va + vb == 0:
        return {"t": None, "df": None, "p": None, "reason": "no variance over the seeds of either system"}
    t = (statistics.fmean(system) - statistics.fmean(baseline)) / (va + vb) ** 0.5
    df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    p = float(mpmath.betainc(df / 2, 0.5, 0, df / (df + t * t), regularized=True))
    return {"t": t, "df": df, "p": min(1.0, max(0.0, p))}


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


def _picked_lines(runs: Sequence[Run], refs: Sequence[str]) -> list[int]:
    """The 1-based reference lines every run translated (the same for all: one test set).

    Raises:
        InputError: a run's lines outside the references, or a hypothesis count that does not match.
        ConfigError: runs translating different reference lines.
    """
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
    return picked


def _system_scores(groups: dict[str, list[Run]], baseline: str, sel: list[str], lang: str, lowercase: bool,
                   sigs: dict[str, str]) -> list[dict[str, Any]]:
    """Each system's entry with BLEU per run and its mean and sd (the tests not yet filled); the metrics'
    signatures go into ``sigs``."""
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
    return systems


def compare_runs(runs: Sequence[Run], refs: Sequence[str], *, lang: str = "en", lowercase: bool = False,
                 baseline: str | None = None, tests: Sequence[str] = ("bs", "ar")) -> dict[str, Any]:
    """BLEU per run and system, and paired tests of every system against the baseline.

    Args:
        runs: from :func:`read_run`.
        refs: the tokenized reference file's lines (BPE removed), indexed by each run's ``lines`` (all lines
            when a run has none).
        baseline: the system every other is tested against (default: the first run's).
        tests: ``bs`` (paired bootstrap) and/or ``ar`` (approximate randomization).

    Returns:
        ``{"baseline", "alpha", "systems": [...], "signatures": {...}}``; each system
        ``{"system", "seeds", "runs": [...], "bleu": {mean, sd, n, values}, "tok_bleu": {...},
        "welch": {"bleu": welch_t_test(...), "tok_bleu": ...}, "paired_seeds": [shared seeds],
        "p_per_seed": {"bleu": {"bs": [p per paired seed], "ar": [...]}, "tok_bleu": {...}},
        "significant_seeds": {"bleu": {"bs": k, "ar": k}, ...} (p < ALPHA),
        "p_concat": {"bleu": {"bs", "ar"}, "tok_bleu": {...}}}`` (the tests None for the baseline).
        See the module docstring for what each test measures.

    Raises:
        InputError: a run's lines outside the references, or a hypothesis count that does not match.
        ConfigError: an unknown baseline, runs translating different reference lines, inconsistent
            systems (:func:`group_runs`), or a system sharing no seed with the baseline.
    """
    if not runs:
        raise ConfigError("compare needs at least one run")
    groups = group_runs(runs)
    baseline = baseline or runs[0].system
    if baseline not in groups:
        raise ConfigError(f"--baseline {baseline!r} is none of the systems ({', '.join(groups)})")
    sel = [refs[n - 1] for n in _picked_lines(runs, refs)]
    sel_detok = detokenize(sel, lang)
    sigs: dict[str, str] = {}
    systems = _system_scores(groups, baseline, sel, lang, lowercase, sigs)
    base_runs = {r.seed: r for r in groups[baseline]}
    base_entry = next(e for e in systems if e["baseline"])
    detok = {id(r): detokenize(r.hyps, lang) for r in runs}  # line by line: once per run, for every test
    for entry in systems:
        if entry["baseline"]:
            entry.update(p_concat=None, p_per_seed=None, significant_seeds=None, welch=None, paired_seeds=None)
            continue
        shared = [s for s in entry["seeds"] if s in base_runs]
        if not shared:
            raise ConfigError(f"system {entry['system']!r} shares no seed with the baseline {baseline!r} "
                              f"({entry['seeds']} vs {sorted(base_runs)}): paired tests pair runs by seed")
        mine = {r.seed: r for r in groups[entry["system"]]}
        entry["welch"] = {m: welch_t_test(base_entry[m]["values"], entry[m]["values"]) for m in ("bleu", "tok_bleu")}
        per_seed: dict[str, dict[str, list[float]]] = {"bleu": {}, "tok_bleu": {}}
        for t in tests:
            for m in per_seed:
                per_seed[m][t] = []
            for s in shared:
                a, b = base_runs[s], mine[s]
                p_det, _ = _paired([(baseline, detok[id(a)]), (entry["system"], detok[id(b)])],
                                   sel_detok, False, lowercase, t)
                p_tok, _ = _paired([(baseline, a.hyps), (entry["system"], b.hyps)], sel, True, lowercase, t)
                per_seed["bleu"][t].append(p_det)
                per_seed["tok_bleu"][t].append(p_tok)
        tok_a = [h for s in shared for h in base_runs[s].hyps]
        tok_b = [h for s in shared for h in mine[s].hyps]
        refs_tok = sel * len(shared)
        det_a = [h for s in shared for h in detok[id(base_runs[s])]]
        det_b = [h for s in shared for h in detok[id(mine[s])]]
        refs_det = sel_detok * len(shared)
        p: dict[str, dict[str, float]] = {"bleu": {}, "tok_bleu": {}}
        for t in tests:
            p["bleu"][t], sigs[f"bleu_{t}"] = _paired([(baseline, det_a), (entry["system"], det_b)], refs_det,
                                                     False, lowercase, t)
            p["tok_bleu"][t], sigs[f"tok_bleu_{t}"] = _paired([(baseline, tok_a), (entry["system"], tok_b)], refs_tok,
                                                             True, lowercase, t)
        entry["p_concat"] = p
        entry["p_per_seed"] = per_seed
        entry["significant_seeds"] = {m: {t: sum(x < ALPHA for x in ps) for t, ps in per_seed[m].items()}
                                      for m in per_seed}
        entry["paired_seeds"] = shared
    return {"baseline": baseline, "sentences": len(sel), "lowercase": lowercase, "lang": lang, "alpha": ALPHA,
            "systems": systems, "signatures": sigs}


def _fmt(ms: dict[str, Any]) -> str:
    return f"{ms['mean']:.2f} ± {ms['sd']:.2f}" if ms["sd"] is not None else f"{ms['mean']:.2f}"


def _p(x: float | None) -> str:
    return "–" if x is None else (f"{x:.4f}" if x >= 1e-4 else f"{x:.1e}")


def _per_seed(e: dict[str, Any], metric: str, test: str) -> str:
    ps = (e["p_per_seed"] or {}).get(metric, {}).get(test)
    if ps is None:
        return "–"
    k = e["significant_seeds"][metric][test]
    return f"{', '.join(_p(x) for x in ps)} ({k}/{len(ps)})"


def _welch(e: dict[str, Any], metric: str) -> str:
    w = (e["welch"] or {}).get(metric)
    if w is None:
        return "–"
    return "n/a" if w["p"] is None else _p(w["p"])


METRIC_TITLES = {"bleu": "Detokenized BLEU (`bleu`)", "tok_bleu": "Tokenized BLEU (`tok_bleu`)"}


def to_markdown(result: dict[str, Any]) -> str:
    """The comparison as markdown: one table per BLEU (one row per system), what each p-value
    column measures, the signatures and the per-run scores."""
    tests = sorted({t for e in result["systems"] for t in ((e["p_concat"] or {}).get("bleu") or {})},
                   key=["bs", "ar"].index)
    alpha = result.get("alpha", ALPHA)
    out = ""
    for metric, title in METRIC_TITLES.items():
        head = ["system", "seeds", "mean ± sd", "p Welch (seeds)"]
        head += [f"p {t} per seed (k/n < {alpha})" for t in tests] + [f"p {t} concatenated" for t in tests]
        rows = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for e in result["systems"]:
            name = f"{e['system']} (baseline)" if e["baseline"] else e["system"]
            cells = [name, ",".join(map(str, e["seeds"])), _fmt(e[metric]), _welch(e, metric)]
            cells += [_per_seed(e, metric, t) for t in tests]
            cells += [_p(((e["p_concat"] or {}).get(metric) or {}).get(t)) for t in tests]
            rows.append("| " + " | ".join(cells) + " |")
        out += "\n".join(rows) + "\n\n"
    out += (f"{result['sentences']} test sentences; two-sided tests against {result['baseline']}. "
            f"**p Welch (seeds)**: Welch's t-test on the per-seed BLEU scores — the only column that counts "
            f"the variance between training seeds (n/a: fewer than 2 seeds per system, or no variance). "
            f"**per seed**: sacreBLEU's paired test of each seed of the system against the same seed of the "
            f"baseline (p of each paired seed, and in how many of them p < {alpha}). **concatenated**: one paired "
            f"test on the seed-paired concatenation of all seeds — test-set sampling variance only, it treats "
            f"the seeds' translations of the same sentences as independent and ignores seed variance. "
            f"bs: paired bootstrap, {BS_SAMPLES} resamples; ar: approximate randomization, {AR_TRIALS} trials.\n\n")
    for k, v in result["signatures"].items():
        out += f"- `{k}`: `{v}`\n"
    per_run = ", ".join(f"{e['system']} s{x['seed']}: {x['bleu']:.2f}/{x['tok_bleu']:.2f}"
                        for e in result["systems"] for x in e["runs"])
    return out + f"\nPer run (detok/tok BLEU): {per_run}\n"
