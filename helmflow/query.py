"""Query: fit prompts to a deployment's window, then send what the journal does not already hold.

Requests fan out on the process-wide I/O loop under the deployment's limiter; transient errors are
retried with capped exponential backoff and jitter (honouring Retry-After); a permanent error stops
the pair at once. Successes are journaled as they arrive, so a crash never loses finished work.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from helmflow.adapters import Prompt
from helmflow.aio import limiter_for, run_io
from helmflow.clients import make_client
from helmflow.clients.base import Client, ClientError, PermanentError
from helmflow.journal import Journal, request_hash
from helmflow.records import AdapterSpec, Completion, Deployment, Request, RequestBody
from helmflow.storage import Store
from helmflow.tokenizers import get_tokenizer

Progress = Callable[[int], None]


class QueryFailed(RuntimeError):
    """The pair could not be evaluated: a permanent error, or more errors than the deployment allows."""


@dataclass
class QueryResult:
    completions: list[Completion]
    sent: int = 0
    reused: int = 0
    errors: int = 0
    permanent_error: str | None = None
    error_messages: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- requests
def fit_prompt(prompt: Prompt, deployment: Deployment, max_tokens: int) -> tuple[str, int, bool]:
    """Drop in-context examples from the end, then truncate, until prompt + output fit the window."""
    tok = get_tokenizer(deployment.tokenizer)
    budget = deployment.context_window - max_tokens
    n = len(prompt.examples)
    while n > 0 and tok.count(prompt.text(n)) > budget:
        n -= 1
    text = prompt.text(n)
    if tok.count(text) > budget:
        return tok.truncate(text, max(budget, 0)), n, True
    return text, n, n < len(prompt.examples)


def build_requests(prompts: list[Prompt], adapter: AdapterSpec, deployment: Deployment) -> list[Request]:
    gen = adapter.generation
    max_tokens = min(gen.max_tokens, deployment.max_output_tokens or gen.max_tokens)
    requests: list[Request] = []
    for prompt in prompts:
        if prompt.messages is not None:
            text, n_train, truncated = None, 0, False
        else:
            text, n_train, truncated = fit_prompt(prompt, deployment, max_tokens)
        body = RequestBody(
            model=deployment.model,
            prompt=text,
            messages=prompt.messages,
            max_tokens=max_tokens,
            temperature=gen.temperature,
            stop=gen.stop,
        )
        for k in range(gen.num_outputs):
            sample = prompt.trial * gen.num_outputs + k
            requests.append(
                Request(
                    request_hash=request_hash(body, sample),
                    instance_id=prompt.instance_id,
                    split=prompt.split,
                    sample_index=sample,
                    body=body,
                    num_train_instances=n_train,
                    prompt_truncated=truncated,
                    output_mapping=prompt.output_mapping,
                )
            )
    return requests


# --------------------------------------------------------------------------- sending
def _cost(deployment: Deployment, prompt_tokens: int, output_tokens: int) -> float:
    return (prompt_tokens * deployment.price_input_per_mtok + output_tokens * deployment.price_output_per_mtok) / 1e6


def _wait(deployment: Deployment):
    exp = wait_exponential_jitter(initial=deployment.retry.base_s, max=deployment.retry.cap_s)

    def wait(state) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        return min(retry_after, deployment.retry.cap_s) if retry_after is not None else exp(state)

    return wait


async def _send_one(
    client: Client, req: Request, abort: asyncio.Event, journal: Journal, progress: Progress | None
) -> Completion:
    deployment = client.deployment
    limiter = limiter_for(deployment)
    tok = get_tokenizer(deployment.tokenizer)
    attempts = 0
    started = time.perf_counter()

    async def attempt():
        nonlocal attempts, started
        if abort.is_set():
            raise PermanentError("not sent: the pair was stopped by an earlier permanent error")
        async with limiter:
            await limiter.admit(tok.count(req.body.prompt or "") + req.body.max_tokens)
            attempts += 1
            started = time.perf_counter()
            try:
                return await asyncio.wait_for(client.complete(req.body), deployment.retry.timeout_s)
            except asyncio.TimeoutError:
                raise ClientError(f"no answer within {deployment.retry.timeout_s:g} s") from None

    try:
        async for state in AsyncRetrying(
            stop=stop_after_attempt(deployment.retry.attempts),
            wait=_wait(deployment),
            retry=retry_if_exception(lambda e: isinstance(e, ClientError) and e.transient),
            reraise=True,
        ):
            with state:
                result = await attempt()
        latency = time.perf_counter() - started
        prompt_tokens = result.prompt_tokens or tok.count(req.body.prompt or "")
        output_tokens = result.output_tokens or tok.count(result.text)
        completion = Completion(
            request_hash=req.request_hash,
            instance_id=req.instance_id,
            sample_index=req.sample_index,
            text=result.text,
            finish_reason=result.finish_reason,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            latency_s=latency,
            cost_usd=_cost(deployment, prompt_tokens, output_tokens),
            tokens=result.tokens,
            logprobs=result.logprobs,
            attempts=attempts,
            created_at=datetime.now(timezone.utc).isoformat(),
        )
        journal.append(completion)
    except ClientError as exc:
        if not exc.transient:
            abort.set()
        completion = Completion(
            request_hash=req.request_hash,
            instance_id=req.instance_id,
            sample_index=req.sample_index,
            error=f"{type(exc).__name__}: {exc}",
            attempts=attempts,
            created_at=datetime.now(timezone.utc).isoformat(),
        )
    if progress:
        progress(1)
    return completion


async def _send_all(client: Client, requests: list[Request], journal: Journal, progress: Progress | None):
    abort = asyncio.Event()
    try:
        return await asyncio.gather(*(_send_one(client, r, abort, journal, progress) for r in requests))
    finally:
        client.flush_counters()


_clients: dict[tuple[str, str], Client] = {}


def client_for(deployment: Deployment, store: Store) -> Client:
    """One client per deployment and storage root per process (connection pools are reused)."""
    key = (deployment.model_dump_json(), store.root)
    if key not in _clients:
        _clients[key] = make_client(deployment, store)
    return _clients[key]


def run_queries(
    store: Store, deployment: Deployment, requests: list[Request], progress: Progress | None = None
) -> QueryResult:
    """Completions for ``requests`` in order: journaled ones reused, the rest sent now."""
    client = client_for(deployment, store)
    client.check_credentials()
    journal = Journal(store, deployment.name)
    try:
        done = journal.lookup({r.request_hash for r in requests})
        pending = [r for r in requests if r.request_hash not in done]
        if progress and len(requests) - len(pending):
            progress(len(requests) - len(pending))
        fresh = run_io(_send_all(client, pending, journal, progress)) if pending else []
    finally:
        journal.close()
    by_hash = dict(done)
    by_hash.update({c.request_hash: c for c in fresh})
    completions = []
    for r in requests:  # journaled rows carry no instance context of their own run: restamp it
        c = by_hash[r.request_hash]
        completions.append(c.model_copy(update={"instance_id": r.instance_id, "sample_index": r.sample_index}))
    errors = [c for c in fresh if not c.ok]
    permanent = next((c.error for c in errors if c.error and c.error.startswith("PermanentError")), None)
    return QueryResult(
        completions=completions,
        sent=len(pending),
        reused=len(requests) - len(pending),
        errors=len(errors),
        permanent_error=permanent,
        error_messages=sorted({c.error for c in errors if c.error})[:5],
    )
