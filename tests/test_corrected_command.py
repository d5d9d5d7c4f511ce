"""A command refused for a mistake found after the folder's configuration was written leaves a folder
that accepts the corrected command, while no shard was written (nothing to protect); once a shard
exists, the folder's configuration and inputs are kept, and the refusal says what differs."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli

TREES = ("(ROOT (S (VP (VVPP Gekauft)) (VAFIN hat) (PPER er) (NP (ART das) (NN Haus))) ($. .))\n"
         "(ROOT ($LRB -LRB-) (S (ITJ Ja) ($LRB -RRB-) (VVFIN sagte) (PPER er)) ($. .))\n")


def stanza(stanza_dir: Path) -> list[str]:
    return ["--no-cache", "--stanza-dir", str(stanza_dir), "--stanza-package", "synprep"]


def test_trees_refused_in_raw_mode_then_accepted_with_tokenized(tmp_path: Path, stanza_dir: Path) -> None:
    """The raw-mode refusal advises --tokenized; the same --out takes it (logged), and nothing of the
    raw run's text is reused."""
    trees = tmp_path / "trees.txt"
    trees.write_text(TREES, encoding="utf-8")
    raw, tok, tgt = tmp_path / "raw.de", tmp_path / "tok.de", tmp_path / "tgt.en"
    raw.write_text("Gekauft hat er das Haus.\n(Ja) sagte er, und ging.\n", encoding="utf-8")
    tok.write_text("Gekauft hat er das Haus .\n( Ja ) sagte er .\n", encoding="utf-8")
    tgt.write_text("He bought the house .\nYes , he said .\n", encoding="utf-8")
    out = tmp_path / "out"
    common = ["--tgt", str(tgt), "-s", "de", "-t", "en", "--trees", str(trees), "--merges", "20", "--no-clean",
              "--out", str(out), *stanza(stanza_dir)]
    proc = run_cli("pipeline", "--src", str(raw), *common, check=False)
    assert proc.returncode == 2 and "with --tokenized)" in proc.stderr.splitlines()[-1]
    assert (out / "text" / "train.tok.de").exists()  # the raw run's text, made before the trees were read

    proc = run_cli("pipeline", "--src", str(tok), "--tokenized", *common)
    assert f"synprep: {out} holds no shard yet: its configuration is replaced by this run's (tokenized: the " \
           f"folder has false, this run true)" in proc.stderr
    assert json.loads((out / "pipeline.json").read_text(encoding="utf-8"))["tokenized"] is True
    assert (out / "text" / "train.tok.de").read_text(encoding="utf-8") == tok.read_text(encoding="utf-8")
    assert json.loads((out / "inputs.json").read_text(encoding="utf-8"))["train"]["src"]["path"] == str(tok)



def test_wrong_parse_src_then_the_right_one(tmp_path: Path, stanza_dir: Path) -> None:
    """A --parse-src that does not hold the pieces' words is refused; the right file is then accepted (no
    shard was written)."""
    src, tgt = tmp_path / "bpe.de", tmp_path / "bpe.en"
    src.write_text("das h@@ aus ist gro@@ ß .\nes regnet .\n", encoding="utf-8")
    tgt.write_text("the house is big .\nit rains .\n", encoding="utf-8")
    wrong, right = tmp_path / "wrong.de", tmp_path / "right.de"
    wrong.write_text("Das Haus ist klein .\nEs regnet .\n", encoding="utf-8")
    right.write_text("Das Haus ist groß .\nEs regnet .\n", encoding="utf-8")
    out = tmp_path / "out"
    common = ["--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--out", str(out), *stanza(stanza_dir)]
    proc = run_cli("annotate", *common, "--parse-src", str(wrong), check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(f"synprep: error: {wrong}:1: word 4 is 'klein' here")

    proc = run_cli("annotate", *common, "--parse-src", str(right))
    assert (f"synprep: the train split of {out} has no shard yet: its inputs are recorded anew (--parse-src: the "
            f"folder has {wrong}, this run {right} (other content)); removed what the earlier ones made: dict.txt"
            ) in proc.stderr
    assert sorted(p.name for p in out.glob("*.h5")) == ["train.00000.h5"]


def test_a_refusal_of_other_input_says_what_differs() -> None:
    """A file edited since, another file given, an input given on one side only."""
    from synprep.pipeline.folder import _input_change

    old, new = {"path": "a.de", "sha256": "1" * 64}, {"path": "a.de", "sha256": "2" * 64}
    assert _input_change("parse_src", old, new) == "--parse-src: a.de changed since (sha256 11111111, now 22222222)"
    assert _input_change("src", old, {**new, "path": "b.de"}) == "--src: the folder has a.de, this run b.de (other content)"
    assert _input_change("trees", None, new) == "--trees: the folder has none, this run a.de"
    assert _input_change("trees", old, None) == "--trees: the folder has a.de, this run none"
