"""The Prefect server a CLI run talks to when ``PREFECT_API_URL`` names none: Prefect's temporary one.

Prefect starts it on first use and gives it 20 s (``server.ephemeral.startup_timeout_seconds``). On a
loaded 2-core machine its imports and database migrations took 60–90 s, and the run died with a
30-line traceback. helmflow raises the default to :data:`STARTUP_TIMEOUT_S` unless the user set the
setting (``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``, a profile or ``prefect.toml``), and a
server that still does not start is one line. ``helmflow run``/``eval`` start it themselves
(:class:`helmflow.stopping.TemporaryServer`), early, and wait for it here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from helmflow.errors import HelmflowError

if TYPE_CHECKING:
    from helmflow.stopping import TemporaryServer

STARTUP_TIMEOUT_S = 180
STARTUP_SETTING = "server.ephemeral.startup_timeout_seconds"
EXIT_PREFECT = 3


class PrefectUnavailable(HelmflowError):
    """The temporary Prefect server did not start: nothing ran, nothing was written."""

    exit_code = EXIT_PREFECT


@contextmanager
def temporary_server(server: TemporaryServer | None = None) -> Iterator[None]:
    """Run Prefect work under helmflow's start-up default; a start-up failure becomes one line.

    With ``server`` (helmflow's own temporary server, spawned earlier), wait for it under that
    timeout and point Prefect's API at it for the block; without, Prefect starts its own on first use.
    """
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        get_current_settings,
        temporary_settings,
    )

    if server is not None and get_current_settings().api.url:  # a profile names a server: use it
        server.stop()
        server = None

    with temporary_settings(set_defaults={STARTUP_SETTING: STARTUP_TIMEOUT_S}):
        timeout = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
        unavailable = PrefectUnavailable(
            f"Prefect's temporary server did not start within {timeout} s (a busy machine?): set "
            f"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS higher, or start one with `prefect server start` "
            f"and export PREFECT_API_URL"
        )
        if server is not None:
            try:
                url = server.wait(timeout)
            except TimeoutError:
                server.stop()
                raise unavailable from None
            except ChildProcessError as exc:
                raise PrefectUnavailable(f"Prefect's temporary server {exc} before answering (its output is above): "
                                         f"start one with `prefect server start` and export PREFECT_API_URL") from None
            with temporary_settings(updates={PREFECT_API_URL: url}):
                yield
            return
        try:
            yield
        except RuntimeError as exc:
            if "ephemeral Prefect API server" not in str(exc):
                raise
            raise unavailable from None


SETTLE_TIMEOUT_S = 120.0


def settle(flow_run_id, timeout_s: float = SETTLE_TIMEOUT_S) -> int:
    """Wait until Prefect has recorded the final state of every task run of ``flow_run_id``.

    Prefect 3 reports task-run states as events, which the server's task-run recorder writes to its
    database in batches. When the temporary server stopped right after a flow returned, events still
    queued were lost: the runs stayed ``Running``/``Pending`` in Prefect's database for good, and the
    recorder, cancelled mid-flush, printed ~150 lines of ``ERROR … CancelledError``. So the client's
    event queue is drained, then the API is polled until no task run of the flow is left in a
    non-final state. Returns how many still were when ``timeout_s`` ran out (0: settled).
    """
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        TaskRunFilter,
        TaskRunFilterState,
        TaskRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all(timeout=timeout_s)
    unfinished = TaskRunFilter(state=TaskRunFilterState(type=TaskRunFilterStateType(
        any_=[StateType.SCHEDULED, StateType.PENDING, StateType.RUNNING, StateType.PAUSED])))
    of_flow = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while True:
            left = len(client.read_task_runs(flow_run_filter=of_flow, task_run_filter=unfinished, limit=200))
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.25)
