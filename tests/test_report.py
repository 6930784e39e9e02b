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
    run = cli(
        "run",
        "demo",
        "--models",
        "offline/solver,offline/echo",
        "--scenarios",
        "dyck-3",  # one run per cell (arithmetic-3 also has robustness runs)
        "--max-instances",
        "6",
        "--storage",
        root,
    )
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
            assert task_run.status_code == 200
            # the cell's task run is in its scenario's subflow run, which a task run of the board's stands for
            subflow = httpx.get(f"{prefect_server}/flow_runs/{task_run.json()['flow_run_id']}", timeout=10).json()
            parent = httpx.get(f"{prefect_server}/task_runs/{subflow['parent_task_run_id']}", timeout=10).json()
            assert parent["flow_run_id"] == flow_run_id
        # one task queried, scored and published the run: its id is shown once, saying what it covers
        assert lineage["query_task_run_id"] == lineage["score_task_run_id"] == lineage["publish_task_run_id"]
        shown = f'<code id="task-run">{lineage["query_task_run_id"]}</code> (query, score and publish'
        assert shown in page and page.count(lineage["query_task_run_id"]) == 1
    flow_run = httpx.get(f"{prefect_server}/flow_runs/{flow_run_id}", timeout=10)
    assert flow_run.status_code == 200 and flow_run.json()["state"]["type"] == "COMPLETED"
    board = (release_dir / "report" / "index.html").read_text()
    assert release["release_id"] in board and release["board_version"] in board


def test_report_and_app_over_s3(s3_root, cli):
    """The same pages from an S3 bucket (moto): the app reads it live, the export writes into it."""
    from starlette.testclient import TestClient

    from helmflow.storage import Store
    from helmflow.web.app import create_app
    from tests.support.demo import build_demo, chunk_rows

    store, release_id = build_demo(s3_root, max_instances=5)
    client = TestClient(create_app(s3_root))
    board = client.get("/boards/demo/", follow_redirects=True)
    assert board.status_code == 200 and release_id in board.text
    run_id = store.read_json(f"leaderboards/demo/{release_id}/release.json")["run_ids"][0]
    rows = chunk_rows(client.get(f"/boards/demo/{release_id}/runs/{run_id}/chunk-0.js").text)
    assert [r["prompt"] for r in rows] == store.read_parquet(f"runs/{run_id}/requests.parquet")["prompt"].to_pylist()

    out = cli("report", "demo", "--storage", s3_root)
    assert out.returncode == 0, out.stderr
    written = Store(s3_root).find(f"leaderboards/demo/{release_id}/report")
    assert f"leaderboards/demo/{release_id}/report/index.html" in written
    assert f"leaderboards/demo/{release_id}/report/runs/{run_id}/chunk-0.js" in written
    assert f"leaderboards/demo/{release_id}/report/static/viewer.js" in written
