"""Hostile input through the command line: every case is a clear error or a recorded skip.

A 420-token sentence, empty lines, malformed CoNLL-U, non-UTF-8 and NUL bytes, sides of
different lengths, a full disk. Every case: exit status != 0 with one ``synprep: error:`` line
naming the file (and line), or 0 with the skip recorded in the manifest; never a traceback;
nothing half-written (no temp files, no partial text files), and what was already written
(finished shards, the manifest) stays intact.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SAMPLE_DATA, run_cli
from pipeline_runs import (
    assert_lines_accounted,
    assert_same_folder,
    env,
    folder_bytes,
    manifest_shards,
    pipeline_args,
    reference_run,
    run,
    run_ok,
    temp_files,
)

from synprep.shards.check import check_shard
from synprep.signature import file_sha256

pytestmark = pytest.mark.slow

LONG = 420  # words in the long sentence (stanza is known to hang or run out of memory on such)


def _stanza(stanza_dir: Path) -> list[str]:
    return ["--stanza-dir", str(stanza_dir), "--stanza-package", "synprep"]


def _one_error_line(proc: subprocess.CompletedProcess, *parts: str) -> str:
    """The run failed with exactly one ``synprep: error:`` line holding every part, and no traceback."""
    assert proc.returncode not in (0, None), proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("synprep: error:")]
    assert len(errors) == 1, proc.stderr
    for p in parts:
        assert p in errors[0], errors[0]
    return errors[0]


def _sample(tmp_path: Path, n: int = 12) -> tuple[list[str], list[str]]:
    src = (SAMPLE_DATA / "train.de").read_text(encoding="utf-8").splitlines()[:n]
    tgt = (SAMPLE_DATA / "train.en").read_text(encoding="utf-8").splitlines()[:n]
    return src, tgt


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _long(word: str) -> str:
    return " ".join(f"{word}{i}" if i % 7 else "und" for i in range(LONG))


# --- recorded skips -------------------------------------------------------------------------------


def test_pipeline_records_a_long_sentence_and_empty_lines(tmp_path, stanza_dir):
    src, tgt = _sample(tmp_path)
    src[4], tgt[4] = _long("Wort"), _long("word")  # line 5: capped by --max-words (default 250)
    src[7] = ""  # line 8: empty source
    tgt[9] = ""  # line 10: empty target
    out = tmp_path / "out"
    proc = run_ok(["pipeline", "--src", str(_write(tmp_path / "h.de", src)), "--tgt", str(_write(tmp_path / "h.en", tgt)),
                   "-s", "de", "-t", "en", "--out", str(out), "--merges", "200", "--max-len", "1000", "--ratio", "9",
                   "--no-cache", *_stanza(stanza_dir)])
    m = json.loads((out / "manifest.json").read_text())["splits"]["train"]
    assert m["dropped_lines"] == [[5, "parse:too_long", f"sentence 1 has {LONG} words (more than max_words=250)"],
                                  [8, "clean:empty", "0 source / 12 target tokens"],
                                  [10, "clean:empty", "17 source / 0 target tokens"]]
    assert m["pairs"] == 9 and "parse:too_long 1" in proc.stderr
    assert list(assert_lines_accounted(out)) == [1, 2, 3, 4, 6, 7, 9, 11, 12]
    run_cli("check", str(out))


def test_annotate_records_empty_sides_and_a_long_sentence(tmp_path, shared_data, stanza_dir):
    prepared = shared_data / "iwslt14_de-en/fairseq_prepared"
    src = (prepared / "test.de").read_text(encoding="utf-8").splitlines()[:10]
    tgt = (prepared / "test.en").read_text(encoding="utf-8").splitlines()[:10]
    src[2] = ""  # line 3
    tgt[5] = ""  # line 6
    src[7] = " ".join(f"wor@@ t{i}" for i in range(300))  # line 8: 300 words
    out = tmp_path / "out"
    run_ok(["annotate", "--src", str(_write(tmp_path / "a.de", src)), "--tgt", str(_write(tmp_path / "a.en", tgt)),
            "-s", "de", "-t", "en", "--out", str(out), "--no-cache", *_stanza(stanza_dir)])
    m = json.loads((out / "manifest.json").read_text())["splits"]["train"]
    assert m["dropped_lines"] == [[3, "parse:empty", "empty line"],
                                  [6, "annotate:empty_target", "the target side is empty"],
                                  [8, "parse:too_long", "sentence 1 has 300 words (more than max_words=250)"]]
    assert_lines_accounted(out)
    run_cli("check", str(out))


def test_parse_writes_an_error_block_for_a_long_and_an_empty_line(stanza_dir):
    proc = run_cli("parse", "-l", "de", "--no-cache", *_stanza(stanza_dir), input=_long("Wort") + "\n\n")
    assert "Traceback" not in proc.stderr
    assert proc.stdout == (f"# line = 1\n# error = sentence 1 has {LONG} words (more than max_words=250)\n\n"
                           "# line = 2\n# error = empty line\n\n")


# --- malformed CoNLL-U ----------------------------------------------------------------------------

_GOOD = ["1\tDas\t_\tPRON\t_\t_\t2\tnsubj\t_\t_", "2\tist\t_\tAUX\t_\t_\t0\troot\t_\t_",
         "3\tgut\t_\tADJ\t_\t_\t2\txcomp\t_\t_", "4\t.\t_\tPUNCT\t_\t_\t2\tpunct\t_\t_"]


def _bad(kind: str) -> list[str]:
    rows = [r.split("\t") for r in _GOOD]
    if kind == "cycle":
        rows[0][6], rows[2][6] = "3", "1"
    elif kind == "head out of range":
        rows[2][6] = "9"
    elif kind == "missing columns":
        rows[2] = rows[2][:8]
    elif kind == "bad multiword range":
        rows.insert(2, ["3-5", "gutes"] + ["_"] * 8)
    return ["\t".join(r) for r in rows]


BAD_CONLLU = {  # kind -> (line of the error in the file, reason)
    "cycle": (6, "cycle through words 1 -> 3 -> 1"),
    "head out of range": (8, "HEAD 9 of word 3 is out of range (the sentence has 4 words)"),
    "missing columns": (8, "expected 10 tab-separated columns, found 8"),
    "bad multiword range": (8, "multiword token range 3-5 goes past the last word"),
}


def _conllu(tmp_path: Path, kind: str, bad: int = 1) -> Path:
    """Three sentences, sentence ``bad`` (0-based) malformed: it starts at file line 1 + 5 * bad."""
    blocks = [_bad(kind) if k == bad else _GOOD for k in range(3)]
    return _write(tmp_path / "parses.conllu", [line for b in blocks for line in [*b, ""]])


@pytest.mark.parametrize("kind", list(BAD_CONLLU))
def test_pipeline_names_the_malformed_conllu_line(tmp_path, kind, stanza_dir):
    path = _conllu(tmp_path, kind)
    line, reason = BAD_CONLLU[kind]
    out = tmp_path / "out"
    proc = run(["pipeline", "--parser", "conllu", "--conllu", str(path), "--tgt",
                str(_write(tmp_path / "t.en", ["That is good ."] * 3)), "-s", "de", "-t", "en", "--out", str(out),
                "--merges", "50"])
    _one_error_line(proc, f"{path}:{line}: {reason}")
    assert proc.returncode == 2
    assert folder_bytes(out) == {}  # read before anything is written (the language check samples it): nothing


def test_annotate_keeps_finished_shards_when_a_later_parse_is_malformed(tmp_path):
    path = _conllu(tmp_path, "cycle", bad=2)  # the reader sees sentence 3 only after yielding sentence 1
    out = tmp_path / "out"
    proc = run(["annotate", "--parser", "conllu", "--conllu", str(path),
                "--src", str(_write(tmp_path / "s.de", ["Das ist gut ."] * 3)),
                "--tgt", str(_write(tmp_path / "s.en", ["That is good ."] * 3)),
                "-s", "de", "-t", "en", "--out", str(out), "--shard-size", "1"])
    _one_error_line(proc, f"{path}:11: cycle through words 1 -> 3 -> 1")
    assert manifest_shards(out) == ["train.00000.h5"]
    _assert_listed_shards_intact(out)


# --- bad bytes, different lengths -----------------------------------------------------------------


@pytest.mark.parametrize(("side", "damage", "line", "reason", "jobs"), [
    ("src", b"\xff\xfe", 7, "not valid UTF-8: byte 0xff at byte column 11", "1"),
    ("tgt", b"\x00", 3, "NUL byte at byte column 11", "1"),
    ("src", b"\x00", 9, "NUL byte at byte column 11", "2"),
    ("tgt", b"\xc3(", 11, "not valid UTF-8: byte 0xc3 at byte column 11", "2"),
])
def test_bad_bytes_name_file_and_line_and_leave_nothing_half_written(tmp_path, stanza_dir, side, damage, line,
                                                                     reason, jobs):
    src, tgt = _sample(tmp_path)
    files = {"src": _write(tmp_path / "in.de", src), "tgt": _write(tmp_path / "in.en", tgt)}
    raw = files[side].read_bytes().split(b"\n")
    raw[line - 1] = raw[line - 1][:10] + damage + raw[line - 1][10:]
    files[side].write_bytes(b"\n".join(raw))
    out = tmp_path / "out"
    proc = run(["pipeline", "--src", str(files["src"]), "--tgt", str(files["tgt"]), "-s", "de", "-t", "en",
                "--out", str(out), "--merges", "50", "--no-cache", "-j", jobs, *_stanza(stanza_dir)])
    _one_error_line(proc, f"{files[side]}:{line}: {reason}")
    assert proc.returncode == 2
    assert temp_files(out) == [] and not (out / "manifest.json").exists() and not list(out.glob("*.h5"))
    for p in (out / "text").glob("*"):  # only complete files: the source side's, when the target is bad
        assert p.name == "train.tok.de" and len(p.read_text(encoding="utf-8").splitlines()) == len(src)


def test_sides_of_different_lengths_name_both_counts(tmp_path, stanza_dir):
    src, tgt = _sample(tmp_path)
    s, t = _write(tmp_path / "x.de", src), _write(tmp_path / "x.en", tgt[:-1])
    proc = run(["pipeline", "--src", str(s), "--tgt", str(t), "-s", "de", "-t", "en", "--out", str(tmp_path / "p"),
                *_stanza(stanza_dir)])
    _one_error_line(proc, f"line counts differ: {s} has 12 lines, {t} has 11")
    assert folder_bytes(tmp_path / "p") == {}  # checked before anything is written
    proc = run(["annotate", "--src", str(s), "--tgt", str(t), "-s", "de", "-t", "en", "--out", str(tmp_path / "a"),
                *_stanza(stanza_dir)])
    _one_error_line(proc, f"line counts differ: {s} has 12 lines, {t} has 11")
    assert folder_bytes(tmp_path / "a") == {}


# --- a full disk ----------------------------------------------------------------------------------


def test_full_stdout_and_output_file_is_one_line(tmp_path):
    """/dev/full as standard output and as -o: ENOSPC, exit 1, one line, and /dev/full stays a device."""
    text = str(SAMPLE_DATA / "train.de")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "synprep", "tokenize", "-l", "de", "-i", text],
                              stdout=full, stderr=subprocess.PIPE, text=True, env=env())
    _one_error_line(proc, "No space left on device")
    proc = run(["tokenize", "-l", "de", "-i", text, "-o", "/dev/full"])
    _one_error_line(proc, "No space left on device")
    assert Path("/dev/full").is_char_device()


def _pages(n: int) -> int:
    return math.ceil(n / 4096) * 4096


def _assert_listed_shards_intact(out: Path) -> None:
    """Every shard the manifest lists exists with its size and sha256 and passes check_shard."""
    m = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    after = 0
    for split in m["splits"].values():
        for s in split["shards"]:
            p = out / s["file"]
            assert p.stat().st_size == s["bytes"] and file_sha256(p) == s["sha256"]
            violation, _, lines = check_shard(p, after_line=after)
            assert violation is None, violation
            assert lines is not None
            after = int(lines[-1])
    assert temp_files(out) == []


@pytest.fixture
def small_tmpfs(tmp_path):
    """A tmpfs mount point (root only); skipped where ``mount -t tmpfs`` is not allowed."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()

    def mount(size: int, remount: bool = False) -> None:
        opts = f"remount,size={size}" if remount else f"size={size}"
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mnt)], capture_output=True, text=True)
        if proc.returncode != 0:
            if remount:
                raise AssertionError(proc.stderr)
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()} (the /dev/full test covers ENOSPC)")

    yield mnt, mount
    subprocess.run(["umount", str(mnt)], capture_output=True)


