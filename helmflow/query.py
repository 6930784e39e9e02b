"""Query: send a pair's requests that the journal does not already hold (building them, fitting
prompts to the deployment's window and pricing them, is :mod:`helmflow.request_builder`).

Requests fan out on the process-wide I/O loop under the deployment's limiter; transient errors are
retried with capped exponential backoff and jitter (honouring Retry-After); a permanent error stops
the pair at once. Successes are journaled as they arrive, so a crash never loses finished work. An
optional :class:`Budget` stops new priced requests before the projected spend passes it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import logging
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from helmflow.aio import limiter_for, run_io
from helmflow.clients import make_client
from helmflow.clients.base import (
    BudgetExceeded,
    Client,
    ClientError,
    ClientResult,
    Interrupted,
    InvalidOutput,
    PermanentError,
    TransientError,
    Unreachable,
)
from helmflow.journal import Journal, SpoolFull
from helmflow.lease import lapsed as lease_lapsed
from helmflow.media import MediaError, MediaStore
from helmflow.records import COMPLETION_SCHEMA, Completion, ContentPart, Deployment, Request
from helmflow.request_builder import cost_usd, prompt_text
from helmflow.stopping import InFlight, stop_requested
from helmflow.storage import Store
from helmflow.tokenizers import get_tokenizer

Progress = Callable[[int], None]


class QueryFailed(RuntimeError):
    """The pair could not be evaluated: a permanent error, or more errors than the deployment allows."""


class RunRefused(QueryFailed):
    """The pair's prompts do not fit the deployment's context window and its board refuses to cut them
    (``context_overflow: refuse``): no request was sent."""


@dataclass
class QueryResult:
    completions: list[Completion]
    sent: int = 0
    reused: int = 0
    errors: int = 0
    permanent_error: str | None = None
    error_messages: list[str] = field(default_factory=list)
    cost_usd: float = 0.0  # of what was sent now (reused completions were paid before)


# --------------------------------------------------------------------------- budget
class Budget:
    """A spending cap shared by every query of one board run in a process (used on the I/O loop only).

    Before a priced request is sent, its worst case (prompt tokens + ``max_tokens`` of output) is
    reserved; once the reservation would take spend past the limit, no new priced request is sent.
    Settling replaces the reservation by the actual cost.
    """

    def __init__(self, limit_usd: float):
        if not math.isfinite(limit_usd) or limit_usd < 0:  # nan compares false: it would never stop
            raise ValueError(f"--budget-usd must be a finite amount of zero or more, not {limit_usd}")
        self.limit_usd = limit_usd
        self.spent_usd = 0.0
        self.reserved_usd = 0.0
        self.refused = 0

    def reserve(self, amount: float) -> None:
        if amount <= 0:
            return  # free deployments are never stopped
        if self.refused or self.spent_usd + self.reserved_usd + amount > self.limit_usd:
            self.refused += 1
            raise BudgetExceeded(
                f"not sent: the budget of ${self.limit_usd:g} would be passed (spent ${self.spent_usd:.4f}, "
                f"in flight up to ${self.reserved_usd:.4f}, this request up to ${amount:.4f}); rerun with a "
                f"larger --budget-usd: finished responses are journaled and not paid again"
            )
        self.reserved_usd += amount

    def settle(self, reserved: float, actual: float) -> None:
        self.reserved_usd = max(self.reserved_usd - max(reserved, 0.0), 0.0)
        self.spent_usd += actual


class BoardRun:
    """What the queries of one board run share in a process: its budget (if any), and the
    deployments a permanent error has stopped. A bad key, a forbidden or unknown model fails every
    pair of its deployment alike, so the first such error stops them all: nothing more is sent."""

    def __init__(self, limit_usd: float | None = None):
        self.budget = Budget(limit_usd) if limit_usd is not None else None
        self.halted: dict[str, str] = {}  # deployment name -> the error that stopped it
        self.everything: str | None = None  # the error that stopped every deployment (the journal cannot write)
        self._refused: dict[str, int] = {}  # deployment name -> refused attempts in a row

    def refused(self, deployment: str, exc: Unreachable) -> None:
        """A few refused attempts in a row, from any request, stop the deployment: nobody is there."""
        self._refused[deployment] = self._refused.get(deployment, 0) + 1
        if self._refused[deployment] >= Unreachable.max_attempts:
            self.halt(deployment, f"{type(exc).__name__}: {exc}")

    def reached(self, deployment: str) -> None:
        self._refused.pop(deployment, None)

    def stop_all(self, error: str) -> str:
        """Stop every deployment (the first error is kept); returns that first error."""
        if self.everything is None:
            self.everything = error
        return self.everything

    def halt(self, deployment: str, error: str) -> str:
        """Stop ``deployment`` (the first error is the one kept); returns that first error."""
        return self.halted.setdefault(deployment, error)


_board_runs: dict[str, BoardRun] = {}


def board_run(key: str, limit_usd: float | None = None) -> BoardRun:
    """The process-wide share of the board run named ``key`` (e.g. its flow-run id)."""
    if key not in _board_runs:
        _board_runs[key] = BoardRun(limit_usd)
    return _board_runs[key]


# --------------------------------------------------------------------------- sending
def _backoff_s(deployment: Deployment, attempt_number: int, exc: BaseException) -> float:
    """Seconds before the next try after try ``attempt_number`` failed with ``exc``: the provider's
    Retry-After (capped), else capped exponential backoff with jitter (tenacity's
    ``wait_exponential_jitter(multiplier=base_s, max=cap_s, jitter=base_s)``)."""
    r = deployment.retry
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        return min(retry_after, r.cap_s)
    try:
        backoff = r.base_s * 2 ** (attempt_number - 1) + random.uniform(0, r.base_s)
    except OverflowError:
        backoff = r.cap_s
    return max(0.0, min(backoff, r.cap_s))


def _gives_up(deployment: Deployment, attempt_number: int, exc: BaseException) -> bool:
    """Whether try ``attempt_number``'s failure is final: a permanent error (or anything not a
    :class:`ClientError`), the deployment's tries used up, or an unreachable host's few tries."""
    if not isinstance(exc, ClientError) or not exc.transient:
        return True
    if attempt_number >= deployment.retry.attempts:
        return True
    return isinstance(exc, Unreachable) and attempt_number >= Unreachable.max_attempts


@dataclass
class _Batch:
    """What the concurrent sends of one batch share."""

    client: Client
    journal: Journal
    progress: Progress | None
    shared: BoardRun
    permanent_error: str | None = None

    @property
    def budget(self) -> Budget | None:
        return self.shared.budget

    def stopped(self) -> bool:
        return (self.permanent_error is not None or self.shared.everything is not None
                or self.client.deployment.name in self.shared.halted)

    def stop(self, exc: ClientError) -> None:
        """No more requests from this batch; and, unless the budget said no, from any batch of the
        deployment in this board run (the pair reports the error that stopped the deployment)."""
        error = self.shared.everything or f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, BudgetExceeded | Interrupted):
            error = self.shared.halt(self.client.deployment.name, error)
        if self.permanent_error is None:
            self.permanent_error = error


async def _send_one(batch: _Batch, req: Request) -> Completion:
    client = batch.client
    deployment = client.deployment
    limiter = limiter_for(deployment)
    tok = get_tokenizer(deployment.tokenizer) if limiter.tokens is not None or batch.budget is not None else None
    attempts = 0
    started = time.perf_counter()
    reserved = 0.0

    async def attempt() -> ClientResult:
        nonlocal attempts, started
        async with limiter:
            if batch.stopped():  # checked once a slot is ours: nothing queued goes out after a stop
                raise PermanentError(f"not sent: deployment {deployment.name!r} was stopped by an earlier error")
            if limiter.tokens is not None:
                assert tok is not None
                await limiter.admit(tok.count(prompt_text(req.body)) + req.body.max_tokens)
            elif limiter.requests is not None:
                await limiter.admit(0)
            if stop_requested() or lease_lapsed():  # last before the wire: after a Ctrl-C, or once the
                raise Interrupted("not sent: the run was interrupted")  # board's lease may be another's, nothing starts
            attempts += 1
            started = time.perf_counter()
            try:
                with InFlight():
                    async with asyncio.timeout(deployment.retry.timeout_s):
                        result = await client.complete(req.body)
                batch.shared.reached(deployment.name)
                return result
            except Unreachable as exc:
                batch.shared.refused(deployment.name, exc)
                raise
            except TimeoutError:
                raise TransientError(f"deployment {deployment.name!r}: "
                                     f"no answer within {deployment.retry.timeout_s:g} s") from None

    try:
        if batch.budget is not None:
            asked = req.body.image_generation.n if req.body.image_generation is not None else 0
            assert tok is not None
            reserved = cost_usd(deployment, tok.count(prompt_text(req.body)), req.body.max_tokens, images=asked)
            batch.budget.reserve(reserved)
        tries = 0
        while True:  # a plain loop: tenacity's set-up per request was a fifth of this loop's CPU
            tries += 1
            try:
                result = await attempt()
                break
            except BaseException as exc:
                if _gives_up(deployment, tries, exc):
                    raise
                await asyncio.sleep(_backoff_s(deployment, tries, exc))
        latency = time.perf_counter() - started
        if req.body.image_generation is not None:  # decoded, checked and stored off the I/O loop
            completion = await asyncio.to_thread(completion_of, deployment, req, result, attempts, latency,
                                                 media=client.media)
        else:
            completion = completion_of(deployment, req, result, attempts, latency)
        cost = completion.cost_usd
        try:
            batch.journal.append(completion)  # spooled before it counts as done
        except SpoolFull as exc:  # paid, and cannot be kept: no further request may go out
            if batch.budget is not None:
                batch.budget.settle(reserved, cost)
                reserved = 0.0
            batch.shared.stop_all(f"{type(exc).__name__}: {exc}")
            raise PermanentError(str(exc)) from None  # the pair reports the board-wide stop (_Batch.stop)
        if batch.budget is not None:
            batch.budget.settle(reserved, cost)
    except ClientError as exc:
        if batch.budget is not None and not isinstance(exc, BudgetExceeded):
            batch.budget.settle(reserved, 0.0)
        if not exc.transient or isinstance(exc, Unreachable):
            batch.stop(exc)
        completion = Completion(
            request_hash=req.request_hash,
            instance_id=req.instance_id,
            sample_index=req.sample_index,
            error=f"{type(exc).__name__}: {exc}",
            attempts=attempts,
            created_at=datetime.now(UTC).isoformat(),
        )
    if batch.progress and attempts:  # one that never went out (its deployment stopped) is not done
        batch.progress(1)
    return completion


def stored_images(media: MediaStore, deployment: Deployment, req: Request, result: ClientResult) -> list[ContentPart]:
    """The images of an image request's answer, each decoded and checked (model output is untrusted) and
    stored once under ``media/`` by its sha256; :class:`InvalidOutput` when one is unusable or the count
    is not what was asked."""
    asked = req.body.image_generation.n if req.body.image_generation is not None else 0
    if len(result.images) != asked:
        raise InvalidOutput(f"deployment {deployment.name!r}: asked for {asked} image(s), got {len(result.images)}")
    parts = []
    for i, data in enumerate(result.images):
        try:
            parts.append(media.put(data, f"deployment {deployment.name!r}, request {req.request_hash[:12]}, "
                                         f"image {i + 1}"))
        except MediaError as exc:
            raise InvalidOutput(f"generated image refused: {exc}") from None
    return parts


def completion_of(deployment: Deployment, req: Request, result: ClientResult, attempts: int, latency: float,
                  batch: bool = False, media: MediaStore | None = None) -> Completion:
    """The completion of ``req`` answered with ``result`` (in a provider batch: priced at its discount);
    an image request's images are checked and put in ``media`` first (:func:`stored_images`)."""
    images = stored_images(media or MediaStore(None), deployment, req, result) if (
        req.body.image_generation is not None or result.images) else []
    tok = get_tokenizer(deployment.tokenizer)
    prompt_tokens = result.prompt_tokens or tok.count(prompt_text(req.body))
    reasoning_tokens = result.reasoning_tokens
    if reasoning_tokens is None:  # the server sent the reasoning but not its count
        reasoning_tokens = tok.count(result.reasoning) if result.reasoning else 0
    output_tokens = result.output_tokens or tok.count(result.text) + reasoning_tokens
    # reasoning tokens are output tokens; cached prompt tokens cost the cached price, if declared
    cached = min(result.cached_tokens, prompt_tokens)
    written = min(result.cache_write_tokens, prompt_tokens - cached)
    cost = cost_usd(deployment, prompt_tokens, output_tokens, cached, batch, written, images=len(images))
    return Completion(
        request_hash=req.request_hash,
        instance_id=req.instance_id,
        sample_index=req.sample_index,
        text=result.text,
        finish_reason=result.finish_reason,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        latency_s=latency,
        cost_usd=cost,
        tokens=result.tokens,
        logprobs=result.logprobs,
        text_offsets=result.text_offsets,
        attempts=attempts,
        created_at=datetime.now(UTC).isoformat(),
        reasoning=result.reasoning,
        reasoning_tokens=reasoning_tokens,
        cached_tokens=result.cached_tokens,
        truncated_in_reasoning=result.truncated_in_reasoning,
        images=images,
    )


