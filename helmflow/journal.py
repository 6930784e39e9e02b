"""The request journal: every successful completion is kept before it counts as done.

Successes are appended to a local spool file (one line each, flushed) and moved in batches to
``responses/<deployment>/<xx>/part-<uuid>.parquet`` (``xx`` = first two hex digits of the request
hash). A process killed at any moment loses at most what was in flight: its spool is recovered
(under an exclusive lock, so a live writer's spool is never taken) by the next journal on the same
storage. Reads deduplicate on request hash; ``compact`` merges each touched partition.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from helmflow.records import COMPLETION_SCHEMA, Completion, RequestBody
from helmflow.storage import Store, safe_key
from helmflow.versions import canonical_json

JOURNAL_VERSION = "1"


def request_hash(body: RequestBody, sample_index: int) -> str:
    """Covers exactly what is sent, plus the sample index of repeated samples."""
    payload = canonical_json({"body": body.model_dump(mode="json", exclude_none=True), "sample": sample_index})
    return hashlib.sha256(payload.encode()).hexdigest()


def spool_dir(store: Store) -> Path:
    base = os.environ.get("HELMFLOW_SPOOL") or os.path.join(tempfile.gettempdir(), "helmflow-spool")
    return Path(base) / hashlib.sha256(store.root.encode()).hexdigest()[:16]


class Journal:
    def __init__(
        self, store: Store, deployment: str, flush_every: int = 500, flush_interval_s: float = 2.0
    ):
        self.store = store
        self.deployment = deployment
        self.prefix = f"responses/{safe_key(deployment)}"
        self.flush_every = flush_every
        self.flush_interval_s = flush_interval_s
        self._lock = threading.Lock()
        self._pending: list[Completion] = []
        self._touched: set[str] = set()
        self._last_flush = time.monotonic()
        self._dir = spool_dir(store) / safe_key(deployment)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._recover_orphans()
        self._spool_path = self._dir / f"spool-{os.getpid()}-{uuid.uuid4().hex}.jsonl"
        self._spool = open(self._spool_path, "a", encoding="utf-8")  # noqa: SIM115 - held for the journal's life
        fcntl.flock(self._spool.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    # ------------------------------------------------------------------ reading
    def lookup(self, hashes: set[str]) -> dict[str, Completion]:
        """Journaled completions for the given request hashes (latest wins on duplicates).

        A concurrent compaction may delete a part between listing and reading; its rows are then in
        the merged part, so the listing is simply taken again.
        """
        prefixes = {h[:2] for h in hashes}
        for attempt in range(5):
            keys = [k for k in self.store.find(self.prefix) if k.endswith(".parquet") and k.split("/")[-2] in prefixes]
            found: dict[str, Completion] = {}
            try:
                for key in keys:
                    for row in self.store.read_parquet(key).to_pylist():
                        if row["request_hash"] in hashes:
                            found[row["request_hash"]] = Completion.model_validate(row)
                return found
            except FileNotFoundError:
                if attempt == 4:
                    raise
        return {}

    # ------------------------------------------------------------------ writing
    def append(self, completion: Completion) -> None:
        if not completion.ok:
            return  # errors are never journaled: the next run re-sends them
        line = completion.model_dump_json()
        with self._lock:
            self._spool.write(line + "\n")
            self._spool.flush()
            self._pending.append(completion)
            due = len(self._pending) >= self.flush_every or time.monotonic() - self._last_flush >= self.flush_interval_s
        if due:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            self._last_flush = time.monotonic()
            if not batch:
                return
            self._write_parts(batch)
            # everything spooled so far is now in object storage: start the spool afresh
            self._spool.truncate(0)
            self._spool.seek(0)

    def _write_parts(self, batch: list[Completion]) -> None:
        groups: dict[str, list[dict]] = defaultdict(list)
        for c in batch:
            groups[c.request_hash[:2]].append(c.model_dump())
        for xx, rows in groups.items():
            table = pa.Table.from_pylist(rows, schema=COMPLETION_SCHEMA)
            self.store.write_parquet(
                f"{self.prefix}/{xx}/part-{uuid.uuid4().hex}.parquet",
                table,
                {"helmflow.journal_version": JOURNAL_VERSION, "helmflow.deployment": self.deployment},
            )
            self._touched.add(xx)

    def close(self, compact: bool = True) -> None:
        self.flush()
        self._spool.close()
        self._spool_path.unlink(missing_ok=True)
        if compact:
            self.compact(self._touched)

    def compact(self, partitions: set[str]) -> None:
        """Merge each partition's parts into one, deduplicated; new part first, old parts deleted after."""
        for xx in sorted(partitions):
            keys = [k for k in self.store.ls(f"{self.prefix}/{xx}") if k.endswith(".parquet")]
            if len(keys) < 2:
                continue
            rows: dict[str, dict] = {}
            try:
                for key in keys:
                    for row in self.store.read_parquet(key).to_pylist():
                        rows[row["request_hash"]] = row
            except FileNotFoundError:
                continue  # another journal is compacting this partition; its merge keeps every row
            self.store.write_parquet(
                f"{self.prefix}/{xx}/part-{uuid.uuid4().hex}.parquet",
                pa.Table.from_pylist(list(rows.values()), schema=COMPLETION_SCHEMA),
                {"helmflow.journal_version": JOURNAL_VERSION, "helmflow.deployment": self.deployment},
            )
            for key in keys:
                self.store.delete(key)

    # ------------------------------------------------------------------ recovery
    def _recover_orphans(self) -> None:
        """Move spools left by killed processes into object storage (only unlocked ones)."""
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
