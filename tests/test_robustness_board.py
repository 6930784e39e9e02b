"""Perturbations on boards: perturbed copies are their own runs, robustness/fairness are HELM's worst
case, and adding them to a cached board sends only the perturbed instances' requests."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow import layout
from helmflow.clients import load_deployments
from helmflow.plan.compile import plan_board, prepare
from helmflow.plan.spec import BoardError, load_board
from helmflow.records import STAT_SCHEMA, Stat, models_to_table
from helmflow.storage import Store
from tests.support.cli import run_cli

FIXTURE = [json.loads(x) for x in (Path(__file__).parent / "data" / "perturbation_fixture.jsonl").read_text().splitlines()]


def test_perturbed_copies_are_separate_runs_and_leave_the_originals_alone():
    plain = load_board("demo").model_dump(mode="json")
    for entry in plain["scenarios"]:
        entry.pop("perturbations", None)
    without = plan_board(load_board(plain), load_deployments())
    plan = prepare("demo")
    assert [r.run_id for r in plan.runs[: len(without.runs)]] == [r.run_id for r in without.runs]
    assert [s.label for s in plan.perturbed] == [f"{label}~{p}" for label in ("arithmetic-3", "arithmetic-mc")
                                                 for p in ("mild_mix", "gender", "person_name")]
    versions = [s.scenario_version for s in plan.perturbed]
    assert len(set(versions)) == len(versions) and not set(versions) & {s.scenario_version for s in plan.scenarios}
    assert len(plan.runs) == len(without.runs) + 6 * len(plan.spec.models)
    copy = plan.perturbed[0]
    assert copy.perturbation.kind == "robustness" and copy.perturbation.label == "arithmetic-3"
    assert copy.perturbation.version["data"]["correct_to_misspelling.json"]  # the data file's sha256
    groups = {g.name: [c.key for c in g.columns] for g in plan.spec.metric_groups}
    assert groups["robustness"] == ["arithmetic-3/robustness", "arithmetic-mc/robustness"]
    assert groups["fairness"] == ["arithmetic-3/fairness", "arithmetic-mc/fairness"]


@pytest.mark.parametrize("value, message", [
    ("nope", "unknown perturbation 'nope'"),
    (["dialect"], "SAE_to_AAVE_mapping.json is missing.*run `helmflow fetch-assets perturbations`"),
])
def test_bad_perturbations_are_board_errors(value, message):
    spec = {"name": "b", "version": "1", "models": ["offline/solver"],
            "scenarios": [{"name": "arithmetic", "label": "a", "perturbations": value}]}
    with pytest.raises(BoardError, match=message):
        plan_board(load_board(spec), load_deployments())


def test_worst_case_is_the_per_instance_minimum_including_the_original(tmp_path):
    """Hand-checked: original [1, 1, 0, 1], mild_mix changed instances 0 and 2 -> [0, ., 1, .];
    worst case [0, 1, 0, 1] = 0.5. Fairness copies changed nothing: fairness = the original's 0.75."""
    from helmflow.aggregate import perturbation_cells
    from helmflow.outcomes import RunOutcome

    store = Store(str(tmp_path / "store"))
    plan = prepare("demo", models=["offline/solver"], scenarios=["arithmetic-3"], max_instances=4)
    values = {"arithmetic-3": {"a": 1, "b": 1, "c": 0, "d": 1}, "arithmetic-3~mild_mix": {"a": 0, "c": 1},
              "arithmetic-3~gender": {}, "arithmetic-3~person_name": {}}
    runs = []
    for r in plan.runs:
        stats = [Stat(instance_id=i, split="test", name="exact_match", value=v) for i, v in values[r.scenario.label].items()]
        stats.append(Stat(instance_id="a", split="test", name="efficiency_other", value=-5.0))  # another stat: ignored
        store.write_parquet(layout.run_file(r.run_id, "stats.parquet"), models_to_table(stats, STAT_SCHEMA), {})
        runs.append(RunOutcome(run_id=r.run_id, scenario=r.scenario.label, deployment="offline/solver", status="complete",
                               uri="x", main_metric="exact_match", score=None, ci_low=None, ci_high=None, error_rate=0,
                               cost_usd=0, prompt_tokens=0, output_tokens=0))
    cells = perturbation_cells(store, plan, runs)
    mean, low, high = cells[("offline/solver", "arithmetic-3/robustness")]
    assert mean == 0.5 and 0 <= low <= mean <= high <= 1
    assert cells[("offline/solver", "arithmetic-3/fairness")][0] == 0.75
    # a missing perturbed run makes the cell missing, never the original's number
    assert ("offline/solver", "arithmetic-3/robustness") not in perturbation_cells(store, plan, runs[:1] + runs[2:])


