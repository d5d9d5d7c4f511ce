"""The signature and the configuration name every input that determines the output."""

from __future__ import annotations

import json

import pytest
from helpers import run_cli

from synprep.parse.base import ParserSpec
from synprep.parse.run import parser_identity
from synprep.parse.source import produces_trees
from synprep.shards import check_dir
from synprep.shards.reader import open_split
from synprep.signature import file_sha256
from tests.test_real_input import GERMAN, TREES, stanza_args


def signature_line(proc) -> str:
    return proc.stderr.strip().splitlines()[-1]


def test_trees_are_in_the_signature(tmp_path, stanza_dir):
    """With and without --trees, and with two different trees files: three signatures, three sets of gaps."""
    src, tgt = tmp_path / "s.de", tmp_path / "t.en"
    src.write_text("\n".join(GERMAN) + "\n")
    tgt.write_text("I swim .\nThe dog runs fast .\nShe reads books .\nWe laugh .\n")
    trees, flat = tmp_path / "trees.txt", tmp_path / "flat.txt"
    trees.write_text("\n".join(TREES) + "\n")
    flat.write_text("".join(f"(ROOT (S {' '.join(f'(X {w})' for w in line.split())}))\n" for line in GERMAN))
    base = ["pipeline", "--src", str(src), "--tgt", str(tgt), "-s", "de", "-t", "en", "--no-clean", "--merges", "20",
            *stanza_args(stanza_dir, tmp_path / "c.db")]
    sigs, gaps, configs = [], [], []
    for name, extra in (("none", []), ("trees", ["--trees", str(trees)]), ("flat", ["--trees", str(flat)])):
        out = tmp_path / name
        sigs.append(signature_line(run_cli(*base, "--out", str(out), *extra)))
        assert check_dir(out).ok
        [shard] = open_split(out, "train")
        assert shard.attrs["signature"] == sigs[-1]
        gaps.append([shard[k].gaps_cnf.tolist() for k in range(len(shard))])
        configs.append(shard.attrs["config"])
    assert len(set(sigs)) == 3 and len({json.dumps(g) for g in gaps}) == 3
    assert "trees:" not in sigs[0]
    assert f"|trees:{file_sha256(trees)[:8]}|" in sigs[1] and f"|trees:{file_sha256(flat)[:8]}|" in sigs[2]
    assert configs[1]["trees_sha256"] == file_sha256(trees) and "trees_sha256" not in configs[0]
    # the German offline models have no constituency model: the configuration says so
    assert configs[0]["parser"]["constituency"] is False
    assert (tmp_path / "none" / "manifest.json").read_text().count("constituency\": true") == 0


def test_constituency_is_what_ran(stanza_dir):
    en = parser_identity(ParserSpec(lang="en", dir=str(stanza_dir), package="synprep"))
    de = parser_identity(ParserSpec(lang="de", dir=str(stanza_dir), package="synprep"))
    assert produces_trees("stanza", en) and not produces_trees("stanza", de)


def _gold(shared_data, path, start, n):
    blocks = (shared_data / "ud" / "en_pud-ud-test.conllu").read_text(encoding="utf-8").split("\n\n")
    path.write_text("\n\n".join(blocks[start:start + n]) + "\n\n", encoding="utf-8")
    texts = [x[len("# text = "):] for b in blocks[start:start + n] for x in b.splitlines() if x.startswith("# text = ")]
    return path, texts


def test_conllu_files_are_in_the_signature(shared_data, tmp_path):
    """Two CoNLL-U files: two signatures naming each file's digest; the tokens are named as the CoNLL-U's."""
    de = (shared_data / "ud" / "de_pud-ud-test.conllu").read_text(encoding="utf-8")
    de_texts = [x[len("# text = "):] for x in de.splitlines() if x.startswith("# text = ")]
    sigs = []
    for k, start in enumerate((0, 30)):
        gold, _ = _gold(shared_data, tmp_path / f"g{k}.conllu", start, 30)
        tgt = tmp_path / f"t{k}.de"
        tgt.write_text("\n".join(de_texts[start:start + 30]) + "\n", encoding="utf-8")
        out = tmp_path / f"out{k}"
        proc = run_cli("pipeline", "--parser", "conllu", "--conllu", str(gold), "--tgt", str(tgt), "-s", "en",
                       "-t", "de", "--merges", "100", "--out", str(out))
        sig = signature_line(proc)
        sigs.append(sig)
        assert f"|parser:conllu#{file_sha256(gold)[:8]}|" in sig
        assert "|tok:conllu/sacremoses-" in sig and "|tok:sacremoses" not in sig
        [shard] = open_split(out, "train")
        assert shard.attrs["signature"] == sig and shard.attrs["config"]["conllu_sha256"] == file_sha256(gold)
        assert check_dir(out).ok
    assert sigs[0] != sigs[1]
    # a later split of the first folder from another CoNLL-U file: accepted, with its own digest
    gold2 = tmp_path / "g1.conllu"
    proc = run_cli("pipeline", "--parser", "conllu", "--conllu", str(gold2), "--tgt", str(tmp_path / "t1.de"),
                   "-s", "en", "-t", "de", "--split", "valid", "--out", str(tmp_path / "out0"))
    assert signature_line(proc) == sigs[0].replace(file_sha256(tmp_path / "g0.conllu")[:8], file_sha256(gold2)[:8])
    assert check_dir(tmp_path / "out0").ok


