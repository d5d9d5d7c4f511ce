"""``synprep compare`` (issue 13): BLEU mean ± sd per system over seeds, and sacreBLEU's paired
bootstrap / approximate randomization against the baseline."""

from __future__ import annotations

import json
import statistics

import pytest

from synprep.errors import ConfigError
from synprep.train.compare import compare_runs, read_run
from synprep.train.config import TrainConfig
from synprep.train.metrics import bleu_scores
from tests.conftest import run_cli

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
    assert list(by) == ["vanilla", "good", "same"] and by["vanilla"]["p"] is None
    for name, e in by.items():
        per_seed = [bleu_scores(read_run(root / f"{name}.seed{s}").hyps, REFS)["bleu"] for s in (1, 2, 3)]
        assert e["bleu"]["values"] == per_seed and e["seeds"] == [1, 2, 3]
        assert e["bleu"]["mean"] == round(statistics.fmean(per_seed), 2)
        assert e["bleu"]["sd"] == round(statistics.stdev(per_seed), 2)
    assert by["good"]["bleu"]["sd"] == 0.0
    for metric in ("bleu", "tok_bleu"):
        assert by["good"]["p"][metric]["bs"] < 0.01 and by["good"]["p"][metric]["ar"] < 0.01
        assert by["same"]["p"][metric]["bs"] > 0.05 and by["same"]["p"][metric]["ar"] > 0.05
    assert "bs:1000" in result["signatures"]["bleu_bs"] and "ar:10000" in result["signatures"]["tok_bleu_ar"]
    assert "tok:13a" in result["signatures"]["bleu"] and "tok:none" in result["signatures"]["tok_bleu"]


def test_cli_writes_markdown_and_json(runs):
    root, dirs = runs
    proc = run_cli("compare", *map(str, dirs), "--ref", str(root / "ref.txt"), "--baseline", "vanilla",
                   "--json", str(root / "c.json"), "--test", "bs")
    table = proc.stdout.splitlines()
    assert table[0].startswith("| system | seeds | BLEU detok")
    assert table[2].startswith("| vanilla (baseline) | 1,2,3 |")
    data = json.loads((root / "c.json").read_text())
    assert data["baseline"] == "vanilla" and "ar" not in data["systems"][1]["p"]["bleu"]


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
