"""The Prefect server a CLI command talks to: ``PREFECT_API_URL``'s, else helmflow's managed one
(:mod:`helmflow.prefect_server`, kept running in the background), else with ``--ephemeral`` Prefect's
temporary one, which stops with the command.

For the temporary server: Prefect starts it on first use and gives it 20 s
(``server.ephemeral.startup_timeout_seconds``). On a loaded 2-core machine its imports and database
migrations took 60–90 s, and the run died with a 30-line traceback. helmflow raises the default to
:data:`STARTUP_TIMEOUT_S` unless the user set the setting
(``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``, a profile or ``prefect.toml``), and a server
that still does not start is one line. ``helmflow run``/``eval`` start it themselves
(:class:`helmflow.stopping.TemporaryServer`), early, and wait for it here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from helmflow.errors import HelmflowError

if TYPE_CHECKING:
    from helmflow.prefect_server import Handle
    from helmflow.stopping import TemporaryServer

STARTUP_TIMEOUT_S = 180
STARTUP_SETTING = "server.ephemeral.startup_timeout_seconds"
EXIT_PREFECT = 3


class PrefectUnavailable(HelmflowError):
    """The temporary Prefect server did not start: nothing ran, nothing was written."""

    exit_code = EXIT_PREFECT


def start_server(ephemeral: bool = False, verbose: bool = False,
                 say: Callable[[str], None] | None = None) -> TemporaryServer | Handle | None:
    """Start the command's Prefect server now, before planning, without waiting for it: None when
    ``$PREFECT_API_URL`` names one; Prefect's temporary server with ``ephemeral`` (or off Linux); else
    helmflow's managed server, started in the background if none runs (``HELMFLOW_EPHEMERAL=1``: as
    ``ephemeral`` on every command). :func:`prefect_api` waits."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    quiet_console(verbose)
    if os.environ.get("PREFECT_API_URL"):
        return None
    from helmflow.settings import settings
    from helmflow.stopping import start_temporary_server

    if ephemeral or settings().ephemeral or not sys.platform.startswith("linux"):
        return start_temporary_server()
    from helmflow import prefect_server

    return prefect_server.ensure(say or _say)


def quiet_console(verbose: bool) -> None:
    """Prefect's log lines go to the flow run (its Logs tab: a line per cell, the release, the report)
    at INFO, but to the terminal only from WARNING up, unless ``--verbose`` (or the user set either)."""
    if not verbose:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO")
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def plain_api_url(server: TemporaryServer | Handle | None) -> str | None:
    """The API URL, found without importing Prefect, for work that needs only its REST API: the
    managed server's (once it answers) or ``$PREFECT_API_URL``; None when only Prefect knows it
    (a profile's URL, the temporary server): use :func:`prefect_api`."""
    from helmflow import prefect_server

    if server is None:
        return os.environ.get("PREFECT_API_URL") or None
    if not isinstance(server, prefect_server.Handle) or prefect_server.configured_api_url():
        return None
    from helmflow.settings import settings

    url = server.wait(settings().server_startup_timeout_s)
    if server.started_here:
        _say(prefect_server.started_line(server.state))
        server.started_here = False  # said once
    return url


@contextmanager
def prefect_api(server: TemporaryServer | Handle | None) -> Iterator[None]:
    """Prefect work in the block talks to ``server`` (from :func:`start_server`), once it answers."""
    from helmflow.prefect_server import Handle

    if isinstance(server, Handle):
        with managed_server(server):
            yield
    else:
        with temporary_server(server):
            yield


@contextmanager
def managed_server(handle: Handle) -> Iterator[None]:
    """Wait for helmflow's managed server and point Prefect's API at it for the block (a Prefect
    profile or prefect.toml naming an API URL wins: the managed server is then left alone)."""
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    from helmflow import prefect_server
    from helmflow.settings import settings

    if get_current_settings().api.url:
        handle.stop()
        yield
        return
    try:
        url = handle.wait(settings().server_startup_timeout_s)
    except prefect_server.ServerProblem:
        if prefect_server.running(handle.home) is not None:
            raise  # it runs but does not answer
        # it exited as this command came to use it (its idle stop during a long planning, or another
        # command's server stopping for idleness): start one now, once
        handle.__dict__.update(prefect_server.ensure(_say, home=handle.home).__dict__)
        url = handle.wait(settings().server_startup_timeout_s)
    handle.in_use = True
    if handle.started_here:
        _say(prefect_server.started_line(handle.state))
    with temporary_settings(updates={PREFECT_API_URL: url}):
        yield


@contextmanager
def watch_server(server: TemporaryServer | Handle | None) -> Iterator[None]:
    """While a flow runs on helmflow's managed server: if the server dies or stops answering, stop the
    command as Ctrl-C would (nothing new is sent, journals are flushed) with one line and exit 3."""
    from helmflow import prefect_server
    from helmflow.stopping import halt

    if not isinstance(server, prefect_server.Handle) or not server.in_use:
        yield
        return
    with prefect_server.Watch(server.state, server.home, lambda line: halt(line, EXIT_PREFECT)):
        yield


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
    """Wait until Prefect has recorded the final state of every task run of ``flow_run_id`` and of
    its scenarios' subflow runs.

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
        FlowRunFilterParentFlowRunId,
        Operator,
        TaskRunFilter,
        TaskRunFilterState,
        TaskRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all(timeout=timeout_s)
    unfinished = TaskRunFilter(state=TaskRunFilterState(type=TaskRunFilterStateType(
        any_=[StateType.SCHEDULED, StateType.PENDING, StateType.RUNNING, StateType.PAUSED])))
    of_flow = FlowRunFilter.model_validate({"operator": Operator.or_, "id": FlowRunFilterId(any_=[flow_run_id]),
                                            "parent_flow_run_id": FlowRunFilterParentFlowRunId(any_=[flow_run_id])})
    deadline = time.monotonic() + timeout_s
    with get_client(sync_client=True) as client:
        while True:
            left = len(client.read_task_runs(flow_run_filter=of_flow, task_run_filter=unfinished, limit=200))
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.25)
