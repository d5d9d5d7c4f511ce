"""The dask backend's connection: a handshake timeout and TLS (synprep/parallel.py).

A scheduler address that accepts TCP but never answers is a
ConfigError after ``CONNECT_TIMEOUT`` seconds. So is a scheduler that answers the handshake and then
stalls: at the client's registration, or at the cluster check (``run_on_scheduler``/``run``, which
would otherwise wait forever), tested against a fake scheduler that speaks dask's protocol. ``tls://`` connects with a ``distributed.Security``
built from the CA, certificate and key files (a real in-process TLS cluster with an openssl CA).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from synprep import parallel
from synprep.errors import ConfigError
from synprep.parallel import parallel_map, set_tls


@pytest.fixture
def silent_scheduler():
    """A TCP socket on 127.0.0.1 that accepts every connection and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(server.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    t.join()
    for c in conns:
        c.close()
    server.close()


def test_a_scheduler_that_never_answers_times_out(silent_scheduler, monkeypatch):
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", 2.0)
    set_tls()
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=f"the dask scheduler at {silent_scheduler} did not answer within 2 s"):
        list(parallel_map(abs, [-1, -2, -3], jobs=2, backend="dask", scheduler=silent_scheduler))
    assert time.monotonic() - t0 < 20


class StallingScheduler:
    """A fake dask scheduler on 127.0.0.1 (dask's own comm layer): it answers ``identity`` (the
    handshake) and then stalls at ``stall``: ``"client"`` never answers the client's registration,
    ``"run"`` accepts the client and never answers ``run_function``/``broadcast`` (the cluster check)."""

    def __init__(self, stall: str):
        import asyncio

        self.stall, self.ops = stall, []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        assert ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        import asyncio

        from distributed.comm import listen

        async def start() -> None:
            self.listener = listen("tcp://127.0.0.1:0", self._handle)
            await self.listener.start()
            self.address = self.listener.contact_address
            ready.set()

        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(start())
        self.loop.run_forever()

    async def _handle(self, comm) -> None:
        import asyncio

        try:
            while True:
                msg = await comm.read()
                for m in msg if isinstance(msg, list) else [msg]:
                    op = m.get("op") if isinstance(m, dict) else None
                    self.ops.append(op)
                    if op == "identity":
                        await comm.write({"type": "Scheduler", "id": "fake", "address": self.address, "workers": {},
                                          "services": {}, "started": time.time()})
                    elif op == "register-client" and self.stall != "client":
                        await comm.write([{"op": "stream-start"}])
                    elif op in ("register-client", "run_function", "broadcast"):
                        await asyncio.sleep(3600)  # the stall
        except Exception:  # the client went away
            pass

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.mark.parametrize(("stall", "who", "op"), [("client", "scheduler", "register-client"),
                                                  ("run", "cluster", "run_function")])
def test_a_scheduler_that_stalls_after_the_handshake_times_out(monkeypatch, stall, who, op):
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", 2.0)
    set_tls()
    fake = StallingScheduler(stall)
    out: dict = {}

    def run() -> None:  # in a thread, so that a hang fails the test instead of stopping it
        try:
            list(parallel_map(abs, [-1, -2, -3], jobs=2, backend="dask", scheduler=fake.address))
        except Exception as e:
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(30)
    fake.close()
    assert not t.is_alive(), f"still waiting after 30 s (the scheduler saw {fake.ops})"
    assert time.monotonic() - t0 < 20
    assert fake.ops[0] == "identity" and op in fake.ops  # it got past the handshake to the stalling call
    e = out.get("error")
    assert isinstance(e, ConfigError) and str(e) == (
        f"the dask {who} at {fake.address} did not answer within 2 s (is it a dask scheduler, and are its workers "
        "alive?)"), repr(e)


def test_within_returns_raises_or_gives_up():
    assert parallel._within(1, "x", divmod, 7, 2) == (3, 1)
    with pytest.raises(ZeroDivisionError):
        parallel._within(1, "x", divmod, 7, 0)
    never = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=r"^the thing did not answer within 0.5 s"):
        parallel._within(0.5, "the thing", never.wait)  # a call that never returns (dask's Client, run)
    assert time.monotonic() - t0 < 5
    never.set()


def test_tls_files_need_a_tls_address(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    set_tls(str(ca))
    try:
        with pytest.raises(ConfigError, match="need a tls:// scheduler address"):
            list(parallel_map(abs, [-1], jobs=2, backend="dask", scheduler="tcp://127.0.0.1:1"))
    finally:
        set_tls()
    with pytest.raises(ConfigError, match="no such file"):
        set_tls(str(tmp_path / "missing.pem"))


def test_tls_options_without_a_tls_scheduler_are_refused_by_the_cli(tmp_path):
    from helpers import run_cli

    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    proc = run_cli("tokenize", "-l", "en", "--tls-ca-file", str(ca), input="a b\n", check=False)
    assert proc.returncode == 2 and "need --backend dask --scheduler tls://" in proc.stderr


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory) -> dict[str, Path]:
    """A CA and one certificate for 127.0.0.1 signed by it (scheduler, workers and client share it)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test certificates")
    d = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=synprep-test-ca", cwd=d)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr",
             "-subj", "/CN=127.0.0.1", cwd=d)
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "node.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    return {"ca": d / "ca.pem", "cert": d / "node.pem", "key": d / "node.key"}


def test_a_tls_cluster_runs_the_work(tls_files, monkeypatch):
    from distributed import LocalCluster, Security

    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", 5.0)
    sec = Security(tls_ca_file=str(tls_files["ca"]), tls_scheduler_cert=str(tls_files["cert"]),
                   tls_scheduler_key=str(tls_files["key"]), tls_worker_cert=str(tls_files["cert"]),
                   tls_worker_key=str(tls_files["key"]), tls_client_cert=str(tls_files["cert"]),
                   tls_client_key=str(tls_files["key"]), require_encryption=True)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1",
                      security=sec, dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://127.0.0.1:")
        with pytest.raises(ConfigError, match="needs --tls-ca-file"):  # no CA: refused before connecting
            set_tls()
            list(parallel_map(abs, [-1], jobs=2, backend="dask", scheduler=address))
        set_tls(str(tls_files["ca"]), str(tls_files["cert"]), str(tls_files["key"]))
        try:
            assert list(parallel_map(abs, [-1, -2, 3], jobs=2, backend="dask", scheduler=address)) == [1, 2, 3]
        finally:
            set_tls()
        with pytest.raises(ConfigError, match="cannot connect|did not answer"):  # plain TCP to a TLS scheduler
            list(parallel_map(abs, [-1], jobs=2, backend="dask", scheduler=address.replace("tls://", "tcp://")))
