from __future__ import annotations

import pytest

from synprep.errors import InputError
from synprep.textio import atomic_write, count_lines, iter_line_pairs, iter_lines


def test_crlf_and_missing_final_newline(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"one\r\ntwo\nthree")
    assert list(iter_lines(p)) == ["one", "two", "three"]
    assert count_lines(p) == 3


def test_non_utf8_names_file_line_and_column(tmp_path):
    p = tmp_path / "bad.de"
    p.write_bytes(b"gut\nsch\xf6n\n")
    with pytest.raises(InputError) as e:
        list(iter_lines(p))
    assert str(e.value) == f"{p}:2: not valid UTF-8: byte 0xf6 at byte column 4"


def test_nul_byte(tmp_path):
    p = tmp_path / "nul.txt"
    p.write_bytes(b"a\nb\x00c\n")
    with pytest.raises(InputError, match=r":2: NUL byte at byte column 2"):
        list(iter_lines(p))
    assert list(iter_lines(p, nul="keep")) == ["a", "b\x00c"]


@pytest.mark.parametrize("ns,nt", [(3, 2), (2, 3)])
def test_pair_count_mismatch_names_both_counts(tmp_path, ns, nt):
    s, t = tmp_path / "x.de", tmp_path / "x.en"
    s.write_text("a\n" * ns)
    t.write_text("b\n" * nt)
    with pytest.raises(InputError, match=f"{s} has {ns} lines, {t} has {nt}"):
        list(iter_line_pairs(s, t))


def test_atomic_write_leaves_nothing_on_error(tmp_path):
    out = tmp_path / "out.txt"
    with pytest.raises(RuntimeError), atomic_write(out) as f:
        f.write("half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    with atomic_write(out) as f:
        f.write("whole\n")
    assert out.read_text() == "whole\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_write_gives_normal_permissions(tmp_path):
    import os
    out = tmp_path / "perm.txt"
    with atomic_write(out) as f:
        f.write("x\n")
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask


def test_full_disk_is_a_clear_error_not_a_traceback():
    """Writing to a full device (/dev/full gives ENOSPC) names the problem, without a traceback."""
    import os
    import subprocess
    import sys

    from helpers import ROOT

    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "synprep", "tokenize", "-l", "en"],
                              input="Hello world.\n" * 5000, stdout=full, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode != 0
    assert "No space left on device" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_byte_order_mark_is_removed_and_logged(tmp_path, caplog):
    """A UTF-8 BOM is not read as an invisible first word."""
    p = tmp_path / "bom.en"
    p.write_bytes(b"\xef\xbb\xbfHello world\nsecond \xef\xbb\xbf line\n")
    with caplog.at_level("INFO", logger="synprep.textio"):
        lines = list(iter_lines(p))
    assert lines == ["Hello world", "second \ufeff line"]  # only a leading mark is a byte-order mark
    assert lines[0].split()[0] == "Hello"
    assert any("byte-order mark" in r.getMessage() and str(p) in r.getMessage() for r in caplog.records)


def test_a_byte_order_mark_is_removed_from_conllu_and_tree_files(tmp_path):
    from synprep.parse.conllu_io import read_conllu
    from synprep.parse.trees import read_tree_lines

    conllu = tmp_path / "bom.conllu"
    conllu.write_bytes(b"\xef\xbb\xbf# text = I swim\n1\tI\t_\tPRON\t_\t_\t2\tnsubj\t_\t_\n"
                       b"2\tswim\t_\tVERB\t_\t_\t0\troot\t_\t_\n\n")
    assert [p.words for p in read_conllu(conllu)] == [["I", "swim"]]
    trees = tmp_path / "bom.trees"
    trees.write_bytes(b"\xef\xbb\xbf(ROOT (S (NP (PRP I)) (VP (VBP swim))))\n")
    [(n, [t])] = list(read_tree_lines(trees))
    assert n == 1 and t.leaves() == ["I", "swim"]


def test_bpe_codes_with_a_byte_order_mark(tmp_path):
    from synprep.text.bpe import apply_bpe_lines

    codes = tmp_path / "codes"
    codes.write_bytes(b"\xef\xbb\xbf#version: 0.2\nr i\nri v\ne r</w>\nriv er</w>\n")  # the header must still be read
    assert apply_bpe_lines(["the river"], str(codes)) == ["t@@ h@@ e river"]


def test_gzip_input_is_read_transparently(tmp_path):
    """A .gz input is read decompressed (not as bytes that give "line counts differ" or "NUL byte")."""
    import gzip

    p = tmp_path / "a.de.gz"
    with gzip.open(p, "wb") as f:
        f.write(b"\xef\xbb\xbferste Zeile\r\nzweite\ndritte")
    assert list(iter_lines(p)) == ["erste Zeile", "zweite", "dritte"]
    assert count_lines(p) == 3
    bad = tmp_path / "cut.gz"
    bad.write_bytes(p.read_bytes()[:-12])
    with pytest.raises(InputError, match="gzip"):
        list(iter_lines(bad))


def test_a_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        count_lines(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        count_lines(tmp_path / "missing")
