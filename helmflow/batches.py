"""Provider batch APIs (``batch: true``): a chunk's pending requests go out as batches and come back
as the same completions the real-time path journals, priced at the deployment's batch discount.

The order of events is what makes it crash-safe:

1. the chunk's requests are split at the provider's limits (requests and bytes per batch);
2. an intent record (the hashes and a random tag) is written, the batch is created (labelled with
   the tag where the provider keeps metadata), and its **id and request hashes are written to
   storage** (``batches/<deployment>/<batch id>.json``, :mod:`helmflow.layout`) before it is polled;
   a run killed between the two writes leaves the intent, and the next run looks the batch up
   (OpenAI: by its tag; Anthropic, which keeps no metadata: the oldest unrecorded batch of as many
   requests created since) before it submits anything;
3. it is polled with a backoff (``batch_poll_s`` at first, 1.5 times longer each time, at most
   300 s), its progress in the task's log (``batch 2/3: 41,200 of 50,000 done``);
4. once it has ended its answers are journaled, then its record is marked ended (and moved under
   ``ended/``: a run reads only the live records, however many batches a storage has seen).

A resumed run (after SIGKILL, Ctrl-C or a lost worker) reads the live records first: a pending
request held by one is collected from that batch, never submitted again while it lives. A line the
provider did not finish (the batch expired or was cancelled) is resubmitted once, with the errored
lines whose error is transient while the request has been in fewer batches than the deployment's
``retry.attempts``; a permanent error is the request's error. Ctrl-C (or a lapsed lease) stops
polling and leaves the batches running: the next run of the same command collects them.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import BaseModel

from helmflow import layout
from helmflow.clients.base import BudgetExceeded, Client, ClientError, ClientResult, NotRun, PermanentError
from helmflow.journal import Journal, SpoolFull
from helmflow.lease import lapsed as lease_lapsed
from helmflow.records import Completion, Request
from helmflow.request_builder import cost_usd, prompt_text
from helmflow.stopping import add_exit_note, stop_requested
from helmflow.storage import Store
from helmflow.tokenizers import get_tokenizer

MAX_POLL_S = 300.0
#: how many batches an unfinished line (expired, cancelled) may be in: the first, and one resubmission
UNFINISHED_ROUNDS = 2


_running: dict[str, Client] = {}  # batch id -> its deployment's client, of the batches this process is polling
_cancel_on_stop = False  # --cancel-batches: Ctrl-C cancels them instead
CANCEL_S = 10.0  # for the cancel calls on the way out


def cancel_on_stop(on: bool = True) -> None:
    """Whether Ctrl-C (SIGINT, SIGTERM) cancels the provider batches this process is polling (``run
    --cancel-batches``) instead of leaving them running; a lapsed lease never cancels (another run may poll them)."""
    global _cancel_on_stop
    _cancel_on_stop = on


def _shown(ids: list[str]) -> str:
    return ", ".join(sorted(ids)[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def _running_note() -> str | None:
    """What Ctrl-C says about the batches it leaves running at the provider (or, with
    :func:`cancel_on_stop`, cancels there first)."""
    running = dict(_running)
    if not running:
        return None
    if _cancel_on_stop and not lease_lapsed():
        return _cancel_running(running)
    return (f"helmflow: {len(running)} provider batch(es) keep running ({_shown(list(running))}); run the same "
            f"command again to collect them: nothing is submitted twice")


def _cancel_running(running: dict[str, Client]) -> str:
    """Cancel each batch at its provider (on the I/O loop, at most :data:`CANCEL_S`); what was done, in one line."""
    from helmflow.aio import run_io

    async def cancel_all() -> list[BaseException | None]:
        async def one(batch_id: str, client: Client) -> None:
            await client.batch_cancel(batch_id)

        return await asyncio.wait_for(asyncio.gather(*(one(b, c) for b, c in running.items()),
                                                     return_exceptions=True), CANCEL_S)

    try:
        outcomes = run_io(cancel_all())
    except Exception as exc:  # noqa: BLE001 - said, and the process still stops
        return (f"helmflow: cancelling {len(running)} provider batch(es) failed ({type(exc).__name__}: {exc}); "
                f"`helmflow batches cancel` tries again")
    failed = [b for b, outcome in zip(running, outcomes, strict=True) if outcome is not None]
    cancelled = [b for b in running if b not in failed]
    line = (f"helmflow: --cancel-batches: cancelled {len(cancelled)} provider batch(es) ({_shown(cancelled)}); "
            f"the provider bills what they finished, and the next run of the same command keeps those lines and "
            f"sends the rest")
    if failed:
        line += f"; {len(failed)} not cancelled ({_shown(failed)}): `helmflow batches cancel` tries again"
    return line


add_exit_note(_running_note)


class BatchRecord(BaseModel):
    """What storage holds of one provider batch (written before it is polled)."""

    batch_id: str
    deployment: str
    hashes: list[str]
    submitted_at: str
    state: str = "live"  # "submitting" (written before the create call), "live", then "ended" once journaled
    status: str = ""  # the provider's last status
    tag: str = ""  # what the create call was labelled with (OpenAI metadata), to find it again


class Ledger:
    """The deployment's batch records in storage."""

    def __init__(self, store: Store, deployment: str):
        self.store, self.deployment = store, deployment

    def records(self) -> list[BatchRecord]:
        """The live (and submitting) records: what a run must poll or look up before it submits."""
        prefix = layout.batches_dir(self.deployment)
        if not self.store.exists(prefix):
            return []
        out = []
        for key in sorted(self.store.ls(prefix)):
            if key.endswith(".json"):
                out.append(BatchRecord.model_validate(self.store.read_json(key)))
        return out

    def write(self, record: BatchRecord) -> None:
        """Write the record; an ended one moves under ``ended/`` (written there first, then the live one removed)."""
        ended = record.state == "ended"
        self.store.write_json(layout.batch_record(self.deployment, record.batch_id, ended), record.model_dump())
        if ended:
            self.store.delete(layout.batch_record(self.deployment, record.batch_id))

    def ended(self) -> list[BatchRecord]:
        prefix = f"{layout.batches_dir(self.deployment)}/ended"
        if not self.store.exists(prefix):
            return []
        return [BatchRecord.model_validate(self.store.read_json(k)) for k in sorted(self.store.ls(prefix))
                if k.endswith(".json")]

    def delete(self, record: BatchRecord) -> None:
        self.store.delete(layout.batch_record(self.deployment, record.batch_id))


