"""Errors through a whole board run: a query task with errored completions is published (status
"errors") but not cached, and the next run re-sends exactly the errored requests."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.support.cli import run_cli

pytestmark = pytest.mark.slow

N = 60


def test_errored_requests_and_only_those_are_resent_by_the_next_run(prefect_server, dev_server, tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/flaky", "client": "openai", "model": "m", "base_url": dev_server.openai_url,
         "api_key_env": "HELMFLOW_FLAKY_KEY", "retry": {"attempts": 1}},  # retries off
    ]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "flaky", "version": "1", "models": ["dev/flaky"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": N}, "label": "arith"}],
    }))
    root = tmp_path / "store"
    args = ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(root)]
    env = {"HELMFLOW_FLAKY_KEY": "dev-key"}

    dev_server.configure(fault_rate=0.1, faults="500,503", seed=3)
    first = run_cli(*args, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    [run_json] = list(root.glob("runs/*/run.json"))
    first_run = json.loads(run_json.read_text())
    errors = first_run["counts"]["errors"]
    assert first_run["status"] == "errors" and 0 < errors < N // 2
    assert dev_server.requests == N

    dev_server.reset()  # faults off
    second = run_cli(*args, env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert dev_server.requests == errors  # exactly the errored requests, nothing else
    complete = [json.loads(p.read_text()) for p in root.glob("runs/*/run.json")]
    assert any(r["status"] == "complete" and r["counts"]["reused"] == N - errors for r in complete)

    third = run_cli(*args, env=env)  # now cached: nothing is sent
    assert third.returncode == 0 and dev_server.requests == errors


def test_a_run_above_its_error_threshold_is_a_failed_cell(prefect_server, dev_server, tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/strict", "client": "openai-compatible", "model": "m", "base_url": dev_server.openai_url,
         "max_error_rate": 0.02, "retry": {"attempts": 1}},
    ]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "strict", "version": "1", "models": ["dev/strict"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": N}, "label": "arith"}],
    }))
    root = tmp_path / "store"
    dev_server.configure(fault_rate=0.2, faults="500", seed=5)
    out = run_cli("run", "--board-file", str(board), "--models-file", str(models), "--storage", str(root))
    text = out.stdout + out.stderr
    assert out.returncode == 1, text  # a partial release: the cell is missing, not published
    assert "max_error_rate 0.02" in text and "HTTP 500" in text
    assert not list(root.glob("runs/*/run.json"))
    [release] = [json.loads(p.read_text()) for p in root.glob("leaderboards/strict/*/release.json")]
    assert release["status"] == "partial" and "max_error_rate" in release["failed"][0]["error"]