def test_a_perturbed_copy_that_changes_no_sampled_instance_is_left_out_and_its_kind_shows_the_original(tmp_path):
    """Fairness (gender, person_name) finds no pronoun or name in the demo's arithmetic questions:
    pre-flight drops those copies (no prepare task, no empty runs), the other runs keep their ids,
    and the fairness column is the original's score (HELM skips unchanged instances the same way)."""
    from helmflow.aggregate import perturbation_cells
    from helmflow.outcomes import RunOutcome
    from helmflow.pipeline import preflight

    store = Store(str(tmp_path / "store"))
    planned = prepare("demo", models=["offline/solver"], scenarios=["arithmetic-3"], max_instances=4)
    plan = preflight(store, planned)
    assert [s.label for s in plan.perturbed] == ["arithmetic-3~mild_mix"]
    assert [r.run_id for r in plan.runs] == [r.run_id for r in planned.runs if r.scenario.label in
                                             ("arithmetic-3", "arithmetic-3~mild_mix")]
    assert preflight(store, plan) == plan  # idempotent: the flow, handed this plan, prunes nothing more
    assert plan.spec == planned.spec and plan.board_version == planned.board_version
    values = {"arithmetic-3": {"a": 1, "b": 1, "c": 0, "d": 1}, "arithmetic-3~mild_mix": {"a": 0, "c": 1}}
    runs = []
    for r in plan.runs:
        stats = [Stat(instance_id=i, split="test", name="exact_match", value=v) for i, v in values[r.scenario.label].items()]
        store.write_parquet(layout.run_file(r.run_id, "stats.parquet"), models_to_table(stats, STAT_SCHEMA), {})
        runs.append(RunOutcome(run_id=r.run_id, scenario=r.scenario.label, deployment="offline/solver", status="complete",
                               uri="x", main_metric="exact_match", score=None, ci_low=None, ci_high=None, error_rate=0,
                               cost_usd=0, prompt_tokens=0, output_tokens=0))
    cells = perturbation_cells(store, plan, runs)
    assert cells[("offline/solver", "arithmetic-3/robustness")][0] == 0.5
    assert cells[("offline/solver", "arithmetic-3/fairness")][0] == 0.75  # the original's mean


