"""``helmflow server start|stop|status``: helmflow's managed Prefect server (:mod:`helmflow.prefect_server`)."""

from __future__ import annotations

import argparse
import sys
import time


def add_parser(sub) -> None:
    p = sub.add_parser(
        "server", help="start, stop or show helmflow's background Prefect server (API and UI)",
        description="helmflow's managed Prefect server: the local `prefect server` (API and UI) that `run`, `eval`, "
                    "`reproduce` and `retry` use when $PREFECT_API_URL is not set. The first of them starts it in the "
                    "background under $PREFECT_HOME; it stops itself after an idle time without API requests.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser("start", help="start it (or say where it already runs) and wait until it answers")
    start.add_argument("--port", type=int, metavar="PORT",
                       help="the port to ask for (default $HELMFLOW_SERVER_PORT or 4200; a taken one: a free one)")
    start.add_argument("--idle-timeout", type=float, metavar="SECONDS",
                       help="stop after this many seconds without an API request (default "
                            "$HELMFLOW_SERVER_IDLE_TIMEOUT_S or 3600; 0: never)")
    start.set_defaults(func=cmd_start)
    actions.add_parser("stop", help="stop it").set_defaults(func=cmd_stop)
    actions.add_parser("status", help="whether it runs, where, and on which Prefect version (exit 1: not running)"
                       ).set_defaults(func=cmd_status)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_start(args: argparse.Namespace) -> int:
    from helmflow import prefect_server
    from helmflow.cli.options import UsageError
    from helmflow.settings import settings

    if args.port is not None and not 0 < args.port < 65536:
        raise UsageError(f"--port must be 1 to 65535, got {args.port}")
    if args.idle_timeout is not None and args.idle_timeout < 0:
        raise UsageError(f"--idle-timeout must be 0 (never) or more seconds, got {args.idle_timeout:g}")
    handle = prefect_server.ensure(_say, port=args.port, idle_timeout_s=args.idle_timeout)
    if not handle.started_here and args.port is not None and args.port != handle.state.port:
        _say(f"helmflow's Prefect server already runs on port {handle.state.port}: `helmflow server stop` first "
             f"to move it to {args.port}")
    handle.wait(settings().server_startup_timeout_s)
    if handle.started_here:
        print(prefect_server.started_line(handle.state))
    else:
        print(f"Prefect UI: {handle.state.ui_url} (already running, pid {handle.state.pid})")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from helmflow import prefect_server

    stopped = prefect_server.stop_server()
    if stopped is None:
        print(f"helmflow's Prefect server is not running (PREFECT_HOME {prefect_server.prefect_home()})")
    else:
        print(f"stopped helmflow's Prefect server (pid {stopped.pid}, {stopped.ui_url})")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    import os

    from helmflow import prefect_server

    home = prefect_server.prefect_home()
    if os.environ.get("PREFECT_API_URL"):
        print(f"PREFECT_API_URL is set ({os.environ['PREFECT_API_URL']}): commands use that server, not this one")
    state = prefect_server.running(home)
    if state is None:
        print(f"helmflow's Prefect server is not running (PREFECT_HOME {home}); the next `helmflow run` starts it")
        return 1
    import httpx

    try:
        answers = httpx.get(f"{state.api_url}/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        answers = False
    idle = "never stops by itself" if not state.idle_timeout_s else \
        f"stops after {state.idle_timeout_s:g} s without an API request"
    print(f"Prefect UI: {state.ui_url} ({'answering' if answers else 'NOT answering yet'})")
    print(f"API: {state.api_url}")
    print(f"pid {state.pid}, Prefect {state.prefect_version}, up {_duration(time.time() - state.started_at)}; {idle}")
    if state.worker:
        workers = prefect_server.worker_pids(state)
        print(f"worker: {f'pid {workers[0]}' if workers else 'NOT running'} on work pool {prefect_server.POOL} "
              f"(the UI's Retry button on runs of `helmflow run`)")
    else:
        print("worker: none (HELMFLOW_SERVER_WORKER=0: runs of `helmflow run` have no Retry button)")
    print(f"PREFECT_HOME: {home}; log: {home / prefect_server.LOG_FILE}")
    return 0


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"
