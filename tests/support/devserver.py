"""Deployments and requests aimed at the dev server (``helmflow dev-server``, :mod:`helmflow.devserver`).

The session's server is the ``dev_server`` fixture (tests/conftest.py); a test that needs a private one
(e.g. with ``--api-key-env`` or a policy) starts it with :func:`helmflow.devserver.start_dev_server`.
"""

from __future__ import annotations

import os
from typing import Any

from helmflow.devserver import DevServerHandle

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
