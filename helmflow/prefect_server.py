"""helmflow's managed Prefect server: one local ``prefect server`` (API and UI) that outlives a command.

Without ``PREFECT_API_URL``, ``helmflow run``/``eval``/``reproduce``/``retry`` use it: the first one
starts it in the background under the user's ``PREFECT_HOME`` and every later one reuses it, so the
flow runs, task runs, logs and artifacts stay browsable after the command ends, and no command pays
for a server's start-up. It is the server ``prefect server start --background`` runs (uvicorn on
Prefect's ``create_app``, services and UI on), started by ``python -m helmflow.prefect_server serve``
so that its output goes to a log file and it can stop itself after ``HELMFLOW_SERVER_IDLE_TIMEOUT_S``
seconds without an API request (a CLI, a worker or an open UI tab all make requests).

Files under ``PREFECT_HOME``: ``helmflow-server.json`` (pid, port, Prefect version, idle timeout),
``helmflow-server.lock`` (two commands starting at once get one server), ``helmflow-server.log``, and
Prefect's own ``server.pid`` (so ``prefect server stop`` stops it too). Unless
``HELMFLOW_SERVER_WORKER=0``, the server process also owns a Prefect process worker on the work pool
:data:`POOL` (started once the API answers, stopped with the server): ``helmflow run`` creates its flow
run from the board's deployment :data:`DEPLOYMENT` on that pool (:func:`managed_flow_run`) and executes
it in the command, so the UI's Retry button, which only deployment runs have, has that worker execute
the same flow run again. The worker's polls carry :data:`COMPANION_HEADER`, which the idle stop
ignores. The port is
``HELMFLOW_SERVER_PORT`` (4200) unless another program holds it: then a free one, recorded. The UI is
told its API's address (``PREFECT_SERVER_UI_API_URL``), so a port other than 4200 works in a browser.

Nothing here imports Prefect: a command that finds the server running pays one HTTP request.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from helmflow.errors import HelmflowError

EXIT_PREFECT = 3
STATE_FILE = "helmflow-server.json"
LOCK_FILE = "helmflow-server.lock"
LOG_FILE = "helmflow-server.log"
PREFECT_PID_FILE = "server.pid"  # Prefect's own: `prefect server stop` reads it
SERVE_MODULE = "helmflow.prefect_server"
HOST = "127.0.0.1"
STOP_GRACE_S = 15.0
POOL = "helmflow-managed"  # the companion worker's process work pool
DEPLOYMENT = "helmflow-run"  # <board>/helmflow-run: the deployment `helmflow run`'s flow runs belong to
ENTRYPOINT = "helmflow.flows.evaluate.evaluate"  # a module path: the worker imports it, nothing is downloaded
COMPANION_HEADER = "x-helmflow-companion"  # on the worker's own API requests: not activity for the idle stop
WORKER_QUERY_S = 5  # how often the worker asks for scheduled runs (a Retry starts within about this)


class ServerProblem(HelmflowError):
    """The managed server cannot be used: one line saying why and what to do; nothing ran."""

    exit_code = EXIT_PREFECT


def prefect_home() -> Path:
    """``$PREFECT_HOME`` as Prefect reads it (default ``~/.prefect``)."""
    return Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser().absolute()


def prefect_version() -> str:
    from importlib.metadata import version

    return version("prefect")


@dataclass
class ServerState:
    pid: int
    port: int
    prefect_version: str
    home: str
    idle_timeout_s: float
    started_at: float
    worker: bool = False  # it runs the companion worker (the Retry button works)

    @property
    def api_url(self) -> str:
        return f"http://{HOST}:{self.port}/api"

    @property
    def ui_url(self) -> str:
        return f"http://{HOST}:{self.port}"


def _paths(home: Path) -> tuple[Path, Path, Path]:
    return home / STATE_FILE, home / LOCK_FILE, home / LOG_FILE


def read_state(home: Path) -> ServerState | None:
    """The recorded server, or None (no record, or one that cannot be read: treated as stale)."""
    try:
        data = json.loads((home / STATE_FILE).read_text())
        return ServerState(**{k: data[k] for k in ServerState.__dataclass_fields__ if k in data})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_state(home: Path, state: ServerState) -> None:
    target = home / STATE_FILE
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2))
    os.replace(tmp, target)


def _forget(home: Path, pid: int) -> None:
    """Remove the records naming ``pid`` (ours and Prefect's pid file), and nothing another server wrote."""
    state = read_state(home)
    if state is not None and state.pid == pid:
        (home / STATE_FILE).unlink(missing_ok=True)
    prefect_pid = home / PREFECT_PID_FILE
    with contextlib.suppress(OSError, ValueError):
        if int(prefect_pid.read_text().strip() or 0) == pid:
            prefect_pid.unlink()


def is_ours(pid: int, home: Path) -> bool:
    """Whether ``pid`` is a live managed server of ``home`` (not a dead one, nor a reused pid)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if SERVE_MODULE.encode() not in argv or b"serve" not in argv:
        return False
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False  # a zombie: exited, not yet reaped
    try:
        return argv[argv.index(b"--home") + 1].decode() == str(home)
    except (ValueError, IndexError):
        return False


def worker_pids(state: ServerState) -> list[int]:
    """The live companion worker(s) of the server ``state`` records: its children running :func:`work`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == state.pid and SERVE_MODULE.encode() in argv and b"worker" in argv:
            found.append(int(entry.name))
    return found


def running(home: Path | None = None) -> ServerState | None:
    """The managed server of ``home`` if its process is alive (a record of a dead one is removed)."""
    home = home or prefect_home()
    state = read_state(home)
    if state is None:
        return None
    if is_ours(state.pid, home):
        return state
    _forget(home, state.pid)
    return None


@contextlib.contextmanager
def _locked(lock: Path, timeout_s: float) -> Iterator[None]:
    """An exclusive ``flock`` on ``lock`` (released when the holder dies, so never stale)."""
    import fcntl  # Linux (and macOS); elsewhere commands use Prefect's temporary server

    with lock.open("a") as fh:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ServerProblem(f"another command has been starting helmflow's Prefect server for "
                                        f"{timeout_s:g} s ({lock} is locked): `helmflow server status`") from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _fresh_database(home: Path) -> bool:
    """No Prefect database yet (the default SQLite one): the server's first start migrates it."""
    if os.environ.get("PREFECT_SERVER_DATABASE_CONNECTION_URL") or os.environ.get(
            "PREFECT_API_DATABASE_CONNECTION_URL"):
        return False
    return not (home / "prefect.db").exists()


@dataclass
class Handle:
    """The managed server one command uses: ``wait`` for it to answer, then talk to ``api_url``."""

    state: ServerState
    home: Path
    started_here: bool  # this command spawned it (it prints the UI line)
    proc: subprocess.Popen | None = None
    in_use: bool = False  # the command's Prefect API points at it (not at a profile's server)

    @property
    def api_url(self) -> str:
        return self.state.api_url

    def wait(self, timeout_s: float) -> str:
        """The API URL once ``/api/health`` answers; ``ServerProblem`` if the process exits first or
        ``timeout_s`` passes (a hung server is said, never waited on forever)."""
        import httpx

        deadline = time.monotonic() + timeout_s
        log = self.home / LOG_FILE
        with httpx.Client() as client:
            while True:
                try:
                    if client.get(f"{self.api_url}/health", timeout=5).status_code == 200:
                        return self.api_url
                except httpx.HTTPError:
                    pass
                if not is_ours(self.state.pid, self.home):
                    code = self.proc.wait() if self.proc is not None else None
                    _forget(self.home, self.state.pid)
                    raise ServerProblem(f"helmflow's Prefect server (pid {self.state.pid}) exited"
                                        f"{f' with code {code}' if code is not None else ''} before answering: "
                                        f"see {log}{_log_tail(log)}")
                if time.monotonic() >= deadline:
                    raise ServerProblem(f"helmflow's Prefect server (pid {self.state.pid}, {self.state.ui_url}) did "
                                        f"not answer within {timeout_s:g} s (a busy machine?): see {log}; "
                                        f"`helmflow server stop` stops it, HELMFLOW_SERVER_STARTUP_TIMEOUT_S "
                                        f"waits longer, --ephemeral uses a temporary server")
                time.sleep(0.1)

    def stop(self) -> None:
        """Called when a Prefect profile names another server: stop it only if this command started it."""
        if self.started_here:
            stop_server(self.home)


def _log_tail(log: Path, lines: int = 3) -> str:
    with contextlib.suppress(OSError):
        tail = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()][-lines:]
        if tail:
            return " (last lines: " + " | ".join(tail) + ")"
    return ""


