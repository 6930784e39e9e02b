"""Prefect task results as data: stored as JSON, read back only as helmflow's own outcome models.

Prefect reads a result record with the serializer *the record names* in its metadata, not the one
the task was given. Choosing ``result_serializer="json"`` is therefore no defence: a record planted
under ``prefect-results/`` that names ``pickle`` runs its payload, and one that names Prefect's JSON
serializer chooses its own decoder (any importable callable). Anyone who can write to the bucket
would run code on every worker, where the API keys live. So:

- :class:`OutcomeJSON` writes a task's return value (a pydantic model from an allow-list of
  helmflow's outcome classes) as plain JSON and reads nothing else back;
- :class:`OutcomeStorage` is the only way Prefect reaches ``prefect-results/`` (a result-storage
  block over :class:`~helmflow.storage.Store`, so results also get atomic writes, storage retries
  and the root's symlink check). It hands Prefect a record only when its metadata names exactly
  ``OutcomeJSON``; anything else is moved to ``quarantine/prefect-results/`` with one warning and
  reads as absent. Prefect's cache lookup treats that as a miss: the task recomputes and writes a
  clean record over the key.

A record that passes but points at files that are gone (``work/`` cleaned up, an S3 lifecycle rule)
also reads as absent: the task recomputes them (a query from the request journal, sending nothing).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from typing import Any, Literal

import anyio.to_thread
from prefect.filesystems import WritableFileSystem
from prefect.serializers import Serializer
from pydantic import PrivateAttr, ValidationError

from helmflow import layout, outcomes
from helmflow.storage import OutsideRoot, Store

SERIALIZER_TYPE: Literal["helmflow-outcome-json"] = "helmflow-outcome-json"
log = logging.getLogger("helmflow")


def outcome_classes() -> dict[str, type[outcomes.Outcome]]:
    """Every model a board task may return, by class name: the ``Outcome`` subclasses of ``helmflow.outcomes``."""
    found: dict[str, type[outcomes.Outcome]] = {}
    todo: list[type[outcomes.Outcome]] = [outcomes.Outcome]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__ == outcomes.__name__:
                found[sub.__name__] = sub
                todo.append(sub)
    return found


class UntrustedResult(ValueError):
    """A stored result record that helmflow did not write in its own JSON form (refused, never decoded)."""


class OutcomeJSON(Serializer):
    """``{"outcome": <class name>, "data": <model as JSON>}``; decoding is ``model_validate`` of an
    allow-listed class, so no stored byte ever chooses what code runs."""

    type: Literal["helmflow-outcome-json"] = SERIALIZER_TYPE

    def dumps(self, obj: Any) -> bytes:
        cls = type(obj)
        if outcome_classes().get(cls.__name__) is not cls:
            raise TypeError(f"{cls.__module__}.{cls.__qualname__} is not a helmflow outcome; task results must be")
        return json.dumps({"outcome": cls.__name__, "data": obj.model_dump(mode="json")}).encode()

    def loads(self, blob: bytes) -> Any:
        doc = json.loads(blob)
        if not isinstance(doc, dict) or doc.keys() != {"outcome", "data"}:
            raise UntrustedResult("not a helmflow outcome record")
        cls = outcome_classes().get(doc["outcome"])
        if cls is None:
            raise UntrustedResult(f"{doc['outcome']!r} is not a helmflow outcome")
        return cls.model_validate(doc["data"])


def decode_record(content: bytes) -> outcomes.Outcome:
    """The outcome in a record :class:`OutcomeJSON` wrote; :class:`UntrustedResult` for anything else.

    Parsed as plain JSON (never through Prefect's record model, which would decode the payload).
    """
    try:
        doc = json.loads(content)
    except ValueError:
        raise UntrustedResult("not JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
        raise UntrustedResult("no result-record metadata")
    serializer = doc["metadata"].get("serializer")
    if serializer != {"type": SERIALIZER_TYPE}:
        kind = serializer.get("type") if isinstance(serializer, dict) else serializer
        raise UntrustedResult(f"serializer {kind!r}, not {SERIALIZER_TYPE!r}")
    if not isinstance(doc.get("result"), str):
        raise UntrustedResult("no JSON result")
    try:
        return OutcomeJSON().loads(doc["result"].encode())
    except (ValueError, ValidationError) as exc:  # UntrustedResult is a ValueError
        raise UntrustedResult(f"result does not validate ({type(exc).__name__})") from None


# A record checked this long ago is not read and checked again by the same thread (Prefect's exists-then-read).
REREAD_S = 1.0
_last_read = threading.local()


class StaleResult(FileNotFoundError):
    """A cached outcome whose files are gone: Prefect's cache lookup sees no record, so the task reruns."""


class OutcomeStorage(WritableFileSystem):
    """Task results under ``<root>/prefect-results/``, read back only when :func:`decode_record` accepts them
    and every file the outcome points at still exists.

    The block holds the root URL only: S3 credentials come from the environment, never from the block.
    """

    _block_type_name = "helmflow result storage"
    _block_type_slug = "helmflow-result-storage"
    _description = "helmflow task results as JSON under <root>/prefect-results; refuses any other record"

    root: str
    _root_store: Store | None = PrivateAttr(default=None)

    def _store(self) -> Store:
        """One :class:`Store` per block: every cached task run of a board reads through it."""
        if self._root_store is None:
            self._root_store = Store(self.root)
        return self._root_store

    def read_path(self, path: str, _sync: bool | None = None) -> bytes:  # type: ignore[override]  # Prefect's sync/async dual
        """The record at ``path``, checked (see the class). Prefect reads a record twice for one cache
        hit (``ResultStore.exists`` reads the whole record, then ``ResultStore.read`` reads it again), so
        the same thread reading the same path again within :data:`REREAD_S` gets the bytes it just checked."""
        last = getattr(_last_read, "record", None)
        _last_read.record = None
        if last is not None and last[0] == (self.root, path) and time.monotonic() - last[2] < REREAD_S:
            return last[1]
        content = self._checked_record(path)
        _last_read.record = ((self.root, path), content, time.monotonic())
        return content

    def _checked_record(self, path: str) -> bytes:
        store = self._store()
        key = layout.result(path)
        content = store.read_bytes(key)
        try:
            outcome = decode_record(content)
        except UntrustedResult as exc:
            moved = layout.quarantined(f"{layout.result(path)}.{uuid.uuid4().hex[:8]}")
            store.write_bytes(moved, content)
            store.delete(key)
            message = (f"{store.url(key)} is not a result helmflow wrote ({exc}); not decoded, moved to "
                       f"{store.url(moved)}; the task runs again")
            log.warning("%s", message)
            raise UntrustedResult(message) from None
        root = store.root.rstrip("/") + "/"
        refused, missing = [], []
        for stored in outcome.stored():
            try:
                store.inside(stored.removeprefix(root))
            except OutsideRoot:
                refused.append(stored)
                continue
            if not store.exists(stored.removeprefix(root)):
                missing.append(stored)
        if refused:  # there, but a link out of the root: never read, and said as such
            message = (f"cached result {path} points at files that resolve outside the storage root "
                       f"({', '.join(refused[:3])}): refused; the task runs again")
            log.warning("%s", message)
            raise StaleResult(message)
        if missing:
            message = (f"cached result {path} points at files that are gone ({', '.join(missing[:3])}); "
                       "the task runs again")
            log.warning("%s", message)
            raise StaleResult(message)
        return content

    async def aread_path(self, path: str) -> bytes:
        return await anyio.to_thread.run_sync(self.read_path, path)

    def write_path(self, path: str, content: bytes, _sync: bool | None = None) -> str:  # type: ignore[override]  # as read_path
        _last_read.record = None
        return self._store().write_bytes(layout.result(path), content)

    async def awrite_path(self, path: str, content: bytes) -> str:
        return await anyio.to_thread.run_sync(self.write_path, path, content)


def result_storage_for(root: str) -> OutcomeStorage:
    return OutcomeStorage(root=root)
