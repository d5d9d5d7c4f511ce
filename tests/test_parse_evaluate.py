"""UAS/LAS with stanza's CoNLL 2018 scorer: known answers on real English PUD sentences."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from synprep.errors import InputError
from synprep.parse.conllu_io import read_conllu
from synprep.parse.evaluate import evaluate_conllu, write_like_gold


def pud_head(shared_data: Path, tmp_path: Path, n: int = 40, lang: str = "en") -> Path:
    """The first ``n`` sentences of a PUD file, in a temporary file."""
    text = (shared_data / "ud" / f"{lang}_pud-ud-test.conllu").read_text(encoding="utf-8")
    blocks = text.strip().split("\n\n")[:n]
    path = tmp_path / f"gold.{lang}.conllu"
    path.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return path


def test_gold_against_itself(shared_data: Path, tmp_path: Path) -> None:
    gold = pud_head(shared_data, tmp_path)
    scores = evaluate_conllu(gold, gold)
    assert scores["UAS"] == scores["LAS"] == scores["UPOS"] == scores["Words"] == 100.0


@pytest.mark.parametrize("lang", ["en", "de"])  # de: multiword tokens stay as in the gold file
def test_known_errors_give_known_scores(shared_data: Path, tmp_path: Path, lang: str) -> None:
    gold = pud_head(shared_data, tmp_path, lang=lang)
    parses = list(read_conllu(gold, words="syntactic"))
    n_words = sum(len(pl.words) for pl in parses)
    # one wrong label on sentence 1, one wrong head (so a wrong labeled arc too) on sentence 2
    s1, s2 = parses[0].sentences[0], parses[1].sentences[0]
    k = s1.deprels.index("punct")
    s1.deprels[k] = "dep"
    root = s2.heads.index(0) + 1  # re-attaching to the root word keeps a tree
    j = next(i for i, h in enumerate(s2.heads) if h not in (0, root))
    s2.heads[j] = root
    buf = io.StringIO()
    assert write_like_gold(gold, parses, buf) == 0
    system = tmp_path / "system.conllu"
    system.write_text(buf.getvalue(), encoding="utf-8")
    scores = evaluate_conllu(system, gold)
    assert scores["gold_words"] == n_words
    assert scores["UAS"] == pytest.approx(100 * (n_words - 1) / n_words)
    assert scores["LAS"] == pytest.approx(100 * (n_words - 2) / n_words)


def test_failed_sentences_are_counted(shared_data: Path, tmp_path: Path) -> None:
    gold = pud_head(shared_data, tmp_path, n=3)
    parses = list(read_conllu(gold, words="syntactic"))
    parses[1].sentences, parses[1].error = [], "parser failed: boom"
    buf = io.StringIO()
    assert write_like_gold(gold, parses, buf) == 1
    system = tmp_path / "system.conllu"
    system.write_text(buf.getvalue(), encoding="utf-8")
    assert evaluate_conllu(system, gold)["UAS"] < 100.0


def test_scorer_errors_are_input_errors(shared_data: Path, tmp_path: Path) -> None:
    gold = pud_head(shared_data, tmp_path, n=2)
    other = tmp_path / "other.conllu"
    other.write_text(gold.read_text(encoding="utf-8").split("\n\n")[0] + "\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="CoNLL 2018 scorer"):
        evaluate_conllu(other, gold)
