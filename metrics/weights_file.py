"""A metric's weights file named by a setting (HEIM's nudity and watermark detectors, Q16's prompts, the
aesthetics head): where it is, loaded once before any request (one line when it is missing or not the model), and
the digest that goes into the metric's version, hashed once per file state instead of at every call."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from helmflow.errors import MetricError
from helmflow.records import Instance


class WeightsFile:
    """``env``: the setting's environment name (for messages); ``value``: the setting's current value (None when
    unset); ``origin``: where the file comes from, said when it is missing; ``load``: loads (and so checks) the
    file at a resolved path, raising MetricError when it is not the model."""

    def __init__(self, env: str, value: Callable[[], str | None], origin: str, load: Callable[[str], Any]):
        self.env, self.value, self.origin, self.load = env, value, origin, load
        self._checked = lru_cache(maxsize=8)(self._check_value)

    def path(self, value: str) -> Path:
        path = Path(value).expanduser()
        if not path.is_file():
            raise MetricError(f"${self.env}={value!r}: no such file ({self.origin})")
        return path.resolve()

    def configured(self) -> Path | None:
        """The file the setting names, loaded; None when the setting is unset."""
        value = self.value()
        if value is None:
            return None
        path = self.path(value)
        self.load(str(path))
        return path

    def _check_value(self, value: str | None) -> None:
        self.configured()

    def check(self, instance: Instance) -> None:
        """The metric's ``check``: the setting's file loads, once per value."""
        self._checked(self.value())

    def sha256(self) -> str | None:
        """The set file's sha256 (None unset), hashed once per file state."""
        value = self.value()
        if value is None:
            return None
        path = self.path(value)
        stat = path.stat()
        return _sha256(str(path), stat.st_size, stat.st_mtime_ns)

    def digest(self) -> str:
        """The metric's ``varies``: ``none`` unset, else the first 16 hex digits of the file's sha256."""
        sha = self.sha256()
        return "none" if sha is None else sha[:16]


@lru_cache(maxsize=16)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    """A file's sha256, once per (path, size, modification time)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
