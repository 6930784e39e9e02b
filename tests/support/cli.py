"""The real ``helmflow`` command in a subprocess, and reading its flow runs back through the Prefect API."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from uuid import UUID

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """The real ``helmflow`` command (same interpreter) in a subprocess with this environment."""
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


def flow_run_id_from(out: subprocess.CompletedProcess) -> UUID:
    """The flow-run id that ``helmflow run`` prints."""
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
