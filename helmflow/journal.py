"""The request journal: every successful completion is kept before it counts as done.

Successes are appended to a local spool file (one line each, flushed) and moved in batches to
``responses/<deployment>/<xx>/part-<uuid>.parquet`` (``xx`` = first two hex digits of the request
hash). A process killed at any moment loses at most what was in flight: its spool is recovered
(under an exclusive lock, so a live writer's spool is never taken) by the next journal on the same
storage; a live (or paused) writer's spooled rows are read, never moved, by lookups on the same
machine. Reads deduplicate on request hash; ``compact`` merges each touched partition.

Parts are validated as they are read: one that does not parse, or whose rows are not completions,
is moved to ``quarantine/responses/…`` with one warning, and its requests count as unanswered (the
next query re-sends those, and only those). I/O errors are not corruption: they propagate.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import queue
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TextIO, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import ValidationError

from helmflow import layout
from helmflow.records import COMPLETION_SCHEMA, Completion
from helmflow.settings import settings
from helmflow.storage import Store, encode_parquet, safe_key

JOURNAL_VERSION = "1"
log = logging.getLogger("helmflow")
T = TypeVar("T")
R = TypeVar("R")


class _Workers:
    """A few daemon threads for storage I/O, started once per process and kept: a flush or lookup that
    started its 16 threads anew paid for that on every batch (seconds on a loaded machine). Daemon
    threads, since only a caller waiting on its items gives them work: the CLI's exit
    (:func:`helmflow.stopping.end_process`) joins every other thread first."""

    def __init__(self, size: int):
        self.size = size
        self.started = 0
        self.lock = threading.Lock()
        self.work: queue.SimpleQueue[tuple[Future, Callable[[Any], Any], Any]] = queue.SimpleQueue()

    def map(self, fn: Callable[[T], R], items: list[T]) -> list[R]:
        """``fn`` over every item; the results in order, or the first failure in order (after all ran)."""
        with self.lock:
            while self.started < min(self.size, len(items)):
                self.started += 1
                threading.Thread(target=self._serve, name=f"journal-io-{self.started}", daemon=True).start()
        futures: list[Future] = []
        for item in items:
            fut: Future = Future()
            self.work.put((fut, fn, item))
            futures.append(fut)
        outcomes = [fut.exception() for fut in futures]  # every item done before a failure is raised
        for outcome in outcomes:
            if outcome is not None:
                raise outcome
        return [fut.result() for fut in futures]

    def _serve(self) -> None:
        while True:
            fut, fn, item = self.work.get()
            try:
                fut.set_result(fn(item))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                fut.set_exception(exc)


_workers = _Workers(16)


def _parallel(fn: Callable[[T], R], items: list[T]) -> list[R]:
    """``fn`` over ``items`` on a few threads (storage I/O waits on the disk or the network)."""
    if len(items) <= 1:
        return [fn(x) for x in items]
    return _workers.map(fn, items)


class CorruptPart(ValueError):
    """A journal part that is not Parquet of completions (torn, truncated, overwritten)."""


def parse_part(data: bytes, hashes: set[str] | None = None) -> dict[str, Completion]:
    """The completions in a part's bytes (those in ``hashes``, or all), each validated; else :class:`CorruptPart`."""
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError, ValueError) as exc:  # no I/O here: bytes that do not parse
        raise CorruptPart(f"not Parquet: {exc}") from exc
    field = table.schema.field("request_hash") if "request_hash" in table.column_names else None
    if field is None or not pa.types.is_string(field.type):
        raise CorruptPart("no string request_hash column")
    if hashes is not None:  # only the wanted rows become Python objects (and are validated, as before)
        table = table.filter(pa.array([h in hashes for h in table["request_hash"].to_pylist()], pa.bool_()))
    found: dict[str, Completion] = {}
    try:
        for row in table.to_pylist():
            found[row["request_hash"]] = Completion.model_validate(row)
    except ValidationError as exc:
        raise CorruptPart(f"a row is not a completion: {exc.errors()[0]['msg']}") from exc
    return found


_quarantine_lock = threading.Lock()
_warned: set[str] = set()


def quarantine(store: Store, key: str, why: str) -> None:
    """Move a bad object to ``quarantine/<key>`` (kept for inspection), warning once per key.

    Two readers may find the same bad part at once: whoever comes second finds it gone and stays quiet.
    """
    target = layout.quarantined(key)
    try:
        data = store.read_bytes(key)
    except FileNotFoundError:
        return
    store.write_bytes(target, data)
    store.delete(key)
    with _quarantine_lock:
        first = key not in _warned
        _warned.add(key)
    if first:
        log.warning("journal part %s is corrupt (%s): moved to %s; its requests count as unanswered and will "
                    "be re-sent", store.url(key), why, store.url(target))


