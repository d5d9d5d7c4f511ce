"""``synprep trees convert`` of Penn Treebank ``.mrg`` files and folders (no treetools): one tree per line,
``-NONE-`` elements and the constituents they leave empty removed, labels kept, read back by ``--trees``."""

from __future__ import annotations

from pathlib import Path

from helpers import run_cli

from synprep.parse.trees import read_tree_lines, tree_to_str

# Written for this test in the WSJ layout: ( (S ...) ) wrappers over several lines, traces (-NONE-) whose
# constituents hold nothing else, function tags and indices, bracket leaves.
A_MRG = """( (S
    (NP-SBJ-1 (NNP Pierre) (NNP Vinken) )
    (VP (VBD said)
      (SBAR (-NONE- 0)
        (S (NP-SBJ (-NONE- *-1) )
          (VP (TO to) (VP (VB rest) )))))
    (. .) ))
( (S (NP-SBJ (PRP It) ) (VP (VBZ rains) ) (. .) ))
"""
B_MRG = """
( (S
    (NP-SBJ (DT The) (NN man) (-LRB- -LRB-) (NN sic) (-RRB- -RRB-) )
    (VP (VBD left) ) ))
"""

A_TREES = ["(ROOT (S (NP-SBJ-1 (NNP Pierre) (NNP Vinken)) (VP (VBD said) (SBAR (S (VP (TO to) (VP (VB rest))))))"
           " (. .)))",
           "(ROOT (S (NP-SBJ (PRP It)) (VP (VBZ rains)) (. .)))"]
B_TREES = ["(ROOT (S (NP-SBJ (DT The) (NN man) (-LRB- -LRB-) (NN sic) (-RRB- -RRB-)) (VP (VBD left))))"]
A_WORDS = ["Pierre Vinken said to rest .", "It rains ."]
B_WORDS = ["The man ( sic ) left"]


def write_corpus(base: Path) -> Path:
    """``base/wsj/01/b.mrg`` and ``base/wsj/00/a.mrg`` (written in the reverse of their sorted order)."""
    for sub, name, text in (("01", "b.mrg", B_MRG), ("00", "a.mrg", A_MRG)):
        (base / "wsj" / sub).mkdir(parents=True, exist_ok=True)
        (base / "wsj" / sub / name).write_text(text, encoding="utf-8")
    return base / "wsj"


def test_convert_a_file_and_a_folder(tmp_path: Path) -> None:
    wsj = write_corpus(tmp_path)
    run_cli("trees", "convert", str(wsj / "00" / "a.mrg"), "-o", str(tmp_path / "a.trees"), "--text",
            str(tmp_path / "a.txt"))
    assert (tmp_path / "a.trees").read_text(encoding="utf-8").splitlines() == A_TREES
    assert (tmp_path / "a.txt").read_text(encoding="utf-8").splitlines() == A_WORDS
    proc = run_cli("trees", "convert", str(wsj), "-o", str(tmp_path / "all.trees"), "--text",
                   str(tmp_path / "all.txt"))
    assert (tmp_path / "all.trees").read_text(encoding="utf-8").splitlines() == A_TREES + B_TREES
    assert (tmp_path / "all.txt").read_text(encoding="utf-8").splitlines() == A_WORDS + B_WORDS
    assert f"synprep: 3 trees from {wsj} (ptb)" in proc.stderr.splitlines()
    # the --trees reader takes the lines: function tags and indices removed there, the words the text file's
    read = list(read_tree_lines(tmp_path / "all.trees"))
    assert [tree_to_str(t) for _, trees in read for t in trees][0] == (
        "(ROOT (S (NP (NNP Pierre) (NNP Vinken)) (VP (VBD said) (SBAR (S (VP (TO to) (VP (VB rest)))))) (. .)))")
    assert [" ".join(t.leaves()) for _, trees in read for t in trees] == [
        "Pierre Vinken said to rest .", "It rains .", "The man -LRB- sic -RRB- left"]


def test_convert_refuses_what_is_not_a_treebank(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = run_cli("trees", "convert", str(tmp_path / "empty"), check=False)
    assert (proc.returncode, proc.stderr.strip()) == (
        2, f"synprep: error: {tmp_path / 'empty'}: a folder without .mrg files")
    bad = tmp_path / "bad.mrg"
    bad.write_text("( (S (NP (-NONE- *T*-1)) ))\n", encoding="utf-8")
    proc = run_cli("trees", "convert", str(bad), check=False)
    assert (proc.returncode, proc.stderr.strip()) == (
        2, f"synprep: error: {bad}:1: bad bracketed tree: the tree has no words (only empty elements)")


def test_converted_trees_go_through_pipeline_tokenized(tmp_path: Path, stanza_dir: Path) -> None:
    """The documented route: trees convert --text, then pipeline --tokenized --trees with those words."""
    wsj = write_corpus(tmp_path)
    trees, words = tmp_path / "t.trees", tmp_path / "w.en"
    run_cli("trees", "convert", str(wsj), "-o", str(trees), "--text", str(words))
    tgt = tmp_path / "t.de"
    tgt.write_text("Pierre Vinken sagte , er ruhe .\nEs regnet .\nDer Mann ( sic ) ging\n", encoding="utf-8")
    out = tmp_path / "out"
    run_cli("pipeline", "--src", str(words), "--tgt", str(tgt), "--tokenized", "--trees", str(trees), "-s", "en",
            "-t", "de", "--no-clean", "--merges", "20", "--out", str(out), "--no-cache", "--stanza-dir",
            str(stanza_dir), "--stanza-package", "synprep")
    from synprep.shards.reader import open_split

    stored = [shard.words(i) for shard in open_split(out, "train") for i in range(len(shard))]
    assert [" ".join(w) for w in stored] == A_WORDS + B_WORDS
