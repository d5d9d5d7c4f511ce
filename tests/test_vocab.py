from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from synprep.constants import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from synprep.errors import InputError
from synprep.vocab import Vocab, count_pieces


def _corpus(tmp_path):
    src = tmp_path / "train.bpe.de"
    tgt = tmp_path / "train.bpe.en"
    src.write_text("the cat@@ s sat\nthe the dog\n", encoding="utf-8")
    tgt.write_text("die Katze\nthe B </s>\n", encoding="utf-8")
    return src, tgt


def test_build_is_joint_and_in_fairseq_order(tmp_path):
    # counts: the 4; every other piece 1. fairseq: count descending, ties by code point
    # ("B" < "Katze" < "cat@@" < ...), then madeupwords up to a multiple of 8 (12 -> 16).
    v = Vocab.build(_corpus(tmp_path))
    assert v.to_bytes().decode() == (
        "the 4\nB 1\nKatze 1\ncat@@ 1\ndie 1\ndog 1\ns 1\nsat 1\n"
        "madeupword0000 0\nmadeupword0001 0\nmadeupword0002 0\nmadeupword0003 0\n"
    )
    assert len(v) == 16
    assert v.symbols[:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert (v.index("<s>"), v.index("<pad>"), v.index("</s>"), v.index("<unk>")) == (BOS_ID, PAD_ID, EOS_ID, UNK_ID)
    assert v.index("the") == 4 and v.index("sat") == 11


def test_padding_threshold_nwords(tmp_path):
    files = _corpus(tmp_path)
    assert len(Vocab.build(files, padding_factor=1)) == 12
    v = Vocab.build(files, threshold=2, padding_factor=1)
    assert v.symbols == ["<s>", "<pad>", "</s>", "<unk>", "the"]
    v = Vocab.build(files, nwords=6, padding_factor=1)
    assert v.symbols[4:] == ["the", "B"]


def test_count_pieces_counts_eos_per_line_like_fairseq(tmp_path):
    c = count_pieces(_corpus(tmp_path))
    assert c["</s>"] == 4 + 1  # one per line, plus the literal one
    assert c["the"] == 4


def test_save_load_round_trip_and_sha256(tmp_path):
    v = Vocab.build(_corpus(tmp_path))
    digest = v.save(tmp_path / "dict.txt")
    data = (tmp_path / "dict.txt").read_bytes()
    assert digest == hashlib.sha256(data).hexdigest() == v.sha256
    w = Vocab.load(tmp_path / "dict.txt")
    assert w.symbols == v.symbols and w.sha256 == digest and len(w) == 16
    assert w.to_bytes() == data


def test_reads_fairseq_dict_with_madeupwords_and_overwrite(tmp_path):
    p = tmp_path / "dict.de.txt"
    p.write_text("the 10\n, 7\nmadeupword0000 0\nmadeupword0001 0\n, 3 #fairseq:overwrite\n", encoding="utf-8")
    v = Vocab.load(p)
    assert len(v) == 4 + 5  # the overwritten "," gets a new id (its old one stays), as in fairseq
    assert v.index("the") == 4 and v.index(",") == 8 and v.index("madeupword0001") == 7
    assert v.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize("text,msg", [("the 10\nthe 3\n", "duplicate symbol 'the'"),
                                      ("the\n", "not a fairseq dictionary line"),
                                      ("the x\n", "count is not an integer")])
def test_bad_dict_lines_name_file_and_line(tmp_path, text, msg):
    p = tmp_path / "dict.txt"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=msg) as e:
        Vocab.load(p)
    assert e.value.line == len(text.splitlines())


def test_encode_decode_unknown(tmp_path):
    v = Vocab.build(_corpus(tmp_path))
    ids = v.encode("the cat@@ s zebra")
    assert ids.dtype == np.int32 and ids.tolist() == [4, 7, 10, UNK_ID]
    assert v.decode(ids) == ["the", "cat@@", "s", "<unk>"]
    assert v.encode(["dog"]).tolist() == [9]
    assert v.encode([]).shape == (0,)
    assert v[10_000] == "<unk>"


@given(st.lists(st.lists(st.sampled_from(["a", "b", "B", "é", "x@@", "ab", "<unk>"]), max_size=6), max_size=12))
def test_order_property(lines):
    counts = Counter(w for line in lines for w in line)
    v = Vocab.from_counts(counts, padding_factor=1)
    pieces = v.symbols[4:]
    assert set(pieces) == set(counts) - {"<unk>"}
    keys = [(-counts[p], p) for p in pieces]
    assert keys == sorted(keys)  # count descending, then code point ascending


def test_joint_vocab_of_real_iwslt14_bpe_text(shared_data, tmp_path):
    prepared = shared_data / "iwslt14_de-en" / "fairseq_prepared"
    files = [prepared / "valid.de", prepared / "valid.en"]
    v = Vocab.build(files)
    lines = [line for f in files for line in f.read_text(encoding="utf-8").splitlines()]
    tokens = Counter(w for line in lines for w in line.split())
    assert len(lines) == 2 * 7283
    assert len(v) % 8 == 0 and len(v) - 4 - sum(s.startswith("madeupword") for s in v.symbols) == len(tokens)
    assert sum(v.counts[4:]) == sum(tokens.values())
    assert v.counts[4:] == sorted(v.counts[4:], reverse=True)
    assert v.symbols[4] == max(tokens, key=tokens.get)  # the most frequent piece gets id 4
    assert all(UNK_ID not in v.encode(line) for line in lines[::97])
    v.save(tmp_path / "dict.txt")
    assert Vocab.load(tmp_path / "dict.txt").symbols == v.symbols
