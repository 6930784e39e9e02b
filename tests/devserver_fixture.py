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
            "retry_after_ms": 50, "hang_s": 3600.0, "seed": None, "usage": True}


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


# --------------------------------------------------------------------------- helpers for client tests
FAST_RETRY = {"attempts": 16, "base_s": 0.02, "cap_s": 0.5, "timeout_s": 2.0}


def dev_deployment(server: DevServerHandle, kind: str = "openai-compatible", **fields: Any):
    """A deployment of ``kind`` pointed at the dev server (OpenAI kinds at /v1, Anthropic at the root)."""
    from helmflow.records import Deployment

    base = server.url if kind == "anthropic" else server.openai_url
    values: dict[str, Any] = {"name": f"dev/{kind}", "client": kind, "model": "dev-model", "base_url": base,
                              "max_concurrency": 32, "retry": FAST_RETRY}
    if kind in ("openai", "anthropic"):
        values["api_key_env"] = "HELMFLOW_DEV_KEY"
        os.environ.setdefault("HELMFLOW_DEV_KEY", "dev-key-not-secret")
    values.update(fields)
    return Deployment.model_validate(values)


def make_requests(n: int, model: str = "dev-model", max_tokens: int = 6, logprobs: bool = False, tag: str = ""):
    """``n`` distinct text requests whose echo answer is ``answer <i> ...``."""
    from helmflow.records import Request, RequestBody
    from helmflow.versions import request_hash

    out = []
    for i in range(n):
        body = RequestBody(model=model, prompt=f"Question {tag}{i}?\nanswer {tag}{i} is here", max_tokens=max_tokens,
                           temperature=0.0, stop=["\n"], logprobs=logprobs)
        out.append(Request(request_hash=request_hash(body, 0), instance_id=f"i{i}", split="test", body=body))
    return out