@pytest.mark.slow
def test_adding_perturbations_to_a_cached_board_sends_only_the_perturbed_instances(prefect_server, dev_server, tmp_path):
    from helmflow.perturbations import PERTURBATIONS

    data = tmp_path / "qa.jsonl"  # our fixture texts (the parity file's ids), a free-answer QA file
    data.write_text("".join(json.dumps({"key": r["id"], "question": r["input"], "answer": r["references"][0]["text"]}) + "\n"
                            for r in FIXTURE))
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/m", "client": "openai-compatible", "model": "m", "base_url": dev_server.openai_url}]}))
    entry = {"name": "custom", "params": {"path": str(data), "id": "key"}, "label": "qa"}
    board = tmp_path / "board.yaml"
    root = tmp_path / "store"
    args = ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(root)]

    board.write_text(yaml.safe_dump({"name": "qa", "version": "1", "models": ["dev/m"], "scenarios": [entry]}))
    first = run_cli(*args)
    assert first.returncode == 0, first.stdout + first.stderr
    assert dev_server.requests == len(FIXTURE) == 47

    board.write_text(yaml.safe_dump({"name": "qa", "version": "2", "models": ["dev/m"],
                                     "scenarios": [{**entry, "perturbations": ["robustness", "fairness"]}]}))
    second = run_cli(*args)
    assert second.returncode == 0, second.stdout + second.stderr
    from helmflow.records import Input, Instance

    changed = {name: sum(PERTURBATIONS.get(name).apply(i) != i for i in (
        Instance(id=r["id"], input=Input(text=r["input"])) for r in FIXTURE)) for name in ("mild_mix", "gender", "person_name")}
    assert changed == {"mild_mix": 47, "gender": 9, "person_name": 14}  # fixed: the texts and seeds are
    assert dev_server.requests == 47 + sum(changed.values())  # the originals came from the cache

    third = run_cli(*args)
    assert third.returncode == 0 and dev_server.requests == 47 + sum(changed.values())
    [release] = [json.loads(p.read_text()) for p in root.glob("leaderboards/qa/*/release.json")
                 if json.loads(p.read_text())["declared_version"] == "2"]
    assert [g["name"] for g in release["metric_groups"]] == ["robustness", "fairness"]
    table = pq.read_table(root / "leaderboards" / "qa" / release["release_id"] / "leaderboard.parquet").to_pylist()[0]
    for kind in ("robustness", "fairness"):
        assert 0 <= table[f"qa/{kind} ci_low"] <= table[f"qa/{kind}"] <= table[f"qa/{kind} ci_high"] <= 1
        assert table[f"qa/{kind}"] <= table["qa"]  # a worst case never beats the original


def test_a_scenario_groups_worst_case_is_the_mean_of_its_entries(tmp_path):
    """HELM's run-group cell for robustness: each entry's worst case, then their unweighted mean (no interval).
    Hand-checked: x [1, 1] under mild_mix [0, .] -> worst [0, 1] = 0.5; y [1, 0] under mild_mix [1, .] -> 0.5;
    the group (0.5 + 0.5) / 2 = 0.5. With x's mild_mix [1, .] instead, x is 1 and the group 0.75."""
    from helmflow.aggregate import perturbation_cells
    from helmflow.outcomes import RunOutcome

    spec = {"name": "grouped", "version": "1", "models": ["offline/solver"], "max_instances": 2,
            "scenarios": [{"name": "arithmetic", "params": {"digits": d}, "label": label, "group": "g",
                           "perturbations": "robustness"} for d, label in ((2, "x"), (3, "y"))]}
    plan = plan_board(load_board(spec), load_deployments())
    store = Store(str(tmp_path / "store"))

    def cells_for(values):
        runs = []
        for r in plan.runs:
            stats = [Stat(instance_id=i, split="test", name="exact_match", value=v)
                     for i, v in values[r.scenario.label].items()]
            store.write_parquet(layout.run_file(r.run_id, "stats.parquet"), models_to_table(stats, STAT_SCHEMA), {})
            runs.append(RunOutcome(run_id=r.run_id, scenario=r.scenario.label, deployment="offline/solver",
                                   status="complete", uri="x", main_metric="exact_match", score=None, ci_low=None,
                                   ci_high=None, error_rate=0, cost_usd=0, prompt_tokens=0, output_tokens=0))
        return perturbation_cells(store, plan, runs)

    cells = cells_for({"x": {"a": 1, "b": 1}, "x~mild_mix": {"a": 0}, "y": {"a": 1, "b": 0}, "y~mild_mix": {"a": 1}})
    assert cells[("offline/solver", "x/robustness")][0] == 0.5 and cells[("offline/solver", "y/robustness")][0] == 0.5
    assert cells[("offline/solver", "g/robustness")] == (0.5, None, None)
    cells = cells_for({"x": {"a": 1, "b": 1}, "x~mild_mix": {"a": 1}, "y": {"a": 1, "b": 0}, "y~mild_mix": {"a": 1}})
    assert cells[("offline/solver", "g/robustness")] == (0.75, None, None)
    assert ("offline/solver", "g/fairness") not in cells  # no entry of the group runs a fairness perturbation
