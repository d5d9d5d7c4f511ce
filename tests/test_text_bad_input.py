"""Bad input through the CLI: a clear message and exit 2, or the documented handling (docs/text.md).

Never a traceback, never a silently shorter output, never a half-written output file.
"""

from __future__ import annotations

import pytest
from helpers import run_cli

BPE_CODES = "#version: 0.2\ne r</w>\nl o\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "code").write_text(BPE_CODES, encoding="utf-8")
    return tmp_path


def _fails(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("synprep: error: ")
    for n in needles:
        assert n in proc.stderr, proc.stderr


def _commands(d, inp, out):
    """Every text command reading ``inp`` and writing ``out`` (clean reads inp twice as both sides)."""
    return {
        "tokenize": ["tokenize", "-l", "de", "-i", str(inp), "-o", str(out)],
        "bpe apply": ["bpe", "apply", "-c", str(d / "code"), "-i", str(inp), "-o", str(out)],
        "bpe learn": ["bpe", "learn", "-s", "5", str(inp), "-o", str(out)],
        "clean": ["clean", str(inp), str(inp), "--out-src", str(out), "--out-tgt", str(d / "o2"),
                  "--report", str(d / "o3")],
    }


@pytest.mark.parametrize("cmd", ["tokenize", "bpe apply", "bpe learn", "clean"])
def test_non_utf8_byte(files, cmd):
    bad = files / "bad.de"
    bad.write_bytes(b"Erste Zeile.\nZweite Zeile.\n" + b"Gr\xfc\xdfe aus K\xf6ln.\n" + b"Vierte.\n")
    out = files / "out"
    proc = run_cli(*_commands(files, bad, out)[cmd], check=False)
    _fails(proc, f"{bad}:3: not valid UTF-8: byte 0xfc at byte column 3")
    assert sorted(p.name for p in files.iterdir()) == ["bad.de", "code"]  # nothing half-written


@pytest.mark.parametrize("cmd", ["tokenize", "bpe apply", "clean"])
def test_nul_byte(files, cmd):
    bad = files / "nul.de"
    bad.write_bytes(b"gut\nschl\x00echt\n")
    proc = run_cli(*_commands(files, bad, files / "out")[cmd], check=False)
    _fails(proc, f"{bad}:2: NUL byte at byte column 5")
    assert not (files / "out").exists()


@pytest.mark.parametrize("cmd", ["tokenize", "bpe apply"])
def test_crlf_is_read_as_lf(files, cmd):
    """Documented: CRLF line ends are accepted and written as LF; same lines as the LF file."""
    lf, crlf = files / "lf.txt", files / "crlf.txt"
    text = "a lower one.\nsecond line\n\nlast, no newline"
    lf.write_bytes(text.encode())
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    run_cli(*_commands(files, lf, files / "out_lf")[cmd])
    run_cli(*_commands(files, crlf, files / "out_crlf")[cmd])
    out = (files / "out_crlf").read_bytes()
    assert out == (files / "out_lf").read_bytes()
    assert b"\r" not in out and out.count(b"\n") == 4  # the last line without newline is kept


def test_crlf_in_clean(files):
    s, t = files / "c.de", files / "c.en"
    s.write_bytes(b"ein test\r\nzwei\r\n")
    t.write_bytes(b"a test\ntwo\n")
    run_cli("clean", str(s), str(t), "-o", str(files / "k"))
    assert (files / "k.de").read_bytes() == b"ein test\nzwei\n"


@pytest.mark.parametrize("ns,nt", [(5, 3), (3, 5)])
def test_line_count_mismatch_names_both_counts(files, ns, nt):
    s, t = files / "x.de", files / "x.en"
    s.write_text("ein satz\n" * ns, encoding="utf-8")
    t.write_text("a sentence\n" * nt, encoding="utf-8")
    proc = run_cli("clean", str(s), str(t), "-o", str(files / "out"), "--report", str(files / "r.tsv"),
                   check=False)
    _fails(proc, f"line counts differ: {s} has {ns} lines, {t} has {nt}")
    assert sorted(p.name for p in files.iterdir()) == ["code", "x.de", "x.en"]


def test_empty_files(files):
    empty = files / "empty.de"
    empty.write_bytes(b"")
    empty_en = files / "empty.en"
    empty_en.write_bytes(b"")
    other = files / "one.en"
    other.write_text("one\n", encoding="utf-8")
    # line filters: an empty output for an empty input, with a warning (documented)
    for cmd in ("tokenize", "bpe apply"):
        out = files / f"out-{cmd.replace(' ', '-')}"
        proc = run_cli(*_commands(files, empty, out)[cmd])
        assert out.read_bytes() == b"" and f"warning: {empty} is empty" in proc.stderr
    # nothing to learn from / nothing to clean: errors
    _fails(run_cli(*_commands(files, empty, files / "codes")["bpe learn"], check=False),
           "no tokens to learn BPE from (0 lines)")
    assert not (files / "codes").exists()
    _fails(run_cli("clean", str(empty), str(empty_en), "-o", str(files / "k"), check=False),
           f"{empty}: empty input: no sentence pairs to clean")
    _fails(run_cli("clean", str(empty), str(other), "-o", str(files / "k"), check=False),
           f"{empty} has 0 lines, {other} has 1")
    assert not list(files.glob("k.*"))


def test_missing_files_and_bad_outputs(files):
    _fails(run_cli("tokenize", "-l", "de", "-i", str(files / "nope"), check=False), f"{files / 'nope'}: no such file")
    _fails(run_cli("bpe", "apply", "-c", str(files / "nocode"), input="a\n", check=False),
           "no such BPE codes file")
    _fails(run_cli("tokenize", "-l", "de", "-o", str(files), input="a\n", check=False), "is a directory")
    _fails(run_cli("clean", str(files / "a.de"), str(files / "a.en"), "-o", str(files / "k"), check=False),
           "no such file")


@pytest.mark.parametrize("header", ["#version: 0.", "#version: x", "#version:"])
def test_a_codes_header_without_a_version_is_one_line(files, header):
    """subword-nmt turns each part of the version into an int (a ValueError on ``0.``): refused naming line 1."""
    (files / "code").write_text(BPE_CODES.replace("#version: 0.2", header), encoding="utf-8")
    inp = files / "in.de"
    inp.write_text("lore\n", encoding="utf-8")
    proc = run_cli(*_commands(files, inp, files / "out")["bpe apply"], check=False)
    _fails(proc, f"{files / 'code'}:1: not a BPE codes file: the header", "is not '#version: ' and a version")
    assert not (files / "out").exists()