def ensure(say: Callable[[str], None], port: int | None = None, idle_timeout_s: float | None = None,
           home: Path | None = None) -> Handle:
    """The managed server of ``home``, started now (in the background, not waited for) if none runs.

    Under a file lock: a second command starting at the same moment finds the first one's record and
    waits for that server. A record whose process is gone (or whose pid now names another program) is
    stale: removed, and a new server started. A server of another Prefect version is not used: one line.
    """
    from helmflow.settings import settings

    home = home or prefect_home()
    home.mkdir(parents=True, exist_ok=True)
    config = settings()
    state_file, lock, log = _paths(home)
    with _locked(lock, config.server_startup_timeout_s):
        state = read_state(home)
        if state is not None and is_ours(state.pid, home):
            if state.prefect_version != prefect_version():
                raise ServerProblem(f"helmflow's Prefect server (pid {state.pid}, {state.ui_url}) runs Prefect "
                                    f"{state.prefect_version}, this helmflow uses Prefect {prefect_version()}: "
                                    f"`helmflow server stop`, then the next command starts one of this version")
            return Handle(state, home, started_here=False)
        if state is not None:
            say(f"helmflow's Prefect server (pid {state.pid}) is no longer running: starting a new one")
            _forget(home, state.pid)
        wanted = port or config.server_port
        chosen = wanted if _port_free(wanted) else _free_port()
        if chosen != wanted:
            say(f"port {wanted} is in use by another program (`PREFECT_API_URL=http://{HOST}:{wanted}/api` uses "
                f"it if it is a Prefect server): helmflow's Prefect server takes port {chosen}")
        if _fresh_database(home):
            say("preparing Prefect's database, once (its first start takes a little longer)")
        idle = config.server_idle_timeout_s if idle_timeout_s is None else idle_timeout_s
        proc = _spawn(home, chosen, idle, log, config.server_worker)
        state = ServerState(pid=proc.pid, port=chosen, prefect_version=prefect_version(), home=str(home),
                            idle_timeout_s=idle, started_at=time.time(), worker=config.server_worker)
        _write_state(home, state)
        prefect_pid = home / PREFECT_PID_FILE
        if not prefect_pid.exists():
            prefect_pid.write_text(str(proc.pid))
        return Handle(state, home, started_here=True, proc=proc)


