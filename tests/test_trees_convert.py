"""``synprep trees convert``: TIGER-XML / NEGRA export (discontinuous) → brackets through treetools."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest
from helpers import run_cli

from synprep.errors import ConfigError, InputError
from synprep.features.distance import both_gaps
from synprep.parse.trees import match_leaves, read_tree_lines, tree_to_str

if sys.version_info < (3, 11):  # treetools needs Python >= 3.11; CI runs 3.11
    pytest.skip("treetools needs Python >= 3.11", allow_module_level=True)

# Written for this test. Sentence s1 has a discontinuous VP (Gekauft ... das Haus) around the
# finite verb and its subject; s2 has bracket words tagged $( that hang from VROOT.
TIGER_XML = """<?xml version="1.0" encoding="UTF-8"?>
<corpus id="test">
 <head/>
 <body>
  <s id="s1">
   <graph root="s1_VROOT">
    <terminals>
     <t id="s1_1" word="Gekauft" lemma="kaufen" pos="VVPP" morph="--"/>
     <t id="s1_2" word="hat" lemma="haben" pos="VAFIN" morph="--"/>
     <t id="s1_3" word="er" lemma="er" pos="PPER" morph="--"/>
     <t id="s1_4" word="das" lemma="der" pos="ART" morph="--"/>
     <t id="s1_5" word="Haus" lemma="Haus" pos="NN" morph="--"/>
     <t id="s1_6" word="." lemma="--" pos="$." morph="--"/>
    </terminals>
    <nonterminals>
     <nt id="s1_500" cat="NP"><edge label="NK" idref="s1_4"/><edge label="NK" idref="s1_5"/></nt>
     <nt id="s1_501" cat="VP"><edge label="HD" idref="s1_1"/><edge label="OA" idref="s1_500"/></nt>
     <nt id="s1_502" cat="S"><edge label="HD" idref="s1_2"/><edge label="SB" idref="s1_3"/><edge label="OC" idref="s1_501"/></nt>
     <nt id="s1_VROOT" cat="VROOT"><edge label="--" idref="s1_502"/><edge label="--" idref="s1_6"/></nt>
    </nonterminals>
   </graph>
  </s>
  <s id="s2">
   <graph root="s2_VROOT">
    <terminals>
     <t id="s2_1" word="(" lemma="--" pos="$(" morph="--"/>
     <t id="s2_2" word="Ja" lemma="ja" pos="ITJ" morph="--"/>
     <t id="s2_3" word=")" lemma="--" pos="$(" morph="--"/>
     <t id="s2_4" word="sagte" lemma="sagen" pos="VVFIN" morph="--"/>
     <t id="s2_5" word="er" lemma="er" pos="PPER" morph="--"/>
     <t id="s2_6" word="." lemma="--" pos="$." morph="--"/>
    </terminals>
    <nonterminals>
     <nt id="s2_500" cat="S"><edge label="MO" idref="s2_2"/><edge label="HD" idref="s2_4"/><edge label="SB" idref="s2_5"/></nt>
     <nt id="s2_VROOT" cat="VROOT"><edge label="--" idref="s2_500"/><edge label="--" idref="s2_1"/><edge label="--" idref="s2_3"/><edge label="--" idref="s2_6"/></nt>
    </nonterminals>
   </graph>
  </s>
 </body>
