"""The wire-compatible dev server for tests: a real ``helmflow dev-server`` process on 127.0.0.1.

``dev_server`` is one process for the whole session; each test gets it with faults off, no latency
and zeroed counts (``configure`` changes them over HTTP). ``start_dev_server`` (from
``helmflow.testing.devserver``, shared with the benchmarks) starts a private one (e.g. with
``--api-key-env``), as a context manager.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from helmflow.testing.devserver import DevServerHandle, start_dev_server

__all__ = ["DevServerHandle", "start_dev_server", "dev_deployment", "make_requests", "FAST_RETRY"]


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
