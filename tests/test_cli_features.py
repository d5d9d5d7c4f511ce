"""``synprep parents | relations | ldd`` (CoNLL-U line tools) and ``synprep distance`` on PTB files.

Known answers from SPEC.md §2 and §4; real data: German PUD (gold CoNLL-U with multiword tokens)
through real subword-nmt BPE (the IWSLT14 codes).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import numpy as np
import pytest
from helpers import run_cli

from synprep.cli.features import (
    detect_tree_format,
    distance_lines,
    ldd_lines,
    line_inputs,
    parents_lines,
    parse_labels,
    relations_lines,
)
from synprep.errors import InputError
from synprep.parse.conllu_io import read_conllu
from synprep.types import ParsedLine

# SPEC.md §4: "The mon@@ key eats a ban@@ ana", heads The→monkey, monkey→eats, eats=root, a→banana, banana→eats.
# Line 2 holds two sentences (hello . | It 's good .) and Moses escapes in the BPE text; line 3 failed to parse.
CONLLU = """\
# line = 1
1\tThe\t_\tDET\t_\t_\t2\tdet\t_\t_
2\tmonkey\t_\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\teats\t_\tVERB\t_\t_\t0\troot\t_\t_
4\ta\t_\tDET\t_\t_\t5\tdet\t_\t_
5\tbanana\t_\tNOUN\t_\t_\t3\tobj\t_\t_

# line = 2
# ldd_threshold = 0.01
# ldd = 1,0,root,0.9 1,2,discourse,0.1 2,1,punct,1
1\thello\t_\tINTJ\t_\t_\t0\troot\t_\t_
2\t.\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_

# line = 2
# ldd_threshold = 0.01
# ldd = 1,3,nsubj,0.5 1,3,nsubj:pass,0.25 1,2,nsubj,0.05 2,3,cop,0.98 3,0,root,0.97 4,3,punct,0.99
1\tIt\t_\tPRON\t_\t_\t3\tnsubj\t_\t_
2\t's\t_\tAUX\t_\t_\t3\tcop\t_\t_
3\t"good"\t_\tADJ\t_\t_\t0\troot\t_\t_
4\t.\t_\tPUNCT\t_\t_\t3\tpunct\t_\t_

# line = 3
# error = sentence longer than 250 words (max_words)

