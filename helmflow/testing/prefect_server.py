"""``prefect server start`` in its own process group, for the tests' session server and the benchmarks
that measure a run against a long-lived server (production's topology) rather than Prefect's
temporary one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def start(port: int, home: Path, database_url: str | None, log: Path) -> subprocess.Popen:
    """Spawn the server on 127.0.0.1:``port`` with its own ``PREFECT_HOME`` (SQLite there unless
    ``database_url`` names another database); its output goes to ``log``."""
    env = dict(os.environ, PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    env.pop("PREFECT_API_URL", None)
    # the UI's API URL comes from settings, not from --port (it would otherwise call :4200)
    env["PREFECT_SERVER_UI_API_URL"] = f"http://127.0.0.1:{port}/api"
    if database_url:
        env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = database_url
    return subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )


def wait_http(url: str, timeout: float, proc: subprocess.Popen | None = None) -> None:
    """Until ``url`` answers below 500; ``TimeoutError`` after ``timeout`` s, ``RuntimeError`` if ``proc`` exits."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process for {url} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


def stop(proc: subprocess.Popen, timeout: float = 15) -> None:
    """SIGTERM to the server's process group, SIGKILL after ``timeout`` s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def running(home: Path, timeout: float = 180) -> Iterator[str]:
    """A server on SQLite under ``home``, on a free port, for the block; yields its API URL."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    home.mkdir(parents=True, exist_ok=True)
    proc = start(port, home, None, home / "server.log")
    url = f"http://127.0.0.1:{port}/api"
    try:
        wait_http(f"{url}/health", timeout, proc)
        yield url
    finally:
        stop(proc)
