"""Lock files another user owns, and a folder lock held too long (synprep/lock.py)."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from synprep.errors import ConfigError
from synprep.lock import folder_lock, hold_split

NOBODY = 65534


def _as_other_user(func) -> str:
    """Run ``func()`` in a forked child as another user (root) and return what it raised (``""``: nothing)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery from here on
        os.close(r)
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            func()
            msg = ""
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            msg = f"{type(e).__name__}: {e}"
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return out


@pytest.fixture
def shared_folder():
    """A folder every user may write (outside pytest's private tmp tree)."""
    d = Path(tempfile.mkdtemp(prefix="synprep-shared-"))
    os.chmod(d, 0o777)
    out = d / "out"
    out.mkdir()
    os.chmod(out, 0o777)
    yield out
    shutil.rmtree(d)


def test_a_lock_file_this_user_cannot_write_is_an_error_not_skipped(shared_folder):
    """Another user's lock file (0644 under the usual umask) used to be skipped as if the folder were
    read-only, so two writers of one split both ran."""
    lock = shared_folder / ".train.lock"
    lock.write_text("")
    os.chmod(lock, 0o644 if os.geteuid() == 0 else 0o444)
    if os.geteuid() == 0:
        got = _as_other_user(lambda: hold_split(shared_folder, "train"))
        owner = "user root"
    else:
        with pytest.raises(ConfigError) as e:
            hold_split(shared_folder, "train")
        got, owner = f"ConfigError: {e.value}", f"user {__import__('pwd').getpwuid(os.getuid()).pw_name}"
    assert got == (f"ConfigError: cannot lock {shared_folder}: its lock file .train.lock belongs to {owner} and this "
                   "user cannot write it, so a run of that user could write the folder at the same time; make the "
                   f"file writable for both (chmod a+w {lock}), or remove it while no synprep command runs in the "
                   "folder")


def test_a_held_folder_lock_names_its_holder_and_the_wait_is_bounded(tmp_path, monkeypatch, caplog):
    out = tmp_path / "out"
    out.mkdir()
    fd = os.open(out / ".lock", os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a command that hangs inside a critical section
    os.write(fd, json.dumps({"pid": 4242, "host": "h1", "command": "synprep pipeline --split train",
                             "started": "2026-01-01T00:00:00Z"}).encode())
    monkeypatch.setenv("SYNPREP_FOLDER_LOCK_WAIT", "3")
    box: dict = {}

    def wait() -> None:
        try:
            with folder_lock(out):
                box["got"] = "the lock"
        except ConfigError as e:
            box["got"] = str(e)

    caplog.set_level(logging.INFO, logger="synprep.lock")
    t0 = time.monotonic()
    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    waiter.join(timeout=30)
    try:
        assert not waiter.is_alive(), "folder_lock waited without a bound"
    finally:
        os.close(fd)  # lets a waiter without a bound go
    holder = "pid 4242 on h1 (synprep pipeline --split train, since 2026-01-01T00:00:00Z)"
    assert box["got"] == (f"{out / '.lock'} has been held for more than 3 s by {holder}: if that process hangs, "
                          "stop it (its lock goes with it); else run this command again once it has finished")
    assert 3 <= time.monotonic() - t0 < 30
    assert f"waiting for {out / '.lock'}: {holder} holds it" in caplog.text
    with folder_lock(out):  # free again: taken at once, the holder recorded, emptied after
        assert json.loads((out / ".lock").read_text())["pid"] == os.getpid()
    assert (out / ".lock").read_text() == ""


def test_a_split_lock_whose_pid_was_reused_has_no_writer(tmp_path):
    """A split lock's record left by a killed run, its pid now another live process's (pid reuse): the record's
    process start differs, so no writer is named (later splits and parts do not wait for it); the record of the
    live process itself still names it."""
    import socket
    import subprocess
    import sys

    from synprep.lock import split_writer
    from synprep.proc import process_start

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        record = {"pid": other.pid, "host": socket.gethostname(), "command": "synprep pipeline --split train",
                  "started": "T"}
        lock = tmp_path / ".train.lock"
        lock.write_text(json.dumps({**record, "pid_start": "another-boot:12345"}))
        assert split_writer(tmp_path, "train") is None
        lock.write_text(json.dumps({**record, "pid_start": process_start(other.pid)}))
        assert split_writer(tmp_path, "train") == f"pid {other.pid} on {record['host']} (synprep pipeline --split " \
                                                  "train, since T)"
    finally:
        other.kill()
        other.wait()
