"""Calibration on a board, through the CLI and the flow: offline models report logprobs, a chat
deployment on the dev server (asked for none) does not, and its cell says "n/a" and why everywhere
(leaderboard.parquet, the terminal table, the web report), never 0."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support.cli import run_cli

pytestmark = pytest.mark.slow


def test_a_deployment_without_logprobs_gets_no_calibration_number_and_the_report_says_why(prefect_server, dev_server,
                                                                                          tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/chat", "client": "openai-compatible", "model": "m", "base_url": dev_server.openai_url},
    ]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "calib", "version": "1", "models": ["offline/solver-noisy", "dev/chat"], "max_instances": 30,
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "ops": "+", "choices": 4}, "label": "mc",
                       "metrics": ["multiple_choice_accuracy", "calibration"], "main_metric": "multiple_choice_accuracy"}],
        "metric_groups": [{"name": "calibration", "description": "confidence vs accuracy", "columns": [
            {"scenario": "mc", "metric": "ece_10_bin", "lower_is_better": True},
            {"scenario": "mc", "metric": "selective_cov_acc_area"}]}],
    }))
    root = tmp_path / "store"
    out = run_cli("run", "--board-file", str(board), "--models-file", str(models), "--storage", str(root))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "n/a: dev/chat mc/ece_10_bin: not available: the deployment returned no token logprobs" in out.stdout
    assert dev_server.requests == 30

    [lb_path] = root.glob("leaderboards/calib/*/leaderboard.parquet")
    rows = {r["deployment"]: r for r in pq.read_table(lb_path).to_pylist()}
    chat, noisy = rows["dev/chat"], rows["offline/solver-noisy"]
    assert chat["mc/ece_10_bin"] is None and chat["mc/selective_cov_acc_area"] is None
    assert "no token logprobs" in chat["mc/ece_10_bin note"]
    # the solver states confidence 0.7 on every answer: ECE is |0.7 - its accuracy| in every bin
    accuracy = noisy["mc"]
    assert noisy["mc/ece_10_bin"] == pytest.approx(abs(0.7 - accuracy)) and noisy["mc/ece_10_bin note"] is None
    assert chat["calibration mean_win_rate"] is None  # a column with one value ranks nobody

    report = run_cli("report", "calib", "--storage", str(root))
    assert report.returncode == 0, report.stdout + report.stderr
    [page] = root.glob("leaderboards/calib/*/report/index.html")
    html = page.read_text()
    assert "n/a</span>" in html and "the deployment returned no token logprobs" in html
    [run_json] = [json.loads(p.read_text()) for p in root.glob("runs/*/run.json")
                  if json.loads(p.read_text())["deployment"]["name"] == "dev/chat"]
    assert run_json["status"] == "complete"
