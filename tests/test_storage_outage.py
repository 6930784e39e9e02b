"""A storage outage is ridden out: object-store calls retry with backoff for a bounded time
(``HELMFLOW_STORAGE_RETRY_S``, default 300 s), then fail with one clear error."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time

import pytest
import yaml

from helmflow.storage import StorageError, Store
from tests.support.cli import spawn_cli
from tests.support.processes import free_port


def _endpoint_down() -> Exception:
    from botocore.exceptions import EndpointConnectionError

    return EndpointConnectionError(endpoint_url="http://127.0.0.1:1/bucket/key")


class Flaky:
    """An fsspec filesystem double whose first ``failures`` calls fail as s3fs does when the endpoint is down."""

    protocol = ("s3",)

    def __init__(self, failures: int, error: Exception | None = None):
        self.failures, self.calls, self.error = failures, 0, error
        self.files: dict[str, bytes] = {}

    def _call(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error or _endpoint_down()

    def pipe_file(self, path, data):
        self._call()
        self.files[path] = data

    def cat_file(self, path):
        self._call()
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    def exists(self, path):
        self._call()
        return path in self.files


def _remote(monkeypatch, fs: Flaky, window: str) -> Store:
    monkeypatch.setenv("HELMFLOW_STORAGE_RETRY_S", window)
    store = Store("memory://outage-test")
    store.fs, store.is_local = fs, False
    return store


@pytest.mark.slow
def test_transient_errors_are_retried_until_the_call_succeeds(monkeypatch):
    fs = Flaky(failures=3)
    store = _remote(monkeypatch, fs, "60")
    store.write_bytes("a/b.json", b"{}")
    assert fs.calls == 4 and store.read_bytes("a/b.json") == b"{}"


def test_an_outage_longer_than_the_window_is_one_clear_error(monkeypatch):
    fs = Flaky(failures=10**9)
    store = _remote(monkeypatch, fs, "1")
    started = time.monotonic()
    with pytest.raises(StorageError, match=r"unreachable for 1 s.*EndpointConnectionError.*HELMFLOW_STORAGE_RETRY_S"):
        store.write_bytes("a/b.json", b"{}")
    assert 1 <= time.monotonic() - started < 30 and fs.calls >= 2


def test_permanent_errors_are_not_retried(monkeypatch):
    fs = Flaky(failures=0)
    store = _remote(monkeypatch, fs, "60")
    with pytest.raises(FileNotFoundError):
        store.read_bytes("missing")
    assert fs.calls == 1
    denied = Flaky(failures=1, error=PermissionError("Access Denied"))
    store = _remote(monkeypatch, denied, "60")
    with pytest.raises(PermissionError):
        store.write_bytes("k", b"x")
    assert denied.calls == 1


def test_a_bad_retry_window_is_refused(monkeypatch):
    monkeypatch.setenv("HELMFLOW_STORAGE_RETRY_S", "soon")
    with pytest.raises(ValueError, match="HELMFLOW_STORAGE_RETRY_S"):
        Store("memory://x")


# --------------------------------------------------------------------------- a real outage mid-run
class PausableProxy:
    """A TCP proxy in front of moto_server; ``pause`` closes its port (connections refused, open ones
    dropped), ``resume`` opens it again: an S3 outage the client cannot tell from a real one."""

    def __init__(self, target_port: int):
        self.target_port, self.port = target_port, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.served, self._conns, self._lock = 0, [], threading.Lock()
        self._listen()

    def _listen(self) -> None:
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", self.port))
        self._sock.listen(64)
        threading.Thread(target=self._accept, args=(self._sock,), daemon=True).start()

    def _accept(self, sock: socket.socket) -> None:
        while True:
            try:
                client, _ = sock.accept()
            except OSError:
                return  # paused: the listening socket was closed
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self._conns += [client, upstream]
                self.served += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def pause(self) -> None:
        self._sock.close()
        with self._lock:
            for c in self._conns:
                with contextlib.suppress(OSError):
                    c.close()
            self._conns = []

    def resume(self) -> None:
        self._listen()


OUTAGE_S = 15  # longer than the SDKs' own retries ride out: a 5 s outage here never reached helmflow's retries


@pytest.mark.slow
def test_a_15_s_s3_outage_mid_run_is_ridden_out(prefect_server, moto_s3, dev_server, tmp_path):
    """S3 is cut at the end of querying, so the journal's and the query's writes meet the outage: helmflow
    says it is waiting it out, retries, and the run completes with nothing sent twice."""
    import boto3

    bucket = "helmflow-outage"
    s3 = boto3.client("s3", endpoint_url=moto_s3)
    s3.create_bucket(Bucket=bucket)
    proxy = PausableProxy(int(moto_s3.rsplit(":", 1)[1]))
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/slow", "client": "openai-compatible", "model": "m", "base_url": dev_server.openai_url,
         "max_concurrency": 2}]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({"name": "outage", "version": "1", "models": ["dev/slow"],
                                     "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": 20},
                                                    "label": "arith"}]}))
    dev_server.configure(latency_ms=400)  # ~4 s of querying, the last 4 requests 0.8 s: the outage lands mid-run
    env = dict(AWS_ENDPOINT_URL=proxy.url, HELMFLOW_STORAGE_RETRY_S="120", COLUMNS="200")
    proc = spawn_cli(["run", "--board-file", str(board), "--models-file", str(models), "--storage", f"s3://{bucket}/store"],
                     cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while dev_server.requests < 16:  # the end of querying: the journal and the query's files are written next
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proxy.pause()
    time.sleep(OUTAGE_S)
    served_before = proxy.served
    proxy.resume()
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert proxy.served > served_before  # storage was used again after the outage
    assert "unreachable" in out  # the run said it was waiting out the outage
    assert dev_server.requests == 20  # nothing was sent twice
    assert s3.get_object(Bucket=bucket, Key="store/leaderboards/outage/latest.json")["Body"].read()
