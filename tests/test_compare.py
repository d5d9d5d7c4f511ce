"""``synprep compare``: BLEU mean ± sd per system over seeds; against the baseline,
Welch's t-test over the seeds' BLEU, sacreBLEU's paired bootstrap / approximate randomization per
seed and on the seed-paired concatenation."""

from __future__ import annotations

import json
import math
import statistics

import pytest
from helpers import run_cli

from synprep.errors import ConfigError
from synprep.train.compare import compare_runs, read_run, welch_t_test
from synprep.train.config import TrainConfig
from synprep.train.metrics import bleu_scores

REFS = [f"a man number {i} is riding a red bike down the street ." for i in range(60)]


def _write_run(root, name, seed, hyps, syntax="gated", lines=None):
    d = root / f"{name}.seed{seed}"
    d.mkdir()
    (d / "config.json").write_text(TrainConfig(syntax=syntax, seed=seed).to_json())
    (d / "test.hyp").write_text("".join(h + "\n" for h in hyps))
    if lines:
        (d / "test.lines").write_text("".join(f"{n}\n" for n in lines))
    return d


def _bad(ref, k):
    """A hypothesis with the last k words wrong."""
    w = ref.split()
    return " ".join(w[: len(w) - k] + ["xx"] * k)


@pytest.fixture
def runs(tmp_path):
    dirs = []
    for seed in (1, 2, 3):
        # baseline: 4 wrong words per sentence; good: 1 wrong word (clearly better, every seed);
        # same: as good as the baseline, its errors on other sentences (a near-identical output
        # is no test of the wrapper: sacreBLEU's AR counts only shuffles *above* the real
        # difference, so a system differing in one sentence gets a tiny AR p-value)
        dirs.append(_write_run(tmp_path, "vanilla", seed, [_bad(r, 4 if (i + seed) % 3 else 3) for i, r in enumerate(REFS)],
                               syntax="vanilla"))
        dirs.append(_write_run(tmp_path, "good", seed, [_bad(r, 1) for r in REFS]))
        same = [_bad(r, 4 if (i + seed + 1) % 3 else 3) for i, r in enumerate(REFS)]
        dirs.append(_write_run(tmp_path, "same", seed, same, syntax="avg"))
    (tmp_path / "ref.txt").write_text("".join(r + "\n" for r in REFS))
    return tmp_path, dirs


def test_means_sds_and_p_values(runs):
    root, dirs = runs
    result = compare_runs([read_run(d) for d in dirs], REFS, baseline="vanilla")
    by = {e["system"]: e for e in result["systems"]}
    assert list(by) == ["vanilla", "good", "same"] and by["vanilla"]["p_concat"] is None
    for name, e in by.items():
        per_seed = [bleu_scores(read_run(root / f"{name}.seed{s}").hyps, REFS)["bleu"] for s in (1, 2, 3)]
        assert e["bleu"]["values"] == per_seed and e["seeds"] == [1, 2, 3]
        assert e["bleu"]["mean"] == round(statistics.fmean(per_seed), 2)
        assert e["bleu"]["sd"] == round(statistics.stdev(per_seed), 2)
    assert by["good"]["bleu"]["sd"] == 0.0
    for metric in ("bleu", "tok_bleu"):
        assert by["good"]["p_concat"][metric]["bs"] < 0.01 and by["good"]["p_concat"][metric]["ar"] < 0.01
        assert by["same"]["p_concat"][metric]["bs"] > 0.05 and by["same"]["p_concat"][metric]["ar"] > 0.05
        # better in every seed on its own; the same quality in none
        assert by["good"]["significant_seeds"][metric] == {"bs": 3, "ar": 3}
        assert by["same"]["significant_seeds"][metric] == {"bs": 0, "ar": 0}
        assert max(by["good"]["p_per_seed"][metric]["bs"]) < 0.01 and min(by["same"]["p_per_seed"][metric]["bs"]) > 0.05
        # every seed of both scores the same: no seed variance, so no t statistic
        assert by["good"]["welch"][metric]["p"] is None and "no variance" in by["good"]["welch"][metric]["reason"]
    assert "bs:1000" in result["signatures"]["bleu_bs"] and "ar:10000" in result["signatures"]["tok_bleu_ar"]
    assert "tok:13a" in result["signatures"]["bleu"] and "tok:none" in result["signatures"]["tok_bleu"]


