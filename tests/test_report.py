"""``helmflow report`` on a release made by the real board flow (Prefect server): the lineage on every
run page leads to the flow run that produced it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow


def test_report_of_a_flow_release_links_its_prefect_flow_run(prefect_server, cli, tmp_path):
    root = str(tmp_path / "store")
    run = cli("run", "demo", "--models", "offline/solver,offline/echo", "--scenarios", "arithmetic-3",
              "--max-instances", "6", "--storage", root)
    assert run.returncode == 0, run.stdout + run.stderr
    flow_run_id = re.search(r"flow run: ([0-9a-f-]{36})", run.stdout).group(1)

    out = cli("report", "demo", "--storage", root, env={"PREFECT_UI_URL": "http://127.0.0.1:4200"})
    assert out.returncode == 0, out.stderr
    (release_dir,) = [p for p in (Path(root) / "leaderboards" / "demo").iterdir() if p.is_dir()]
    release = json.loads((release_dir / "release.json").read_text())
    assert len(release["run_ids"]) == 2
    for run_id in release["run_ids"]:
        page = (release_dir / "report" / "runs" / run_id / "index.html").read_text()
        assert f'href="http://127.0.0.1:4200/runs/flow-run/{flow_run_id}"' in page
        lineage = json.loads((Path(root) / "runs" / run_id / "run.json").read_text())["lineage"]
        for key in ("query_task_run_id", "score_task_run_id", "publish_task_run_id"):
            assert lineage[key] and lineage[key] in page
            task_run = httpx.get(f"{prefect_server}/task_runs/{lineage[key]}", timeout=10)
            assert task_run.status_code == 200 and task_run.json()["flow_run_id"] == flow_run_id
    flow_run = httpx.get(f"{prefect_server}/flow_runs/{flow_run_id}", timeout=10)
    assert flow_run.status_code == 200 and flow_run.json()["state"]["type"] == "COMPLETED"
    board = (release_dir / "report" / "index.html").read_text()
    assert release["release_id"] in board and release["board_version"] in board
