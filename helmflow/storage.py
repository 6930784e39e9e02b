"""The object store behind every published file: one fsspec root, atomic writes, typed Parquet.

Local roots write to a temporary name and rename; object stores write with a single PUT, which is
atomic by itself. Temporaries start with ``_tmp.`` and every reader here skips them.

Object-store calls ride out outages: a call that fails on the network or with a server-side error
(connection refused, timeouts, 5xx, throttling) is retried with capped exponential backoff for up to
``HELMFLOW_STORAGE_RETRY_S`` seconds (default 300), then fails with one :class:`StorageError` naming
the root and the variable. Missing keys, denied access and bad input are never retried.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import logging
import math
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.core import url_to_fs
from tenacity import RetryError, Retrying, retry_if_exception, stop_after_delay, wait_exponential_jitter

from helmflow.errors import HelmflowError, OutsideRoot
from helmflow.settings import settings

TMP_PREFIX = "_tmp."
DEFAULT_ROOT = "./helmflow-store"
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")
RETRY_ENV = "HELMFLOW_STORAGE_RETRY_S"
DEFAULT_RETRY_S = 300.0
OUTAGE_WARNING_EVERY_S = 30.0
log = logging.getLogger("helmflow")
T = TypeVar("T")


class StorageError(HelmflowError, RuntimeError):
    pass


class StorageFull(StorageError):
    """The storage root's disk (or quota) took no more bytes. What was finished is kept (every file is
    written whole or not at all); nothing can be saved until space is freed, so the run stops with
    this one line (exit 1) rather than one traceback per task."""

    exit_code = 1


#: the errors of a local disk that mean "no room": a full device, an exceeded quota
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT})


class UnsafeName(HelmflowError, ValueError):
    """A name (board, scenario) that leaves nothing usable in a storage key."""


def retry_window_s() -> float:
    """How long an object-store call keeps retrying through an outage (``HELMFLOW_STORAGE_RETRY_S``)."""
    raw = settings().storage_retry_s.strip()
    if not raw:
        return DEFAULT_RETRY_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{RETRY_ENV} must be a number of seconds (0 or more), not {raw!r}")
    return value


def _library_transient(exc: BaseException) -> bool:
    """botocore/aiohttp failures that a later attempt can outlive (imported only if installed)."""
    try:
        from botocore.exceptions import ClientError, HTTPClientError
        from botocore.exceptions import ConnectionError as BotoConnectionError
    except ImportError:
        pass
    else:
        if isinstance(exc, (BotoConnectionError, HTTPClientError)):  # refused, timeouts, closed connections
            return True
        if isinstance(exc, ClientError):
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
            code = exc.response.get("Error", {}).get("Code", "")
            return status >= 500 or code in {"SlowDown", "Throttling", "RequestTimeout", "ServiceUnavailable"}
    try:
        from aiohttp import ClientConnectionError, ServerTimeoutError
    except ImportError:
        return False
    return isinstance(exc, (ClientConnectionError, ServerTimeoutError))


def transient(exc: BaseException) -> bool:
    """Would the same storage call succeed later? Looks through the exception's whole chain (s3fs
    wraps botocore, which wraps aiohttp); a missing key or denied access anywhere means no."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)):
            return False
        if isinstance(current, (ConnectionError, TimeoutError)) or _library_transient(current):
            return True
        current = current.__cause__ or current.__context__
    return False


_outage_lock = threading.Lock()
_outage_warned_at: dict[str, float] = {}


def _warn_outage(root: str, exc: BaseException | None, window: float) -> None:
    """One line per root every ``OUTAGE_WARNING_EVERY_S`` (an outage fails many calls at once)."""
    now = time.monotonic()
    with _outage_lock:
        if now - _outage_warned_at.get(root, -math.inf) < OUTAGE_WARNING_EVERY_S:
            return
        _outage_warned_at[root] = now
    log.warning("storage %s unreachable (%s); retrying for up to %.0f s (%s)", root, type(exc).__name__, window,
                RETRY_ENV)


def safe_key(name: str) -> str:
    """A storage-key segment from any name: ``/`` becomes ``--``; nothing can climb out (``..``)."""
    cleaned = _UNSAFE.sub("_", name.replace("/", "--")).strip("._")
    if not cleaned:
        raise UnsafeName(f"name {name!r} has no characters usable in a storage key")
    return cleaned[:200]