def _spawn(home: Path, port: int, idle_timeout_s: float, log: Path, worker: bool) -> subprocess.Popen:
    env = dict(os.environ, PREFECT_HOME=str(home))
    env.pop("PREFECT_API_URL", None)
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    env.pop("PREFECT_LOGGING_LEVEL", None)  # the CLI's quiet defaults are not the server's
    env.pop("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", None)
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", SERVE_MODULE, "serve", "--home", str(home), "--port", str(port),
             "--idle-timeout", f"{idle_timeout_s:g}", *(["--worker"] if worker else [])],
            env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            close_fds=True,
        )


def stop_server(home: Path | None = None) -> ServerState | None:
    """Stop the managed server of ``home`` (SIGTERM, SIGKILL after a grace); the one stopped, or None."""
    home = home or prefect_home()
    state = running(home)
    if state is None:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while is_ours(state.pid, home) and time.monotonic() < deadline:
        time.sleep(0.1)
    if is_ours(state.pid, home):
        with contextlib.suppress(ProcessLookupError):
            os.kill(state.pid, signal.SIGKILL)
        while is_ours(state.pid, home) and time.monotonic() < deadline + 5:
            time.sleep(0.1)
    _forget(home, state.pid)
    return state


def configured_api_url() -> str | None:
    """The API URL the user configured for Prefect, read without importing it: ``$PREFECT_API_URL``, the
    active profile's (``$PREFECT_PROFILES_PATH`` or ``$PREFECT_HOME/profiles.toml``), else ``[api] url``
    of ./prefect.toml or ``[tool.prefect.api] url`` of ./pyproject.toml."""
    import tomllib

    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]

    def read(path: Path) -> dict:
        try:
            return tomllib.loads(path.read_text())
        except (OSError, ValueError):
            return {}

    profiles = read(Path(os.environ.get("PREFECT_PROFILES_PATH") or prefect_home() / "profiles.toml"))
    name = os.environ.get("PREFECT_PROFILE") or profiles.get("active") or "ephemeral"
    url = (profiles.get("profiles", {}).get(name) or {}).get("PREFECT_API_URL")
    url = url or (read(Path("prefect.toml")).get("api") or {}).get("url")
    return url or ((read(Path("pyproject.toml")).get("tool", {}).get("prefect") or {}).get("api") or {}).get("url")