def spool_dir(store: Store) -> Path:
    base = settings().spool or os.path.join(tempfile.gettempdir(), "helmflow-spool")
    return Path(base) / hashlib.sha256(store.root.encode()).hexdigest()[:16]


class SpoolFull(RuntimeError):
    """The spool cannot take a line (disk full, read-only, gone): nothing more may be sent, since a
    response that cannot be journaled is paid for and then lost."""


def spool_error(where: Path, why: str) -> SpoolFull:
    return SpoolFull(f"the request journal's spool {where} {why}; free space there or point HELMFLOW_SPOOL at "
                     f"a disk with room (finished responses are kept; the next run sends only the rest)")


#: what one spooled line may take, at most, per output token and on top (JSON of a completion)
SPOOL_BYTES_PER_TOKEN = 64
SPOOL_BYTES_PER_LINE = 4096

#: spooled answers moved to storage at once, at most (also every ``flush_interval_s``): what a
#: journal holds as objects, whatever the number of requests
FLUSH_EVERY = 5000
#: seconds between the background moves to storage on an object store: what a run that takes over a
#: stalled holder's lease from another machine cannot see, and sends again (crash-safety.md)
FLUSH_INTERVAL_S = 5.0
#: the same on a local disk, where the lease passes only when its holder has exited and the next run
#: on this machine reads or recovers the holder's spool: nothing waits on the move, and each move writes
#: a part per touched partition (up to 256 files, whatever the number of rows), which every 5 s cost
#: about a millisecond of CPU per request at 300 requests/s
LOCAL_FLUSH_INTERVAL_S = 30.0

_open_journals: weakref.WeakSet[Journal] = weakref.WeakSet()


def flush_open_journals(timeout_s: float) -> None:
    """Move what every open journal has spooled to storage (an interrupted run, before it exits).
    Best effort: what does not make it stays in the spool, which the next run recovers."""
    deadline = time.monotonic() + timeout_s
    for journal in list(_open_journals):
        if time.monotonic() > deadline:
            return
        try:
            journal.flush()
        except Exception:  # noqa: BLE001 - the spool still holds the rows
            log.warning("journal %s: could not move spooled responses to storage before exit", journal.deployment)


