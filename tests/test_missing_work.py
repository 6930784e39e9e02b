"""A cached result whose files are gone (a disk cleanup, an S3 lifecycle rule on ``work/``) is a cache
miss: the task recomputes, the query from the request journal, so nothing is sent twice."""

from __future__ import annotations

import shutil
import time

import pytest
import yaml

from helmflow.storage import Store
from tests.support.cli import flow_run_id_from, run_cli, task_runs_of

pytestmark = pytest.mark.slow

N = 8


def _states(out) -> dict[str, str]:
    flow_run_id, deadline = flow_run_id_from(out), time.monotonic() + 30
    runs = task_runs_of(flow_run_id)
    while time.monotonic() < deadline and any(tr.state is None or not tr.state.is_final() for tr in runs):
        time.sleep(0.5)
        runs = task_runs_of(flow_run_id)
    return {tr.name: tr.state.name for tr in runs}


def test_work_files_gone_means_recompute_from_the_journal_not_resend(prefect_server, dev_server, tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": f"dev/{m}", "client": "openai-compatible", "model": m, "base_url": dev_server.openai_url}
        for m in ("a", "b")
    ]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "cleanup", "version": "1", "models": ["dev/a", "dev/b"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": N}, "label": "arith"}],
    }))
    root = tmp_path / "store"
    args = ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(root)]

    first = run_cli(*args, "--models", "dev/a")
    assert first.returncode == 0, first.stdout + first.stderr
    assert dev_server.requests == N
    shutil.rmtree(root / "work")  # every intermediate file the cached results point at

    second = run_cli(*args)  # a model added: its pair needs the prompts the cached adapt result points at
    assert second.returncode == 0, second.stdout + second.stderr
    assert dev_server.requests == 2 * N  # dev/b's requests once; dev/a's came from the journal
    states = _states(second)
    assert states["prepare arith"] == "Completed", states  # its cached result pointed at the deleted prompts
    assert states["run arith x dev/a"] == "Cached", states  # its files (runs/<id>/) are all there
    assert states["run arith x dev/b"] == "Completed", states
    assert Store(str(root)).find("work/prompts")

    third = run_cli(*args, "--force-flow")  # through Prefect, not the CLI's release-exists shortcut
    assert third.returncode == 0, third.stdout + third.stderr
    assert set(_states(third).values()) == {"Cached"} and dev_server.requests == 2 * N