"""
BPE = "The mon@@ key eats a ban@@ ana\nhel@@ lo . It &apos;s &quot;@@ good@@ &quot; .\nsome words\n"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    conllu, bpe = tmp_path / "p.conllu", tmp_path / "p.bpe"
    conllu.write_text(CONLLU, encoding="utf-8")
    bpe.write_text(BPE, encoding="utf-8")
    return conllu, bpe


# --- parents -----------------------------------------------------------------------------------

def test_parents_cli_spec_answer_multi_sentence_and_failed_line(files: tuple[Path, Path]) -> None:
    conllu, bpe = files
    proc = run_cli("parents", "--conllu", str(conllu), "--bpe", str(bpe))
    # line 2: hello→root (pieces 0,1: middle 0.5), '.'→hello; sentence 2 offset by 2 words:
    # It 's "good" . = pieces 3 | 4 | 5,6,7 | 8 → "good" at 6.0
    assert proc.stdout == ("1.5 3.0 3.0 3.0 5.5 3.0 3.0\n"
                           "0.5 0.5 0.5 6.0 6.0 6.0 6.0 6.0 6.0\n"
                           "\n")
    assert "synprep: 3 lines; 1 without a parse, written as blank lines: 3 (sentence longer than 250 words" \
           in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "synprep:0.1.0|feat:parents-mean"
    first = run_cli("parents", "--conllu", str(conllu), "--bpe", str(bpe), "--mode", "first", "--eos")
    assert first.stdout.splitlines()[0] == "1.0 3.0 3.0 3.0 5.0 3.0 3.0 7.0"  # SPEC.md §4 LISA, + </s>


def test_parents_mismatch_and_counts_are_named(files: tuple[Path, Path], tmp_path: Path) -> None:
    conllu, bpe = files
    bad = tmp_path / "bad.bpe"
    bad.write_text(BPE.replace("ban@@ ana", "ban@@ anas"), encoding="utf-8")
    proc = run_cli("parents", "--conllu", str(conllu), "--bpe", str(bad), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"synprep: error: {bad}:1: BPE words differ from the parsed words at word 5: "
                                  "BPE 'bananas' vs parser 'banana'")
    parsed = list(read_conllu(conllu))
    lines = BPE.splitlines()
    with pytest.raises(InputError, match="ends before parsed line 3"):
        list(parents_lines(parsed, lines[:2]))
    with pytest.raises(InputError, match="more lines than the parse"):
        list(parents_lines(parsed, [*lines, "x"]))
    with pytest.raises(InputError, match=r"expected the parse of line 2, found '# line = 3'"):
        list(parents_lines([parsed[0], parsed[2]], lines[:2], conllu_name="p.conllu"))
    lower = [x.lower() for x in lines]
    with pytest.raises(InputError, match=r"1: .*BPE 'the' vs parser 'The'.* add --lowercase"):
        list(parents_lines(parsed, lower, path="p.bpe"))
    assert next(parents_lines(parsed, lower, lowercase=True)) == "1.5 3.0 3.0 3.0 5.5 3.0 3.0"


def test_parents_on_gold_german_pud_with_multiword_tokens(shared_data: Path, tmp_path: Path) -> None:
    from synprep.text.bpe import apply_bpe_lines
    from synprep.text.escape import escape

    blocks = (shared_data / "ud" / "de_pud-ud-test.conllu").read_text(encoding="utf-8").split("\n\n")[:40]
    conllu = tmp_path / "pud40.conllu"
    conllu.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    parsed = list(read_conllu(conllu))
    multiword = [b for b in blocks if re.search(r"^\d+-\d+\t", b, re.M)]
    assert len(multiword) >= 10  # zum, im, am, ...: the surface token is the unit
    words = [" ".join(escape(w) for w in pl.words) for pl in parsed]
    codes = shared_data / "iwslt14_de-en" / "fairseq_prepared" / "code"
    pieces = apply_bpe_lines(words, str(codes))
    out = list(parents_lines(parsed, pieces, path="pud.bpe"))
    assert len(out) == 40
    for pl, line, text in zip(parsed, pieces, out, strict=True):
        t = len(line.split())
        pos = np.array(text.split(), dtype=float)
        assert pos.shape == (t,) and pos.min() >= 0 and pos.max() <= t - 1
        # every piece's parent lies inside its head word's pieces (or its own word, for the root)
        index = next(line_inputs([ParsedLine(1, pl.sentences)], [line])).word_index
        heads = np.array(pl.sentences[0].heads)
        for p in range(t):
            w = index[p]
            target = w if heads[w] == 0 else heads[w] - 1
            span = np.flatnonzero(index == target)
            assert span[0] <= pos[p] <= span[-1]


# --- relations ---------------------------------------------------------------------------------

def test_relations_words_pieces_and_json(files: tuple[Path, Path]) -> None:
    conllu, bpe = files
    parsed = list(read_conllu(conllu))
    words = list(line_inputs(parsed))
    assert list(relations_lines(words, "depth")) == ["2 1 0 2 1", "0 1 1 1 0 1", ""]
    dist = list(relations_lines(words[:1], "distance"))[0]
    assert dist.split(" | ")[0] == "0 1 2 4 3"  # The → a: up 2 (to eats), down 2; The → banana: 2 + 1
    up = [r.split() for r in next(relations_lines(words[:1], "up")).split(" | ")]
    down = [r.split() for r in next(relations_lines(words[:1], "down")).split(" | ")]
    assert (up[0][3], down[0][3], up[0][4], down[0][4]) == ("2", "2", "2", "1")
    sub = json.loads(next(relations_lines(words[:1], "subtree", as_json=True)))
    assert sub[2] == [1, 1, 1, 1, 1] and sub[1] == [1, 1, 0, 0, 0]
    # two sentences of one line meet at the virtual root: hello → It = up 1, down 2
    two = [r.split() for r in list(relations_lines(words[1:2], "distance"))[0].split(" | ")]
    assert two[0][2] == "3"
    pieces = list(line_inputs(parsed, BPE.splitlines()))
    assert list(relations_lines(pieces[:1], "depth")) == ["2 1 1 0 2 1 1"]

    proc = run_cli("relations", "--conllu", str(conllu), "--bpe", str(bpe), "--what", "subtree", "--json")
    got = [json.loads(x) if x else None for x in proc.stdout.splitlines()]
    assert len(got) == 3 and got[2] is None and np.array(got[0]).shape == (7, 7)
    assert proc.stderr.strip().splitlines()[-1] == "synprep:0.1.0|feat:relations-subtree-pieces"


def test_distance_matrix_is_symmetric_on_real_parses(shared_data: Path) -> None:
    items = list(line_inputs(_first(shared_data / "ud" / "en_pud-ud-test.conllu", 20)))
    for text in relations_lines(items, "distance", as_json=True):
        m = np.array(json.loads(text))
        assert np.array_equal(m, m.T) and (np.diag(m) == 0).all() and (m[~np.eye(len(m), dtype=bool)] > 0).all()


def _first(path: Path, n: int):
    blocks = path.read_text(encoding="utf-8").split("\n\n")[:n]
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".conllu", delete=False, encoding="utf-8") as f:
        f.write("\n\n".join(blocks) + "\n\n")
    return read_conllu(f.name)


# --- ldd ---------------------------------------------------------------------------------------

def test_ldd_sparse_one_hot_subtypes_and_threshold(files: tuple[Path, Path]) -> None:
    conllu, _ = files
    items = list(line_inputs(read_conllu(conllu)))
    out = list(ldd_lines(items))
    assert out[0] == "1,2,det,1 2,3,nsubj,1 3,0,root,1 4,5,det,1 5,3,obj,1"  # gold: one-hot
    # line 2: nsubj + nsubj:pass summed into nsubj (0.75), sentence 2 offset by 2 words
    assert out[1] == ("1,0,root,0.9 1,2,discourse,0.1 2,1,punct,1 "
                      "3,4,nsubj,0.05 3,5,nsubj,0.75 4,5,cop,0.98 5,0,root,0.97 6,5,punct,0.99")
    assert out[2] == ""
    high = list(ldd_lines(items, threshold=0.5, as_json=True))
    assert json.loads(high[1])[:3] == [[1, 0, "root", 0.9], [2, 1, "punct", 1.0], [3, 5, "nsubj", 0.75]]


def test_ldd_dense_pieces(files: tuple[Path, Path]) -> None:
    conllu, bpe = files
    proc = run_cli("ldd", "--conllu", str(conllu), "--bpe", str(bpe), "--labels", "nsubj,root,nsubj:pass")
    rows = proc.stdout.splitlines()
    assert rows[2] == ""
    d = json.loads(rows[0])
    assert list(d) == ["nsubj", "root"]
    nsubj, root = np.array(d["nsubj"]), np.array(d["root"])
    assert nsubj.shape == (7, 7)
    # monkey (pieces 1, 2) → eats (piece 3); the root probability goes to eats' own piece
    assert nsubj.sum() == 2 and nsubj[1, 3] == nsubj[2, 3] == 1
    assert root.sum() == 1 and root[3, 3] == 1
    d2 = {k: np.array(v) for k, v in json.loads(rows[1]).items()}
    assert d2["nsubj"][3, 5] == 0.75 and d2["nsubj"][3, 6] == 0.75  # "good" has 3 pieces (5, 6, 7)
    with pytest.raises(click.BadParameter, match="'subject' is not a UD relation"):
        parse_labels("nsubj,subject")
    bad = run_cli("ldd", "--conllu", str(conllu), "--bpe", str(bpe), check=False)
    assert bad.returncode == 2 and "--bpe needs --labels" in bad.stderr


# --- distance: PTB files through the parse stage's tree reader --------------------------------

# PTB-style (written for this test): "( (S" wrappers, function tags, -NONE- traces.
MRG = """\
( (S
    (NP-SBJ-1 (PRP I) )
    (VP (VBP swim)
      (PP-DIR (IN across)
        (NP (DT the) (NN river) )))
    (S (NP-SBJ (-NONE- *-1) ) )
    (. .) ))
