"""``prefect server start`` in its own process group: the tests' session server (one per pytest worker),
the servers of their own that the deployment and UI tests need (SQLite, or PostgreSQL with several
workers), and the long-lived server some benchmarks measure against (production's topology) rather than
Prefect's temporary one.

Everything here talks to one explicit server: a :class:`PrefectServer`'s API URL and PREFECT_HOME go into
every child process (``prefect deploy``, ``prefect worker start``, ``prefect flow-run retry``) and into the
client of the test process.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

from tests.support.cli import REPO, run_prefect, run_python, spawn_cli
from tests.support.pg import pg_async_url
from tests.support.processes import free_port, stop_process, wait_http

ARTIFACTS = Path(os.environ.get("HELMFLOW_TEST_ARTIFACTS") or REPO / "test-artifacts")  # screenshots, timings


def start_prefect_server(port: int, home: Path, database: str | None, log: Path) -> subprocess.Popen:
    """Spawn the server on 127.0.0.1:``port`` with its own ``PREFECT_HOME``: on the PostgreSQL ``database``
    (a name from :func:`tests.support.pg.create_pg_database`), SQLite under ``home`` if None; output to ``log``."""
    env = dict(os.environ, PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    env.pop("PREFECT_API_URL", None)
    # the UI's API URL comes from settings, not from --port (it would otherwise call :4200)
    env["PREFECT_SERVER_UI_API_URL"] = f"http://127.0.0.1:{port}/api"
    if database:
        env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = pg_async_url(database)
    return subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )


_TEMPLATE: dict[str, Path] = {}

# What a server's first start writes into its database before it answers: Prefect's migrations, then the block
# types and schemas of every block the server has imported (``create_app``'s start-up, in the same order).
_PREPARE = """
import asyncio

from prefect.server.api.server import create_app  # noqa: F401 - the server's imports: the blocks it registers
from prefect.server.database import provide_database_interface
from prefect.server.models.block_registration import run_block_auto_registration


async def main():
    db = provide_database_interface()
    await db.create_db()
    async with await db.session() as session:
        await run_block_auto_registration(session=session)
        await session.commit()

asyncio.run(main())
"""

# The environment of a server on a seeded PREFECT_HOME: its database has the block types registered already, as a
# home a server started on before (whose memo_store.toml tells the next start to skip the registration); the
# copy's memo would not match (Prefect's hash covers the database's path), so the start is told outright.
_SEEDED_SERVER_ENV = {"PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "false"}


def seed_database(home: Path) -> dict[str, str]:
    """Put a copy of a Prefect SQLite database that a server's first start already prepared (migrations and block
    registration, made once per process) into ``home``; returns what a server on that PREFECT_HOME needs in its
    environment to start without either, about 5 CPU-s less. For tests about anything but a server's first start
    on a new home."""
    import shutil
    import tempfile

    if "db" not in _TEMPLATE:
        template = Path(tempfile.mkdtemp(prefix="helmflow-prefect-db-"))
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        out = run_python(_PREPARE, env=dict(env, PREFECT_HOME=str(template)), cwd=template, inherit_env=False)
        assert out.returncode == 0 and (template / "prefect.db").exists(), out.stdout + out.stderr
        _TEMPLATE["db"] = template / "prefect.db"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_TEMPLATE["db"], home / "prefect.db")
    return dict(_SEEDED_SERVER_ENV)


@contextlib.contextmanager
def running(home: Path, timeout: float = 180) -> Iterator[str]:
    """A server on SQLite under ``home``, on a free port, for the block; yields its API URL."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = start_prefect_server(port, home, None, home / "server.log")
    url = f"http://127.0.0.1:{port}/api"
    try:
        wait_http(f"{url}/health", timeout, proc)
        yield url
    finally:
        stop_process(proc)


