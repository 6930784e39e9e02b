"""The run page of an adaptive run plots its ability trajectory (inline SVG from trajectory.parquet,
labels escaped); other runs' pages have none."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from helmflow.web.plots import Step, ability_trajectory_svg


def test_the_trajectory_plot_places_abilities_and_items_by_hand_and_escapes_ids():
    steps = [Step(1, "<script>alert(1)</script>", 0.0, 1.0, 1.0, None),
             Step(2, "b&c", 0.0, 0.0, -1.0, 0.5)]
    svg = str(ability_trajectory_svg(steps))
    # y spans [-1.5, 1.5] (values -1..1 padded by 0.5) over 234 px from y=20; x spans 370 px from x=60
    assert '<polyline points="60.0,59.0 430.0,215.0"' in svg
    # both items sit at theta = -z = 0, the middle: y = 20 + 234 / 2 = 137; right answer filled, wrong hollow
    assert '<rect x="56.0" y="133.0" width="8" height="8" fill="#3ca951"' in svg
    assert '<rect x="426.0" y="133.0" width="8" height="8" fill="none"' in svg
    assert "<script>" not in svg and "&lt;script&gt;alert(1)&lt;/script&gt;" in svg and "b&amp;c" in svg
    assert "θ 1 ± ∞" in svg and "θ -1 ± 0.5" in svg
    assert "<polygon" not in svg  # one finite standard error is no band
    assert str(ability_trajectory_svg([])) == ""


@pytest.fixture(scope="module")
def adaptive_release(tmp_path_factory):
    from helmflow.aggregate import publish_release
    from helmflow.calibration import calibrate_board
    from helmflow.pipeline import evaluate_run, prepare_scenario
    from helmflow.plan.compile import prepare
    from helmflow.storage import Store

    store = Store(str(tmp_path_factory.mktemp("adaptive-report") / "store"))
    models = ["offline/solver", "offline/solver-noisy", "offline/echo"]
    full = prepare("demo", models=models, scenarios=["arithmetic-3"])  # the board's pool, which adaptive runs ask from
    scenario = full.scenarios[0]
    prepared = prepare_scenario(store, scenario)
    cells = [r for r in full.runs if r.scenario.label == scenario.label]
    full_runs = [evaluate_run(store, r, prepared) for r in cells]
    full_release = publish_release(store, full.model_copy(update={"runs": cells}), full_runs, [])
    calibrate_board(store, full)
    plan = prepare("demo", models=models, scenarios=["arithmetic-3"], max_instances=4, adaptive=True)
    runs = [r for r in plan.runs if r.scenario.label == scenario.label]
    outcomes = [evaluate_run(store, r, prepare_scenario(store, r.scenario)) for r in runs]
    release = publish_release(store, plan.model_copy(update={"runs": runs}), outcomes, [])
    return store, release.release_id, outcomes, (full_release.release_id, full_runs)


def test_the_adaptive_release_has_each_cells_ability_with_the_full_runs_score_beside_it(adaptive_release):
    from helmflow import layout

    store, release_id, outcomes, (_, full_runs) = adaptive_release
    rows = {r["deployment"]: r for r in store.read_parquet(
        layout.release_file("demo", release_id, "leaderboard.parquet")).to_pylist()}
    full = {o.deployment: o.score for o in full_runs}
    for o in outcomes:
        row = rows[o.deployment]
        assert row["arithmetic-3 ability"] == o.ability and row["arithmetic-3 ability_se"] == o.ability_se
        assert row["arithmetic-3 full_score"] == full[o.deployment]  # the same cell's full run, 45 instances
        assert row["mean_ability"] == o.ability  # one scenario


def test_an_adaptive_run_page_plots_its_trajectory(adaptive_release):
    from helmflow import layout
    from helmflow.web.app import create_app

    store, release_id, outcomes, (full_release, full_runs) = adaptive_release
    client = TestClient(create_app(store.root))
    run = next(o for o in outcomes if o.deployment == "offline/solver-noisy")
    steps = store.read_parquet(layout.run_file(run.run_id, layout.RUN_TRAJECTORY)).to_pylist()
    page = client.get(f"/boards/demo/{release_id}/runs/{run.run_id}/")
    assert page.status_code == 200
    section = page.text.split('<section id="trajectory">', 1)[1].split("</section>", 1)[0]
    assert f'<strong id="ability">{steps[-1]["ability"]:.3f}</strong>' in section
    assert f"{len(steps)} items asked" in section
    svg = section.split("<svg", 1)[1].split("</svg>", 1)[0]
    [points] = re.findall(r'<polyline points="([^"]+)"', svg)
    assert len(points.split()) == len(steps) == 4
    for s in steps:
        assert f"item {s['step']}: {s['instance_id']}," in svg
    assert 'href="/files/runs/' + run.run_id + '/trajectory.parquet"' in page.text
    full_page = client.get(f"/boards/demo/{full_release}/runs/{full_runs[0].run_id}/")
    assert full_page.status_code == 200 and 'id="trajectory"' not in full_page.text  # a full run has none


def test_the_board_page_shows_each_cells_ability_with_its_error_beside_the_full_runs_score(adaptive_release):
    import html

    from helmflow.web.app import create_app

    store, release_id, outcomes, (_, full_runs) = adaptive_release
    page = TestClient(create_app(store.root)).get(f"/boards/demo/{release_id}/")
    assert page.status_code == 200
    assert ">mean ability</th>" in page.text
    full = {o.deployment: o.score for o in full_runs}
    rows = page.text.split('<table id="leaderboard"', 1)[1].split("</table>", 1)[0].split("<tr>")[2:]
    assert len(rows) == len(outcomes)
    for o in outcomes:
        (row,) = [r for r in rows if r.lstrip().startswith(f'<td data-sort="{o.deployment}"')]
        shown = f"θ {o.ability:.3f} ± {o.ability_se:.3f} · full run {full[o.deployment]:.3f}"
        assert shown in html.unescape(row), row
        assert f'<td class="mean-ability" data-sort="{o.ability}">{o.ability:.3f}</td>' in row