def _lines_split(lines: list[tuple[str, dict[str, Any]]], max_requests: int,
                 max_bytes: int) -> list[list[tuple[str, dict[str, Any]]]]:
    """``lines`` cut into batches of at most ``max_requests`` lines and ``max_bytes`` of JSONL each."""
    groups: list[list[tuple[str, dict[str, Any]]]] = [[]]
    size = 0
    for h, line in lines:
        n = len(json.dumps(line, separators=(",", ":")).encode()) + 1
        if groups[-1] and (len(groups[-1]) >= max_requests or size + n > max_bytes):
            groups.append([])
            size = 0
        groups[-1].append((h, line))
        size += n
    return [g for g in groups if g]


class Sender(Protocol):
    """What the concurrent sends of a chunk share (:class:`helmflow.query._Batch`)."""

    client: Client
    journal: Journal
    progress: Callable[[int], None] | None
    shared: Any

    @property
    def budget(self) -> Any: ...

    def stopped(self) -> bool: ...

    def stop(self, exc: ClientError) -> None: ...


#: builds a completion from a result: (deployment, request, result, attempts, latency, batch) -> Completion
CompletionOf = Callable[..., Completion]


async def _pause(seconds: float) -> None:
    """Wait between polls, cut short by Ctrl-C or a lapsed lease (a wait grows to minutes)."""
    end = time.monotonic() + seconds
    while not (stop_requested() or lease_lapsed()) and (left := end - time.monotonic()) > 0:
        await asyncio.sleep(min(left, 0.2))


