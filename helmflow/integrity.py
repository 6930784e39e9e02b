"""Published files are checked against the sha256 recorded when they were written.

``run.json`` and ``release.json`` (``helmflow.manifests``) carry ``sha256: {file name: hex digest}``
for every Parquet file next to them. Readers (serve, report, lineage, export, the next run) call :func:`verify_files`
before trusting a file: a flipped byte or a truncated upload is one :class:`CorruptFile` error that
names the file, never garbage rows or a bare 500. Files published before digests were recorded
have none and are read as they are.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from helmflow.storage import Store


class CorruptFile(RuntimeError):
    """A published file does not match its recorded sha256, or cannot be parsed at all."""

    def __init__(self, url: str, detail: str):
        super().__init__(f"{url} is corrupt: {detail}")
        self.url = url


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_problem(store: Store, key: str, expected: str) -> str | None:
    """Why ``key`` is not the file that was published (None when it is)."""
    try:
        data = store.read_bytes(key)
    except FileNotFoundError:
        return "the file is missing"
    digest = sha256_hex(data)
    if digest != expected:
        return f"sha256 {digest} ({len(data)} bytes), but {expected} was recorded when it was published"
    return None


def verify_files(store: Store, prefix: str, digests: dict[str, str]) -> None:
    """Check every file a run.json or release.json records a digest for (``sha256``: name -> hex)."""
    for name, expected in sorted(digests.items()):
        problem = file_problem(store, f"{prefix}/{name}", expected)
        if problem:
            raise CorruptFile(store.url(f"{prefix}/{name}"), problem)


def read_manifest(store: Store, key: str) -> dict[str, Any]:
    """A run.json, release.json or pointer; unparseable JSON is a :class:`CorruptFile` naming it."""
    try:
        data = json.loads(store.read_bytes(key))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptFile(store.url(key), f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptFile(store.url(key), f"expected a JSON object, found {type(data).__name__}")
    return data
