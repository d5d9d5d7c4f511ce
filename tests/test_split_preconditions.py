"""A later split's preconditions and the inputs are checked before any work, and a
refused command leaves nothing (no pipeline.json that would refuse the corrected command)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_cli

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"


def error_line(proc) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("extra,want", [
    ([], "no BPE codes in {out}: the test split applies the train split's codes; run the train split into {out} "
         "first, or give --codes TRAIN_OUT/code --vocab TRAIN_OUT/dict.txt"),
    (["--subword", "spm"], "no spm model in {out}: the test split applies the train split's; run the train split "
                           "into {out} first, or give --spm-model TRAIN_OUT/spm.model --vocab TRAIN_OUT/dict.txt"),
])
def test_a_later_split_without_the_train_splits_codes_is_refused_first(tmp_path, extra, want):
    """newstest2014 through the README's tokenized row ran as a train split (cleaned, its own BPE); a test
    split without the train split's codes now stops before tokenizing anything."""
    from synprep.text.tokenize import tokenize_lines

    out = tmp_path / "out"
    tok = {}
    for lang in ("de", "en"):  # sample_data's test split, Moses-tokenized as a public test set is
        tok[lang] = tmp_path / f"test.tok.{lang}"
        lines = (SAMPLE / f"test.{lang}").read_text(encoding="utf-8").splitlines()
        tok[lang].write_text("".join(x + "\n" for x in tokenize_lines(lines, lang)), encoding="utf-8")
    proc = run_cli("pipeline", "--tokenized", "--split", "test", "--src", str(tok["de"]), "--tgt", str(tok["en"]),
                   "-s", "de", "-t", "en", "--out", str(out), "--no-cache", *extra, check=False)
    assert error_line(proc) == "synprep: error: " + want.format(out=out)
    assert not out.exists()


def _gold(shared_data, tmp_path, n=20):
    blocks = (shared_data / "ud" / "en_pud-ud-test.conllu").read_text(encoding="utf-8").split("\n\n")[:n]
    gold = tmp_path / "gold.conllu"
    gold.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    de = (shared_data / "ud" / "de_pud-ud-test.conllu").read_text(encoding="utf-8")
    tgt = tmp_path / "pud.de"
    tgt.write_text("\n".join([x[9:] for x in de.splitlines() if x.startswith("# text = ")][:n]) + "\n",
                   encoding="utf-8")
    return gold, tgt


@pytest.mark.parametrize("typo,want", [
    (["-t", "english"], "synprep: error: -t/--target-lang 'english' is not a language code: english is 'en' "
                        "(ISO 639-1); run with -t en"),
    (["--conllu", "{dir}"], "synprep: error: {dir}: is a folder, not a CoNLL-U file (--conllu)"),
])
def test_a_typo_leaves_nothing_and_the_corrected_command_runs(shared_data, tmp_path, typo, want):
    gold, tgt = _gold(shared_data, tmp_path)
    folder = tmp_path / "parses"
    folder.mkdir()
    right = {"-t": "de", "--conllu": str(gold)}
    out = tmp_path / "out"
    args = {"--parser": "conllu", "--conllu": str(gold), "--tgt": str(tgt), "-s": "en", "-t": "de",
            "--merges": "100", "--out": str(out)}
    bad = {**args, typo[0]: typo[1].format(dir=folder)}
    proc = run_cli("pipeline", *[x for kv in bad.items() for x in kv], check=False)
    assert error_line(proc) == want.format(dir=folder)
    assert not (out / "pipeline.json").exists() and not (out / "text").exists()
    good = {**args, typo[0]: right[typo[0]]}
    run_cli("pipeline", *[x for kv in good.items() for x in kv])
    assert (out / "pipeline.json").exists()


def test_annotate_language_code_typo_writes_nothing(shared_data, tmp_path):
    prepared = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    out = tmp_path / "out"
    proc = run_cli("annotate", "--src", str(prepared / "test.de"), "--tgt", str(prepared / "test.en"), "-s", "german",
                   "-t", "en", "--out", str(out), "--no-cache", check=False)
    assert error_line(proc) == ("synprep: error: -s/--source-lang 'german' is not a language code: german is 'de' "
                                "(ISO 639-1); run with -s de")
    assert not out.exists()
