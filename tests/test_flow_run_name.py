"""A board run's Prefect name comes from what was planned or passed: the board file is not read again."""

from __future__ import annotations

import yaml

from helmflow.flows.evaluate import board_label
from helmflow.plan.compile import PLAN_PARAMETERS, hand_over, prepare

BOARD = {"name": "named-inside", "version": "1", "models": ["offline/solver"], "max_instances": 2,
         "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "ops": "+"}}]}


def test_a_board_files_run_is_named_from_the_plan_handed_over(tmp_path):
    path = tmp_path / "file-stem.yaml"
    path.write_text(yaml.safe_dump(BOARD))
    params = {k: None for k in PLAN_PARAMETERS} | {"board": str(path), "no_judge": False}
    hand_over(prepare(**params), **params)  # what `helmflow run <file>` does before it starts the flow
    path.unlink()  # a second read would fail now, and fall back to the file's stem
    assert board_label({"board": str(path), "storage": "/anywhere", "budget_usd": 3.0}, "named-inside") == "named-inside"


def test_without_a_plan_the_name_is_what_was_passed(tmp_path):
    missing = str(tmp_path / "not-planned.yaml")  # a worker given a file names the run before it plans
    assert board_label({"board": missing, "models": ["offline/echo"]}, "evaluate-board") == "not-planned"
    assert board_label({"board": {"name": "spec-name"}}, "evaluate-board") == "spec-name"
    assert board_label({"board": "demo"}, "demo") == "demo"
    assert board_label({}, "safety") == "safety"