</corpus>
"""

# s1 again in NEGRA export format 3 (word tag morph edge parent)
NEGRA_EXPORT = """#BOS 1
Gekauft\tVVPP\t--\tHD\t501
hat\tVAFIN\t--\tHD\t502
er\tPPER\t--\tSB\t502
das\tART\t--\tNK\t500
Haus\tNN\t--\tNK\t500
.\t$.\t--\t--\t0
#500\tNP\t--\tOA\t501
#501\tVP\t--\tOC\t502
#502\tS\t--\t--\t0
#EOS 1
"""

# boyd_split + raising keep the VP's head block (Gekauft) and raise the object NP into S;
# root_attach moves the ")" between "Ja" and "sagte" into S, the sentence-initial "(" and
# the final "." stay under the root.
S1 = "(ROOT (S (VP (VVPP Gekauft)) (VAFIN hat) (PPER er) (NP (ART das) (NN Haus))) ($. .))"
S2 = "(ROOT ($LRB -LRB-) (S (ITJ Ja) ($LRB -RRB-) (VVFIN sagte) (PPER er)) ($. .))"


def test_convert_tiger_xml_and_read_back(tmp_path: Path) -> None:
    src = tmp_path / "tiger.xml"
    src.write_text(TIGER_XML, encoding="utf-8")
    out, text = tmp_path / "trees.txt", tmp_path / "words.txt"
    proc = run_cli("trees", "convert", str(src), "-o", str(out), "--text", str(text))
    assert out.read_text().splitlines() == [S1, S2]
    assert text.read_text().splitlines() == ["Gekauft hat er das Haus .", "( Ja ) sagte er ."]
    assert "trees:treetools-" in proc.stderr.splitlines()[-1]
    gz = tmp_path / "tiger.xml.gz"
    gz.write_bytes(gzip.compress(TIGER_XML.encode("utf-8")))
    assert run_cli("trees", "convert", str(gz)).stdout.splitlines() == [S1, S2]
    # the consumer: --trees reads the lines and matches them against the words
    got = list(read_tree_lines(out))
    for (_, (tree,)), words in zip(got, text.read_text().splitlines(), strict=True):
        match_leaves(tree, words.split())
    assert [tree_to_str(t) for _, (t,) in got] == [S1, S2]
    # (ROOT (S (VP Gekauft) hat er (NP das Haus)) .): the n-ary gaps of SPEC.md §2
    assert both_gaps(S1)[1].tolist() == [2, 2, 2, 1, 3]


def test_convert_negra_export(tmp_path: Path) -> None:
    src = tmp_path / "negra.export"
    src.write_text(NEGRA_EXPORT, encoding="utf-8")
    assert run_cli("trees", "convert", str(src)).stdout.splitlines() == [S1]
    # a latin-1 export (as NEGRA ships): named encoding, else an error that points to --encoding
    latin = tmp_path / "latin.export"
    latin.write_bytes(NEGRA_EXPORT.replace("Haus", "Häuschen").encode("latin-1"))
    proc = run_cli("trees", "convert", str(latin), check=False)
    assert proc.returncode == 2 and "not utf-8 at byte" in proc.stderr and "--encoding latin-1" in proc.stderr
    out = run_cli("trees", "convert", str(latin), "--encoding", "latin-1").stdout
    assert out.splitlines() == [S1.replace("Haus", "Häuschen")]
    # --encoding has no effect on TIGER-XML: refused, not ignored
    xml = tmp_path / "t.xml"
    xml.write_text(TIGER_XML, encoding="utf-8")
    proc = run_cli("trees", "convert", str(xml), "--encoding", "latin-1", check=False)
    assert proc.returncode == 2 and "--encoding applies to NEGRA export only" in proc.stderr


def test_convert_errors(tmp_path: Path) -> None:
    from synprep.parse.convert import convert_lines

    bad = tmp_path / "tiger.xml"
    bad.write_text(TIGER_XML.replace("</nonterminals>", "</nonterminal>", 1), encoding="utf-8")
    with pytest.raises(InputError) as e:
        list(convert_lines(bad))
    assert e.value.path == str(bad) and e.value.line == 20 and "not well-formed XML at column 7: mismatched tag" in e.value.reason
    with pytest.raises(ConfigError, match="give --from tigerxml|export"):
        list(convert_lines(tmp_path / "trees.dat"))
    out = tmp_path / "out.txt"
    proc = run_cli("trees", "convert", str(bad), "-o", str(out), check=False)
    assert proc.returncode == 2 and not out.exists()


# --- TIGER-XML without a VROOT (SQUOIA), and --trees that do not fit the words -------

def _without_vroot(xml: str) -> str:
    """The sentences of TIGER_XML as SQUOIA writes them: no VROOT node, punctuation attached to nothing."""
    import re

    xml = re.sub(r'\s*<nt id="(s\d)_VROOT" cat="VROOT">.*?</nt>', "", xml)
    return xml.replace('root="s1_VROOT"', 'root="s1_502"').replace('root="s2_VROOT"', 'root="s2_500"')


def test_tiger_xml_without_vroot_attaches_orphans_to_a_virtual_root(tmp_path: Path) -> None:
    squoia = _without_vroot(TIGER_XML)
    assert "VROOT" not in squoia
    src = tmp_path / "squoia.xml"
    src.write_text(squoia, encoding="utf-8")
    proc = run_cli("trees", "convert", str(src))
    assert proc.stdout.splitlines() == [S1, S2]  # the trees of the same sentences with their VROOT
    assert (f"synprep: {src}: 2 sentence(s) without a VROOT: their parentless nodes (punctuation) were attached "
            f"to a virtual root") in proc.stderr.splitlines()
    proc = run_cli("trees", "convert", str(tmp_path / "squoia.xml"), "--text", str(tmp_path / "w.txt"))
    assert (tmp_path / "w.txt").read_text().splitlines() == ["Gekauft hat er das Haus .", "( Ja ) sagte er ."]


def test_trees_that_do_not_fit_the_words_name_the_first_difference(tmp_path: Path, stanza_dir: Path) -> None:
    tiger = tmp_path / "tiger.xml"
    tiger.write_text(TIGER_XML, encoding="utf-8")
    trees = tmp_path / "trees.txt"
    run_cli("trees", "convert", str(tiger), "-o", str(trees))
    src, tgt = tmp_path / "raw.de", tmp_path / "raw.en"
    src.write_text("Gekauft hat er das Haus.\n(Ja) sagte er, und ging.\n", encoding="utf-8")
    tgt.write_text("He bought the house.\nYes, he said and left.\n", encoding="utf-8")
    common = ["--tgt", str(tgt), "-s", "de", "-t", "en", "--trees", str(trees), "--no-cache", "--stanza-dir",
              str(stanza_dir), "--stanza-package", "synprep", "--merges", "20", "--no-clean"]
    proc = run_cli("pipeline", "--src", str(src), "--out", str(tmp_path / "raw"), *common, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"synprep: error: {trees}:2: the tree(s) have 6 leaves but the line has 9 words; the first difference is "
        f"word 6: tree leaf '.' vs word ',' (synprep tokenized --src with sacremoses; give text tokenized like the "
        f"trees, one line per tree, with --tokenized)")
    # already tokenized text: the same difference, no hint about --tokenized
    tok = tmp_path / "tok.de"
    tok.write_text("Gekauft hat er das Haus .\n( Ja ) sagte er , und ging .\n", encoding="utf-8")
    proc = run_cli("pipeline", "--src", str(tok), "--tokenized", "--out", str(tmp_path / "tok"), *common, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"synprep: error: {trees}:2: the tree(s) have 6 leaves but the line has 9 words; the first difference is "
        f"word 6: tree leaf '.' vs word ','")
