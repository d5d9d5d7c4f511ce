"""Traps and misleading messages: one-line messages, exit codes.

Each test runs the command as a user would (``python -m synprep``) and asserts the last stderr line
and the exit status; the real CoNLL 2018 scorer scores ``synprep parse evaluate``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import SAMPLE_DATA, run_cli


def last_line(proc) -> str:
    return proc.stderr.strip().splitlines()[-1]


# --- item 8: --no-clean with cleaning bounds --------------------------------------------------------


def test_no_clean_with_cleaning_bounds_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("pipeline", "--src", str(SAMPLE_DATA / "valid.de"), "--tgt", str(SAMPLE_DATA / "valid.en"), "-s",
                   "de", "-t", "en", "--out", str(out), "--no-clean", "--ratio", "2", "--max-len", "80", "--no-cache",
                   check=False)
    assert proc.returncode == 2
    assert last_line(proc) == ("synprep: error: --ratio, --max-len have no effect with --no-clean (the split is not "
                               "cleaned): leave them out")
    assert not out.exists()
    proc = run_cli("pipeline", "--src", str(SAMPLE_DATA / "valid.de"), "--tgt", str(SAMPLE_DATA / "valid.en"), "-s",
                   "de", "-t", "en", "--out", str(out), "--no-clean", "--min-len", "2", "--no-cache", check=False)
    assert proc.returncode == 2 and "--min-len has no effect with --no-clean" in last_line(proc)


# --- item 10: cleaning that keeps nothing ------------------------------------------------------------

EN = ["I like green tea very much .", "The station is near the big park .", "We will go to Tokyo tomorrow morning .",
      "This book was written by my friend ."]
JA = ["私は緑茶がとても好きです。", "駅は大きな公園の近くにあります。", "私たちは明日の朝東京に行きます。", "この本は私の友達が書きました。"]


def test_en_ja_cleaning_that_drops_every_line_names_the_reason_and_the_fix(tmp_path: Path, stanza_dir: Path) -> None:
    src, tgt, out = tmp_path / "t.en", tmp_path / "t.ja", tmp_path / "out"
    src.write_text("\n".join(EN * 3) + "\n", encoding="utf-8")
    tgt.write_text("\n".join(JA * 3) + "\n", encoding="utf-8")
    proc = run_cli("pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "en", "-t", "ja", "--out", str(out),
                   "--no-cache", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", check=False)
    assert proc.returncode == 2
    text = out / "text"
    assert last_line(proc) == (
        f"synprep: error: {text}/train.tok.en, {text}/train.tok.ja: cleaning dropped all 12 pairs (ratio 12): the "
        f"length ratio (--ratio 1.5) compares space-separated tokens, and ja is written without spaces between "
        f"words, so a ja line is one or a few tokens: segment the ja side into words before synprep (e.g. with "
        f"MeCab or a parser's tokenizer), or run with --no-clean (only pairs with an empty side are dropped)")
    assert not (text / "train.clean.en").exists() and not (text / "train.dropped.tsv").exists()  # nothing half-written


def test_a_cleaning_that_keeps_nothing_names_the_bound_behind_it() -> None:
    from synprep.text.clean import CleanStats, clean_pairs, nothing_kept_error

    stats = CleanStats()
    for r in clean_pairs([("a b c", "d e f")] * 3, max_len=2):
        stats.add(r)
    err = nothing_kept_error(stats, src_lang="de", tgt_lang="en", ratio=1.5, min_len=1, max_len=2, path="x, y")
    assert str(err) == ("x, y: cleaning dropped all 3 pairs (too_long 3): the bound behind most drops is at most 2 "
                        "tokens per side (--max-len): change it, or run with --no-clean")
    kept = CleanStats()
    kept.add(next(clean_pairs([("a", "b")])))
    assert nothing_kept_error(kept, src_lang="en", tgt_lang="ja", ratio=1.5, min_len=1, max_len=2) is None


# --- item 11: evaluate's case warning, synprep parse evaluate ----------------------------------------


def test_evaluate_warns_when_lowercase_hypotheses_meet_cased_references(tmp_path: Path) -> None:
    hyp, ref = tmp_path / "hyp", tmp_path / "ref"
    hyp.write_text("the cat sat on the mat .\nhello , world .\n", encoding="utf-8")
    ref.write_text("The cat sat on the mat .\nHello , World .\n", encoding="utf-8")
    warning = ("synprep: the hypotheses are all lowercase and the references are not: BLEU is case-sensitive, so "
               "every capitalised reference word counts as wrong; add --lowercase for case-insensitive BLEU")
    proc = run_cli("evaluate", "--hyp", str(hyp), "--ref", str(ref), "--json")
    assert proc.stderr.splitlines()[0] == warning and json.loads(proc.stdout)["bleu"] < 100
    proc = run_cli("evaluate", "--hyp", str(hyp), "--ref", str(ref), "--json", "--lowercase")
    assert "lowercase" not in proc.stderr.split("|")[0] and json.loads(proc.stdout)["bleu"] == 100
    proc = run_cli("evaluate", "--hyp", str(ref), "--ref", str(ref), "--json")  # cased hypotheses: nothing to say
    assert "hypotheses are all lowercase" not in proc.stderr


def _blocks(path: Path, n: int) -> list[list[str]]:
    blocks, cur = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line:
            if cur:
                blocks.append(cur)
                cur = []
            if len(blocks) == n:
                break
            continue
        cur.append(line)
    return blocks


def test_parse_evaluate_scores_a_parse_with_the_conll_2018_scorer(shared_data: Path, tmp_path: Path) -> None:
    """A copy of 20 gold sentences with 3 heads, 2 relations and 1 UPOS changed: the scores are exact."""
    blocks = _blocks(shared_data / "ud" / "de_gsd-ud-test.conllu", 20)
    gold, pred = tmp_path / "gold.conllu", tmp_path / "pred.conllu"
    gold.write_text("".join("\n".join(b) + "\n\n" for b in blocks), encoding="utf-8")
    words = [(b, i) for b, block in enumerate(blocks) for i, line in enumerate(block)
             if line[0].isdigit() and "-" not in line.split("\t")[0] and "." not in line.split("\t")[0]]
    n = len(words)
    changed = [row.split("\t") for row in (blocks[b][i] for b, i in words)]
    edits = {}
    for k in (0, 5, 9):  # heads: to another word of the sentence (never itself)
        cols = list(changed[k])
        cols[6] = "1" if cols[0] != "1" and cols[6] != "1" else "2" if cols[0] != "2" and cols[6] != "2" else "3"
        edits[k] = cols
    for k in (20, 30):  # relations only
        cols = list(changed[k])
        cols[7] = "dep" if cols[7] != "dep" else "amod"
        edits[k] = cols
    cols = list(changed[40])
    cols[3] = "X" if cols[3] != "X" else "NOUN"
    edits[40] = cols
    for k, cols in edits.items():
        b, i = words[k]
        blocks[b][i] = "\t".join(cols)
    pred.write_text("".join("\n".join(b) + "\n\n" for b in blocks), encoding="utf-8")
    proc = run_cli("parse", "evaluate", str(gold), str(pred), "--json")
    got = json.loads(proc.stdout)
    assert got == {"Words": 100.0, "UPOS": round(100 * (n - 1) / n, 2), "UAS": round(100 * (n - 3) / n, 2),
                   "LAS": round(100 * (n - 5) / n, 2), "gold_words": n}
    text = run_cli("parse", "evaluate", str(gold), str(pred)).stdout
    assert text == (f"UAS {100 * (n - 3) / n:.2f}  LAS {100 * (n - 5) / n:.2f}  UPOS {100 * (n - 1) / n:.2f}  "
                    f"Words 100.00  ({n} gold words)\n")
    bad = tmp_path / "other.conllu"
    bad.write_text("".join("\n".join(b) + "\n\n" for b in _blocks(shared_data / "ud" / "en_ewt-ud-test.conllu", 2)),
                   encoding="utf-8")
    proc = run_cli("parse", "evaluate", str(gold), str(bad), check=False)
    assert proc.returncode == 2 and last_line(proc).startswith(f"synprep: error: {bad}: CoNLL 2018 scorer: ")
    assert len(proc.stderr.strip().splitlines()) == 1


# --- item 12: a language name that is not the code ---------------------------------------------------


@pytest.mark.parametrize(("given", "iso"), [("ger", "de"), ("deu", "de"), ("german", "de"), ("eng", "en")])
def test_a_three_letter_code_or_name_is_answered_with_the_iso_code(stanza_dir: Path, tmp_path: Path, given: str,
                                                                    iso: str) -> None:
    msg = f"synprep: error: {given!r} is not a language code the parsers use: it is {iso!r} (ISO 639-1); run with {iso} instead"
    proc = run_cli("parse", "-l", given, "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep", "--no-cache",
                   input="Ein Test .\n", check=False)
    assert proc.returncode == 2 and last_line(proc) == msg and "download" not in proc.stderr
    proc = run_cli("models", "download", given, "--dir", str(tmp_path / "models"), check=False)
    assert proc.returncode == 2 and last_line(proc) == msg and not (tmp_path / "models").exists()
