"""One run of a board per storage root at a time: two would each send every request and pay twice.

The lease is per (storage root, board), taken by ``helmflow run`` once it has planned the board and
before Prefect starts, and held for the whole run. Per board rather than per (deployment, request
set): it is one object and one heartbeat instead of one per cell, and it is taken where a busy board
can still wait or exit with one line; a lease per cell would be taken inside the ``run`` tasks on
workers, where a busy cell could only fail its task (a partial release) or block a worker slot.
It does not stop two *different* boards that share a cell from sending it concurrently (the journal
then dedups what they stored, but both paid): give them one board, or run them one after the other.

Where it lives: ``leases/<board>.json`` (:func:`helmflow.layout.lease`), a JSON record naming the
holder (host, pid, run, since) for the line a second run prints. A second run exits at once with
that line (exit 75, "try again later"); ``--wait`` makes it wait for the lease instead.

- **Local disk**: an exclusive ``flock`` on the file for the whole run. The kernel drops it when the
  holder exits, however it exits (SIGKILL included), so a dead holder never blocks anyone.
- **S3** (s3fs): there is no lock that ends with its holder, so the lease is an object created only
  if absent (a conditional PUT, ``If-None-Match: *``), renewed by a heartbeat thread every quarter
  of its time to live (a PUT conditional on the ETag this holder last wrote, ``If-Match``), and
  stale once ``HELMFLOW_LEASE_TTL_S`` seconds (default 60) pass without a renewal. Staleness is
  judged on the server's clock alone (the response's ``Date`` minus the object's ``LastModified``),
  so clocks of different hosts never matter. A stale lease is taken over with a PUT conditional on
  the stale ETag: of several waiters exactly one wins. A holder whose renewal finds another's lease
  (it stalled for longer than the time to live) stops sending at once, as on Ctrl-C.
  A holder that was paused (SIGSTOP, a suspended VM) or could not renew for the time to live cannot
  wait for its heartbeat to find that out: the requests would go out first. So every request checks,
  just before the wire (:func:`lapsed`), that the last successful renewal began less than the time to
  live ago by a monotonic clock that also counts the time the machine was suspended (:func:`clock`:
  Linux's ``CLOCK_BOOTTIME``; ``time.monotonic`` stops while the machine sleeps, so a laptop or VM
  woken after the time to live would have gone on sending). Since that renewal's ``LastModified`` is no earlier
  than its start, a waiter can only have judged the lease stale after this check fails: a holder that
  may have lost its lease sends nothing more; it journals what it holds and exits 75.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from helmflow import layout
from helmflow.errors import HelmflowError
from helmflow.settings import settings
from helmflow.storage import Store

EXIT_BUSY = 75  # EX_TEMPFAIL: nothing is wrong with the input; try again when the other run is done
log = logging.getLogger("helmflow")


class BoardBusy(HelmflowError):
    """Another live run holds the board's lease on this storage root."""

    exit_code = EXIT_BUSY


class LeaseUnsupported(HelmflowError):
    """A storage protocol with no conditional write to build a lease on."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Holder:
    """Who holds a lease: what a second run names, and what the lease object stores."""

    def __init__(self, run: str = "starting") -> None:
        self.token = uuid.uuid4().hex  # tells our lease from another's with the same host and pid
        self.host, self.pid, self.since, self.run = socket.gethostname(), os.getpid(), _now(), run

    def body(self) -> bytes:
        """The record as stored; ``renewed`` makes every write's bytes (and so its ETag) new."""
        return json.dumps({"host": self.host, "pid": self.pid, "run": self.run, "since": self.since,
                           "renewed": time.time(), "token": self.token}).encode()


def describe(text: str | bytes) -> str:
    """``pid 123 on host, run <run>, since <UTC time>`` from a stored record (or "another run")."""
    try:
        h = json.loads(text)
        return f"pid {h['pid']} on {h['host']}, run {h.get('run', '?')}, since {h['since']}"
    except (ValueError, KeyError, TypeError):
        return "another run"


#: the clock the lease's freshness is judged by: monotonic, and counting a suspended machine's sleep
CLOCK = getattr(time, "CLOCK_BOOTTIME", None)


