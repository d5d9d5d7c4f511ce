"""Subword schemes (synprep.subword): the registry, every alignment rule with a known answer, real
SentencePiece and HuggingFace models on every sentence of the shared UD test files, spm learn/apply."""

from __future__ import annotations

import glob

import conllu
import numpy as np
import pytest
from helpers import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from synprep.errors import ConfigError, InputError
from synprep.subword import SCHEMES, load_scheme, scheme_class
from synprep.subword.base import SubwordScheme
from synprep.subword.offsets import AlignStats, align_offsets, check_stored_word_index, locate_words
from synprep.subword.spm import SpmScheme

SP = "\u2581"


#: split_piece of each scheme, from an instance without a model (naming parts needs none)
_spm_split = object.__new__(SpmScheme).split_piece
_split_generic = object.__new__(scheme_class("hf")).split_piece


def _align(text, words, pieces_spans, split=_split_generic):
    pieces = [p for p, _ in pieces_spans]
    spans = [s for _, s in pieces_spans]
    return align_offsets(pieces, spans, locate_words(text, words), text, split)


def _pairs(a):
    return list(zip(a.pieces, a.word_index.tolist(), strict=True))


# --- the registry ---------------------------------------------------------------------------
def test_registry_names_every_scheme_and_loads_it_lazily():
    assert set(SCHEMES) == {"bpe", "spm", "hf"}
    for name in SCHEMES:
        cls = scheme_class(name)
        assert issubclass(cls, SubwordScheme) and cls.name == name
    with pytest.raises(ConfigError, match="unknown subword scheme 'wordpiece'.*bpe, spm, hf"):
        scheme_class("wordpiece")


def test_only_subword_nmt_pieces_carry_bpe_markers():
    # what translate --remove-bpe/--detok and the parquet export ask of a scheme, instead of its name
    assert {name: scheme_class(name).bpe_markers for name in SCHEMES} == {"bpe": True, "spm": False, "hf": False}


def test_no_subword_scheme_name_dispatch_outside_the_registry():
    """A scheme's properties are class attributes: nothing outside synprep/subword/ compares a value
    with a scheme's name (``scheme != "bpe"``, ``subword in ("spm", "hf")``)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "synprep"
    names = "|".join(map(re.escape, SCHEMES))
    pattern = re.compile(rf"""(?:[!=]=|\bis(?:\s+not)?|\bin)\s*["']({names})["']"""  # x == "bpe", x in "bpe"
                         rf"""|["']({names})["']\s*(?:[!=]=|\bis\b|\bin\b|\bnot\s+in\b)"""  # "bpe" == x, "bpe" in x
                         rf"""|\bin\s*[(\[{{][^)\]}}]*["']({names})["']""")  # x in ("spm", "hf")
    loop = re.compile(r"\bfor\s+[\w, ]+\s+in\s*[(\[{][^)\]}]*")  # iterating over names (file stages) is no dispatch
    hits = [f"{p.relative_to(root)}:{i}: {line.strip()}" for p in root.rglob("*.py")
            if "subword" not in p.relative_to(root).parts[:1]
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if pattern.search(loop.sub("", line)) and "``" not in line]  # docstrings quote examples in ``...``
    assert hits == []


def test_a_scheme_that_cannot_learn_says_which_option_gives_a_model(tmp_path):
    with pytest.raises(ConfigError, match="--hf-tokenizer"):
        scheme_class("hf").learn([], tmp_path / "x", 100)


def test_missing_model_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such spm model file"):
        load_scheme("spm", tmp_path / "none.model")
    (tmp_path / "bad.model").write_bytes(b"not a model")
    with pytest.raises(InputError, match="not a SentencePiece model"):
        load_scheme("spm", tmp_path / "bad.model")


# --- known answers, one per rule --------------------------------------------------------------
def test_rule_split_a_piece_spanning_two_words_is_split_at_the_word_start():
    # SentencePiece on raw text: '."' is one piece over the words '.' and '"'
    text = 'say "2,000."'
    words = ["say", '"', "2,000", ".", '"']
    ps = [(SP + "say", (0, 3)), (SP + '"', (3, 5)), ("2,", (5, 7)), ("000", (7, 10)), ('."', (10, 12))]
    a = _align(text, words, ps, _spm_split)
    assert _pairs(a) == [(SP + "say", 0), (SP + '"', 1), ("2,", 2), ("000", 2), (".", 3), ('"', 4)]
    assert a.stats == AlignStats(pieces_split=1, parts_added=1, lines_with_split=1)
    assert a.spans.tolist() == [[0, 3], [3, 5], [5, 7], [7, 10], [10, 11], [11, 12]]


def test_rule_split_over_whitespace_and_three_words():
    # a segmenter that merges across spaces (SentencePiece split_by_whitespace=false)
    text = "of the end."
    ps = [(SP + "of" + SP + "the", (0, 6)), (SP + "end.", (6, 11))]
    a = _align(text, ["of", "the", "end", "."], ps, _spm_split)
    assert _pairs(a) == [(SP + "of", 0), (SP + "the", 1), (SP + "end", 2), (".", 3)]
    assert a.stats.pieces_split == 2 and a.stats.parts_added == 2 and a.stats.lines_with_split == 1


