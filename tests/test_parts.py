"""Array parts (``--part I/N``, ``--prepare-only``, ``--merge-parts``): N concurrent processes over one folder
make, once merged, the folder one run makes, byte for byte; a part killed mid-shard resumes; a merge names
a missing part and the command that runs it.

Real processes and real stanza on sample_data's train split (294 kept pairs in 6 shards of 50, ``-j 1``).
One folder is prepared once and copied for each case; the parts share the reference run's parse cache
(the bytes do not depend on what the cache holds: test_resume.py), except the killed part, whose fresh
cache makes its second shard parse while it is killed.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from helpers import run_cli, run_cli_process
from pipeline_runs import (
    assert_same_folder,
    kill_group,
    kill_when,
    pipeline_args,
    reference_run,
    run,
    run_ok,
    start,
    temp_files,
)

from synprep.pipeline.parts import Part

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def folders(tmp_path_factory, stanza_dir) -> dict[str, Path]:
    """``ref``: one uninterrupted run; ``prepared``: the same command with ``--prepare-only``; ``cache``: a copy
    of the reference run's parse cache."""
    ref, ref_cache = reference_run(tmp_path_factory, stanza_dir)
    d = tmp_path_factory.mktemp("parts")
    cache = d / "cache.sqlite"
    shutil.copyfile(ref_cache, cache)
    prepared = d / "prepared"
    proc = run_ok(pipeline_args(prepared, cache, stanza_dir, "-j", "1", "--prepare-only"))
    assert "294 pairs to parse in 6 shard(s) of 50" in proc.stderr
    assert not list(prepared.glob("*.h5"))
    return {"ref": ref, "prepared": prepared, "cache": cache}


