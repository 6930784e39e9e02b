"""A board run's Prefect name comes from what was planned or passed: the board file is not read again."""

from __future__ import annotations

import yaml

from helmflow.flows.evaluate import board_label
from helmflow.plan.launch import handing_over, launch_key, prepare_launch

BOARD = {"name": "named-inside", "version": "1", "models": ["offline/solver"], "max_instances": 2,
         "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "ops": "+"}}]}


def test_a_board_files_run_is_named_from_the_plan_handed_over(tmp_path):
    path = tmp_path / "file-stem.yaml"
    path.write_text(yaml.safe_dump(BOARD))
    storage = str(tmp_path / "store")
    launch = prepare_launch(str(path), None, storage)
    path.unlink()  # a second read would fail now, and fall back to the file's stem
    with handing_over(launch, launch_key(str(path), None, storage)):  # what `helmflow run <file>` does
        assert board_label({"board": str(path), "storage": storage, "budget_usd": 3.0}, "named-inside") == "named-inside"
    assert board_label({"board": str(path), "storage": storage}, "named-inside") == "file-stem"  # not handed over


def test_without_a_plan_the_name_is_what_was_passed(tmp_path):
    missing = str(tmp_path / "not-planned.yaml")  # a worker given a file names the run before it plans
    assert board_label({"board": missing, "models": ["offline/echo"]}, "evaluate-board") == "not-planned"
    assert board_label({"board": {"name": "spec-name"}}, "evaluate-board") == "spec-name"
    assert board_label({"board": "demo"}, "demo") == "demo"
    assert board_label({}, "safety") == "safety"