def test_rule_split_names_parts_after_a_marker_prefix():
    assert _split_generic("Ġ2,", "2,", [1]) == ["Ġ2", ","]
    assert _split_generic("##).", ").", [1]) == ["##)", "."]
    # normalization changed the piece: the surface's slices, the marker kept (spm)
    assert _spm_split(SP + "fi.", " ﬁ.", [2]) == [SP + "ﬁ", "."]


def test_rule_next_a_lone_marker_belongs_to_the_next_word():
    text = "it (x)"
    ps = [(SP + "it", (0, 2)), (SP, (2, 3)), ("(", (3, 4)), ("x", (4, 5)), (")", (5, 6))]
    a = _align(text, ["it", "(", "x", ")"], ps)
    assert _pairs(a) == [(SP + "it", 0), (SP, 1), ("(", 1), ("x", 2), (")", 3)]
    assert a.stats == AlignStats(pieces_to_next_word=1)


def test_rule_next_empty_surfaces_go_with_the_piece_that_carries_the_surface():
    # SentencePiece: 'ﬁle' normalizes to 'file' = '▁f' (empty surface) 'il' ('ﬁl'); byte fallback
    # '„' = <0xE2> <0x80> (empty) <0x9E> ('„')
    text = "ﬁle „"
    ps = [(SP + "f", (0, 0)), ("il", (0, 2)), ("e", (2, 3)), (SP, (3, 4)), ("<0xE2>", (4, 4)),
          ("<0x80>", (4, 4)), ("<0x9E>", (4, 5))]
    a = _align(text, ["ﬁle", "„"], ps)
    assert a.word_index.tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert a.stats.pieces_to_next_word == 4


def test_rule_next_at_the_end_of_the_line_goes_to_the_previous_word():
    a = _align("ok ", ["ok"], [(SP + "ok", (0, 2)), (SP, (2, 3))])
    assert a.word_index.tolist() == [0, 0] and a.stats.pieces_to_next_word == 1


def test_rule_overlap_byte_tokens_of_one_character_stay_with_it():
    # HuggingFace byte-level BPE: the three byte tokens of '東' all have the span (0, 1)
    text = "東 x"
    ps = [("æ", (0, 1)), ("Ŀ", (0, 1)), ("±", (0, 1)), ("Ġx", (1, 3))]
    a = _align(text, ["東", "x"], ps)
    assert a.word_index.tolist() == [0, 0, 0, 1]
    assert a.stats == AlignStats(pieces_overlapping=2, pieces_to_next_word=0)
    assert a.spans.tolist() == [[0, 1], [1, 1], [1, 1], [1, 3]]


def test_a_word_without_a_piece_and_pieces_out_of_order_are_errors():
    with pytest.raises(InputError, match="word 2 gets no piece"):
        align_offsets(["a", "c"], [(0, 1), (4, 5)], [(0, 1), (2, 3), (4, 5)], "a b c", _split_generic, line=7)
    with pytest.raises(InputError, match="offsets out of order"):
        align_offsets(["b", "a"], [(2, 3), (0, 1)], [(0, 1), (2, 3)], "a b", _split_generic)


def test_locate_words_finds_words_in_order_and_names_a_missing_one():
    assert locate_words("  a\tbc d", ["a", "bc", "d"]) == [(2, 3), (4, 6), (7, 8)]
    assert locate_words("ab\x01c", ["abc"]) == [(0, 4)]  # Moses drops control characters
    with pytest.raises(InputError, match=r"f\.txt:3: word 2 'x' is not in the line at character 2: the line has 'b'"):
        locate_words("a b", ["a", "x"], line=3, path="f.txt")


def test_check_stored_word_index():
    assert check_stored_word_index([0, 0, 1], 3, 2).tolist() == [0, 0, 1]
    for bad in ([0, 2, 2], [1, 1, 1], [0, 1, 0]):
        with pytest.raises(InputError):
            check_stored_word_index(bad, 3, 3)


# --- real models ------------------------------------------------------------------------------
def _ud_sentences(shared_data):
    """(text, surface words) of every sentence of the shared UD test files; a multiword token is one word."""
    out = []
    for path in sorted(glob.glob(str(shared_data / "ud" / "*test.conllu"))):
        with open(path, encoding="utf-8") as f:
            for sent in conllu.parse_incr(f):
                words = [t["form"] for t in sent if not isinstance(t["id"], tuple) or t["id"][1] == "-"]
                # multiword tokens: keep the range line, drop its parts
                ranges = [t["id"] for t in sent if isinstance(t["id"], tuple)]
                words = [t["form"] for t in sent
                         if isinstance(t["id"], tuple) or not any(r[0] <= t["id"] <= r[2] for r in ranges)]
                out.append((sent.metadata["text"], words))
    return out