def test_cli_writes_markdown_and_json(runs):
    root, dirs = runs
    proc = run_cli("compare", *map(str, dirs), "--ref", str(root / "ref.txt"), "--baseline", "vanilla",
                   "--json", str(root / "c.json"), "--test", "bs")
    table = proc.stdout.splitlines()
    assert table[0] == "**Detokenized BLEU (`bleu`)**"
    assert table[2].startswith("| system | seeds | mean ± sd | p Welch (seeds) | p bs per seed")
    assert table[4].startswith("| vanilla (baseline) | 1,2,3 |")
    assert "**Tokenized BLEU (`tok_bleu`)**" in table
    data = json.loads((root / "c.json").read_text())
    assert data["baseline"] == "vanilla" and "ar" not in data["systems"][1]["p_concat"]["bleu"]
    assert "ar" not in data["systems"][1]["p_per_seed"]["bleu"] and "ar per seed" not in proc.stdout
    assert "| good | 1,2,3 | " in proc.stdout and "(3/3) |" in proc.stdout


def test_inconsistent_runs_are_refused(runs, tmp_path):
    root, dirs = runs
    odd = _write_run(tmp_path, "vanilla", 9, REFS, syntax="pure")
    with pytest.raises(ConfigError, match="differ in syntax"):
        compare_runs([read_run(d) for d in [*dirs, odd]], REFS)
    other_lines = _write_run(tmp_path, "x", 1, REFS[:59], lines=list(range(2, 61)))
    with pytest.raises(ConfigError, match="other reference lines"):
        compare_runs([read_run(dirs[0]), read_run(other_lines)], REFS)
    with pytest.raises(ConfigError, match="none of the systems"):
        compare_runs([read_run(dirs[0])], REFS, baseline="transformer")


# --- Welch's t-test over seeds: known answers ------------------------------------------------------
def _t_two_sided_closed_form(t, df):
    """Two-sided p of Student's t for df = 2 and 4 (closed-form CDFs, e.g. Wikipedia "Student's
    t-distribution", table of the CDF for small ν) — independent of the incomplete beta."""
    t = abs(t)
    if df == 2:
        return 1 - t / math.sqrt(2 + t * t)
    if df == 4:
        x = t / math.sqrt(1 + t * t / 4)
        return 1 - 0.75 * x * (1 - t * t / (12 * (1 + t * t / 4)))
    raise AssertionError(df)


def _t_two_sided_numeric(t, df, steps=20000):
    """Two-sided p by Simpson integration of the t density over [0, |t|]."""
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    f = [c * (1 + x * x / df) ** (-(df + 1) / 2) for x in (abs(t) * i / steps for i in range(steps + 1))]
    area = abs(t) / steps / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))
    return 1 - 2 * area


@pytest.mark.parametrize(("base", "system", "t", "df"), [
    # equal sample variances and sizes: df = 2 (n - 1) exactly; t by hand
    ([7.0, 9.0], [10.0, 12.0], 3 / math.sqrt(2), 2),          # s² = 2 both: t = 3 / sqrt(2/2 + 2/2)
    ([7.0, 8.0, 9.0], [9.0, 10.0, 11.0], 2 / math.sqrt(2 / 3), 4),  # s² = 1 both: t = 2 / sqrt(1/3 + 1/3)
])
def test_welch_matches_the_t_distribution_closed_form(base, system, t, df):
    w = welch_t_test(base, system)
    assert w["t"] == pytest.approx(t, rel=1e-12) and w["df"] == pytest.approx(df, rel=1e-12)
    assert w["p"] == pytest.approx(_t_two_sided_closed_form(t, df), rel=1e-9)
    assert welch_t_test(system, base)["t"] == pytest.approx(-t) and welch_t_test(system, base)["p"] == pytest.approx(w["p"])


