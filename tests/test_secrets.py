"""A sentinel API key goes through a whole board run (real CLI, real Prefect server on its PostgreSQL
database, real SDKs over HTTP to a dev server that demands the key) and is then looked for everywhere it
must never be: CLI output and logs, every file of the storage root (Parquet read back as text), Prefect's
home folder, what the Prefect API returns about the run (its flow, subflow and task runs with their
parameters, logs, artifacts; every block and variable; the events since it started) and a dump of Prefect's
database. The server is this pytest process's own: its database and home hold what earlier tests left too,
and the sentinel is a new random key, so it is searched for in all of it.

A second deployment holds a *wrong* sentinel key; the dev server quotes it back in its 401 body (as
some providers do), so the error path must redact it too.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.devserver import start_dev_server
from tests.support.cli import flow_run_id_from, run_cli
from tests.support.pg import PG_URL

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


def _api_text(api: str, flow_run_id: str, since: str) -> str:
    """Everything the Prefect API will tell about the board's flow run (its subflows, task runs, logs and
    artifacts), every block and variable, and the events since ``since``."""
    out = []

    def every(client: httpx.Client, path: str, body: dict) -> None:  # page through all of them
        offset = 0
        while True:
            r = client.post(path, json={**body, "limit": 200, "offset": offset})
            assert r.status_code == 200, (path, r.text[:300])
            out.append(r.text)
            if len(r.json()) < 200:
                return
            offset += 200

    with httpx.Client(base_url=api, timeout=30) as client:
        r = client.post("/flow_runs/filter", json={"flow_runs": {
            "operator": "or_", "id": {"any_": [flow_run_id]}, "parent_flow_run_id": {"any_": [flow_run_id]}}})
        assert r.status_code == 200, r.text[:300]
        out.append(r.text)
        runs = [run["id"] for run in r.json()]
        assert flow_run_id in runs and len(runs) > 1, runs  # the board's flow run and its scenario's subflow
        every(client, "/task_runs/filter", {"flow_runs": {"id": {"any_": runs}}})
        every(client, "/logs/filter", {"logs": {"flow_run_id": {"any_": runs}}})
        every(client, "/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": runs}}})
        every(client, "/block_documents/filter", {"include_secrets": True})
        every(client, "/variables/filter", {})
        r = client.post("/events/filter", json={"filter": {"occurred": {"since": since}}, "limit": 50})
        assert r.status_code == 200, r.text[:300]
        out.append(r.text)
    return "\n".join(out)


def _pg_dump(database: str) -> str:
    url = PG_URL.rsplit("/", 1)[0] + f"/{database}"
    return subprocess.run(["pg_dump", "--data-only", url], capture_output=True, text=True, check=True).stdout


def test_a_sentinel_key_leaks_nowhere(prefect_server, prefect_database, tmp_path, monkeypatch):
    api, home, database = prefect_server, Path(os.environ["PREFECT_HOME"]), prefect_database
    right = f"sk-SENTINEL{uuid.uuid4().hex}"
    wrong = f"sk-WRONGKEY{uuid.uuid4().hex}"
    env = {"HELMFLOW_SENTINEL_KEY": right, "HELMFLOW_WRONG_KEY": wrong}
    monkeypatch.setenv("HELMFLOW_SENTINEL_KEY", right)  # the dev server reads the key it demands from here
    since = datetime.now(UTC).isoformat()
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
        "Prefect API": _api_text(api, str(flow_run_id_from(out)), since),
        "Prefect database": _pg_dump(database),
    }
    assert "dev/wrong-key" in places["Prefect API"] and "arith" in places["Prefect database"]  # we looked in the right place
    for where, text in places.items():
        for secret in (right, wrong):
            for fragment in (secret, secret[3:19], secret[-16:]):
                assert fragment not in text, f"{fragment[:8]}… found in {where}"