def resolve_root(url: str | None = None) -> str:
    """--storage beats $HELMFLOW_STORAGE beats ./helmflow-store; local paths become absolute."""
    url = url or settings().storage or DEFAULT_ROOT
    if "://" not in url:
        return str(Path(url).expanduser().resolve())
    if url.startswith("file://"):
        return str(Path(url[len("file://") :]).resolve())
    return url.rstrip("/")


class Store:
    """A storage root. Keys are ``/``-separated paths relative to it."""

    def __init__(self, root: str | None = None):
        self.root = resolve_root(root)
        # No listings cache: other processes (workers, the CLI) write under the same root, and a stale
        # cached listing makes s3fs report their new files as missing (FileNotFoundError on read).
        try:
            self.fs, self._base = url_to_fs(self.root, use_listings_cache=False)
        except (ValueError, ImportError) as exc:  # an unknown protocol, or one whose package is not installed
            raise StorageError(f"storage {self.root} cannot be opened: {exc}") from None
        self.is_local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,))
        self._real_base = os.path.realpath(self._base) if self.is_local else ""
        self.retry_s = retry_window_s()

    def _retrying(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``, retried through transient object-store failures for ``retry_s`` seconds.

        Local disks are not retried: their errors (a full disk, permissions) do not pass by waiting.
        """
        if self.is_local:
            return fn(*args)
        retrying = Retrying(
            stop=stop_after_delay(self.retry_s),
            wait=wait_exponential_jitter(multiplier=0.5, max=15.0, jitter=0.5),
            retry=retry_if_exception(transient),
            before_sleep=lambda state: _warn_outage(self.root, state.outcome.exception() if state.outcome else None,
                                                    self.retry_s),
        )
        try:
            return retrying(fn, *args)
        except RetryError as err:
            exc = err.last_attempt.exception()
            raise StorageError(
                f"storage {self.root} unreachable for {self.retry_s:.0f} s ({type(exc).__name__}: {exc}); gave up. "
                f"{RETRY_ENV} sets how long to keep retrying (default {DEFAULT_RETRY_S:.0f} s)"
            ) from exc

    # ------------------------------------------------------------------ paths
    def path(self, key: str) -> str:
        return f"{self._base.rstrip('/')}/{key.lstrip('/')}" if key else self._base

    def url(self, key: str) -> str:
        return f"{self.root}/{key}" if key else self.root

    def asset_uri(self, key: str) -> str:
        """A URI for lineage records (Prefect asset keys must be URIs: local paths become file://)."""
        return f"file://{self.path(key)}" if self.is_local else self.url(key)

    def inside(self, key: str) -> str:
        """The path of ``key``, refused when it resolves outside the root.

        Stored data is untrusted: a planted symlink (``runs/x/run.json -> /etc/passwd``, or a whole
        board folder pointing elsewhere) must not make any reader or writer leave the root. Object
        stores have no symlinks, and their keys cannot climb (``..`` is a plain name there).
        """
        target = self.path(key)
        if self.is_local:
            real = os.path.realpath(target)
            if real != self._real_base and not real.startswith(self._real_base + os.sep):
                raise OutsideRoot(f"{self.url(key)} resolves outside the storage root {self.root}; refused")
        return target

    def exists(self, key: str) -> bool:
        try:
            return self._retrying(self.fs.exists, self.inside(key))
        except OutsideRoot:
            return False

    def ls(self, prefix: str) -> list[str]:
        """Keys directly below ``prefix`` (no temporaries)."""
        try:
            return self._keys(self._retrying(lambda path: self.fs.ls(path, detail=False), self.path(prefix)))
        except FileNotFoundError:
            return []

    def find(self, prefix: str) -> list[str]:
        """All file keys below ``prefix``, recursively, temporaries excluded."""
        try:
            return self._keys(self._retrying(self.fs.find, self.path(prefix)))
        except FileNotFoundError:
            return []

    def _keys(self, paths: list[str]) -> list[str]:
        base = self.path("").rstrip("/") + "/"
        return sorted(
            p.removeprefix(base)
            for p in paths
            if not p.rstrip("/").rsplit("/", 1)[-1].startswith(TMP_PREFIX)
        )

    def check_writable(self) -> None:
        """Fail before any work if the root cannot take a write (exit 2 at the CLI)."""
        probe = f"{TMP_PREFIX}probe-{uuid.uuid4().hex}"
        try:  # not retried: a wrong endpoint or bucket is reported now, not after the outage window
            self._write(probe, b"ok")
            with contextlib.suppress(FileNotFoundError):  # `compact --older-than 0` may have removed it
                self.fs.rm(self.inside(probe))
        except Exception as exc:
            raise StorageError(f"storage {self.root} is not writable: {type(exc).__name__}: {exc}") from exc

    # ------------------------------------------------------------------ bytes
    def write_bytes(self, key: str, data: bytes) -> str:
        self._retrying(self._write, key, data)
        return self.url(key)

    def _write(self, key: str, data: bytes) -> None:
        target = self.inside(key)
        if self.is_local:
            with self._room(key), _atomic_local_file(target) as fh:
                fh.write(data)
        else:
            self.fs.pipe_file(target, data)

    @contextlib.contextmanager
    def _room(self, key: str) -> Iterator[None]:
        """A local write that finds no room raises :class:`StorageFull`, naming the root (its temporary
        is already gone: nothing half-written is left)."""
        try:
            yield
        except OSError as exc:
            if exc.errno not in NO_ROOM:
                raise
            raise StorageFull(f"storage {self.root} is full ({os.strerror(exc.errno or errno.ENOSPC)}) while "
                              f"writing {key}: every file finished before it is kept; free space and run the "
                              f"same command again to go on") from None

    @contextlib.contextmanager
    def writing(self, key: str) -> Iterator[Any]:
        """A binary file for ``key`` written piece by piece (e.g. Parquet row groups), atomic like
        :meth:`write_bytes`: locally a temporary file, synced and renamed when the block ends without
        an error (removed when it raises); on object stores a buffer put once at the end."""
        if not self.is_local:
            buf = io.BytesIO()
            yield buf
            self.write_bytes(key, buf.getvalue())
            return
        with self._room(key), _atomic_local_file(self.inside(key)) as fh:
            yield fh

    def read_bytes(self, key: str) -> bytes:
        def read(path: str) -> bytes:
            if not self.is_local:
                return self.fs.cat_file(path)  # one GET
            with open(path, "rb") as fh:  # fsspec's local file object cost more than a small file's read
                return fh.read()

        try:
            return self._retrying(read, self.inside(key))
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{self.url(key)} does not exist") from exc

    def _open_read(self, path: str):
        """``path`` opened for reading: a local file by the operating system directly (fsspec's local
        file object cost more than the reads of a run's small files), else through fsspec."""
        return open(path, "rb") if self.is_local else self.fs.open(path, "rb")  # noqa: SIM115 - the caller closes it

    def delete(self, key: str, recursive: bool = False) -> None:
        try:
            self._retrying(lambda path: self.fs.rm(path, recursive=recursive), self.inside(key))
        except FileNotFoundError:
            pass

    def copy(self, src: str, dst: str) -> str:
        return self.write_bytes(dst, self.read_bytes(src))

    # ------------------------------------------------------------------ json
    def write_json(self, key: str, obj: Any) -> str:
        return self.write_bytes(key, (json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n").encode())

    def read_json(self, key: str) -> Any:
        return json.loads(self.read_bytes(key))

    # ------------------------------------------------------------------ parquet
    def write_parquet(
        self, key: str, table: pa.Table, metadata: dict[str, str] | None = None, row_group_size: int | None = None
    ) -> str:
        """``row_group_size`` bounds the rows a reader must decode to reach any one row (paged readers)."""
        return self.write_bytes(key, encode_parquet(table, metadata, row_group_size))

    def open(self, key: str, mode: str = "rb"):
        """A file object for ``key`` (for readers that seek: Parquet footers, row groups)."""
        return self._retrying(self.fs.open, self.inside(key), mode)

    def read_parquet(self, key: str, columns: list[str] | None = None) -> pa.Table:
        """One file's table. ``ParquetFile`` rather than ``pq.read_table``, whose dataset set-up cost
        more than reading a run's small files, and on the calling thread: tasks already keep the cores
        busy, and handing a small read to Arrow's pool costs more than the read. A column the file lacks
        is an error, as with ``pq.read_table`` (``ParquetFile`` would leave it out)."""
        def read(path: str) -> pa.Table:
            with self._open_read(path) as fh:
                parquet = pq.ParquetFile(fh)
                missing = sorted(set(columns or ()) - set(parquet.schema_arrow.names))
                if missing:
                    raise pa.ArrowInvalid(f"{self.url(key)} has no column {', '.join(missing)}")
                return parquet.read(columns=columns, use_threads=False)

        return self._retrying(read, self.inside(key))

    def parquet_metadata(self, key: str) -> dict[str, str]:
        def read(path: str) -> dict[bytes, bytes]:
            with self._open_read(path) as fh:
                return pq.read_schema(fh).metadata or {}

        return {k.decode(): v.decode() for k, v in self._retrying(read, self.inside(key)).items()}


@contextlib.contextmanager
def _atomic_local_file(target: str) -> Iterator[Any]:
    """A binary file that appears at ``target`` whole or not at all: written as a temporary file
    beside it, synced and renamed when the block ends without an error, removed when it raises.

    The temporary is ``flock``-ed from its creation until after the rename, so ``helmflow compact``
    (:func:`remove_abandoned_temporary`) can tell a live writer's temporary, however old, from one a
    killed writer left: the kernel drops the lock with its holder."""
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    tmp, fh = _locked_temporary(parent, os.path.basename(target))
    try:
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
            os.replace(tmp, target)  # still locked: compact never sees it unlocked under its temporary name
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _locked_temporary(parent: str, name: str) -> tuple[str, Any]:
    """A new temporary beside ``name`` in ``parent``, open for writing and ``flock``-ed. Compact may
    remove it between its creation and the lock: then the name holds no file, or another one, and a
    fresh temporary is taken."""
    while True:
        tmp = os.path.join(parent, f"{TMP_PREFIX}{uuid.uuid4().hex}.{name}")
        fh = open(tmp, "xb")  # noqa: SIM115 - returned to the caller, who closes it
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            if os.stat(tmp).st_ino == os.fstat(fh.fileno()).st_ino:
                return tmp, fh
        except FileNotFoundError:
            pass
        fh.close()


def remove_abandoned_temporary(path: str) -> bool:
    """Remove the local temporary ``path`` unless a live writer holds it (its ``flock``); True when removed."""
    try:
        fh = open(path, "rb")  # noqa: SIM115
    except (FileNotFoundError, IsADirectoryError):
        return False
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a live writer's
        try:  # renamed into place (or replaced) since it was opened: not ours to remove
            if os.stat(path).st_ino != os.fstat(fh.fileno()).st_ino:
                return False
        except FileNotFoundError:
            return False
        os.unlink(path)  # under the lock: a writer that opened it meanwhile sees the name gone and takes another
        return True


def _with_metadata(schema: pa.Schema, metadata: dict[str, str] | None) -> pa.Schema:
    """``schema`` with ``metadata`` added to its own (values as strings)."""
    if not metadata:
        return schema
    existing = dict(schema.metadata or {})
    existing.update({k.encode(): str(v).encode() for k, v in metadata.items()})
    return schema.with_metadata(existing)


@contextlib.contextmanager
def parquet_writer(fh: Any, schema: pa.Schema, metadata: dict[str, str] | None = None) -> Iterator[pq.ParquetWriter]:
    """A Parquet writer on ``fh`` with :func:`encode_parquet`'s settings: tables written to it with the
    same row groups make the same bytes as one ``encode_parquet`` of their concatenation."""
    with pq.ParquetWriter(fh, _with_metadata(schema, metadata), compression="zstd") as writer:
        yield writer


def encode_parquet(table: pa.Table, metadata: dict[str, str] | None = None, row_group_size: int | None = None,
                   compression: str = "zstd", use_dictionary: bool = True) -> bytes:
    """The Parquet bytes ``Store.write_parquet`` writes (zstd; ``metadata`` added to the schema's)."""
    if metadata:
        table = table.replace_schema_metadata(_with_metadata(table.schema, metadata).metadata)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression=compression, row_group_size=row_group_size, use_dictionary=use_dictionary)
    return buf.getvalue()

