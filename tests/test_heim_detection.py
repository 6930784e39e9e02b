"""HEIM's detection entries: HELM's reading of the prompts CSV (the skill's rows, the prompt, the expected objects
as the reference's JSON) on rows we wrote, checked by hand and against HELM's loop run on the same file; the
board plans the three skills with HEIM's core metrics (ViTDet's detection_correct_frac is not implemented) in the
reasoning table."""

from __future__ import annotations

import csv
import json

import pytest

from helmflow.scenarios import SCENARIOS
from helmflow.scenarios.base import ScenarioError
from tests.support.heim_fixtures import detection_csv


def load(tmp_path, skill: str, data: bytes | None = None) -> list:
    path = tmp_path / "prompts.csv"
    path.write_bytes(detection_csv() if data is None else data)
    return SCENARIOS.get("detection")(skill=skill).load({"prompts.csv": str(path)})


def helm_instances(path, selected: str) -> list[tuple[str, str, str]]:
    """HELM's DetectionScenario.get_instances over the downloaded file: (prompt, reference text, sub_split)."""
    out = []
    with open(path) as csv_file:
        for i, row in enumerate(csv.reader(csv_file, delimiter=",")):
            if i == 0 or row[0] != selected:
                continue
            if selected == "object":
                references = {"object": row[2]}
            elif selected == "count":
                references = {"count": int(row[4]), "object": row[2]}
            else:
                references = {"objects": [row[2], row[3]], "relation": row[5]}
            out.append((row[1], json.dumps(references), selected))
    return out


def test_detection_reads_each_skill_s_rows_as_helm_does(tmp_path):
    count = load(tmp_path, "count")
    assert [(i.id, i.input.text, i.sub_split) for i in count] == [
        ("id0", "a photo of 3 apples", "count"), ("id1", "a photo of 1 bird", "count")]
    assert [r.text for r in count[0].references] == ['{"count": 3, "object": "apple"}'] and count[0].references[0].correct
    (spatial,) = load(tmp_path, "spatial")
    assert json.loads(spatial.references[0].text) == {"objects": ["dog", "chair"], "relation": "left"}
    (tmp_path / "helm.csv").write_bytes(detection_csv())
    for skill in ("object", "count", "spatial"):
        ours = [(i.input.text, i.references[0].text, i.sub_split) for i in load(tmp_path, skill)]
        assert ours == helm_instances(tmp_path / "helm.csv", skill), skill
    with pytest.raises(ScenarioError, match="row 2 is not a count row"):
        load(tmp_path, "count", detection_csv([("count", "a photo of some apples", "apple", "", "some", "")]))
    with pytest.raises(ScenarioError, match="bad parameters"):
        SCENARIOS.get("detection")(skill="colour")


def test_the_board_plans_detection_s_three_skills_without_vitdet():
    from helmflow.datasets import declared_pins
    from helmflow.plan.compile import prepare

    with declared_pins():  # planned as `show` plans it: no source is read
        plan = prepare("heim", models=["offline/draw"], scenarios=["detection"])
    assert sorted(r.scenario.label for r in plan.runs) == ["detection-count", "detection-object", "detection-spatial"]
    for run in plan.runs:  # HELM's get_detection_spec: four images; HEIM's core metrics (ViTDet's is not here)
        assert run.scenario.adapter.generation.num_outputs == 4 and run.scenario.group == "detection"
        assert {"clip_score", "fractal_dimension", "nudity", "watermark"} <= set(run.scenario.metrics)
    groups = {g.name: [c.key for c in g.columns] for g in plan.spec.metric_groups}
    assert groups["reasoning"] == ["detection/expected_clip_score"]