_clients: dict[tuple[str, str], Client] = {}


@atexit.register
def _close_clients() -> None:
    """Close the SDKs' connection pools on the I/O loop before the interpreter goes."""
    if not _clients:
        return
    clients = list(_clients.values())
    _clients.clear()

    async def close_all() -> None:
        await asyncio.wait_for(asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True), 5)

    with contextlib.suppress(Exception):
        run_io(close_all())


def client_for(deployment: Deployment, store: Store) -> Client:
    """One client per deployment and storage root per process (connection pools are reused)."""
    key = (deployment.model_dump_json(), store.root)
    if key not in _clients:
        _clients[key] = make_client(deployment, store)
    return _clients[key]


def task_logger() -> logging.Logger | logging.LoggerAdapter:
    """The Prefect task run's logger when there is one (its log is the cell's), else helmflow's."""
    try:
        from prefect.logging import get_run_logger

        return get_run_logger()
    except Exception:  # noqa: BLE001 - no run context (a plain call, a test)
        return logging.getLogger("helmflow")


def _not_sent(requests: list[Request], error: str) -> list[Completion]:
    """Nothing sent: every request is an error."""
    now = datetime.now(UTC).isoformat()
    return [Completion(request_hash=r.request_hash, instance_id=r.instance_id, sample_index=r.sample_index,
                       error=f"not sent: {error}", attempts=0, created_at=now) for r in requests]


