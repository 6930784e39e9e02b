"""A spool disk that fills up: after ``HELMFLOW_TEST_SPOOL_BYTES`` bytes every spool write fails
with ENOSPC, as a full disk fails it (fault injection at the write call; also a ``--plugin``)."""

from __future__ import annotations

import errno
import os
import threading

from helmflow import journal

_lock = threading.Lock()
_written = 0


class _FillingFile:
    def __init__(self, fh):
        self._fh = fh

    def write(self, text: str) -> int:
        global _written
        with _lock:
            if _written + len(text) > int(os.environ["HELMFLOW_TEST_SPOOL_BYTES"]):
                raise OSError(errno.ENOSPC, "No space left on device")
            _written += len(text)
        return self._fh.write(text)

    def __getattr__(self, name):
        return getattr(self._fh, name)


_real_new_spool = journal.Journal._new_spool


def _new_spool(self):
    path, fh = _real_new_spool(self)
    return path, _FillingFile(fh)


journal.Journal._new_spool = _new_spool
