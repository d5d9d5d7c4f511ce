from __future__ import annotations

import pytest

from synprep.errors import InputError
from synprep.textio import atomic_write, count_lines, iter_lines, iter_pairs


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
        list(iter_pairs(s, t))


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

    from tests.conftest import ROOT

    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "synprep", "tokenize", "-l", "en"],
                              input="Hello world.\n" * 5000, stdout=full, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode != 0
    assert "No space left on device" in proc.stderr
    assert "Traceback" not in proc.stderr
