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


def task_runs_of(flow_run_id, top_level: bool = False):
    """A board flow run's task runs, read back through the Prefect API: ``prepare`` and ``run`` from its
    scenarios' subflow runs, and its own ``release``. ``top_level``: the flow run's own task runs only,
    each scenario subflow as the task run that stands for it in the graph."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return board_task_runs(client, flow_run_id, top_level)


def subflow_runs_of(flow_run_id):
    """The subflow runs of a flow run (a board's: one per scenario), oldest first."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return subflow_runs(client, flow_run_id)


def subflow_runs(client, flow_run_id):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId
    from prefect.client.schemas.sorting import FlowRunSort

    return client.read_flow_runs(sort=FlowRunSort.START_TIME_ASC, flow_run_filter=FlowRunFilter(
        parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])))


def board_task_runs(client, flow_run_id, top_level: bool = False):
    """:func:`task_runs_of` through a given sync client."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
        Operator,
        TaskRunFilter,
        TaskRunFilterSubFlowRuns,
    )

    if top_level:
        return client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return client.read_task_runs(
        flow_run_filter=FlowRunFilter(operator=Operator.or_, id=FlowRunFilterId(any_=[flow_run_id]),
                                      parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])),
        task_run_filter=TaskRunFilter(subflow_runs=TaskRunFilterSubFlowRuns(exists_=False)))


BOARD_TASK_RUNS = {"task_runs": {"subflow_runs": {"exists_": False}}}


def board_task_runs_filter(flow_run_id) -> dict:
    """The JSON body of ``POST /api/task_runs/filter`` for :func:`task_runs_of` (``prepare``, ``run``, ``release``)."""
    return {"flow_runs": {"operator": "or_", "id": {"any_": [str(flow_run_id)]},
                          "parent_flow_run_id": {"any_": [str(flow_run_id)]}}, **BOARD_TASK_RUNS}


def read_flow_run(flow_run_id):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id)
