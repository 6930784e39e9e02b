"""The wire-compatible dev server for tests: a real ``helmflow dev-server`` process on 127.0.0.1.

``dev_server`` is one process for the whole session; each test gets it with faults off, no latency
and zeroed counts (``configure`` changes them over HTTP). ``start_dev_server`` starts a private one
(e.g. with ``--api-key-env``), as a context manager.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

DEFAULTS = {"latency_ms": 0.0, "fault_rate": 0.0, "faults": "429,500,503,reset,hang,badjson,empty",
            "retry_after_ms": 50, "hang_s": 3600.0, "seed": None}


class DevServerHandle:
    def __init__(self, proc: subprocess.Popen, port: int):
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.openai_url = f"{self.url}/v1"

    def stats(self) -> dict[str, Any]:
        return httpx.get(f"{self.url}/_dev/stats", timeout=10).json()

    @property
    def requests(self) -> int:
        return self.stats()["requests"]

    def configure(self, **settings: Any) -> None:
        r = httpx.post(f"{self.url}/_dev/config", json=settings, timeout=10)
        r.raise_for_status()

    def reset(self) -> None:
        httpx.post(f"{self.url}/_dev/reset", timeout=10).raise_for_status()
        self.configure(**DEFAULTS)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def start_dev_server(*args: str, env: dict[str, str] | None = None) -> Iterator[DevServerHandle]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "helmflow.cli", "dev-server", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ, **(env or {})),
    )
    line = proc.stdout.readline() if proc.stdout else ""
    found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if not found:
        proc.kill()
        raise RuntimeError(f"dev server did not start: {line}{proc.stdout.read() if proc.stdout else ''}")
    handle = DevServerHandle(proc, int(found.group(1)))
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="session")
def _dev_server_session() -> Iterator[DevServerHandle]:
    with start_dev_server() as handle:
        yield handle


@pytest.fixture
def dev_server(_dev_server_session: DevServerHandle) -> DevServerHandle:
    """The session's dev server, reset: no faults, no latency, counts at zero."""
    _dev_server_session.reset()
    return _dev_server_session
