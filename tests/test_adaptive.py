"""Adaptive testing: item choice, ability refit, standard error and item calibration, worked by hand."""

from __future__ import annotations

import math

import pytest

from helmflow.adaptive import ability_standard_error, calibrate_items, fit_ability, p_correct, pick_item, run_adaptive


def test_rasch_probability_is_sigmoid_of_ability_plus_easiness():
    assert p_correct(1.0, -1.0) == 0.5
    assert p_correct(0.0, math.log(3)) == pytest.approx(0.75)
    assert p_correct(-800.0, 0.0) == 0.0 and p_correct(800.0, 0.0) == 1.0


def test_the_item_closest_to_even_odds_is_picked_first_on_ties():
    assert pick_item(0.5, {"a": -2.0, "b": -0.4, "c": 0.3}) == "b"  # gaps 1.5, 0.1, 0.8
    assert pick_item(0.0, {"a": 1.0, "b": -1.0}) == "a"
    assert pick_item(0.0, {}) is None


def test_ability_is_the_maximum_likelihood_estimate():
    assert fit_ability(0.0, [1, 0], [0.0, 0.0]) == pytest.approx(0.0, abs=1e-4)
    # s(t) + s(t + 1) = 1  ->  t = -0.5
    assert fit_ability(3.0, [1, 0], [0.0, 1.0]) == pytest.approx(-0.5, abs=1e-4)
    # s(t) = 2/3  ->  t = ln 2
    assert fit_ability(0.0, [1, 1, 0], [0.0, 0.0, 0.0]) == pytest.approx(math.log(2), abs=1e-4)
    assert fit_ability(0.7, [], []) == 0.7


def test_all_correct_ends_at_a_large_finite_ability_as_the_gradient_tolerance_stops_it():
    ability = fit_ability(0.0, [1, 1], [0.0, 0.0])
    assert 9.0 < ability < 20.0  # 1 - s(t) < 1e-5 first near t = 11.5


def test_standard_error_is_inverse_root_information():
    assert ability_standard_error(0.0, [0.0] * 4) == pytest.approx(1.0)  # 4 * 1/4
    assert ability_standard_error(0.0, [math.log(3)]) == pytest.approx(1 / math.sqrt(0.75 * 0.25))
    assert ability_standard_error(0.0, []) == math.inf


def test_a_run_asks_items_in_helm_order_and_refits_after_each():
    answers = {"a": 1.0, "b": 1.0, "c": 0.0}
    asked = []

    def ask(item):
        asked.append(item)
        return answers[item]

    trajectory = run_adaptive({"a": 0.0, "b": 2.0, "c": -2.0}, ask, max_items=2)
    # a first (gap 0); all correct sends the ability high, so c (z=-2) is nearer than b (z=2)
    assert asked == ["a", "c"]
    first, second = trajectory.steps
    assert first.ability_before == 0.0 and first.ability_after > 9.0
    assert second.ability_before == first.ability_after
    # s(t) + s(t - 2) = 1  ->  t = 1
    assert second.ability_after == pytest.approx(1.0, abs=1e-4)
    assert trajectory.ability == second.ability_after
    assert trajectory.standard_error == pytest.approx(ability_standard_error(second.ability_after, [0.0, -2.0]))
    assert [s.score for s in trajectory.steps] == [1.0, 0.0]
    assert len(run_adaptive({"a": 0.0}, ask, max_items=5).steps) == 1  # stops when no item is left


def test_calibration_recovers_easiness_from_expected_scores():
    true_z = {"i0": -2.0, "i1": -1.0, "i2": 0.0, "i3": 1.0, "i4": 2.0}
    abilities = [-2 + 4 * k / 199 for k in range(200)]
    scores = {f"m{k}": {i: p_correct(t, z) for i, z in true_z.items()} for k, t in enumerate(abilities)}
    easiness, ability = calibrate_items(scores)
    for item, z in true_z.items():
        assert easiness[item] == pytest.approx(z, abs=0.05)
    assert ability["m0"] < ability["m199"]


def test_calibration_keeps_unanimous_items_finite_and_symmetric():
    scores = {m: {"easy": 1.0, "hard": 0.0} for m in ("x", "y", "z")}
    easiness, _ = calibrate_items(scores)
    assert easiness["easy"] > 1.0 and math.isfinite(easiness["easy"])
    assert easiness["hard"] == pytest.approx(-easiness["easy"], abs=1e-4)


def test_an_adaptive_run_uses_calibrated_items_asks_nothing_new_and_publishes_its_trajectory(store):
    from helmflow import layout
    from helmflow.adaptive import fit_ability as refit
    from helmflow.calibration import calibrate_board, read_easiness
    from helmflow.pipeline import evaluate_run, prepare_scenario
    from helmflow.plan.compile import prepare

    models = ["offline/solver", "offline/solver-noisy", "offline/echo"]
    full = prepare("demo", models=models, scenarios=["arithmetic-3"], max_instances=12)
    scenario = full.scenarios[0]
    prepared = prepare_scenario(store, scenario)
    for run in [r for r in full.runs if r.scenario.label == scenario.label]:
        evaluate_run(store, run, prepared)
    [fitted] = [row for row in calibrate_board(store, full) if row["scenario"] == scenario.label]
    assert (fitted["models"], fitted["items"]) == (3, 12)
    easiness = read_easiness(store, scenario)

    adaptive = prepare("demo", models=models, scenarios=["arithmetic-3"], max_instances=4, adaptive=True)
    run = next(r for r in adaptive.runs if r.scenario.label == scenario.label and r.deployment.name == models[1])
    assert run.adaptive is not None and run.adaptive.max_items == 4
    pool = prepare_scenario(store, run.scenario)
    assert pool.prompts.num_prompts == 45  # the pool stays the board's (45); N counts the items asked
    totals: list[int] = []
    out = evaluate_run(store, run, pool, on_start=totals.append)
    assert totals == [4]  # the progress bar's total: the items it asks at most, not the pool's 45
    manifest = store.read_json(layout.run_json(run.run_id))
    assert manifest["counts"]["requests"] == 4 and manifest["counts"]["sent"] == 0  # the journal answered all
    steps = store.read_parquet(layout.run_file(run.run_id, layout.RUN_TRAJECTORY)).to_pylist()
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    assert len({s["instance_id"] for s in steps}) == 4
    assert steps[0]["ability_before"] == 0.0
    for k, s in enumerate(steps):
        assert s["easiness"] == easiness[s["instance_id"]]
        assert s["ability"] == pytest.approx(refit(s["ability_before"], [t["score"] for t in steps[:k + 1]],
                                                   [t["easiness"] for t in steps[:k + 1]]), abs=1e-6)
    assert out.ability == steps[-1]["ability"] and out.ability_se == steps[-1]["standard_error"]