def test_text_files_no_recorded_input_made_are_remade_not_reused(shared_data, tmp_path):
    """A fresh folder holding ``text/train.tok.de`` of another corpus (no ``inputs.json`` records the split): the
    run removes it and tokenizes its own target, so the folder is byte for byte the one an empty folder gives."""
    from pipeline_runs import folder_bytes

    de = (shared_data / "ud" / "de_pud-ud-test.conllu").read_text(encoding="utf-8")
    de_texts = [x[len("# text = "):] for x in de.splitlines() if x.startswith("# text = ")]
    gold, _ = _gold(shared_data, tmp_path / "g.conllu", 0, 20)
    tgt = tmp_path / "t.de"
    tgt.write_text("\n".join(de_texts[:20]) + "\n", encoding="utf-8")
    args = ["pipeline", "--parser", "conllu", "--conllu", str(gold), "--tgt", str(tgt), "-s", "en", "-t", "de",
            "--merges", "100"]
    run_cli(*args, "--out", str(tmp_path / "clean"))
    out = tmp_path / "stale"
    (out / "text").mkdir(parents=True)
    (out / "text" / "train.tok.de").write_text("\n".join(de_texts[20:40]) + "\n", encoding="utf-8")
    proc = run_cli(*args, "--out", str(out))
    assert "removed 1 file(s) of the train split" in proc.stderr and "train.tok.de" in proc.stderr
    assert folder_bytes(out) == folder_bytes(tmp_path / "clean")


@pytest.mark.parametrize(("name", "damage", "said"), [
    ("train.bpe.de", "cut", "train.bpe.de: has 17 lines, expected 20 (one per pair train.lines keeps)"),
    ("train.bpe.en", "extra", "train.bpe.en: has 21 lines, expected 20 (one per pair train.lines keeps)"),
    ("train.clean.en", "empty", "train.clean.en: has 0 lines, expected 20"),
    ("train.tok.en", "cut", "train.tok.en: has 17 lines, expected 20 (one per input line)"),
    ("train.lines", "word", "train.lines:2: 'zz' is not an input line number above 1 and at most 20"),
    ("train.dropped.tsv", "extra", "train.dropped.tsv:2: row 'x y' is not line<TAB>reason"),
])
def test_a_damaged_intermediate_file_is_one_line_naming_it_and_the_fix(shared_data, tmp_path, name, damage, said):
    """A resumed run over a cut, extended or garbled ``OUT/text/train.*`` (each once a traceback, or an error
    blamed on the user's input): one line naming the file and the fix, exit 2."""
    de = (shared_data / "ud" / "de_pud-ud-test.conllu").read_text(encoding="utf-8")
    gold, _ = _gold(shared_data, tmp_path / "g.conllu", 0, 20)
    tgt = tmp_path / "t.de"
    tgt.write_text("\n".join([x[9:] for x in de.splitlines() if x.startswith("# text = ")][:20]) + "\n")
    out = tmp_path / "out"
    args = ["pipeline", "--parser", "conllu", "--conllu", str(gold), "--tgt", str(tgt), "-s", "en", "-t", "de",
            "--merges", "100", "--out", str(out)]
    run_cli(*args, "--prepare-only")
    p = out / "text" / name
    lines = p.read_text(encoding="utf-8").splitlines()
    p.write_text({"cut": "\n".join(lines[:-3]) + "\n", "extra": "\n".join(lines) + "\nx y\n", "empty": "",
                  "word": "\n".join(["zz" if i == 1 else x for i, x in enumerate(lines)]) + "\n"}[damage])
    proc = run_cli(*args, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("synprep: error:")]
    assert said in line and line.endswith(f": a damaged intermediate file of the train split; delete {out}/text/"
                                          f"train.* (or the folder {out}) and run the command again"), line