def shown_duration(seconds: float) -> str:
    """``6h``, ``30m``, ``1h30m``, ``90s``: how a max_wait reads."""
    whole = int(round(seconds))
    parts = [(whole // 3600, "h"), (whole % 3600 // 60, "m"), (whole % 60, "s")]
    return "".join(f"{n}{unit}" for n, unit in parts if n) or f"{seconds:g}s"


def _error(req: Request, message: str, attempts: int) -> Completion:
    return Completion(request_hash=req.request_hash, instance_id=req.instance_id, sample_index=req.sample_index,
                      error=message, attempts=attempts, created_at=datetime.now(UTC).isoformat())


#: the name of the Running state a cell's task run is in while it waits on provider batches
AWAITING_BATCH = "AwaitingBatch"


class Watch:
    """The cell's task run in Prefect while it waits on provider batches: in a Running state named
    :data:`AWAITING_BATCH` from the first poll that finds a batch unfinished until every batch has been
    collected (then Running again), with a progress artifact (one per chunk, updated as lines finish: the task
    run's Artifacts tab shows a bar). ``context`` is the task run's (captured in its thread,
    :func:`task_context`); without one nothing is written. A failure to write either is logged, never the run's.

    Prefect 3 records a task run's states from the state-change events its engine emits (the task run
    recorder keeps the latest by timestamp), so the waiting state is the same event the engine would emit,
    stamped after the engine's Running and before its Completed: the engine's own state is left alone."""

    def __init__(self, context: contextvars.Context | None, deployment: str,
                 log: logging.Logger | logging.LoggerAdapter):
        self.context, self.deployment, self.log = context, deployment, log
        self.artifact_id: Any = None
        self.last: float | None = None
        self.waiting: Any = None  # the AwaitingBatch state emitted, while it is the task run's

    async def report(self, counts: dict[str, tuple[int, int]]) -> None:
        done, total = sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values())
        if self.context is None or not total:
            return
        if self.waiting is None and done < total:
            message = (f"waiting on {len(counts)} provider batch(es) of {self.deployment} ({total:,} request(s)); "
                       f"progress in the task run's artifact and log")
            self.waiting = await asyncio.to_thread(self.context.run, self._state, AWAITING_BATCH, message)
        progress = round(100.0 * done / total, 1)
        if progress == self.last:
            return
        self.last = progress
        line = f"{self.deployment}: {done:,} of {total:,} batched request(s) done, in {len(counts)} provider batch(es)"
        await asyncio.to_thread(self.context.run, self._write, progress, line)

    async def finished(self) -> None:
        """The wait is over (every batch collected, or the run stopped polling): Running again."""
        if self.context is not None and self.waiting is not None:
            await asyncio.to_thread(self.context.run, self._state, "Running", None)
            self.waiting = None

    def _state(self, name: str, message: str | None) -> Any:
        """Emit the task run's state change to a Running state named ``name`` (the state, or None)."""
        try:
            from prefect.context import TaskRunContext
            from prefect.states import Running
            from prefect.utilities.engine import emit_task_run_state_change_event

            ctx = TaskRunContext.get()
            if ctx is None:
                return None
            run = ctx.task_run
            state: Any = Running(name=name, message=message)
            state.state_details.task_run_id, state.state_details.flow_run_id = run.id, run.flow_run_id
            emit_task_run_state_change_event(task_run=run, initial_state=self.waiting or run.state,
                                             validated_state=state)
            return state
        except Exception as exc:  # noqa: BLE001 - the state is a view; the run goes on without it
            self.log.debug("%s: task run state %s not set: %s", self.deployment, name, exc)
            return None

    def _write(self, progress: float, description: str) -> None:
        try:
            from prefect.artifacts import create_progress_artifact, update_progress_artifact

            if self.artifact_id is None:
                self.artifact_id = create_progress_artifact(progress=progress, description=description)
            else:
                update_progress_artifact(self.artifact_id, progress=progress, description=description)
        except Exception as exc:  # noqa: BLE001 - the artifact is a view; the run goes on without it
            self.log.debug("%s: batch progress artifact not written: %s", self.deployment, exc)


def task_context() -> contextvars.Context | None:
    """The calling thread's context when it is a Prefect task run's (what :class:`Watch` writes under)."""
    try:
        from prefect.context import TaskRunContext
    except ImportError:
        return None
    return contextvars.copy_context() if TaskRunContext.get() is not None else None


async def send_batched(batch: Sender, pending: list[Request], store: Store,
                       log: logging.Logger | logging.LoggerAdapter, completion_of: CompletionOf,
                       realtime: Callable[[Request], Awaitable[Completion]],
                       context: contextvars.Context | None = None) -> list[Completion]:
    """Completions for ``pending`` (none of them journaled) through the provider's batch API, in their order;
    past the deployment's batch ``max_wait`` (from their first submission) the batches are cancelled and what
    they did not finish goes to ``realtime``. With a task run's ``context`` the wait is the task run's
    AwaitingBatch state and a progress artifact (:class:`Watch`)."""
    client = batch.client
    d = client.deployment
    watch, counts = Watch(context, d.name, log), dict[str, tuple[int, int]]()
    ledger = Ledger(store, d.name)
    want = {r.request_hash: r for r in pending}
    records = await asyncio.to_thread(ledger.records)
    known = {rec.batch_id for rec in records}
    for intent in [rec for rec in records if rec.state == "submitting" and not want.keys().isdisjoint(rec.hashes)]:
        # a run stopped between its create call and the batch's record: was the batch created?
        records.remove(intent)
        since = datetime.fromisoformat(intent.submitted_at).timestamp()
        found = await client.batch_find(intent.tag, len(intent.hashes), since, known)
        if found is not None:
            log.info("%s: batch %s was created by a stopped run before its record: polling it", d.name, found)
            adopted = intent.model_copy(update={"batch_id": found, "state": "live"})
            await asyncio.to_thread(ledger.write, adopted)
            records.append(adopted)
            known.add(found)
        await asyncio.to_thread(ledger.delete, intent)
    rounds = Counter(h for rec in records for h in rec.hashes)  # batches each request has been in (in this run)
    live = [rec for rec in records if rec.state == "live" and not want.keys().isdisjoint(rec.hashes)]
    _running.update({rec.batch_id: client for rec in live})
    held = {h for rec in live for h in rec.hashes}
    if live:
        log.info("%s: %d request(s) are in %d batch(es) submitted before; polling those", d.name,
                 len(held & want.keys()), len(live))
    done: dict[str, Completion] = {}
    reserved: dict[str, float] = {}
    tok = get_tokenizer(d.tokenizer)
    queue = [h for h in want if h not in held]
    started = time.perf_counter()
    # max_wait counts from the first submission of the chunk's batches (a rerun's too: from their records)
    first = min((datetime.fromisoformat(rec.submitted_at).timestamp() for rec in live), default=time.time())
    deadline = first + d.batch_max_wait_s if d.batch_max_wait_s else None
    past_deadline = False
    late: list[str] = []  # what goes real-time once the deadline has passed

    def settle(h: str, actual: float) -> None:
        if batch.budget is not None:
            batch.budget.settle(reserved.pop(h, 0.0), actual)

    async def submit(hashes: list[str]) -> None:
        lines: list[tuple[str, dict[str, Any]]] = []
        for h in hashes:
            req = want[h]
            if batch.stopped():
                done[h] = _error(req, f"not sent: deployment {d.name!r} was stopped by an earlier error", 0)
                continue
            try:
                if batch.budget is not None:  # the worst case, at the batch price
                    reserved[h] = cost_usd(d, tok.count(prompt_text(req.body)), req.body.max_tokens, batch=True)
                    batch.budget.reserve(reserved[h])
                lines.append((h, await client.batch_line(h, req.body)))
            except ClientError as exc:
                reserved.pop(h, None)
                if not isinstance(exc, BudgetExceeded):
                    batch.stop(exc)
                done[h] = _error(req, f"{type(exc).__name__}: {exc}", 0)
        max_requests, max_bytes = client.batch_limits
        for group in _lines_split(lines, max_requests, max_bytes):
            if stop_requested() or lease_lapsed():
                for h, _ in group:
                    settle(h, 0.0)
                    done[h] = _error(want[h], "Interrupted: not sent: the run was interrupted", 0)
                continue
            tag = uuid.uuid4().hex
            intent = BatchRecord(batch_id=f"submitting-{tag}", deployment=d.name, hashes=[h for h, _ in group],
                                 submitted_at=datetime.now(UTC).isoformat(), state="submitting", tag=tag)
            await asyncio.to_thread(ledger.write, intent)  # a run killed during the create call finds it again
            try:
                batch_id = await client.batch_submit([line for _, line in group], tag)
            except ClientError as exc:
                await asyncio.to_thread(ledger.delete, intent)
                if not exc.transient:
                    batch.stop(exc)
                for h, _ in group:
                    settle(h, 0.0)
                    done[h] = _error(want[h], f"{type(exc).__name__}: {exc}", rounds[h])
                continue
            rec = intent.model_copy(update={"batch_id": batch_id, "state": "live"})
            await asyncio.to_thread(ledger.write, rec)  # before it is polled: a rerun polls it, never resubmits
            await asyncio.to_thread(ledger.delete, intent)
            rounds.update(rec.hashes)
            live.append(rec)
            _running[rec.batch_id] = client
            log.info("%s: submitted batch %s of %d request(s)", d.name, batch_id, len(group))

    async def collect(rec: BatchRecord, status: str) -> list[str]:
        """Journal an ended batch's answers; the hashes to resubmit."""
        bodies = {h: want[h].body for h in rec.hashes if h in want and h not in done}
        answers = await client.batch_results(rec.batch_id, bodies)
        again: list[str] = []
        latency = time.perf_counter() - started
        for h, answer in answers.items():
            req = want[h]
            if isinstance(answer, ClientResult):
                completion = completion_of(d, req, answer, rounds[h], latency, batch=True)
                try:
                    batch.journal.append(completion)
                except SpoolFull as exc:
                    batch.shared.stop_all(f"{type(exc).__name__}: {exc}")
                    batch.stop(PermanentError(str(exc)))
                    completion = _error(req, f"SpoolFull: {exc}", rounds[h])
                settle(h, completion.cost_usd)
                done[h] = completion
                if batch.progress:
                    batch.progress(1)
                continue
            limit = UNFINISHED_ROUNDS if isinstance(answer, NotRun) else max(UNFINISHED_ROUNDS, d.retry.attempts)
            if answer.transient and past_deadline and not batch.stopped():
                late.append(h)
            elif answer.transient and rounds[h] < limit and not batch.stopped():
                again.append(h)
            else:
                if not answer.transient:
                    batch.stop(answer)
                settle(h, 0.0)
                done[h] = _error(req, f"{type(answer).__name__}: {answer}", rounds[h])
        await asyncio.to_thread(batch.journal.flush)  # answers in storage before the record says ended
        rec.state, rec.status = "ended", status
        await asyncio.to_thread(ledger.write, rec)
        _running.pop(rec.batch_id, None)
        return again

    await submit(queue)
    wait = d.batch_poll_s
    while live:
        if stop_requested() or lease_lapsed():
            ids = ", ".join(rec.batch_id for rec in live)
            if _cancel_on_stop and not lease_lapsed():
                log.warning("%s: interrupted; batch(es) %s are cancelled (--cancel-batches): the next run of the same "
                            "command keeps the lines they finished and sends the rest", d.name, ids)
            else:
                log.warning("%s: interrupted; batch(es) %s keep running at the provider: run the same command again "
                            "to collect them (nothing is submitted twice)", d.name, ids)
            for rec in live:
                for h in rec.hashes:
                    if h in want and h not in done:
                        settle(h, 0.0)
                        done[h] = _error(want[h], f"Interrupted: batch {rec.batch_id} is still running; rerun to "
                                                  f"collect it", rounds[h])
            break
        if deadline is not None and not past_deadline and time.time() >= deadline:
            past_deadline = True
            log.warning("%s: batch max_wait (%s) passed: cancelling %d batch(es); their finished lines are kept, "
                        "the rest go out real-time", d.name, shown_duration(d.batch_max_wait_s or 0), len(live))
            for rec in live:
                try:
                    await client.batch_cancel(rec.batch_id)
                except ClientError as exc:
                    log.warning("%s: cancelling batch %s: %s", d.name, rec.batch_id, exc)
        ended: list[tuple[BatchRecord, str]] = []
        for i, rec in enumerate(list(live)):
            try:
                state = await client.batch_poll(rec.batch_id)
            except ClientError as exc:
                log.warning("%s: polling batch %s: %s", d.name, rec.batch_id, exc)
                if exc.transient:
                    continue
                batch.stop(exc)  # its record stays live: a later run polls it again
                live.remove(rec)
                _running.pop(rec.batch_id, None)
                for h in rec.hashes:
                    if h in want and h not in done:
                        settle(h, 0.0)
                        done[h] = _error(want[h], f"{type(exc).__name__}: {exc}", rounds[h])
                continue
            log.info("batch %d/%d: %s of %s done (%s, %s)", i + 1, len(live), f"{state.done:,}",
                     f"{state.total:,}", rec.batch_id, state.status)
            counts[rec.batch_id] = (state.done, state.total)
            if state.ended:
                ended.append((rec, state.status))
        await watch.report(counts)
        again: list[str] = []
        for rec, status in ended:
            live.remove(rec)
            again += await collect(rec, status)
        if again and past_deadline:
            late += again
        elif again:
            log.info("%s: resubmitting %d request(s) the provider did not finish", d.name, len(again))
            await submit(again)
            wait = d.batch_poll_s
        if live and not ended:
            await _pause(min(wait, max(deadline - time.time(), 0.05)) if deadline and not past_deadline else wait)
            wait = min(wait * 1.5, MAX_POLL_S)
    await watch.finished()
    if late:
        log.info("%s: sending %d request(s) real-time after the batch deadline", d.name, len(late))
        for h in late:
            settle(h, 0.0)  # the real-time send reserves and settles its own
        for completion in await asyncio.gather(*(realtime(want[h]) for h in late)):
            done[completion.request_hash] = completion
    out = []
    for r in pending:
        if r.request_hash not in done:  # held by a live batch whose poll failed for good
            settle(r.request_hash, 0.0)
            done[r.request_hash] = _error(r, "Interrupted: not collected", 0)
        out.append(done[r.request_hash])
    return out


__all__ = ["BatchRecord", "Ledger", "cancel_on_stop", "send_batched"]
