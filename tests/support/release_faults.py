"""Crash a release publication midway, to prove a crash never moves a pointer to a half-written release.

Loaded as a plugin into a ``helmflow`` process (``HELMFLOW_PLUGINS=<this file>``, see :func:`fault_env`),
it reads ``HELMFLOW_RELEASE_FAULT``; in the test process, :func:`inject` patches through ``monkeypatch``:

- ``after-leaderboard``: the write of a release's ``leaderboard.parquet`` lands, then the process fails;
- ``before-pointer``: moving a board's pointer fails, after ``release.json`` is written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helmflow import releases
from helmflow.storage import Store

FAULT_VAR = "HELMFLOW_RELEASE_FAULT"
FAULTS = ("after-leaderboard", "before-pointer")


class InjectedCrash(RuntimeError):
    pass


def inject(fault: str, setattr_: Callable[[Any, str, Any], None] = setattr) -> None:
    """Patch the fault in (``setattr_`` is ``monkeypatch.setattr`` in a test, so it is undone after)."""
    if fault == "after-leaderboard":
        write = Store._write  # every whole-object write (write_bytes, write_json) ends here

        def crash_after_leaderboard(self, key, data):
            write(self, key, data)
            if key.startswith("leaderboards/") and key.endswith("/leaderboard.parquet"):
                raise InjectedCrash(f"{fault}: simulated crash after {key}")

        setattr_(Store, "_write", crash_after_leaderboard)
    elif fault == "before-pointer":
        def crash_before_pointer(store, board, release, uri):
            raise InjectedCrash(f"{fault}: simulated crash between release.json and its pointer")

        setattr_(releases, "point", crash_before_pointer)
    else:
        raise ValueError(f"{FAULT_VAR}={fault!r}: expected one of {', '.join(FAULTS)}")


def fault_env(fault: str) -> dict[str, str]:
    """The environment that makes a ``helmflow`` subprocess crash with ``fault``."""
    return {"HELMFLOW_PLUGINS": str(Path(__file__)), FAULT_VAR: fault}


if os.environ.get(FAULT_VAR):
    inject(os.environ[FAULT_VAR])