def _copy(folders: dict[str, Path], tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(folders["prepared"], out)
    return out


def _args(out: Path, cache: Path, stanza_dir: Path, *extra: str) -> list[str]:
    return pipeline_args(out, cache, stanza_dir, "-j", "1", *extra)


def _parts_together(args: list[list[str]], logs: Path) -> None:
    """Start every command at once, wait for all; each must exit 0."""
    procs = [start(a, logs / f"part{i}.log") for i, a in enumerate(args)]
    try:
        for i, p in enumerate(procs):
            assert p.wait(timeout=300) == 0, (logs / f"part{i}.log").read_text()
    finally:
        for p in procs:
            kill_group(p)


def _in_process(argv: list[str], monkeypatch, capsys) -> tuple[int, str]:
    """``synprep ARGV`` in this process (for commands that parse nothing): its exit status and stderr."""
    from synprep.cli import main

    monkeypatch.setattr(sys, "argv", ["synprep", *argv])
    capsys.readouterr()
    try:
        main(argv)
        status = 0
    except SystemExit as e:
        status = int(e.code or 0)
    return status, capsys.readouterr().err


def _merge(out: Path, cache: Path, stanza_dir: Path, monkeypatch, capsys) -> tuple[int, str]:
    return _in_process(_args(out, cache, stanza_dir, "--merge-parts"), monkeypatch, capsys)


@pytest.mark.parametrize("n", [1, 2])
def test_n_concurrent_parts_make_the_folder_of_one_run(folders, tmp_path, stanza_dir, monkeypatch, capsys, n):
    out = _copy(folders, tmp_path)
    _parts_together([_args(out, folders["cache"], stanza_dir, "--part", f"{i}/{n}") for i in range(1, n + 1)],
                    tmp_path)
    assert not (out / "manifest.json").read_text() == (folders["ref"] / "manifest.json").read_text()  # not yet
    status, err = _merge(out, folders["cache"], stanza_dir, monkeypatch, capsys)
    assert status == 0, err
    assert "check OK" in err
    assert not (out / ".parts").exists()  # the parts' records are gone with the merge
    assert_same_folder(out, folders["ref"])


def test_three_parts_one_killed_mid_shard_then_missing_then_rerun(folders, tmp_path, stanza_dir, monkeypatch, capsys):
    out = _copy(folders, tmp_path)
    cache, fresh = folders["cache"], tmp_path / "fresh.sqlite"  # part 2 parses: its kill lands mid-shard
    killed = _args(out, fresh, stanza_dir, "--part", "2/3")
    record = out / ".parts" / "train.part-2-of-3.json"

    def first_shard_recorded() -> bool:  # its shard 1 written, its shard 4 parsing
        try:
            return len(json.loads(record.read_text())["entry"]["shards"]) == 1
        except (OSError, ValueError):
            return False

    p1 = start(_args(out, cache, stanza_dir, "--part", "1/3"), tmp_path / "part1.log")
    p2 = start(killed, tmp_path / "killed.log")
    try:
        kill_when(p2, first_shard_recorded)
        assert p1.wait(timeout=300) == 0, (tmp_path / "part1.log").read_text()
    finally:
        kill_group(p1)
        kill_group(p2)
    assert sorted(p.name for p in out.glob("*.h5")) == ["train.00000.h5", "train.00001.h5", "train.00003.h5"]
    first = (out / "train.00001.h5").stat().st_ino

    # the merge names the part that stopped (with its own command, which resumes it) and the one never run
    proc = run(_args(out, cache, stanza_dir, "--merge-parts"))
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()[-1]
    assert err.startswith(f"synprep: error: the train split of {out} is not whole: part 2 of 3 has not finished "
                          "(running it again resumes it): `synprep pipeline "), err
    assert f"--cache {fresh} " in err and "--part 2/3`; part 3 of 3 has not run: `synprep pipeline " in err
    assert err.endswith(" --part 3/3`; then run this command again"), err
    assert not (out / "train.00004.h5").exists()

    _parts_together([killed, _args(out, cache, stanza_dir, "--part", "3/3")], tmp_path)
    assert (out / "train.00001.h5").stat().st_ino == first  # the killed part's finished shard was kept
    status, err = _merge(out, cache, stanza_dir, monkeypatch, capsys)
    assert status == 0, err
    assert not temp_files(out)
    assert_same_folder(out, folders["ref"])


@pytest.mark.parametrize("option", ["--part 1/2", "--merge-parts"])
def test_a_part_or_merge_before_the_preparation_is_refused_naming_it(tmp_path, stanza_dir, monkeypatch, capsys,
                                                                     option):
    out = tmp_path / "out"
    status, err = _in_process(_args(out, tmp_path / "c.sqlite", stanza_dir, *option.split()), monkeypatch, capsys)
    assert status == 2
    assert f"synprep: error: the train split of {out} is not prepared: run `synprep pipeline --src " in err
    assert " -j 1 --prepare-only` once first" in err and "--part" not in err and "--merge-parts" not in err
    assert not out.exists()  # nothing written


@pytest.mark.parametrize("bad", ["0/2", "3/2", "2", "a/b", "1/0"])
def test_a_bad_part_is_a_usage_error(tmp_path, monkeypatch, capsys, bad):
    status, err = _in_process(["annotate", "--src", "x", "--tgt", "x", "--out", str(tmp_path / "o"), "--part", bad],
                              monkeypatch, capsys)
    assert status == 2
    assert "Usage: synprep annotate" in err and "Invalid value for '--part'" in err


def test_part_options_exclude_each_other(tmp_path, monkeypatch, capsys):
    status, err = _in_process(["pipeline", "--tgt", "x", "--out", str(tmp_path / "o"), "--part", "1/2",
                               "--merge-parts"], monkeypatch, capsys)
    assert status == 2 and "--part and --merge-parts exclude each other" in err


def test_part_assignment_covers_every_shard_once():
    for n in range(1, 6):
        owners = [[i for i in range(1, n + 1) if Part(i, n).owns(k)] for k in range(40)]
        assert all(len(o) == 1 for o in owners)
    assert Part.parse(" 2 / 8 ") == Part(2, 8)


def _annotate_corpus(tmp_path: Path):
    """A 30-pair corpus with imported parses (line 6's target empty: dropped) and ``annotate`` on it, in this
    process, in shards of 4."""
    from builders import write_corpus

    from synprep.config import DataConfig
    from synprep.pipeline import SplitInputs, run_annotate

    corpus = tmp_path / "corpus"
    corpus.mkdir(parents=True)
    write_corpus(corpus, "train", 30, 1)
    tgt = (corpus / "train.tgt").read_text().splitlines()
    (corpus / "train.tgt").write_text("\n".join(["" if n == 6 else t for n, t in enumerate(tgt, 1)]) + "\n")
    cfg = DataConfig.of(src_lang="de", tgt_lang="en", parser="conllu", shard_size=4, language_check=False)

    def annotate(out: Path, **kw):
        inputs = SplitInputs(src=str(corpus / "train.src"), tgt=str(corpus / "train.tgt"),
                             conllu=str(corpus / "train.conllu"))
        return run_annotate(inputs, out, cfg, **kw)

    return annotate


def test_annotate_parts_in_process_with_imported_parses(tmp_path):
    """``annotate`` (imported CoNLL-U parses, so no parser: in this process) in 3 parts, run out of order, one of
    them twice, and merged: the folder of one run, byte for byte; a part's record holds its own shards and drops."""
    from pipeline_runs import folder_bytes

    annotate = _annotate_corpus(tmp_path)
    annotate(tmp_path / "one")
    out = tmp_path / "parts"
    annotate(out, prepare_only=True)
    for i in (3, 1, 3, 2):
        annotate(out, part=Part(i, 3))
    record = json.loads((out / ".parts" / "train.part-2-of-3.json").read_text())
    assert record["complete"] is True
    assert [s["file"] for s in record["entry"]["shards"]] == ["train.00001.h5", "train.00004.h5", "train.00007.h5"]
    assert [x[:2] for x in record["entry"]["dropped_lines"]] == [[6, "annotate:empty_target"]]  # in its shard 1
    annotate(out, merge_parts=True)
    assert folder_bytes(out) == folder_bytes(tmp_path / "one")


def test_a_part_is_refused_beside_a_whole_split_run_or_a_copy_of_itself(tmp_path):
    """A part does not start while a command without --part writes the split (named), nor beside a live copy
    of itself; a command without --part does not start beside a running part."""
    import fcntl
    import os
    import socket

    from synprep.lock import FolderBusy

    annotate = _annotate_corpus(tmp_path)
    out = tmp_path / "out"
    annotate(out, prepare_only=True)
    lock = out / ".train.lock"
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": "synprep annotate X",
                                "started": "T"}))
    with pytest.raises(FolderBusy, match=r"being written by pid \d+ on .* \(synprep annotate X, since T\): a part "):
        annotate(out, part=Part(1, 2))
    lock.write_text("")
    (out / ".parts").mkdir()
    held = os.open(out / ".parts" / "train.part-1-of-2.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(FolderBusy, match="part 1/2 of the train split"):
            annotate(out, part=Part(1, 2))
        annotate(out, part=Part(2, 2))  # another part runs beside it
        for kw in ({}, {"prepare_only": True}):  # nor does a command without --part start beside a running part
            with pytest.raises(FolderBusy, match=r"part 1/2 of the train split .* is being run by .*: a command "
                                                 "without --part"):
                annotate(out, **kw)
    finally:
        os.close(held)
    assert not list(out.glob("train.00000.h5")) and (out / "train.00001.h5").is_file()


def test_parts_run_where_the_filesystem_has_no_file_locks(tmp_path):
    """Prepared where the folder has file locks (a login node), the parts run on nodes whose mount of it has none
    (Lustre without ``-o flock``): each runs without its part lock (logged), and the merged folder is one run's;
    a command without --part is refused there, as every writer of a split is."""
    from pipeline_runs import folder_bytes
    from test_no_file_locks import _env

    annotate = _annotate_corpus(tmp_path)
    annotate(tmp_path / "one")
    out = tmp_path / "parts"
    annotate(out, prepare_only=True)
    corpus = tmp_path / "corpus"
    args = ["annotate", "--src", str(corpus / "train.src"), "--tgt", str(corpus / "train.tgt"), "--parser", "conllu",
            "--conllu", str(corpus / "train.conllu"), "-s", "de", "-t", "en", "--out", str(out), "--shard-size", "4",
            "--no-language-check", "-v"]
    for i in (1, 2):
        proc = run_cli_process(*args, "--part", f"{i}/2", env=_env(tmp_path))
        assert "no file locks: going on without this lock" in proc.stderr
    proc = run_cli_process(*args, env=_env(tmp_path), check=False)
    assert proc.returncode == 2 and "has no file locks" in proc.stderr
    annotate(out, merge_parts=True)
    assert folder_bytes(out) == folder_bytes(tmp_path / "one")


def test_a_merge_names_a_part_still_running_and_removes_nothing(tmp_path):
    """A part whose lock is held is named as running (not to be run again), and the refused merge leaves every
    file, a temporary file of no live process here included (a running part's on another machine looks so)."""
    import fcntl
    import os

    from synprep.errors import ConfigError

    annotate = _annotate_corpus(tmp_path)
    out = tmp_path / "out"
    annotate(out, prepare_only=True)
    annotate(out, part=Part(1, 2))
    annotate(out, part=Part(2, 2))
    record = out / ".parts" / "train.part-1-of-2.json"
    record.write_text(record.read_text().replace('"complete": true', '"complete": false'))
    temp = out / ".train.00002.h5.pid999999.abcd.tmp"
    temp.write_bytes(b"")
    lock = out / ".parts" / "train.part-1-of-2.lock"
    lock.write_text(json.dumps({"pid": 4242, "host": "node7", "command": "synprep annotate --part 1/2",
                                "started": "T"}))  # as a running part's lock holds it
    held = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(ConfigError, match=r"is not whole: part 1 of 2 is still running \(pid 4242 on node7 "
                                              r"\(synprep annotate --part 1/2, since T\)\): wait for it; then run "
                                              r"this command again$"):
            annotate(out, merge_parts=True)
    finally:
        os.close(held)
    assert temp.exists() and record.exists()


def test_check_on_a_split_made_in_parts_says_so_until_the_merge(tmp_path):
    """Before the merge a part's shard is not in manifest.json: check fails, and says the split is being made in
    parts, how many finished, and what adds them (--merge-parts); after the merge it passes without a note."""
    annotate = _annotate_corpus(tmp_path)
    out = tmp_path / "out"
    annotate(out, prepare_only=True)
    annotate(out, part=Part(2, 3))
    proc = run_cli("check", str(out), check=False)
    assert proc.returncode == 1
    assert "the train split is being made in 3 parts (1 finished)" in proc.stderr and "--merge-parts" in proc.stderr
    assert json.loads(run_cli("check", "--json", str(out), check=False).stdout)["note"].startswith(
        "the train split is being made in 3 parts (1 finished)")
    for i in (1, 3):
        annotate(out, part=Part(i, 3))
    annotate(out, merge_parts=True)
    done = json.loads(run_cli("check", "--json", str(out)).stdout)
    assert done["ok"] and done["note"] is None


def test_a_part_builds_no_items_for_the_shards_of_other_parts():
    """A part reads the whole split but builds items (pieces split, words unescaped) only for the pairs of its own
    shards: the others are placeholders holding their line, and the streams stay aligned."""
    from synprep.annotate import items_from_files
    from synprep.pipeline.parts import skip_others
    from synprep.shards.config import ShardConfig

    src = [f"s{i} p@@ q" for i in range(10)]
    tgt = [f"t{i}" for i in range(10)]
    words = [[f"s{i}", "pq"] for i in range(10)]
    skip = skip_others(Part(2, 3), ShardConfig(shard_size=2))  # shards of 2 pairs: part 2 of 3 makes shards 1 and 4
    items = list(items_from_files(iter(src), iter(tgt), iter(range(11, 21)), words=iter(words), skip=skip))
    assert [it.line for it in items] == list(range(11, 21))
    assert [i for i, it in enumerate(items) if not it.skipped] == [2, 3, 8, 9]
    for i in (2, 3, 8, 9):
        assert (items[i].src, items[i].tgt, items[i].words) == (src[i].split(), [tgt[i]], words[i])
    assert all(it.src == it.tgt == it.words == [] for it in items if it.skipped)
    as_lines = list(items_from_files(iter(src), iter(tgt), iter(range(11, 21)), skip=skip,
                                     words=iter([" ".join(w).replace("pq", "p&amp;q") for w in words])))
    assert [it.words for it in as_lines if not it.skipped] == [[f"s{i}", "p&q"] for i in (2, 3, 8, 9)]  # unescaped
    assert skip_others(None, ShardConfig(shard_size=2)) is None


def _annotate_parts(tmp_path: Path, n: int, *which: int):
    """``annotate`` prepared in ``tmp_path/out`` and its parts ``which`` of ``n`` run; the annotate call and folder."""
    annotate = _annotate_corpus(tmp_path)
    out = tmp_path / "out"
    annotate(out, prepare_only=True)
    for i in which:
        annotate(out, part=Part(i, n))
    return annotate, out


def test_a_part_of_another_corpus_is_refused_by_the_merge_naming_it(tmp_path):
    """Folder b is prepared from other targets (the same source, parses and so vocabulary: its shards carry the
    same digests); b's part 2/2 copied into a is refused by a's merge, named, and a's manifest is untouched."""
    from synprep.errors import InputError

    annotate_a, a = _annotate_parts(tmp_path / "a", 2, 1)
    annotate_b = _annotate_corpus(tmp_path / "b")
    tgt = tmp_path / "b" / "corpus" / "train.tgt"
    lines = tgt.read_text().splitlines()
    lines[0], lines[1] = lines[1], lines[0]  # two pairs of b hold each other's target
    tgt.write_text("\n".join(lines) + "\n")
    b = tmp_path / "b" / "out"
    annotate_b(b, prepare_only=True)
    annotate_b(b, part=Part(2, 2))
    for p in b.glob("train.*.h5"):
        shutil.copy(p, a / p.name)
    shutil.copy(b / ".parts" / "train.part-2-of-2.json", a / ".parts")
    before = (a / "manifest.json").read_bytes()
    with pytest.raises(InputError, match=r"this part was made of other data than this split's \(--tgt differ\)") as e:
        annotate_a(a, merge_parts=True)
    assert e.value.path == str(a / ".parts" / "train.part-2-of-2.json")
    assert (a / "manifest.json").read_bytes() == before
    with pytest.raises(InputError, match="other data"):  # and b's record is not resumed by a's part 2 either
        annotate_a(a, part=Part(2, 2))


def test_more_parts_than_shards_is_refused_and_missing_parts_are_counted(tmp_path):
    """30 pairs in shards of 4 are 8 shards: ``--part 1/9`` and an absurd N are refused naming the bound; a merge
    of 8 parts with one run names the first few missing ones and counts the rest; records for an N above the
    bound (written by hand) are refused without listing the parts."""
    from synprep.errors import ConfigError

    annotate, out = _annotate_parts(tmp_path, 8, 3)
    for n in (9, 99999999999999999999):
        with pytest.raises(ConfigError, match=rf"--part I/{n}: the train split of .* has 8 shard\(s\) of 4 pairs, so "
                                              r"it is made in at most 8 parts: use N <= 8"):
            annotate(out, part=Part(1, n))
    with pytest.raises(ConfigError) as e:
        annotate(out, merge_parts=True)
    said = str(e.value)
    assert [int(x) for x in re.findall(r"part (\d+) of 8 has not run", said)] == [1, 2, 4, 5, 6]
    assert said.endswith("; and 2 more part(s) of 8 have not finished; then run this command again"), said
    record = out / ".parts" / "train.part-3-of-8.json"
    record.rename(out / ".parts" / "train.part-3-of-1000000000.json")
    with pytest.raises(ConfigError, match="--part I/1000000000: .* use N <= 8"):
        annotate(out, merge_parts=True)


@pytest.mark.parametrize(("damage", "said"), [
    ("extra_shard", "it lists train.00000.h5, which this part does not make"),
    ("negative_line", "is not a line of the split (1..30)"),
    ("tab_in_reason", "has a reason that is not stage:name"),
    ("newline_in_detail", "has a detail with a tab or line break"),
])
def test_a_merge_refuses_a_record_that_is_not_its_parts_and_writes_nothing(tmp_path, damage, said):
    """A record listing another part's shard, a dropped line outside the split, a reason or detail that would
    inject rows into the drop report: refused naming the record, before manifest.json is touched."""
    from synprep.errors import InputError
    from synprep.shards.manifest import SplitEntry

    annotate, out = _annotate_parts(tmp_path, 2, 1, 2)
    path = out / ".parts" / "train.part-2-of-2.json"
    record = json.loads(path.read_text())
    entry = record["entry"]
    if damage == "extra_shard":
        entry["shards"].append(dict(entry["shards"][0], file="train.00000.h5"))
    elif damage == "negative_line":
        entry["dropped_lines"].append([-5, "parse:failed", ""])
    elif damage == "tab_in_reason":
        entry["dropped_lines"][0][1] = "parse:failed\t-\t-\tx\n7"
    else:
        entry["dropped_lines"][0][2] = "x\n7\tclean:ratio"
    SplitEntry.from_dict(entry)  # still a readable entry
    path.write_text(json.dumps(record))
    before = (out / "manifest.json").read_bytes()
    with pytest.raises(InputError, match=re.escape(said)) as e:
        annotate(out, merge_parts=True)
    assert e.value.path == str(path)
    assert (out / "manifest.json").read_bytes() == before


def test_a_merge_that_fails_its_check_restores_the_manifest_and_the_genuine_records_repair_it(tmp_path):
    """A record that lists a stored line as dropped passes the record's own checks but not the split's: the merge
    fails its check, manifest.json is put back as prepared, and the merge with the genuine record succeeds and
    makes the folder of one run."""
    from pipeline_runs import folder_bytes

    from synprep.shards.check import CheckError

    annotate, out = _annotate_parts(tmp_path, 2, 1, 2)
    annotate(tmp_path / "one")
    path = out / ".parts" / "train.part-2-of-2.json"
    genuine = path.read_text()
    record = json.loads(genuine)
    record["entry"]["dropped_lines"].append([5, "parse:failed", "a stored line"])  # line 5: a pair of shard 1
    path.write_text(json.dumps(record))
    before = (out / "manifest.json").read_bytes()
    with pytest.raises(CheckError):
        annotate(out, merge_parts=True)
    assert (out / "manifest.json").read_bytes() == before
    path.write_text(genuine)
    annotate(out, merge_parts=True)
    assert folder_bytes(out) == folder_bytes(tmp_path / "one")


def test_a_merge_refuses_a_lock_path_that_is_a_folder_before_merging(tmp_path):
    """A folder where a part's lock file goes: refused naming it, manifest.json untouched (the merge used to
    finish, then fail removing it, exit 1)."""
    from synprep.errors import ConfigError

    annotate, out = _annotate_parts(tmp_path, 2, 1, 2)
    lock = out / ".parts" / "train.part-1-of-2.lock"
    lock.unlink()
    lock.mkdir()
    before = (out / "manifest.json").read_bytes()
    with pytest.raises(ConfigError, match=re.escape(f"{lock} is not a part's lock file: remove it")):
        annotate(out, merge_parts=True)
    assert (out / "manifest.json").read_bytes() == before
    lock.rmdir()
    annotate(out, merge_parts=True)