def started_line(state: ServerState) -> str:
    return f"Prefect UI: {state.ui_url} (running in the background; helmflow server stop)"


class Watch:
    """While a flow runs, notice the server dying (or no longer answering) and stop the command with
    one line instead of letting Prefect's client retry against nothing. Its polls are API requests,
    so a long run is never idle to the server."""

    POLL_S = 2.0
    UNANSWERED = 15  # polls: ~30 s of a live process that does not answer

    def __init__(self, state: ServerState, home: Path, on_lost: Callable[[str], None]):
        self.state, self.home, self.on_lost = state, home, on_lost
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="helmflow-server-watch", daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()

    def _watch(self) -> None:
        import httpx

        missed = 0
        with httpx.Client() as client:
            while not self._done.wait(self.POLL_S):
                if not is_ours(self.state.pid, self.home):
                    return self._lost("stopped")
                try:
                    ok = client.get(f"{self.state.api_url}/health", timeout=self.POLL_S).status_code == 200
                except httpx.HTTPError:
                    ok = False
                missed = 0 if ok else missed + 1
                if missed >= self.UNANSWERED:
                    return self._lost(f"has not answered for {missed * self.POLL_S:.0f} s")

    def _lost(self, what: str) -> None:
        if not self._done.is_set():
            self.on_lost(f"helmflow: Prefect's server (pid {self.state.pid}, {self.state.ui_url}) {what} during the "
                         f"run: finished responses are journaled and will not be sent again; run the command again "
                         f"(it starts a new server)")


# --------------------------------------------------------------------------- the server process
class _Activity:
    """ASGI middleware: when the last HTTP or websocket request ended, and how many are open."""

    def __init__(self, app) -> None:
        self.app = app
        self.last = time.monotonic()
        self.open = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket") or any(
                name == COMPANION_HEADER.encode() for name, _ in scope.get("headers", ())):
            return await self.app(scope, receive, send)
        self.open += 1
        self.last = time.monotonic()
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1
            self.last = time.monotonic()


def serve(home: Path, port: int, idle_timeout_s: float, worker: bool = False) -> int:
    """Run the server in this process until SIGTERM or ``idle_timeout_s`` without a request (0: never);
    with ``worker``, its companion worker too, once the API answers."""
    os.environ["PREFECT_HOME"] = str(home)
    os.environ["PREFECT_SERVER_UI_API_URL"] = f"http://{HOST}:{port}/api"
    os.environ["PREFECT__SERVER_FINAL"] = "1"  # as `prefect server start` runs it
    import uvicorn
    from prefect.server.api.server import create_app

    activity = _Activity(create_app())
    server = uvicorn.Server(uvicorn.Config(activity, host=HOST, port=port, log_level="warning", lifespan="on"))

    def idle_watch() -> None:
        step = max(0.5, min(30.0, idle_timeout_s / 4))
        while not server.started and not server.should_exit:  # migrations and start-up are not idle time
            time.sleep(0.1)
        activity.last = max(activity.last, time.monotonic())
        while not server.should_exit:
            time.sleep(step)
            if activity.open == 0 and time.monotonic() - activity.last > idle_timeout_s:
                print(f"no API request for {idle_timeout_s:g} s: stopping", flush=True)
                server.should_exit = True

    companion: list[subprocess.Popen] = []

    def run_worker() -> None:  # this thread lives as long as the worker: its death signal is tied to it
        while not server.started and not server.should_exit:
            time.sleep(0.1)
        if server.should_exit:
            return
        companion.append(_spawn_worker(port))
        code = companion[0].wait()
        if not server.should_exit:
            print(f"the companion worker exited with code {code}: the UI's Retry button waits until "
                  f"`helmflow server stop` and the next command start the server again", flush=True)

    if idle_timeout_s > 0:
        threading.Thread(target=idle_watch, name="idle-stop", daemon=True).start()
    if worker:
        threading.Thread(target=run_worker, name="companion-worker", daemon=True).start()
    try:
        server.run()
    finally:
        for proc in companion:
            _stop_process(proc)
        _forget(home, os.getpid())
    return 0 if server.started else 1