class Journal:
    """One deployment's journal for one query batch; ``append`` is called from the I/O loop.

    ``append`` only writes a line to the spool (cheap, never blocks the loop on object storage); a
    background thread moves batches to ``responses/`` every ``flush_interval_s`` or ``flush_every``
    completions. At a flush the spool is rotated: its rows are deleted only once they are in
    object storage, so a kill between the two leaves an orphan spool that the next journal recovers.
    """

    def __init__(
        self, store: Store, deployment: str, flush_every: int | None = None, flush_interval_s: float | None = None
    ):
        self.store = store
        self.deployment = deployment
        self.prefix = layout.journal_dir(deployment)
        self.flush_every = flush_every or FLUSH_EVERY
        self.flush_interval_s = flush_interval_s or (LOCAL_FLUSH_INTERVAL_S if store.is_local else FLUSH_INTERVAL_S)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pending: list[Completion] = []
        self._retired: list[tuple[Path, TextIO]] = []  # rotated spools whose rows are not yet in storage
        self._touched: set[str] = set()
        self._dir = spool_dir(store) / safe_key(deployment)
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise spool_error(self._dir, f"cannot be created ({exc.strerror or exc})") from None
        self._recover_orphans()
        self._spool_path, self._spool = self._new_spool()
        self._due = threading.Event()
        self._closed = False
        self._flusher = threading.Thread(target=self._flush_loop, name=f"journal-{deployment}", daemon=True)
        self._flusher.start()
        _open_journals.add(self)

    def check_room(self, rows: int, max_tokens: int) -> None:
        """Raise :class:`SpoolFull` before sending if the spool's disk cannot hold what will be
        spooled between two moves to storage (``rows``, up to ``flush_every``, of up to
        ``max_tokens`` output tokens)."""
        need = min(rows, self.flush_every) * (SPOOL_BYTES_PER_LINE + SPOOL_BYTES_PER_TOKEN * max_tokens)
        free = shutil.disk_usage(self._dir).free
        if free < need:
            raise spool_error(self._dir, f"has {free / 1e6:.1f} MB free, and the next {min(rows, self.flush_every)} "
                                         f"responses may need {need / 1e6:.1f} MB")

    def _new_spool(self) -> tuple[Path, TextIO]:
        """A spool locked before it gets the name recovery looks for, so another journal (even in
        this process) can never take a live spool for an orphan."""
        name = f"{os.getpid()}-{uuid.uuid4().hex}.jsonl"
        fresh, path = self._dir / f"new-{name}", self._dir / f"spool-{name}"
        try:
            fh = open(fresh, "a", encoding="utf-8")  # noqa: SIM115 - held until its rows are in storage
        except OSError as exc:
            raise spool_error(self._dir, f"cannot be written ({exc.strerror or exc})") from None
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(fresh, path)  # same inode: the lock comes along
        return path, fh

    # ------------------------------------------------------------------ reading
    def lookup(self, hashes: set[str]) -> dict[str, Completion]:
        """Journaled completions for the given request hashes (latest wins on duplicates)."""
        found: dict[str, Completion] = {}
        for part in self._parts(lambda key: self._read_part(key, hashes), hashes):
            found.update(part)
        found.update(self._spooled(hashes))
        return found

    def _spooled(self, hashes: set[str]) -> dict[str, Completion]:
        """Completions in ``hashes`` that other journals on this machine have spooled and not yet
        moved to storage: a live or paused writer's (read, never moved: its writer flushes them) or a
        spool being recovered. A run that took over a paused holder's lease reuses what the holder
        had finished instead of paying for it again."""
        found: dict[str, Completion] = {}
        for path in sorted(self._dir.glob("spool-*.jsonl")):
            if path == getattr(self, "_spool_path", None):
                continue
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except (FileNotFoundError, IsADirectoryError):
                continue  # moved to storage meanwhile: the parts now hold its rows
            for line in text.splitlines():
                try:
                    row = json.loads(line)
                    if row.get("request_hash") in hashes:
                        found[row["request_hash"]] = Completion.model_validate(row)
                except (ValueError, TypeError, AttributeError):
                    continue  # the line its writer is writing
        return found

    def lookup_table(self, hashes: set[str]) -> pa.Table:
        """:meth:`lookup` as a :data:`COMPLETION_SCHEMA` table, one row per hash: a run's reused
        responses held as Arrow columns, not objects, while its requests are sent a chunk at a time."""
        def read(key: str) -> pa.Table:
            return pa.Table.from_pylist([c.model_dump() for c in self._read_part(key, hashes).values()],
                                        schema=COMPLETION_SCHEMA)

        spooled = pa.Table.from_pylist([c.model_dump() for c in self._spooled(hashes).values()],
                                       schema=COMPLETION_SCHEMA)
        table = pa.concat_tables([COMPLETION_SCHEMA.empty_table(), *self._parts(read, hashes), spooled])
        latest_first = table.take(pa.array(np.arange(table.num_rows - 1, -1, -1, dtype=np.int64)))
        keys = latest_first["request_hash"]
        return latest_first.take(pc.index_in(pc.unique(keys), value_set=keys))

    def _parts(self, read: Callable[[str], R], hashes: set[str]) -> list[R]:
        """``read`` of every part in the partitions of ``hashes``, in key order.

        A concurrent compaction may delete a part between listing and reading; its rows are then in
        the merged part, so the listing is simply taken again. A corrupt part is quarantined and
        contributes nothing: its requests are sent again.
        """
        prefixes = {h[:2] for h in hashes}
        for attempt in range(5):
            keys = [k for k in self.store.find(self.prefix) if k.endswith(".parquet") and k.split("/")[-2] in prefixes]
            try:
                return _parallel(read, keys)
            except FileNotFoundError:
                if attempt == 4:
                    raise
        return []

    def _read_part(self, key: str, hashes: set[str] | None = None) -> dict[str, Completion]:
        """A part's completions (see :func:`parse_part`); a corrupt part is quarantined and reads as empty."""
        data = self.store.read_bytes(key)
        try:
            return parse_part(data, hashes)
        except CorruptPart as exc:
            quarantine(self.store, key, str(exc))
            return {}

    # ------------------------------------------------------------------ writing
    def append(self, completion: Completion) -> None:
        """Spool a success before it counts as done (errors are never journaled: they are re-sent)."""
        if not completion.ok:
            return
        line = completion.model_dump_json() + "\n"
        with self._lock:
            try:
                self._spool.write(line)
                self._spool.flush()
            except OSError as exc:
                raise spool_error(self._dir, f"cannot be written ({exc.strerror or exc})") from None
            self._pending.append(completion)
            due = len(self._pending) >= self.flush_every
        if due:
            self._due.set()

    def flush_if_full(self) -> None:
        """Move the spool to storage now if it holds ``flush_every`` answers: the flusher thread alone can
        fall behind an instant server, so a sender calls this between chunks to bound what is held."""
        with self._lock:
            full = len(self._pending) >= self.flush_every
        if full:
            self.flush()

    def _flush_loop(self) -> None:
        while not self._closed:
            self._due.wait(self.flush_interval_s)
            self._due.clear()
            if self._closed:
                return
            try:
                self.flush()
            except Exception:
                log.warning("journal %s: moving spooled responses to storage failed; will retry", self.deployment,
                            exc_info=True)

    def flush(self) -> None:
        """Move everything spooled so far to object storage, then drop the spools that held it."""
        with self._write_lock:
            with self._lock:
                batch, self._pending = self._pending, []
                if batch:
                    self._retired.append((self._spool_path, self._spool))
                    self._spool_path, self._spool = self._new_spool()
                retired = list(self._retired)
            if not retired:
                return
            try:
                self._write_parts(batch)
            except BaseException:
                with self._lock:
                    self._pending[:0] = batch
                raise
            with self._lock:
                self._retired = [r for r in self._retired if r not in retired]
            for path, fh in retired:
                path.unlink(missing_ok=True)
                fh.close()

    def _write_parts(self, batch: list[Completion]) -> None:
        """One part per touched partition. The batch becomes one Arrow table, cut by partition (rows
        in their spooled order), and the parts are small: Snappy without dictionaries, whose fixed
        cost per file is a third of zstd's (a flush writes up to 256 files; compaction writes zstd)."""
        if not batch:
            return
        rows: dict[str, list[int]] = defaultdict(list)
        for i, c in enumerate(batch):
            rows[c.request_hash[:2]].append(i)
        table = pa.Table.from_pylist([c.model_dump() for c in batch], schema=COMPLETION_SCHEMA)
        meta = {"helmflow.journal_version": JOURNAL_VERSION, "helmflow.deployment": self.deployment}

        def write(xx: str) -> None:
            part = table.take(pa.array(rows[xx], pa.int64())) if len(rows) > 1 else table
            self.store.write_bytes(layout.journal_part(self.prefix, xx, uuid.uuid4().hex),
                                   encode_parquet(part, meta, compression="snappy", use_dictionary=False))

        _parallel(write, list(rows))  # up to 256 small objects: one at a time is fsyncs or PUTs in a row
        self._touched.update(rows)

    def close(self, compact: bool = True) -> None:
        _open_journals.discard(self)
        self._closed = True
        self._due.set()
        self._flusher.join()
        self.flush()
        self._spool.close()
        self._spool_path.unlink(missing_ok=True)
        if compact:
            self.compact(self._touched)

    def compact(self, partitions: set[str], min_parts: int = 4) -> None:
        """Merge each partition with ``min_parts`` or more parts into one, deduplicated; new part
        first, old parts deleted after. Small partitions wait: merging 256 of them after every
        batch would cost more than the reads it saves."""
        def merge(xx: str) -> None:
            keys = [k for k in self.store.ls(f"{self.prefix}/{xx}") if k.endswith(".parquet")]
            if len(keys) < max(min_parts, 2):
                return
            rows: dict[str, Completion] = {}
            try:
                for key in keys:
                    rows.update(self._read_part(key))
            except FileNotFoundError:
                return  # another journal is compacting this partition; its merge keeps every row
            self.store.write_parquet(
                layout.journal_part(self.prefix, xx, uuid.uuid4().hex),
                pa.Table.from_pylist([c.model_dump() for c in rows.values()], schema=COMPLETION_SCHEMA),
                {"helmflow.journal_version": JOURNAL_VERSION, "helmflow.deployment": self.deployment},
            )
            for key in keys:
                self.store.delete(key)

        _parallel(merge, sorted(partitions))

    # ------------------------------------------------------------------ recovery
    def _recover_orphans(self) -> None:
        """Move spools left by killed processes into object storage (only unlocked ones).

        Recovery holds the directory's recovery lock throughout: the journals a resumed run opens at
        once wait for the first to move the orphans, instead of taking its locked spool for a live
        writer's and reading storage before the rows are there (re-sending what was paid for).
        """
        with open(self._dir / ".recovery.lock", "a") as guard:
            fcntl.flock(guard.fileno(), fcntl.LOCK_EX)  # released when the file closes
            self._recover_unlocked_spools()

    def _recover_unlocked_spools(self) -> None:
        for path in sorted(self._dir.glob("spool-*.jsonl")):
            try:
                fh = open(path, "r+", encoding="utf-8")  # noqa: SIM115
            except FileNotFoundError:
                continue
            with fh:
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live writer holds it
                completions = []
                for line in fh:
                    try:
                        completions.append(Completion.model_validate(json.loads(line)))
                    except (ValueError, TypeError):
                        continue  # a torn last line from the kill
                if completions:
                    self._write_parts(completions)
                path.unlink(missing_ok=True)
