"""CoNLL-U import/export: round trip, multiword tokens on real German UD, validation errors."""

from __future__ import annotations

import io
from pathlib import Path

import conllu
import numpy as np
import pytest

from synprep.errors import InputError
from synprep.parse.cache import sentence_to_json
from synprep.parse.conllu_io import read_conllu, write_conllu
from synprep.types import ParsedLine, ParsedSentence, SparseLDD


def conllu_text(*sentences: list[str], comments: list[list[str]] | None = None) -> str:
    """Blocks from rows written with spaces between columns ("1 I _ PRON _ _ 2 nsubj _ _")."""
    out = []
    for k, rows in enumerate(sentences):
        block = list(comments[k]) if comments else []
        block += ["\t".join(r.split()) for r in rows]
        out.append("\n".join(block) + "\n")
    return "\n".join(out) + "\n"


def write(tmp_path: Path, text: str, name: str = "in.conllu") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def as_dicts(lines: list[ParsedLine]) -> list:
    return [(pl.line, pl.error, [sentence_to_json(s) for s in pl.sentences]) for pl in lines]


def example_lines() -> list[ParsedLine]:
    s1 = ParsedSentence(
        words=["hello", "."], upos=["INTJ", "PUNCT"], heads=[0, 1], deprels=["root", "punct"],
        tree="(ROOT (FRAG (INTJ (UH hello)) (. .)))", tree_source="constituency",
        ldd=SparseLDD(dep=np.array([1, 1, 2], np.int32), head=np.array([0, 2, 1], np.int32),
                      rel=["root", "nmod:poss", "punct"],
                      prob=np.array([0.9731245, 0.0123, 1 / 3], np.float32), threshold=0.01),
    )  # fmt: skip
    s2 = ParsedSentence(
        words=["I", "swim", "(", "&", ")", "."], upos=["PRON", "VERB", "PUNCT", "SYM", "PUNCT", "PUNCT"],
        heads=[2, 0, 4, 2, 4, 2], deprels=["nsubj", "root", "punct", "obj", "punct", "punct"],
        tree="(ROOT (S (NP (PRP I)) (VP (VBP swim) (-LRB- -LRB-) (NN &) (-RRB- -RRB-)) (. .)))",
        tree_source="dependency",
    )  # fmt: skip
    s3 = ParsedSentence(words=["_", "#"], upos=["X", "SYM"], heads=[0, 1], deprels=["root", "dep"],
                        ldd=SparseLDD(np.zeros(0, np.int32), np.zeros(0, np.int32), [], np.zeros(0, np.float32), 0.5))
    return [
        ParsedLine(1, [s1, s2]),
        ParsedLine(2, error="empty line"),
        ParsedLine(3, error="parser failed: RuntimeError: out of memory\nat line 2"),
        ParsedLine(4, [s3]),
    ]


def test_round_trip(tmp_path: Path) -> None:
    buf = io.StringIO()
    assert write_conllu(example_lines(), buf) == 4
    path = write(tmp_path, buf.getvalue())
    back = list(read_conllu(path))
    expected = example_lines()
    expected[2].error = "parser failed: RuntimeError: out of memory at line 2"  # one-line comment
    assert as_dicts(back) == as_dicts(expected)
    # float32 probabilities come back bit-identical
    assert back[0].sentences[0].ldd.prob.tobytes() == expected[0].sentences[0].ldd.prob.tobytes()


def test_written_file_is_read_by_the_conllu_library() -> None:
    buf = io.StringIO()
    write_conllu(example_lines(), buf)
    sents = conllu.parse(buf.getvalue())
    # one block per sentence, error lines as blocks without tokens
    assert [len(s) for s in sents] == [2, 6, 0, 0, 2]
    assert [s.metadata["line"] for s in sents] == ["1", "1", "2", "3", "4"]
    assert sents[2].metadata["error"] == "empty line"
    assert sents[1].metadata["constituency"].startswith("(ROOT (S")
    assert [t["head"] for t in sents[1]] == [2, 0, 4, 2, 4, 2]


def test_default_grouping_is_one_sentence_per_line(tmp_path: Path) -> None:
    rows = ["1 a _ X _ _ 0 root _ _"]
    path = write(tmp_path, conllu_text(rows, rows, rows))
    assert [(pl.line, len(pl.sentences)) for pl in read_conllu(path)] == [(1, 1), (2, 1), (3, 1)]


