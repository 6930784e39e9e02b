"""Shared test harness: every fixture lives here; helpers are imported from ``tests.support.*``.

- Prefect never touches a developer's profile: PREFECT_HOME is a throwaway folder, and
  PREFECT_API_URL points at ONE ``prefect server start`` per pytest process (each pytest-xdist worker
  has its own, on its own throwaway PostgreSQL database) that the ``prefect_server`` fixture starts on
  first use. Set at import time, before any test module imports Prefect, because Prefect reads its
  settings once.
- ``moto_s3``: one ``moto_server`` on 127.0.0.1 per pytest process (the S3 double s3fs's own tests use);
  ``s3_root`` gives each test a fresh bucket.
- ``dev_server``: one ``helmflow dev-server`` per pytest process, seen by each test through its own counter
  scope (``/_scope/<test id>/``): fresh counts and default settings, and no request another test sends (even
  one a timed-out test's threads keep sending) can reach it.
- ``cli``: the real ``helmflow`` command in a subprocess with this environment (``tests.support.cli.run_cli``).
- Under pytest-xdist (``HELMFLOW_TEST_WORKERS=4 ./scripts/test.sh`` runs ``-n 4 --dist loadgroup``) a
  module's tests that share a module-scoped fixture stay in one worker (``pytest_collection_modifyitems``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from helmflow.devserver import DevServerHandle, start_dev_server
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.cli import run_cli
from tests.support.pg import create_pg_database, drop_pg_database
from tests.support.prefect_server import start_prefect_server
from tests.support.processes import free_port, stop_process, wait_http

_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")  # gw0, gw1, ... under pytest-xdist
_PREFECT_PORT = free_port()
_SESSION_DIR = Path(tempfile.mkdtemp(prefix=f"helmflow-tests-{_WORKER}-"))
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
for _name in ("HELMFLOW_STORAGE", "HELMFLOW_MODELS", "HELMFLOW_PLUGINS", "HELMFLOW_CLIP_MODEL", "AWS_ENDPOINT_URL"):
    os.environ.pop(_name, None)
if _WORKER != "main":  # pytest-xdist's workers get COLUMNS=80, LINES=24: a subprocess would draw 80-column tables
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the marks (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that use a module-scoped fixture (a built board, a browser, a server) run in one worker, so the
    fixture is built once; every other test is handed to whichever worker is free."""
    grouped = set()
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else ()
        if any(d.scope == "module" for fixturedefs in defs for d in fixturedefs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))
            grouped.add(item.nodeid)
    if _WORKER != "main":
        # pytest-xdist hands out the groups first (largest first), then single tests in this order, each worker
        # holding up to 3 ahead: the slow single tests (servers, browsers, runs of seconds to a minute) go out
        # before the fast ones, so the run ends on tests of a second or less and neither worker waits for the
        # other's last long test. The same order in every worker (their collections must match).
        items.sort(key=lambda item: item.nodeid in grouped or item.get_closest_marker("slow") is None)


_PREFECT_DATABASE: dict[str, str] = {}


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[str]:
    """This process's Prefect API URL (a server on a throwaway PostgreSQL database)."""
    database = create_pg_database("helmflow_prefect")
    _PREFECT_DATABASE["name"] = database
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
def prefect_database(prefect_server: str) -> str:
    """The PostgreSQL database of this process's Prefect server (a test that dumps it and searches the dump)."""
    return _PREFECT_DATABASE["name"]


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[str]:
    """Endpoint URL of this process's moto S3 server on 127.0.0.1."""
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


@pytest.fixture
def cli():
    return run_cli


# --------------------------------------------------------------------------- dev server
@pytest.fixture(scope="session")
def _dev_server_session() -> Iterator[DevServerHandle]:
    with start_dev_server() as handle:
        yield handle


@pytest.fixture
def dev_server(_dev_server_session: DevServerHandle) -> DevServerHandle:
    """This process's dev server through a scope of this test's own: no faults, no latency, counts at zero."""
    return _dev_server_session.scoped(uuid.uuid4().hex)


# --------------------------------------------------------------------------- browser
@pytest.fixture(scope="module")
def browser():
    """Headless Chromium driven by Playwright, per module (Playwright's sync API holds an event loop
    on this thread while it runs). Missing or unlaunchable is a failure, never a skip."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `apt-get update && apt-get install -y chromium` (scripts/test.sh does)")
    from playwright.sync_api import expect, sync_playwright

    # A page's lists load from the API after it draws: on a loaded 2-core machine that takes longer
    # than Playwright's 5 s default, so every expectation waits as long as a patient reader would.
    expect.set_options(timeout=30_000)
    with sync_playwright() as pw:
        try:
            b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        except Exception as exc:  # noqa: BLE001 - any launch failure is a test failure with its reason
            pytest.fail(f"Playwright could not start {CHROMIUM}: {exc}")
        yield b
        b.close()