def clock() -> float:
    """Seconds on a monotonic clock that keeps counting while the machine is suspended (``CLOCK_BOOTTIME``
    where the system has it, else ``time.monotonic``)."""
    return time.clock_gettime(CLOCK) if CLOCK is not None else time.monotonic()


_held: dict[tuple[str, str], Holder] = {}  # (root, board) -> the holder in this process
_renewed: set[_ObjectLease] = set()  # the S3 leases this process holds: each must be fresh to send


def lapsed() -> bool:
    """True when a lease this process holds on S3 may have been taken over: its last successful
    renewal began a time to live ago or more (checked before each request goes out). The first
    finding stops the run with one line (exit 75) as on Ctrl-C: nothing new is sent."""
    for lease in list(_renewed):
        if lease.lapsed():
            return True
    return False


def note_run(root: str, board: str, run: str) -> None:
    """Name the run holding ``board`` on ``root`` (the flow, once Prefect gave it an id); written with
    the next renewal (S3) or now (local)."""
    holder = _held.get((root, board))
    if holder is not None:
        holder.run = run
        holder.on_change()  # type: ignore[attr-defined]


@contextlib.contextmanager
def board_lease(store: Store, board: str, wait: bool = False, poll_s: float = 1.0,
                ttl_s: float | None = None, say: Callable[[str], None] | None = None) -> Iterator[Holder]:
    """Hold the board's lease on ``store`` for the ``with`` block (see the module doc). ``wait``: queue
    behind another live holder, and ``say`` once (a line naming it) that this run is waiting."""
    key = layout.lease(board)
    holder = Holder()
    if store.is_local:
        lease: Any = _FileLease(store, key, holder)
    elif _protocol(store) in ("s3", "s3a"):
        lease = _ObjectLease(store, key, holder, ttl_s if ttl_s is not None else settings().lease_ttl_s)
    else:
        raise LeaseUnsupported(f"storage {store.root}: no lease for protocol {_protocol(store)!r} "
                               "(local folders and s3:// are supported)")
    waiting = False
    while not lease.try_acquire():
        if not wait:
            raise BoardBusy(f"board {board!r} on storage {store.root} is being run by {lease.other}; "
                            "rerun when it is done, or with --wait to queue behind it")
        if not waiting and say is not None:
            say(f"board {board!r} on storage {store.root} is being run by {lease.other}; waiting for it (--wait)")
        waiting = True
        time.sleep(poll_s)
    holder.on_change = lease.on_change  # type: ignore[attr-defined]
    _held[(store.root, board)] = holder
    try:
        yield holder
    finally:
        _held.pop((store.root, board), None)
        lease.release()


def _protocol(store: Store) -> str:
    protocol = store.fs.protocol
    return protocol[0] if isinstance(protocol, tuple) else protocol


class _FileLease:
    """``flock`` on a local file: released by the kernel with its holder."""

    def __init__(self, store: Store, key: str, holder: Holder) -> None:
        self.path, self.holder, self.other = store.inside(key), holder, ""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.fh = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held open for the lease)

    def try_acquire(self) -> bool:
        try:
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.seek(0)
            self.other = describe(self.fh.read())
            return False
        self.on_change()
        return True

    def on_change(self) -> None:
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(self.holder.body().decode())
        self.fh.flush()

    def release(self) -> None:
        self.fh.truncate(0)
        self.fh.close()  # the lock goes with the file (or with the process)


def _failed_condition(exc: BaseException) -> bool:
    """A conditional PUT refused: 412 (the condition did not hold) or 409 (a concurrent conditional
    write to the same key won); s3fs wraps botocore's error, so look through the chain."""
    current: BaseException | None = exc
    while current is not None:
        response = getattr(current, "response", None)
        if isinstance(response, dict) and response.get("Error", {}).get("Code") in (
                "PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"):
            return True
        current = current.__cause__ or current.__context__
    return False


