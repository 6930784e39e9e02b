"""One event loop per process for all provider I/O, and per-deployment limiters that live on it.

Prefect runs tasks in threads; each query task hands its coroutine to this loop. So every task of
a process shares one connection pool and one limiter per deployment: max in flight, requests per
minute and tokens per minute hold across the whole process, with no thread per request.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from helmflow.records import Deployment

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def io_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="helmflow-io", daemon=True).start()
        return _loop


def run_io(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on the shared I/O loop and wait for it from any thread."""
    return asyncio.run_coroutine_threadsafe(coro, io_loop()).result()


class _Bucket:
    """A token bucket refilled continuously: ``rate_per_min`` units per minute, burst of one minute."""

    def __init__(self, rate_per_min: float):
        self.capacity = rate_per_min
        self.rate = rate_per_min / 60.0
        self.level = rate_per_min
        self.stamp = time.monotonic()

    async def take(self, amount: float) -> None:
        amount = min(amount, self.capacity)
        while True:
            now = time.monotonic()
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.level >= amount:
                self.level -= amount
                return
            await asyncio.sleep((amount - self.level) / self.rate)


class Limiter:
    """Max in flight, requests/min and tokens/min for one deployment; used only on the I/O loop."""

    def __init__(self, deployment: Deployment):
        self.in_flight = asyncio.Semaphore(deployment.max_concurrency)
        self.requests = _Bucket(deployment.requests_per_minute) if deployment.requests_per_minute else None
        self.tokens = _Bucket(deployment.tokens_per_minute) if deployment.tokens_per_minute else None

    async def __aenter__(self) -> Limiter:
        await self.in_flight.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.in_flight.release()

    async def admit(self, tokens: int) -> None:
        if self.requests:
            await self.requests.take(1)
        if self.tokens:
            await self.tokens.take(tokens)


_limiters: dict[tuple, Limiter] = {}


def limiter_for(deployment: Deployment) -> Limiter:
    """The process-wide limiter of a deployment (call from the I/O loop); new limits, new limiter."""
    key = (deployment.name, deployment.max_concurrency, deployment.requests_per_minute, deployment.tokens_per_minute)
    lim = _limiters.get(key)
    if lim is None:
        lim = _limiters[key] = Limiter(deployment)
    return lim