def test_full_disk_keeps_finished_shards_and_a_rerun_resumes(small_tmpfs, tmp_path_factory, tmp_path, stanza_dir):
    mnt, mount = small_tmpfs
    ref, _ = reference_run(tmp_path_factory, stanza_dir)
    shards = sorted(ref.glob("*.h5"))
    everything = sum(_pages(p.stat().st_size) for p in ref.rglob("*") if p.is_file())
    # room for the text stage and all but the last 1.5 shards (plus the manifest's temp copy)
    mount(everything + _pages((ref / "manifest.json").stat().st_size) - _pages(shards[-1].stat().st_size) * 3 // 2)
    out, cache = mnt / "out", tmp_path / "cache.sqlite"
    args = pipeline_args(out, cache, stanza_dir, "-j", "1")
    proc = run(args)
    _one_error_line(proc, "No space left on device", str(out / "train.0000"))
    assert proc.returncode == 1
    listed = manifest_shards(out)
    assert 1 <= len(listed) < len(shards), listed
    assert sorted(p.name for p in out.glob("*.h5")) == listed
    _assert_listed_shards_intact(out)
    for name in listed:  # the finished shards are already the final bytes
        assert (out / name).read_bytes() == (ref / name).read_bytes()

    mount(64 << 20, remount=True)
    run_ok(args)
    assert_same_folder(out, ref)
    run_cli("check", str(out))
    shutil.rmtree(out)
