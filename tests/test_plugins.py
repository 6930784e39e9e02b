"""Plugins: a scenario and a metric defined in a file under tmp_path, loaded with ``--plugin`` or
``$HELMFLOW_PLUGINS``, are listed and evaluated through the CLI like built-ins."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.support.cli import run_cli

PLUGIN = '''
"""A user's plugin: one scenario, one metric; nothing of helmflow is edited."""
from pydantic import BaseModel, ConfigDict, Field

from helmflow.metrics import metric
from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import Scenario, scenario


class DoublingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = Field(8, ge=1)


@scenario("doubling")
class Doubling(Scenario):
    VERSION = "1"
    Params = DoublingParams
    description = "Plugin scenario: double a number."
    main_metric = "answer_length_ok"
    metrics = ["exact_match", "answer_length_ok"]
    default_adapter = AdapterSpec(input_prefix="Question: ", output_prefix="Answer: ", max_train_instances=0,
                                  generation=GenerationParams(max_tokens=5, stop=["\\n"]))

    def load(self, files):
        return [Instance(id=f"d{i}", input=Input(text=f"What is {i} + {i}?"),
                         references=[Reference(text=str(2 * i), correct=True)]) for i in range(self.params.count)]


@metric("answer_length_ok", version="1")
def answer_length_ok(x):
    return {"answer_length_ok": float(all(0 < len(t.strip()) <= 3 for t in x.texts))}
'''


@pytest.fixture
def plugin_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_plugin.py"
    path.write_text(PLUGIN)
    return path


@pytest.mark.slow
def test_plugin_scenarios_are_listed_with_flag_or_env(plugin_file: Path):
    listed = run_cli("--plugin", str(plugin_file), "list", "scenarios")
    assert listed.returncode == 0 and "doubling" in listed.stdout and "Plugin scenario" in listed.stdout, listed.stderr
    via_env = run_cli("list", "scenarios", env={"HELMFLOW_PLUGINS": str(plugin_file)})
    assert via_env.returncode == 0 and "doubling" in via_env.stdout, via_env.stderr
    assert "doubling" not in run_cli("list", "scenarios").stdout


def test_a_missing_plugin_is_a_clear_error(tmp_path: Path):
    out = run_cli("--plugin", str(tmp_path / "absent.py"), "list", "scenarios")
    assert out.returncode == 2 and "absent.py does not exist" in out.stderr, out.stderr


@pytest.mark.slow
def test_plugin_scenario_and_metric_are_evaluated_through_the_cli(prefect_server, plugin_file: Path, tmp_path: Path):
    root = tmp_path / "store"
    out = run_cli("eval", "doubling:count=5", "--models", "offline/solver,offline/echo", "--storage", str(root),
                  env={"HELMFLOW_PLUGINS": str(plugin_file)})
    assert out.returncode == 0, out.stdout + out.stderr
    (board_dir,) = root.glob("leaderboards/eval-doubling-*")
    latest = json.loads((board_dir / "latest.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(os.path.join(latest["uri"], "leaderboard.parquet")).to_pylist()}
    # the plugin's own main metric fills the cell: the solver answers "2"-"8" (short), echo repeats the question
    assert rows["offline/solver"]["doubling:count=5"] == 1.0 and rows["offline/echo"]["doubling:count=5"] == 0.0
    run = next(json.loads(p.read_text()) for p in root.glob("runs/*/run.json"))
    assert run["metrics"] == {"answer_length_ok": "1", "exact_match": run["metrics"]["exact_match"]}
    assert run["main_metric"] == "answer_length_ok"