@pytest.fixture(scope="session")
def ud_sentences(shared_data):
    """The sentences whose tokens are the characters of their ``# text`` (all but ~20 of 6053: the
    others' text and tokens disagree in the treebank itself)."""
    sents = _ud_sentences(shared_data)
    ok = [(t, w) for t, w in sents if "".join(w) == "".join(t.split())]
    assert len(ok) >= len(sents) - 30
    return ok


@pytest.fixture(scope="session")
def spm_model(tmp_path_factory, ud_sentences):
    d = tmp_path_factory.mktemp("spm")
    (d / "text").write_text("".join(t + "\n" for t, _ in ud_sentences[::4]), encoding="utf-8")
    SpmScheme.learn([d / "text"], d / "m.model", 2000, byte_fallback=True, character_coverage=0.9995)
    return load_scheme("spm", d / "m.model")


@pytest.fixture(scope="session")
def hf_tokenizer(tmp_path_factory, ud_sentences):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    d = tmp_path_factory.mktemp("hf")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator((t for t, _ in ud_sentences[::4]),
                            trainers.BpeTrainer(vocab_size=2000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                show_progress=False))
    tok.save(str(d / "tokenizer.json"))
    return load_scheme("hf", d)  # a directory holding tokenizer.json


def _assert_words_rebuilt(scheme, text, words):
    a = scheme.align_line(text, words)
    assert len(a.pieces) == len(a.word_index) == len(a.spans)
    rebuilt = [""] * len(words)
    for (s, e), w in zip(a.spans.tolist(), a.word_index.tolist(), strict=True):
        rebuilt[w] += text[s:e]
    assert [r.strip() for r in rebuilt] == list(words), text
    assert all(p and not any(c.isspace() for c in p) for p in a.pieces)
    return a


@pytest.mark.parametrize("scheme", ["spm", "hf"])
def test_every_ud_test_sentence_aligns_and_each_words_pieces_rebuild_it(scheme, ud_sentences, request):
    model = request.getfixturevalue("spm_model" if scheme == "spm" else "hf_tokenizer")
    total = AlignStats()
    files_words = 0
    for text, words in ud_sentences:
        total += _assert_words_rebuilt(model, text, words).stats
        files_words += len(words)
    assert len(ud_sentences) > 5000
    # raw-text segmenters do cross parser words; every such piece was split and counted
    assert total.pieces_split > 0 and total.lines_with_split > 0


_WORD = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp", "Cn", "Co")),
                min_size=1, max_size=6).filter(lambda w: not any(c.isspace() for c in w))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_WORD, st.sampled_from(["", " ", "  ", "\t"])), min_size=1, max_size=12))
def test_property_any_text_joining_each_words_pieces_gives_back_the_word(spm_model, hf_tokenizer, parts):
    text = "".join(w + sep for w, sep in parts)
    words = [w for w, _ in parts]
    for scheme in (spm_model, hf_tokenizer):
        try:
            _assert_words_rebuilt(scheme, text, words)
        except InputError as e:  # only a word the model drops entirely may be refused, and by name
            assert "gets no piece" in str(e), e


# --- synprep spm learn / apply ----------------------------------------------------------------
def test_spm_cli_learn_apply_is_sentencepiece(shared_data, tmp_path):
    import sentencepiece

    ted = shared_data / "ted_toy"
    model = tmp_path / "m.model"
    learned = run_cli("spm", "learn", str(ted / "train.en"), str(ted / "train.de"), "-o", str(model),
                      "--vocab-size", "800")
    assert "sub:spm-" in learned.stderr
    out = run_cli("spm", "apply", "-m", str(model), "-i", str(ted / "dev.en"))
    sp = sentencepiece.SentencePieceProcessor(model_file=str(model))
    lines = (ted / "dev.en").read_text(encoding="utf-8").splitlines()
    assert out.stdout.splitlines() == [" ".join(sp.encode(line, out_type=str)) for line in lines]
    # the same text learns the same model (one thread)
    again = tmp_path / "again.model"
    run_cli("spm", "learn", str(ted / "train.en"), str(ted / "train.de"), "-o", str(again), "--vocab-size", "800")
    assert again.read_bytes() == model.read_bytes()


def test_spm_cli_errors_name_the_file(tmp_path):
    (tmp_path / "empty").write_text("")
    r = run_cli("spm", "learn", str(tmp_path / "empty"), "-o", str(tmp_path / "m.model"), check=False)
    assert r.returncode == 2 and "empty: no text to learn" in r.stderr
    assert not (tmp_path / "m.model").exists()
    r = run_cli("spm", "apply", "-m", str(tmp_path / "none.model"), input="a\n", check=False)
    assert r.returncode == 2 and "no such spm model file" in r.stderr


def test_stats_add_up():
    a = AlignStats(1, 2, 1, 0, 3)
    a += AlignStats(1, 1, 1, 1, 1)
    assert a.as_dict() == {"pieces_split": 2, "parts_added": 3, "lines_with_split": 2, "pieces_to_next_word": 1,
                           "pieces_overlapping": 4}
    assert AlignStats.from_tuple(a.as_tuple()) == a
    assert np.array_equal(check_stored_word_index([0], 1, 1), [0])