def _die_with_parent() -> None:
    """In the worker's child: SIGTERM when the server process dies, even by SIGKILL (Linux)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _spawn_worker(port: int) -> subprocess.Popen:
    env = dict(os.environ, PREFECT_API_URL=f"http://{HOST}:{port}/api",
               PREFECT_CLIENT_CUSTOM_HEADERS=json.dumps({COMPANION_HEADER: "worker"}),
               PREFECT_WORKER_QUERY_SECONDS=str(WORKER_QUERY_S))
    for name in ("PREFECT__SERVER_FINAL", "PREFECT_SERVER_UI_API_URL"):
        env.pop(name, None)
    return subprocess.Popen([sys.executable, "-m", SERVE_MODULE, "worker", "--pool", POOL, "--name",
                             f"helmflow-managed-{port}"], env=env, stdin=subprocess.DEVNULL,
                            preexec_fn=_die_with_parent)  # noqa: PLW1509 - prctl only, no locks taken


def _stop_process(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def work(pool: str, name: str) -> int:
    """The companion worker: Prefect's process worker on ``pool`` until SIGTERM (or its server dies)."""
    import asyncio

    from prefect.workers.process import ProcessWorker

    async def main() -> None:
        async with ProcessWorker(work_pool_name=pool, name=name) as worker:
            await worker.start(printer=lambda *a, **k: print(*a, flush=True))

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0


def managed_flow_run(flow, parameters: dict, board: object):
    """A flow run of ``flow`` (named after its board) with ``parameters``, created from the board's
    deployment on the companion worker's pool, in state Pending: the worker takes only Scheduled runs,
    so this command executes it (``run_flow``), and the UI's Retry button (Scheduled, AwaitingRetry)
    hands the same run to the worker. The run carries this command's folder as its working directory,
    and a retry's requests count as activity. Two API requests, as many as a flow run of no deployment
    costs (the deployment and its pool are created on first use)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound
    from prefect.states import Pending

    with get_client(sync_client=True) as client:
        try:
            deployment_id = client.read_deployment_by_name(f"{flow.name}/{DEPLOYMENT}").id
        except ObjectNotFound:
            deployment_id = _create_deployment(client, flow, board)
        return client.create_flow_run_from_deployment(
            deployment_id, parameters=flow.serialize_parameters(parameters), state=Pending(),
            job_variables={"working_dir": os.getcwd(), "env": {"PREFECT_CLIENT_CUSTOM_HEADERS": "{}"}})


def _create_deployment(client, flow, board: object):
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    try:
        client.read_work_pool(POOL)
    except ObjectNotFound:
        from prefect.workers.process import ProcessWorker

        with contextlib.suppress(ObjectAlreadyExists):  # the worker created it meanwhile
            client.create_work_pool(WorkPoolCreate(name=POOL, type=ProcessWorker.type,
                                                   base_job_template=ProcessWorker.get_default_base_job_template()))
    return client.create_deployment(  # an upsert: two commands creating it at once get one
        flow_id=client.create_flow(flow), name=DEPLOYMENT, entrypoint=ENTRYPOINT, work_pool_name=POOL,
        parameters={"board": board}, enforce_parameter_schema=False,
        description="Flow runs started by `helmflow run` on helmflow's managed server: the command executes "
                    "them; the Retry button has the server's worker execute one again.")


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog=f"python -m {SERVE_MODULE}")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the managed server in this process (helmflow starts it)")
    s.add_argument("--home", required=True, type=Path)
    s.add_argument("--port", required=True, type=int)
    s.add_argument("--idle-timeout", required=True, type=float)
    s.add_argument("--worker", action="store_true", help="also run the companion worker")
    w = sub.add_parser("worker", help="the managed server's companion worker (the server starts it)")
    w.add_argument("--pool", required=True)
    w.add_argument("--name", required=True)
    args = p.parse_args(argv)
    if args.command == "worker":
        return work(args.pool, args.name)
    return serve(args.home, args.port, args.idle_timeout, args.worker)


if __name__ == "__main__":
    sys.exit(main())
