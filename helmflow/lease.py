"""One run of a board per storage root at a time: two would each send every request and pay twice.

A local root holds ``leases/<board>.lock`` under an exclusive ``flock`` for the whole run: the
kernel releases it when the holder exits, however it exits (SIGKILL included), so a dead holder
never blocks anyone. The file names the holder (host, pid, start time) for the message a second
run prints. By default the second run exits at once with that line (exit 75, "try again later");
``--wait`` makes it wait for the lease instead.

Object-store roots (S3) are not leased yet: S3 has no lock that ends with its holder, and a lease
there needs a conditional create, a heartbeat and an expiry (see issue 13, item 3).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime

from helmflow.errors import HelmflowError
from helmflow.storage import Store, safe_key

EXIT_BUSY = 75  # EX_TEMPFAIL: nothing is wrong with the input; try again when the other run is done


class BoardBusy(HelmflowError):
    """Another live run holds the board's lease on this storage root."""

    exit_code = EXIT_BUSY


@contextlib.contextmanager
def board_lease(store: Store, board: str, wait: bool = False, poll_s: float = 1.0) -> Iterator[None]:
    """Hold the board's lease on ``store`` for the ``with`` block (no-op on object stores)."""
    if not store.is_local:
        yield
        return
    path = store.inside(f"leases/{safe_key(board)}.lock")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a+", encoding="utf-8") as fh:
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not wait:
                    fh.seek(0)
                    raise BoardBusy(f"board {board!r} on storage {store.root} is being run by {_holder(fh.read())}; "
                                    f"rerun when it is done, or with --wait to queue behind it") from None
                time.sleep(poll_s)
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                             "since": datetime.now(UTC).isoformat(timespec="seconds")}))
        fh.flush()
        try:
            yield
        finally:
            fh.truncate(0)  # the lock itself goes when the file closes (or the process dies)


def _holder(text: str) -> str:
    try:
        h = json.loads(text)
        return f"pid {h['pid']} on {h['host']} (since {h['since']})"
    except (ValueError, KeyError, TypeError):
        return "another run"