class _ObjectLease:
    """A lease object on S3: conditional create, heartbeat, expiry, conditional takeover."""

    def __init__(self, store: Store, key: str, holder: Holder, ttl_s: float) -> None:
        self.store, self.holder, self.ttl_s, self.other, self.layout_key = store, holder, ttl_s, "", key
        self.bucket, self.key, _ = store.fs.split_path(store.inside(key))
        self.etag: str | None = None
        self.lock = threading.Lock()  # one conditional write at a time (heartbeat vs note_run)
        self.stopped = threading.Event()
        self.renewed_at = -math.inf  # clock() when the last successful write began
        self.said = False

    def _put(self, **condition: str) -> bool:
        """Write our record under ``condition``; False when another's write stands in its way."""
        began = clock()  # before the request: the server's LastModified is no earlier
        try:
            out = self.store._retrying(lambda: self.store.fs.call_s3(
                "put_object", Bucket=self.bucket, Key=self.key, Body=self.holder.body(),
                ContentType="application/json", **condition))
        except Exception as exc:
            if _failed_condition(exc):
                return False
            raise
        self.etag = out["ETag"]
        self.renewed_at = began
        return True

    def lapsed(self) -> bool:
        """No successful renewal began within the time to live (see the module doc); says so once."""
        since = clock() - self.renewed_at
        if since < self.ttl_s and not self.stopped.is_set():
            return False
        if not self.said:
            self.said = True
            from helmflow.stopping import halt

            why = "the lease was taken over" if self.stopped.is_set() else (
                f"no renewal of it succeeded for {since:.0f} s (HELMFLOW_LEASE_TTL_S={self.ttl_s:g}): this run was "
                "paused or could not reach storage, and another run may hold it now")
            halt(f"helmflow: lease {self.store.url(self.layout_key)}: {why}; sending no new requests, journaling "
                 "what finished and exiting", EXIT_BUSY)
        return True

    def _read(self) -> tuple[bytes, str, float] | None:
        """(record, ETag, age in seconds on the server's clock), or None when there is no lease."""
        from fsspec.asyn import sync

        async def get() -> tuple[bytes, str, float]:
            out = await self.store.fs._call_s3("get_object", Bucket=self.bucket, Key=self.key)
            body = await out["Body"].read()
            served = parsedate_to_datetime(out["ResponseMetadata"]["HTTPHeaders"]["date"])
            return body, out["ETag"], (served - out["LastModified"]).total_seconds()

        try:
            return self.store._retrying(lambda: sync(self.store.fs.loop, get))
        except FileNotFoundError:
            return None

    def try_acquire(self) -> bool:
        if self._put(IfNoneMatch="*"):
            self._start_heartbeat()
            return True
        found = self._read()
        if found is None:
            return False  # released between our PUT and our read: the next try creates it
        body, etag, age = found
        if _token(body) == self.holder.token:  # our own create, retried after a lost response
            self.etag = etag
            self._start_heartbeat()
            return True
        self.other = describe(body)
        if age <= self.ttl_s:
            return False
        log.warning("lease %s: %s renewed nothing for %.0f s (HELMFLOW_LEASE_TTL_S=%g); taking it over",
                    self.key, self.other, age, self.ttl_s)
        if self._put(IfMatch=etag):
            self._start_heartbeat()
            return True
        return False  # another waiter took it over first

    def _start_heartbeat(self) -> None:
        _renewed.add(self)
        threading.Thread(target=self._beat, name="helmflow-lease", daemon=True).start()

    def _beat(self) -> None:
        while not self.stopped.wait(self.ttl_s / 4):
            try:
                self.on_change()
            except Exception as exc:  # an outage longer than the storage retry window: try again next beat
                log.warning("lease %s: renewal failed (%s: %s)", self.key, type(exc).__name__, exc)

    def on_change(self) -> None:
        """Renew (and restate the run): only while the lease is still the one we last wrote."""
        with self.lock:
            if self.stopped.is_set() or self.etag is None:
                return
            if not self._put(IfMatch=self.etag):
                self.stopped.set()
                found = self._read()
                log.error("lease %s lost to %s (this run stalled for more than HELMFLOW_LEASE_TTL_S=%g s); "
                          "sending no new requests", self.key, describe(found[0]) if found else "nobody", self.ttl_s)
                self.lapsed()

    def release(self) -> None:
        _renewed.discard(self)
        with self.lock:
            self.stopped.set()
            found = self._read()
            if found is not None and _token(found[0]) == self.holder.token:
                self.store.delete(self.layout_key)


def _token(body: bytes) -> str | None:
    try:
        return json.loads(body).get("token")
    except (ValueError, AttributeError):
        return None