def prefix_order(requests: list[Request]) -> list[Request]:
    """``requests`` ordered so that prompts sharing leading lines go out together (the instructions and
    in-context examples of a trial, a system text), which is what a provider's prompt cache rewards: at
    every depth, each run of leading lines' prompts are contiguous, the runs in the order their first
    prompt came, and prompts in the order they came within a run. An order that already groups them (a
    trial's prompts one after the other, as the adapters build them) is left as it is."""
    first: dict[int, int] = {}
    keys: list[list[int]] = []
    for i, r in enumerate(requests):
        key, head = [], 0
        for line in prompt_text(r.body).split("\n"):
            head = hash((head, line))
            key.append(first.setdefault(head, i))
        keys.append(key)
    order = sorted(range(len(requests)), key=keys.__getitem__)
    return [requests[i] for i in order]


class Sending:
    """A pair's requests sent a chunk at a time through one journal (opened here, compacted at
    :meth:`close`): what the journal holds is reused, the rest is sent, and the counts add up in
    :attr:`result` (whose ``completions`` stay empty: each chunk's are :meth:`send`'s answer).

    ``hashes`` and ``max_tokens`` describe every request of the pair, so the journal is read once
    (its reused rows kept as an Arrow table) and the spool's room checked once, as for one batch.
    ``shared`` is the board run's budget and stopped deployments (default: this pair's own). A
    missing credential is a :class:`PermanentError` before anything is sent or read; an error that
    stops everything before sending (the journal cannot write) makes every request an error.
    """

    def __init__(self, store: Store, deployment: Deployment, hashes: pa.Array | pa.ChunkedArray, max_tokens: np.ndarray,
                 progress: Progress | None = None, shared: BoardRun | None = None):
        self.shared = shared = shared or BoardRun()
        self.store = store
        self.log = task_logger()  # taken here: the I/O loop's thread has no Prefect run context
        client = client_for(deployment, store)
        client.check_credentials()
        self.result = QueryResult(completions=[])
        self.progress = progress
        self.journal: Journal | None = None
        self.reusable = COMPLETION_SCHEMA.empty_table()
        self.stopped_by = shared.everything
        if self.stopped_by:
            return
        try:
            self.journal = Journal(store, deployment.name)
        except SpoolFull as exc:
            self.stopped_by = shared.stop_all(f"{type(exc).__name__}: {exc}")
            return
        self.batch = _Batch(client, self.journal, progress, shared)
        try:
            self.reusable = self.journal.lookup_table(set(hashes.to_pylist()))
            pending = ~np.asarray(pc.is_in(hashes, value_set=self.reusable["request_hash"]), bool)
            if pending.any():
                self.journal.check_room(int(pending.sum()), int(max_tokens[pending].max()))
        except SpoolFull as exc:
            self.stopped_by = shared.stop_all(f"{type(exc).__name__}: {exc}")
        except BaseException:
            self.close()
            raise

    def send(self, requests: list[Request]) -> list[Completion]:
        """Completions for ``requests`` in order: journaled ones reused, the rest sent now."""
        out = self.result
        if self.stopped_by:
            out.errors += len(requests)
            out.permanent_error, out.error_messages = self.stopped_by, [self.stopped_by]
            return _not_sent(requests, self.stopped_by)
        hashes = pa.array([r.request_hash for r in requests], pa.string())
        found = self.reusable.take(pc.drop_null(pc.index_in(hashes, value_set=self.reusable["request_hash"])))
        done = {c["request_hash"]: Completion.model_validate(c) for c in found.to_pylist()}
        pending = prefix_order([r for r in requests if r.request_hash not in done])
        if self.progress and len(requests) - len(pending):
            self.progress(len(requests) - len(pending))
        fresh: list[Completion] = []
        if pending and self.batch.client.deployment.batch:
            from helmflow.batches import send_batched, task_context

            fresh = run_io(send_batched(self.batch, pending, self.store, self.log, completion_of,
                                      lambda r: _send_one(self.batch, r), task_context()))
        elif pending:
            async def send() -> list[Completion]:
                return await asyncio.gather(*(_send_one(self.batch, r) for r in pending))

            fresh = run_io(send())
            if self.journal is not None:  # what the journal holds stays bounded (moved at close otherwise:
                self.journal.flush_if_full()  # each move writes up to 256 files, whatever its rows)
        by_hash = dict(done)
        by_hash.update({c.request_hash: c for c in fresh})
        completions = []
        placed: set[int] = set()
        for r in requests:  # journaled rows carry no instance context of their own run: restamp it
            c = by_hash[r.request_hash]
            if c.instance_id != r.instance_id or c.sample_index != r.sample_index or id(c) in placed:
                c = c.model_copy(update={"instance_id": r.instance_id, "sample_index": r.sample_index})
            placed.add(id(c))
            completions.append(c)
        errors = [c for c in fresh if not c.ok]
        out.sent += len(pending)
        out.reused += len(requests) - len(pending)
        out.errors += len(errors)
        out.permanent_error = self.batch.permanent_error
        out.error_messages = sorted(set(out.error_messages) | {c.error for c in errors if c.error})[:5]
        out.cost_usd += sum(c.cost_usd for c in fresh)
        return completions

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()


def run_queries(
    store: Store,
    deployment: Deployment,
    requests: list[Request],
    progress: Progress | None = None,
    shared: BoardRun | None = None,
) -> QueryResult:
    """Completions for ``requests`` in order, sent as one chunk (see :class:`Sending`)."""
    sending = Sending(store, deployment, pa.array([r.request_hash for r in requests], pa.string()),
                      np.array([r.body.max_tokens for r in requests], np.int64), progress, shared)
    try:
        completions = sending.send(requests)
    finally:
        sending.close()
    return dataclasses.replace(sending.result, completions=completions)
