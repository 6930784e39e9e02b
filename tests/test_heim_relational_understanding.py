"""HEIM's relational understanding entry: HELM's reading of the study's choice_data.csv (the header skipped, the
second column a prompt, each prompt once, in file order) on rows we wrote, checked by hand and against HELM's
loop run on the same file; the board plans it in the reasoning table."""

from __future__ import annotations

import csv

import pytest

from helmflow.scenarios import SCENARIOS
from helmflow.scenarios.base import ScenarioError
from tests.support.heim_fixtures import relational_csv


def load(tmp_path, data: bytes) -> list:
    path = tmp_path / "choice_data.csv"
    path.write_bytes(data)
    return SCENARIOS.get("relational_understanding")().load({"choice_data.csv": str(path)})


def helm_prompts(path) -> list[str]:
    """HELM's RelationalUnderstandingScenario.get_instances over the downloaded file."""
    prompts, seen = [], set()
    with open(path) as csv_file:
        for i, row in enumerate(csv.reader(csv_file, delimiter=",")):
            if i == 0:
                continue
            if row[1] not in seen:
                prompts.append(row[1])
                seen.add(row[1])
    return prompts


def test_relational_understanding_reads_each_prompt_once_as_helm_does(tmp_path):
    instances = load(tmp_path, relational_csv())
    assert [(i.id, i.input.text) for i in instances] == [
        ("id0", "a monkey touching an iguana"), ("id1", "a box on a blanket"), ("id2", "a child, pulling a robot")]
    assert {i.split for i in instances} == {"test"} and not any(i.references for i in instances)
    # a prompt with a line break inside its quotes: HELM opens the file in text mode (universal newlines)
    data = relational_csv([("1", "a knife\r\nin a bowl", "in", "yes"), ("2", "a knife\nin a bowl", "in", "no")])
    (tmp_path / "helm.csv").write_bytes(data)
    assert [i.input.text for i in load(tmp_path, data)] == helm_prompts(tmp_path / "helm.csv") == ["a knife\nin a bowl"]
    (tmp_path / "helm.csv").write_bytes(relational_csv())
    assert [i.input.text for i in instances] == helm_prompts(tmp_path / "helm.csv")
    with pytest.raises(ScenarioError, match="row 3 has no second column"):
        load(tmp_path, b"participant,prompt\n1,a box on a blanket\n\n")


def test_the_board_plans_relational_understanding_in_the_reasoning_table():
    from helmflow.datasets import declared_pins
    from helmflow.plan.compile import prepare

    with declared_pins():  # planned as `show` plans it: no source is read
        plan = prepare("heim", models=["offline/draw"], scenarios=["relational_understanding"])
    (run,) = plan.runs
    # HELM's get_relational_understanding_spec: four images, HEIM's core metrics; heim_default's 100
    assert run.scenario.adapter.generation.num_outputs == 4 and run.scenario.adapter.sample.max_eval_instances == 100
    assert {"clip_score", "fractal_dimension", "nudity", "watermark", "aesthetics"} <= set(run.scenario.metrics)
    groups = {g.name: [c.key for c in g.columns] for g in plan.spec.metric_groups}
    assert groups["reasoning"] == ["relational_understanding/expected_clip_score"]  # the entries planned only