def test_line_comments_group_sentences(tmp_path: Path) -> None:
    rows = ["1 a _ X _ _ 0 root _ _"]
    text = conllu_text(rows, rows, rows, comments=[["# line = 4"], ["# line = 4"], ["# line = 9"]])
    assert [(pl.line, len(pl.sentences)) for pl in read_conllu(write(tmp_path, text))] == [(4, 2), (9, 1)]


# --- multiword tokens ---------------------------------------------------------------------------


def test_mwt_representative_on_german_pud(shared_data: Path) -> None:
    path = shared_data / "ud" / "de_pud-ud-test.conllu"
    surface = list(read_conllu(path))
    syntactic = list(read_conllu(path, words="syntactic"))
    assert len(surface) == len(syntactic) == 1000
    # sentence 1: "... Kori Schulman am Montag ..." with 26-27 am = an dem; an -> Montag (case),
    # dem -> Montag (det): both leave the range at the same depth; the first (an) represents "am"
    s = surface[0].sentences[0]
    w = syntactic[0].sentences[0]
    assert w.words[25:28] == ["an", "dem", "Montag"]
    k = s.words.index("am")
    assert (s.words[k + 1], s.upos[k], s.deprels[k], s.heads[k]) == ("Montag", "ADP", "case", k + 2)
    assert len(s.words) == len(w.words) - 1
    # every sentence stays one tree over its surface tokens
    for pl in surface:
        for sent in pl.sentences:
            assert sum(h == 0 for h in sent.heads) == 1
            assert all(0 <= h <= len(sent.words) for h in sent.heads)
            for i in range(1, len(sent.words) + 1):  # acyclic: every word reaches the root
                seen, j = set(), i
                while j:
                    assert j not in seen
                    seen.add(j)
                    j = sent.heads[j - 1]


def test_mwt_zum_im_in_german_gsd(shared_data: Path) -> None:
    path = shared_data / "ud" / "de_gsd-ud-test.conllu"
    counts = {"zum": 0, "im": 0}
    other = []
    for pl in read_conllu(path):
        for sent in pl.sentences:
            for k, word in enumerate(sent.words):
                if word.lower() in counts:
                    counts[word.lower()] += 1
                    if (sent.upos[k], sent.deprels[k]) != ("ADP", "case"):
                        other.append((pl.line, word, sent.upos[k], sent.deprels[k], sent.heads[k]))
    assert counts["zum"] >= 10 and counts["im"] >= 30
    # zu/in (ADP, case) represents the contraction, except in sentence 813 ("Im Gegenzug verlangt ..."),
    # where GSD attaches "dem" to the verb (depth 1) and "In" to the noun (depth 2): the member closest
    # to the root wins even when it is not the first
    assert other == [(813, "Im", "DET", "det", 3)]


def test_mwt_representative_is_the_shallowest_member(tmp_path: Path) -> None:
    # 1-2 "AB": A -> P, B -> Q (root), P -> B. Picking the leftmost member A would give AB -> P -> AB,
    # a cycle; the rule picks B (depth 1, A has depth 3) and every head into the range points at AB.
    rows = [
        "1-2 AB _ _ _ _ _ _ _ _",
        "1 A _ X _ _ 3 dep _ _",
        "2 B _ VERB _ _ 4 ccomp _ _",
        "3 P _ NOUN _ _ 2 obj _ _",
        "4 Q _ VERB _ _ 0 root _ _",
    ]
    (pl,) = read_conllu(write(tmp_path, conllu_text(rows)))
    s = pl.sentences[0]
    assert (s.words, s.upos, s.heads, s.deprels) == (
        ["AB", "P", "Q"], ["VERB", "NOUN", "VERB"], [3, 1, 0], ["ccomp", "obj", "root"],
    )  # fmt: skip
    (pl,) = read_conllu(write(tmp_path, conllu_text(rows)), words="syntactic")
    assert pl.sentences[0].words == ["A", "B", "P", "Q"] and pl.sentences[0].heads == [3, 4, 2, 0]


def test_empty_nodes_are_ignored(tmp_path: Path) -> None:
    rows = ["1 I _ PRON _ _ 2 nsubj _ _", "2 swim _ VERB _ _ 0 root _ _", "2.1 swam _ VERB _ _ _ _ 0:root _"]
    (pl,) = read_conllu(write(tmp_path, conllu_text(rows)))
    assert pl.sentences[0].words == ["I", "swim"]


# --- validation ---------------------------------------------------------------------------------

GOOD = ["1 I _ PRON _ _ 2 nsubj _ _", "2 swim _ VERB _ _ 0 root _ _", "3 . _ PUNCT _ _ 2 punct _ _"]