( (FRAG (INTJ (UH hello) ) (. .) ))
"""


def test_distance_reads_mrg_files(tmp_path: Path) -> None:
    mrg = tmp_path / "wsj_x.mrg"
    mrg.write_text(MRG, encoding="utf-8")
    flat = tmp_path / "x.trees"  # the same trees without the .mrg suffix: detected by content
    flat.write_text(MRG, encoding="utf-8")
    assert detect_tree_format(str(mrg)) == detect_tree_format(str(flat)) == "mrg"
    # SPEC.md §2: the -NONE- constituent and the function tags leave the known answers unchanged
    proc = run_cli("distance", "--trees", str(flat))
    assert proc.stdout == "5 3 2 1 4\n1\n"
    assert "synprep: 2 trees (mrg)" in proc.stderr
    assert list(distance_lines(str(mrg), "nary", "mrg")) == ["4 3 2 1 4", "1"]
    proc = run_cli("distance", "--mode", "nary", input=MRG)  # stdin: detected from the buffered bytes
    assert proc.stdout == "4 3 2 1 4\n1\n" and "(mrg)" in proc.stderr
    with pytest.raises(InputError, match=r"wsj_x.mrg:1: bad bracketed tree: 2 unclosed '\(' at the end: "
                                         r"label 'S' opened at column 3 \(a tree spread over lines\? use --format mrg\)"):
        list(distance_lines(str(mrg), "cnf", "lines"))


def test_distance_lines_format_one_tree_per_line(tmp_path: Path) -> None:
    one = "( (S (NP-SBJ (PRP I)) (VP (VBP swim) (PP (IN across) (NP (DT the) (NN river)))) (. .)) )"
    f = tmp_path / "t.txt"
    f.write_text(one + "\n" + "(ROOT (NN hello))\n", encoding="utf-8")
    assert detect_tree_format(str(f)) == "lines"
    assert list(distance_lines(str(f), "cnf")) == ["5 3 2 1 4", ""]
    f.write_text(one + " " + one + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="1: 2 trees on one line"):
        list(distance_lines(str(f), "cnf"))
