"""A sentinel API key goes through a whole board run (real CLI, real Prefect server on its own
PostgreSQL database, real SDKs over HTTP to a dev server that demands the key) and is then looked
for everywhere it must never be: CLI output and logs, every file of the storage root (Parquet read
back as text), Prefect's home folder, what the Prefect API returns (flow and task runs with their
parameters, logs, artifacts, blocks, variables, events) and a dump of Prefect's database.

A second deployment holds a *wrong* sentinel key; the dev server quotes it back in its 401 body (as
some providers do), so the error path must redact it too.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.devserver import start_dev_server
from tests.support.cli import run_cli
from tests.support.pg import PG_URL, create_pg_database, drop_pg_database
from tests.support.prefect_server import start_prefect_server
from tests.support.processes import free_port, stop_process, wait_http

pytestmark = pytest.mark.slow


def _files_text(root: Path) -> str:
    """Every file under ``root`` as text; Parquet decoded (its pages may be compressed)."""
    out = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        out.append(data.decode("utf-8", "replace"))
        if path.suffix == ".parquet":
            out.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
    return "\n".join(out)


def _api_text(api: str) -> str:
    """Everything the Prefect API will tell about the runs, logs, artifacts, blocks and variables."""
    out = []
    with httpx.Client(base_url=api, timeout=30) as client:
        for path, body in [
            ("/flow_runs/filter", {"limit": 200}),
            ("/task_runs/filter", {"limit": 200}),
            ("/logs/filter", {"limit": 200}),
            ("/artifacts/filter", {"limit": 200}),
            ("/block_documents/filter", {"limit": 200, "include_secrets": True}),
            ("/variables/filter", {"limit": 200}),
            ("/events/filter", {"limit": 50}),
        ]:
            r = client.post(path, json=body)
            assert r.status_code == 200, (path, r.text[:300])
            out.append(r.text)
            if path == "/logs/filter":  # page through every log line
                offset = 200
                while len(r.json()) == 200:
                    r = client.post(path, json={"limit": 200, "offset": offset})
                    out.append(r.text)
                    offset += 200
    return "\n".join(out)


def _pg_dump(database: str) -> str:
    url = PG_URL.rsplit("/", 1)[0] + f"/{database}"
    return subprocess.run(["pg_dump", "--data-only", url], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def own_prefect(tmp_path):
    """A Prefect server of this test alone, so its database can be dumped and searched."""
    database = create_pg_database("helmflow_secrets")
    port = free_port()
    home = tmp_path / "prefect-home"
    proc = start_prefect_server(port, home, database, tmp_path / "prefect.log")
    api = f"http://127.0.0.1:{port}/api"
    try:
        wait_http(f"{api}/health", timeout=180, proc=proc)
        yield api, home, database
    finally:
        stop_process(proc)
        drop_pg_database(database)


def test_a_sentinel_key_leaks_nowhere(own_prefect, tmp_path):
    api, home, database = own_prefect
    right = f"sk-SENTINEL{uuid.uuid4().hex}"
    wrong = f"sk-WRONGKEY{uuid.uuid4().hex}"
    env = {"HELMFLOW_SENTINEL_KEY": right, "HELMFLOW_WRONG_KEY": wrong, "PREFECT_API_URL": api,
           "PREFECT_HOME": str(home)}
    os.environ["HELMFLOW_SENTINEL_KEY"] = right  # the dev server reads the key it demands from here
    with start_dev_server("--api-key-env", "HELMFLOW_SENTINEL_KEY") as srv:
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"deployments": [
            {"name": "dev/openai", "client": "openai", "model": "m", "base_url": srv.openai_url,
             "api_key_env": "HELMFLOW_SENTINEL_KEY", "price_input_per_mtok": 1.0, "price_output_per_mtok": 2.0},
            {"name": "dev/anthropic", "client": "anthropic", "model": "m", "base_url": srv.url,
             "api_key_env": "HELMFLOW_SENTINEL_KEY"},
            {"name": "dev/wrong-key", "client": "openai", "model": "m", "base_url": srv.openai_url,
             "api_key_env": "HELMFLOW_WRONG_KEY"},
        ]}))
        board = tmp_path / "board.yaml"
        board.write_text(yaml.safe_dump({
            "name": "secrets", "version": "1", "models": ["dev/openai", "dev/anthropic", "dev/wrong-key"],
            "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": 15}, "label": "arith"}],
        }))
        root = tmp_path / "store"
        out = run_cli("run", "--board-file", str(board), "--models-file", str(models), "--storage", str(root), "-v",
                      env=env)
        stats = srv.stats()
    assert out.returncode == 1, out.stdout + out.stderr  # the wrong key's pair failed: a partial release
    assert "HTTP 401" in out.stdout + out.stderr and "$HELMFLOW_WRONG_KEY" in out.stdout + out.stderr
    # two good pairs; the bad one stopped at once: nothing beyond what was in flight (max_concurrency 16)
    assert stats["answered"] == 30 and set(stats["rejected"]) == {"401"} and stats["rejected"]["401"] <= 16

    places = {
        "CLI output": out.stdout + out.stderr,
        "storage root (incl. Parquet, run.json, prefect-results/)": _files_text(root),
        "Prefect home": _files_text(home),
        "Prefect API": _api_text(api),
        "Prefect database": _pg_dump(database),
    }
    assert "dev/wrong-key" in places["Prefect API"] and "arith" in places["Prefect database"]  # we looked in the right place
    for where, text in places.items():
        for secret in (right, wrong):
            for fragment in (secret, secret[3:19], secret[-16:]):
                assert fragment not in text, f"{fragment[:8]}… found in {where}"