def replace(row: int, new: str) -> list[str]:
    rows = list(GOOD)
    rows[row] = new
    return rows


@pytest.mark.parametrize(
    "rows, line, reason",
    [
        (replace(1, "2 swim _ VERB _ _ 0 root _"), 6, "expected 10 tab-separated columns, found 9"),
        (replace(0, "1 I _ PRON _ _ x nsubj _ _"), 5, "HEAD 'x' of word 1 is not an integer"),
        (replace(0, "1 I _ PRON _ _ _ nsubj _ _"), 5, "word 1 has no HEAD"),
        (replace(0, "1 I _ PRON _ _ 9 nsubj _ _"), 5, "HEAD 9 of word 1 is out of range (the sentence has 3 words)"),
        (replace(0, "1 I _ PRON _ _ 1 nsubj _ _"), 5, "word 1 is its own head"),
        (replace(2, "3 . _ PUNCT _ _ 0 root _ _"), 7, "2 roots (words 2, 3 have HEAD 0); UD requires exactly one"),
        (replace(1, "2 swim _ VERB _ _ 1 root _ _"), 5, "no root: no word has HEAD 0"),
        (GOOD[:1] + ["2 swim _ VERB _ _ 3 x _ _", "3 . _ PUNCT _ _ 2 punct _ _", "4 ok _ X _ _ 0 root _ _"],
         6, "cycle through words 2 -> 3 -> 2"),
        (replace(0, "1 I _ PRON _ _ 2 _ _ _"), 5, "word 1 has no DEPREL"),
        (replace(1, "x swim _ VERB _ _ 0 root _ _"), 6, "bad ID 'x'"),
        (replace(1, "3 swim _ VERB _ _ 0 root _ _"), 6, "word ID 3 out of order (expected 2)"),
        (["1-3 xyz _ _ _ _ _ _ _ _"] + GOOD[:2], 5, "multiword token range 1-3 goes past the last word"),
        (GOOD[:1] + ["3-4 xyz _ _ _ _ _ _ _ _"] + GOOD[1:], 6, "bad multiword token range 3-4"),
    ],
)  # fmt: skip
def test_malformed_conllu_names_file_and_line(tmp_path: Path, rows: list[str], line: int, reason: str) -> None:
    # a good sentence first, so the offending line is not line 1 by accident
    path = write(tmp_path, conllu_text(GOOD, rows))
    with pytest.raises(InputError) as e:
        list(read_conllu(path))
    assert e.value.path == str(path)
    assert e.value.line == line and e.value.reason.startswith(reason), str(e.value)


def test_malformed_blocks(tmp_path: Path) -> None:
    path = write(tmp_path, conllu_text(GOOD) + "# sent_id = 2\n# text = nothing\n\n")
    with pytest.raises(InputError, match=r"in.conllu:5: sentence has no words"):
        list(read_conllu(path))
    text = conllu_text(GOOD, GOOD, comments=[["# line = 1"], []])
    with pytest.raises(InputError, match=r"in.conllu:6: sentence without '# line = N'"):
        list(read_conllu(write(tmp_path, text)))
    text = conllu_text(GOOD, GOOD, comments=[["# line = 2"], ["# line = 1"]])
    with pytest.raises(InputError, match=r"in.conllu:6: '# line = 1' after line 2"):
        list(read_conllu(write(tmp_path, text)))
    path = tmp_path / "bad.conllu"
    path.write_bytes(b"1\tI\t_\tPRON\t_\t_\t0\troot\t_\t_\n2\t\xff\t_\tX\t_\t_\t1\tdep\t_\t_\n")
    with pytest.raises(InputError, match=r"bad.conllu:2: not valid UTF-8"):
        list(read_conllu(path))


def test_bad_ldd_comment_names_its_line(tmp_path: Path) -> None:
    text = conllu_text(GOOD, comments=[["# line = 1", "# ldd_threshold = 0.01", "# ldd = 1,2,nsubj,0.9 3,7,punct,0.5"]])
    with pytest.raises(InputError, match=r"in.conllu:3: ldd entry '3,7,punct,0.5' out of range \(3 words\)"):
        list(read_conllu(write(tmp_path, text)))
    text = conllu_text(GOOD, comments=[["# ldd = 1,2,nsubj"]])
    with pytest.raises(InputError, match=r"in.conllu:1: bad ldd entry '1,2,nsubj'"):
        list(read_conllu(write(tmp_path, text)))
