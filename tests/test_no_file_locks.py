"""A folder on a filesystem without file locks (Lustre mounted without ``-o flock``: ``flock`` fails with
ENOSYS; NFS without its lock service: ENOLCK) is one clear line naming the lock file, exit status 2, never
"synprep: error: Function not implemented" (what ``train`` printed before): a writing command, ``train`` and
``export`` refuse such a folder, a reader does not need its locks.

The commands run as a user runs them, in a child process whose ``fcntl.flock`` fails as on such a filesystem (a
``sitecustomize`` module on its path); unlocking is left alone, as the kernel does.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket

import pytest
from builders import one_line, small_folder
from helpers import ROOT, run_cli_process

from synprep.errors import InputError

NO_FLOCK = '''
import errno, fcntl
_real = fcntl.flock
def _flock(fd, op):
    if op & (fcntl.LOCK_EX | fcntl.LOCK_SH):
        raise OSError(errno.{}, "Function not implemented")
    return _real(fd, op)
fcntl.flock = _flock
'''


def _env(tmp_path, code: str = "ENOSYS") -> dict:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(NO_FLOCK.format(code))
    return {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return small_folder(tmp_path_factory.mktemp("nolocks") / "out")


@pytest.mark.parametrize("code", ["ENOSYS", "ENOLCK"])
def test_train_names_its_run_lock(tmp_path, shards, code):
    run = tmp_path / "run"
    proc = run_cli_process("train", "--shards", str(shards), "--preset", "tiny", "--out", str(run), "--max-steps", "1",
                   env=_env(tmp_path, code), check=False)
    one_line(proc, 2, str(run / ".train.lock"), "has no file locks", "-o flock")
    assert not run.exists()  # the folder it created removed again, as any refused start's


def test_a_writing_command_and_export_name_their_locks(tmp_path, shards):
    src, tgt, conllu = tmp_path / "s", tmp_path / "t", tmp_path / "c.conllu"
    src.write_text("w0 w1 w2\n")
    tgt.write_text("a b\n")
    conllu.write_text("".join(f"{j + 1}\tw{j}\t_\tX\t_\t_\t{0 if j == 0 else 1}\t{'dep' if j else 'root'}\t_\t_\n"
                              for j in range(3)) + "\n")
    out = tmp_path / "out"
    proc = run_cli_process("annotate", "--src", str(src), "--tgt", str(tgt), "--parser", "conllu", "--conllu", str(conllu),
                   "-s", "de", "-t", "en", "--out", str(out), env=_env(tmp_path), check=False)
    one_line(proc, 2, str(out / ".train.lock"), "has no file locks")  # the split lock
    assert not list(out.glob("*.h5"))
    proc = run_cli_process("export", str(shards), "--format", "fairseq", "--to", str(tmp_path / "fs"), env=_env(tmp_path),
                   check=False)
    one_line(proc, 2, str(tmp_path / "fs"), "has no file locks")


def test_reading_needs_no_lock(tmp_path, shards, monkeypatch):
    """A split whose lock record names another host is probed with a lock; without locks nobody can be
    writing it with one: it reads. The shards' map folder needs a lock to write: refused, named."""
    from synprep.lock import split_writer
    from synprep.shards import open_split
    from synprep.shards.shard_reader import ShardReader

    (shards / ".train.lock").write_text(json.dumps({"pid": 1, "host": socket.gethostname() + "-other"}))
    real = fcntl.flock

    def no_flock(fd, op):
        if op & (fcntl.LOCK_EX | fcntl.LOCK_SH):
            raise OSError(errno.ENOSYS, "Function not implemented")
        return real(fd, op)

    monkeypatch.setattr(fcntl, "flock", no_flock)
    try:
        assert split_writer(shards, "train") is None
        assert len(open_split(shards, "train")) == 3
        with pytest.raises(InputError, match="has no file locks") as e:
            ShardReader(shards / "train.00000.h5", map_dir=tmp_path / "arrays")[0]
        assert e.value.path == str(tmp_path / "arrays" / ".train.00000.h5.lock")
    finally:
        (shards / ".train.lock").unlink()
