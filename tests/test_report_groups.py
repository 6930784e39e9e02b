"""The board page's metric groups: one tab each, every column with a one-line description and its
direction, board text escaped."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from helmflow import aggregate, pipeline
from helmflow.clients import load_deployments
from helmflow.plan.compile import plan_board
from helmflow.plan.spec import load_board
from helmflow.storage import Store
from helmflow.web.app import create_app

HOSTILE = '<img src=x onerror="alert(1)">'


def _publish(root: str, spec: dict) -> str:
    store = Store(root)
    plan = plan_board(load_board(spec), load_deployments())
    data = {s.label: pipeline.download_scenario(store, s) for s in plan.all_scenarios}
    prompts = {s.label: pipeline.adapt_scenario(store, s, data[s.label]) for s in plan.all_scenarios}
    runs = []
    for r in plan.runs:
        q = pipeline.query_pair(store, r, prompts[r.scenario.label])
        runs.append(pipeline.publish_run(store, r, q, pipeline.score_pair(store, r, data[r.scenario.label], q)))
    return aggregate.point_release(store, plan, aggregate.publish_release(store, plan, runs, [])).release_id


def test_metric_groups_are_tabs_with_descriptions_and_directions(tmp_path):
    spec = {
        "name": "groups", "version": "1", "models": ["offline/solver", "offline/echo"], "max_instances": 4,
        "scenarios": [{"name": "arithmetic", "label": "arith", "perturbations": "robustness"}],
        "metric_groups": [{"name": "speed", "description": f"fast {HOSTILE}", "columns": [
            {"scenario": "arith", "metric": "exact_match", "description": f"right {HOSTILE}"},
            {"scenario": "arith", "metric": "latency_s", "lower_is_better": True}]},
            # HELM's lower_is_better None (self-BLEU): shown without a direction, not ranked
            {"name": "unranked", "columns": [{"scenario": "arith", "metric": "exact_match", "lower_is_better": None}]}],
    }
    release_id = _publish(str(tmp_path / "store"), spec)
    page = TestClient(create_app(str(tmp_path / "store"))).get(f"/boards/groups/{release_id}/").text
    section = page.split('<section id="metric-groups">', 1)[1].split("</section>", 1)[0]
    tabs = re.findall(r'<button type="button" role="tab" class="tab" id="tab-(\w+)" aria-controls="panel-\1" '
                      r'aria-selected="(true|false)">', section)
    assert tabs == [("speed", "true"), ("unranked", "false"), ("robustness", "false")]
    assert section.count('role="tabpanel"') == 3 and 'id="panel-robustness"' in section
    unranked = section.split('id="legend-unranked">', 1)[1].split("</dl>", 1)[0]
    assert "no better direction (not ranked)" in unranked and "higher is better" not in unranked
    assert re.search(r"arith · exact_match </th>", section.split('id="panel-unranked"', 1)[1])
    legend = section.split('id="legend-robustness">', 1)[1].split("</dl>", 1)[0]
    assert "<dt>arith · robustness</dt>" in legend and "worst case per instance" in legend and "↑ higher is better" in legend
    speed = section.split('id="legend-speed">', 1)[1].split("</dl>", 1)[0]
    assert "↓ lower is better" in speed and "the runs&#39; latency_s (their summary)" in speed  # no description: a default line
    assert HOSTILE not in page and "right &lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in speed
    assert "fast &lt;img" in section
    assert re.search(r"arith · robustness ↑</th>", section)


def test_the_best_of_a_lower_is_better_column_is_its_lowest_value():
    from helmflow.web.pages import best_per_column

    rows = [{"deployment": "a", "acc": 0.9, "ece": 0.30, "cost": 2.0, "one": 1.0},
            {"deployment": "b", "acc": 0.5, "ece": 0.10, "cost": 1.0, "one": None},
            {"deployment": "c", "acc": 0.9, "ece": 0.20, "cost": 1.0, "one": None}]
    best = best_per_column(rows, ["acc", "one"], directed=[("ece", True), ("cost", True)])
    assert best == {"acc": {"a", "c"}, "ece": {"b"}, "cost": {"b", "c"}}  # "one" has a single value: no mark
    assert best_per_column(rows, [], directed=[("ece", False)]) == {"ece": {"a"}}