def test_welch_with_unequal_variances_uses_welch_satterthwaite():
    # the Multi30k measurement of docs/train.md: gated vs vanilla, 3 seeds each
    vanilla, gated = [8.43, 7.83, 6.95], [8.93, 10.01, 7.37]
    va, vg = statistics.variance(vanilla) / 3, statistics.variance(gated) / 3
    t = (statistics.fmean(gated) - statistics.fmean(vanilla)) / math.sqrt(va + vg)
    df = (va + vg) ** 2 / (va ** 2 / 2 + vg ** 2 / 2)
    w = welch_t_test(vanilla, gated)
    assert w["t"] == pytest.approx(t, rel=1e-12) and w["df"] == pytest.approx(df, rel=1e-12)
    assert 2 < df < 4  # not the pooled-variance df (4): Welch-Satterthwaite
    assert w["p"] == pytest.approx(_t_two_sided_numeric(t, df), abs=1e-7)
    assert w["p"] == pytest.approx(0.3208, abs=5e-4)  # far from the concatenated test's 0.001


def test_welch_needs_two_seeds_per_system_and_some_variance():
    assert welch_t_test([8.0], [9.0, 10.0])["p"] is None
    assert "needs >= 2 seeds" in welch_t_test([8.0, 9.0], [9.0])["reason"]
    assert "no variance" in welch_t_test([8.0, 8.0], [9.0, 9.0])["reason"]
    assert welch_t_test([8.0, 8.0], [9.0, 10.0])["df"] == pytest.approx(1.0)  # one side's variance only


# --- per-seed tests vs the concatenation -------------------------------------------------------------
def test_one_lucky_seed_is_significant_concatenated_but_not_per_seed_or_over_seeds(tmp_path):
    """A system much better than the baseline in seed 1 only and as good in seeds 2 and 3: the
    concatenated test calls it significant, the per-seed tests say 1 of 3 seeds and Welch's
    test over the seeds' BLEU says the gap is not beyond the seed variance."""
    dirs = []
    for seed in (1, 2, 3):
        dirs.append(_write_run(tmp_path, "base", seed, [_bad(r, 4 if (i + seed) % (seed + 1) else 3)
                                                       for i, r in enumerate(REFS)], syntax="vanilla"))
        lucky = ([_bad(r, 1) for r in REFS] if seed == 1 else
                 [_bad(r, 4 if (i + seed + 1) % (seed + 1) else 3) for i, r in enumerate(REFS)])
        dirs.append(_write_run(tmp_path, "lucky", seed, lucky))
    dirs.append(_write_run(tmp_path, "single", 2, [_bad(r, 1) for r in REFS]))
    result = compare_runs([read_run(d) for d in dirs], REFS, baseline="base")
    by = {e["system"]: e for e in result["systems"]}
    lucky, base = by["lucky"], by["base"]
    assert base["welch"] is None and base["p_per_seed"] is None
    assert lucky["paired_seeds"] == [1, 2, 3]
    for metric in ("bleu", "tok_bleu"):
        assert lucky["p_concat"][metric]["bs"] < 0.01 and lucky["p_concat"][metric]["ar"] < 0.01
        for test in ("bs", "ar"):
            p1, p2, p3 = lucky["p_per_seed"][metric][test]
            assert p1 < 0.01 and p2 > 0.05 and p3 > 0.05
            assert lucky["significant_seeds"][metric][test] == 1
        # Welch from the per-seed scores, recomputed here
        b, s = base[metric]["values"], lucky[metric]["values"]
        assert s[0] > s[1] == b[1] and s[2] == b[2]
        vb, vs = statistics.variance(b) / 3, statistics.variance(s) / 3
        t = (statistics.fmean(s) - statistics.fmean(b)) / math.sqrt(vb + vs)
        df = (vb + vs) ** 2 / (vb ** 2 / 2 + vs ** 2 / 2)
        w = lucky["welch"][metric]
        assert w["t"] == pytest.approx(t) and w["df"] == pytest.approx(df)
        assert w["p"] == pytest.approx(_t_two_sided_numeric(t, df), abs=1e-7) and w["p"] > 0.3
        # one seed: a per-seed test, but no test over seeds
        single = by["single"]
        assert single["paired_seeds"] == [2] and single["significant_seeds"][metric]["bs"] == 1
        assert single["welch"][metric]["p"] is None and "needs >= 2 seeds" in single["welch"][metric]["reason"]
    from synprep.train.compare import to_markdown

    md = to_markdown(result)
    assert "| lucky | 1,2,3 | " in md and "(1/3) |" in md and "| single | 2 | " in md and "| n/a |" in md