@dataclass
class PrefectServer:
    url: str
    home: Path
    logs: Path
    startup_s: float
    children: list[subprocess.Popen] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """The environment of a process that should talk to this server and nothing else."""
        return dict(os.environ, PREFECT_API_URL=self.url, PREFECT_HOME=str(self.home), PREFECT_LOGGING_LEVEL="INFO")

    def cli(self, *args: str, timeout: float = 300, cwd: Path = REPO) -> subprocess.CompletedProcess:
        """The real ``prefect`` command against this server (forked: :func:`tests.support.cli.run_prefect`)."""
        return run_prefect("--no-prompt", *args, env=self.env, cwd=cwd, timeout=timeout)

    def start_worker(self, pool: str, name: str, **env: str):
        """``prefect worker start`` in the background (stopped with the server, or earlier by the test);
        ``env`` is added to the worker's environment, which its flow-run processes inherit."""
        log = self.logs / f"worker-{name}.log"
        # asks for scheduled runs every second, not Prefect's 10 s: a triggered or retried run starts at once
        env = {"PREFECT_WORKER_QUERY_SECONDS": "1", **env}
        # started outside the checkout: the deployment's pull step must find the code by itself
        proc = spawn_cli(["worker", "start", "--pool", pool, "--name", name], module="prefect", env=dict(self.env, **env),
                         inherit_env=False, cwd=self.logs, stdout=log.open("w"), stderr=subprocess.STDOUT,
                         start_new_session=True)
        self.children.append(proc)
        return proc

    @contextlib.contextmanager
    def client(self):
        """A sync Prefect client for this server (the test process's own settings point elsewhere)."""
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: self.url}), get_client(sync_client=True) as client:
            yield client

    def wait_flow_run(self, flow_run_id: UUID, timeout: float = 300, after_runs: int = 0):
        """Poll the flow run until it is in a final state with ``run_count > after_runs``."""
        deadline = time.monotonic() + timeout
        with self.client() as client:
            while True:
                run = client.read_flow_run(flow_run_id)
                if run.state and run.state.is_final() and run.run_count > after_runs:
                    return run
                if time.monotonic() > deadline:
                    raise TimeoutError(f"flow run {flow_run_id} still {run.state.name if run.state else None}; {self.tail()}")
                time.sleep(1)

    def task_runs(self, flow_run_id: UUID, top_level: bool = False):
        """A board flow run's task runs, its scenarios' subflows' included (:func:`tests.support.cli.task_runs_of`)."""
        from tests.support.cli import board_task_runs

        with self.client() as client:
            return board_task_runs(client, flow_run_id, top_level)

    def subflow_runs(self, flow_run_id: UUID):
        from tests.support.cli import subflow_runs

        with self.client() as client:
            return subflow_runs(client, flow_run_id)

    def tail(self, chars: int = 3000) -> str:
        """The end of every log of this server and its workers (for assertion messages)."""
        return "\n".join(f"--- {p.name}\n{p.read_text()[-chars:]}" for p in sorted(self.logs.glob("*.log")))


@contextlib.contextmanager
def dedicated_prefect_server(workdir: Path, database: str | None = None) -> Iterator[PrefectServer]:
    """``prefect server start`` on a free loopback port with a throwaway PREFECT_HOME.

    SQLite (under that home) unless ``database`` names a PostgreSQL database. Analytics are off.
    Workers started through the server are stopped before it.
    """
    home, logs = workdir / "prefect-home", workdir / "logs"
    home.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    started = time.monotonic()
    proc = start_prefect_server(port, home, database, logs / "server.log")
    url = f"http://127.0.0.1:{port}/api"
    server = PrefectServer(url=url, home=home, logs=logs, startup_s=0.0)
    try:
        wait_http(f"{url}/health", timeout=180, proc=proc)
        server.startup_s = time.monotonic() - started
        yield server
    except BaseException:
        print(server.tail(), file=sys.stderr)
        raise
    finally:
        for child in server.children:
            stop_process(child)
        stop_process(proc)
