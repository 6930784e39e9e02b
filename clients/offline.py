"""Offline deployments: deterministic, free, no network. Baselines and test doubles in one kind.

Behaviours (``options.behavior``):
- ``solver``: solves what it recognises (arithmetic questions), wrong on a seeded fraction
  ``1 - accuracy`` of requests; otherwise answers like ``echo``.
- ``echo``: repeats the last line of the input, like HELM's simple/model1 baseline.
- ``constant``: always answers ``options.answer``.

``options.fail`` makes a deployment fail on purpose: ``always`` (a permanent error), ``rate:<p>``
(transient errors with probability p per call) or ``after:<n>`` (permanent after n calls in a process).
Calls are counted in files under ``<storage>/_counters/offline/<deployment>/`` so a test in another
process can prove that a cached run sent nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import random
import re
import threading
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from helmflow.clients import client_kind
from helmflow.clients.base import Client, ClientResult, PermanentError, TransientError
from helmflow.records import Deployment, RequestBody
from helmflow.storage import Store, safe_key

_QUESTION = re.compile(r"What is (-?\d+) ([+\-*]) (-?\d+)\?")
COUNTER_PREFIX = "_counters/offline"


class OfflineOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    behavior: Literal["solver", "echo", "constant"] = "solver"
    accuracy: float = Field(1.0, ge=0, le=1)
    answer: str = ""
    latency_ms: float = Field(0.0, ge=0)
    fail: str | None = None

    @field_validator("fail")
    @classmethod
    def _fail(cls, v: str | None) -> str | None:
        if v is None or v == "always" or re.fullmatch(r"rate:(0(\.\d+)?|1(\.0+)?)", v) or re.fullmatch(r"after:\d+", v):
            return v
        raise ValueError("fail must be 'always', 'rate:<p>' with 0<=p<=1, or 'after:<n>'")


def _unit(text: str) -> float:
    """A deterministic number in [0, 1) from text."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def solve(prompt: str) -> str | None:
    found = _QUESTION.findall(prompt)
    if not found:
        return None
    a, op, b = found[-1]
    x, y = int(a), int(b)
    return str(x + y if op == "+" else x - y if op == "-" else x * y)


def offline_call_count(store: Store, deployment: str) -> int:
    return sum(int(store.read_bytes(k)) for k in store.find(f"{COUNTER_PREFIX}/{safe_key(deployment)}"))


@client_kind("offline")
class OfflineClient(Client):
    def __init__(self, deployment: Deployment, store: Store | None = None):
        super().__init__(deployment, store)
        try:
            self.options = OfflineOptions.model_validate(deployment.options)
        except ValidationError as exc:
            raise PermanentError(f"deployment {deployment.name!r}: bad offline options: {exc.errors()[0]['msg']}") from None
        self._lock = threading.Lock()
        self._calls = 0
        self._unflushed = 0

    def _count(self) -> int:
        with self._lock:
            self._calls += 1
            self._unflushed += 1
            return self._calls

    def flush_counters(self) -> None:
        with self._lock:
            n, self._unflushed = self._unflushed, 0
        if n and self.store is not None:
            key = f"{COUNTER_PREFIX}/{safe_key(self.deployment.name)}/{uuid.uuid4().hex}.count"
            self.store.write_bytes(key, str(n).encode())

    def _answer(self, body: RequestBody) -> str:
        prompt = body.prompt if body.prompt is not None else "\n".join(m.content for m in body.messages or [])
        opts = self.options
        if opts.behavior == "constant":
            return opts.answer
        if opts.behavior == "solver":
            solved = solve(prompt)
            if solved is not None:
                if _unit(prompt) >= opts.accuracy:  # a seeded mistake
                    return str(int(solved) + 1 + int(_unit(prompt + "!") * 9))
                return solved
        lines = [ln for ln in prompt.strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else ""
        return last.split(": ", 1)[1] if ": " in last and lines and len(lines) > 1 else last

    async def complete(self, body: RequestBody) -> ClientResult:
        n = self._count()
        fail = self.options.fail
        if fail == "always":
            raise PermanentError(f"deployment {self.deployment.name!r} is configured to fail (fail: always)")
        if fail and fail.startswith("after:") and n > int(fail[6:]):
            raise PermanentError(f"deployment {self.deployment.name!r} is configured to fail ({fail})")
        if fail and fail.startswith("rate:") and random.random() < float(fail[5:]):
            raise TransientError(f"deployment {self.deployment.name!r}: simulated transient failure ({fail})")
        if self.options.latency_ms:
            await asyncio.sleep(self.options.latency_ms / 1000)
        text = self._answer(body)
        for stop in body.stop:
            if stop and stop in text:
                text = text[: text.index(stop)]
        tokens = text.split()
        finish = "length" if len(tokens) > body.max_tokens else "stop"
        tokens = tokens[: body.max_tokens]
        text = " ".join(tokens) if finish == "length" else text
        prompt_text = body.prompt if body.prompt is not None else " ".join(m.content for m in body.messages or [])
        logprobs = [math.log(0.5 + 0.49 * _unit(f"{prompt_text}|{i}|{t}")) for i, t in enumerate(tokens)]
        return ClientResult(
            text=text,
            finish_reason=finish,
            prompt_tokens=len(prompt_text.split()),
            output_tokens=len(tokens),
            tokens=tokens,
            logprobs=logprobs,
        )
