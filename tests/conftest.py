"""Shared test harness.

- Prefect never touches a developer's profile: PREFECT_HOME is a throwaway folder, and
  PREFECT_API_URL points at ONE session-wide ``prefect server start`` (on a throwaway PostgreSQL
  database) that the ``prefect_server`` fixture starts on first use. Set at import time, before any
  test module imports Prefect, because Prefect reads its settings once.
- ``moto_s3``: one ``moto_server`` on 127.0.0.1 for the session (the S3 double s3fs's own tests use);
  ``s3_root`` gives each test a fresh bucket.
- ``run_cli``: the real ``helmflow`` command in a subprocess with this environment.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from helmflow.testing.prefect_server import start as spawn_prefect_server
from helmflow.testing.prefect_server import stop as stop_process
from helmflow.testing.prefect_server import wait_http

REPO = Path(__file__).resolve().parent.parent
pytest_plugins = ["tests.devserver_fixture"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Idempotent: this module may be imported twice (as pytest's conftest and as ``tests.conftest``).
_PREFECT_PORT = int(os.environ.setdefault("HELMFLOW_TEST_PREFECT_PORT", str(free_port())))
_SESSION_DIR = Path(os.environ.get("HELMFLOW_TEST_SESSION_DIR") or tempfile.mkdtemp(prefix="helmflow-tests-"))
os.environ["HELMFLOW_TEST_SESSION_DIR"] = str(_SESSION_DIR)
os.environ.update(
    {
        "PREFECT_HOME": str(_SESSION_DIR / "prefect-home"),
        "PREFECT_API_URL": f"http://127.0.0.1:{_PREFECT_PORT}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "HELMFLOW_SPOOL": str(_SESSION_DIR / "spool"),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
)
os.environ.pop("HELMFLOW_STORAGE", None)
os.environ.pop("HELMFLOW_MODELS", None)
os.environ.pop("HELMFLOW_PLUGINS", None)

PG_URL = os.environ.get("HELMFLOW_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


async def _pg(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def create_pg_database(prefix: str = "helmflow_test") -> str:
    """A throwaway PostgreSQL database; returns its name (drop it with :func:`drop_pg_database`)."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    asyncio.run(_pg(f'CREATE DATABASE "{name}"'))
    return name


def drop_pg_database(name: str) -> None:
    asyncio.run(_pg(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def pg_async_url(database: str) -> str:
    base = PG_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    return f"{base}/{database}"


def start_prefect_server(port: int, home: Path, database: str | None, log: Path) -> subprocess.Popen:
    """``prefect server start`` on the throwaway PostgreSQL ``database`` (SQLite under ``home`` if None)."""
    return spawn_prefect_server(port, home, pg_async_url(database) if database else None, log)


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[str]:
    """The session's Prefect API URL (server on a throwaway PostgreSQL database)."""
    database = create_pg_database("helmflow_prefect")
    log = _SESSION_DIR / "prefect-server.log"
    proc = start_prefect_server(_PREFECT_PORT, _SESSION_DIR / "prefect-home", database, log)
    url = os.environ["PREFECT_API_URL"]
    try:
        wait_http(f"{url}/health", timeout=180, proc=proc)
    except Exception:
        stop_process(proc)
        print(log.read_text()[-5000:], file=sys.stderr)
        raise
    yield url
    stop_process(proc)
    drop_pg_database(database)


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[str]:
    """Endpoint URL of a session-wide moto S3 server on 127.0.0.1."""
    port = free_port()
    log = _SESSION_DIR / "moto.log"
    proc = subprocess.Popen(
        [shutil.which("moto_server") or "moto_server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{port}"
    wait_http(f"{endpoint}/moto-api/", timeout=60, proc=proc)
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    yield endpoint
    os.environ.pop("AWS_ENDPOINT_URL", None)
    stop_process(proc)


@pytest.fixture
def s3_root(moto_s3: str) -> str:
    """A fresh bucket on the moto server; returns ``s3://bucket/prefix``."""
    import boto3

    bucket = f"helmflow-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_s3).create_bucket(Bucket=bucket)
    return f"s3://{bucket}/store"


@pytest.fixture
def store(tmp_path: Path):
    from helmflow.storage import Store

    return Store(str(tmp_path / "store"))


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real ``helmflow`` command (same interpreter) in a subprocess."""
    full_env = dict(os.environ, **(env or {}))
    full_env.setdefault("COLUMNS", "200")
    return subprocess.run(
        [sys.executable, "-m", "helmflow.cli", *args],
        env=full_env,
        cwd=str(cwd or REPO),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli


# --------------------------------------------------------------------------- Prefect API helpers
def flow_run_id_from(out: subprocess.CompletedProcess):
    """The flow-run id that ``helmflow run`` prints."""
    import re
    from uuid import UUID

    match = re.search(r"flow run: ([0-9a-f-]{36})", out.stdout)
    assert match, out.stdout + out.stderr
    return UUID(match.group(1))


def task_runs_of(flow_run_id):
    """Every task run of a flow run, read back through the Prefect API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        return client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))


def read_flow_run(flow_run_id):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id)


# --------------------------------------------------------------------------- browser
CHROMIUM = "/usr/bin/chromium"  # Debian's; `playwright install` cannot download browsers here
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium driven by Playwright, per module (Playwright's sync API holds an event loop
    on this thread while it runs). Missing or unlaunchable is a failure, never a skip."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `apt-get update && apt-get install -y chromium` (scripts/test.sh does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        try:
            b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        except Exception as exc:  # noqa: BLE001 - any launch failure is a test failure with its reason
            pytest.fail(f"Playwright could not start {CHROMIUM}: {exc}")
        yield b
        b.close()
