"""Adaptive runs through the real command: a board whose scenarios have no item difficulties is refused
with one line naming ``helmflow calibrate-items``, exit 2, before any request; a board that declares
``adaptive:`` is priced, calibrated from its full runs, then runs adaptively without a flag."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support.cli import run_cli


def _board(tmp_path, dev_server) -> list[str]:
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": f"dev/m{k}", "client": "openai-compatible", "model": f"m{k}", "base_url": dev_server.openai_url}
        for k in (1, 2)]}))
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "adaptive-refusal", "version": "1", "models": ["dev/m1", "dev/m2"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": 8}, "label": "arith"}],
    }))
    return ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(tmp_path / "store")]


def test_an_adaptive_run_without_item_difficulties_exits_2_naming_calibrate_items_before_any_request(
        dev_server, tmp_path):
    out = run_cli(*_board(tmp_path, dev_server), "--adaptive", "--max-instances", "3")
    assert out.returncode == 2, out.stdout + out.stderr
    errors = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, out.stderr
    assert errors[0].startswith("helmflow: error: ") and "arith" in errors[0], errors
    assert f"helmflow calibrate-items {tmp_path / 'board.yaml'}" in errors[0], errors
    assert dev_server.stats()["requests"] == 0
    assert not (tmp_path / "store" / "runs").exists()


# --------------------------------------------------------------------------- a board that declares adaptive:
BOARD = {
    "name": "adaptive-declared", "version": "1", "max_instances": 12,
    "models": ["offline/solver", "offline/solver-noisy", "offline/echo"],
    "adaptive": {"max_items": 3},
    "scenarios": [
        {"name": "arithmetic", "params": {"digits": 2, "num_test": 12}, "label": "asked"},
        {"name": "arithmetic", "params": {"digits": 3, "num_test": 12}, "label": "full", "adaptive": False},
    ],
}


def test_a_board_declares_adaptive_runs_per_board_and_per_entry():
    from helmflow.plan.compile import prepare

    plan = prepare(BOARD)
    asked = {r.scenario.label: r.adaptive for r in plan.runs}
    assert asked["asked"] is not None and (asked["asked"].max_items, asked["asked"].initial_ability) == (3, 0.0)
    assert asked["full"] is None
    assert plan.selection == {}  # the board as written: its release is the board's own, not a subset
    full = prepare(BOARD, adaptive=False)  # --no-adaptive: the full runs calibrate-items reads
    assert all(r.adaptive is None for r in full.runs) and full.selection == {"adaptive": False}
    assert {r.run_id for r in full.runs} >= {r.run_id for r in plan.runs if r.adaptive is None}
    cli = prepare(BOARD, adaptive=True, max_instances=5, model_ability=1.5)  # --adaptive replaces the board's
    assert {(r.adaptive.max_items, r.adaptive.initial_ability) for r in cli.runs} == {(5, 1.5)}
    entry = {**BOARD, "adaptive": None, "scenarios": [{**BOARD["scenarios"][0], "adaptive": {"model_ability": -1}},
                                                      BOARD["scenarios"][1]]}
    per_entry = prepare(entry)
    assert {r.scenario.label: (r.adaptive.max_items, r.adaptive.initial_ability) if r.adaptive else None
            for r in per_entry.runs} == {"asked": (50, -1.0), "full": None}
    assert len({plan.board_version, per_entry.board_version, prepare({**BOARD, "adaptive": None}).board_version}) == 3


def _requests(dry_run) -> dict[tuple[str, str], int]:
    """(scenario, model) -> requests, from a dry run's table."""
    out = {}
    for line in dry_run.stdout.splitlines():
        cells = [c.strip() for c in line.strip("│┃ ").split("│")]
        if len(cells) == 6 and cells[2].isdigit():
            out[(cells[0], cells[1])] = int(cells[2])
    return out


def test_a_dry_run_counts_the_items_an_adaptive_board_asks_and_no_adaptive_its_full_runs(tmp_path):
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump(BOARD))
    adaptive = _requests(run_cli("run", "--board-file", str(board), "--dry-run"))
    full = _requests(run_cli("run", "--board-file", str(board), "--dry-run", "--no-adaptive"))
    for model in BOARD["models"]:
        assert adaptive[("asked", model)] == 3 and adaptive[("full", model)] == 12  # at most max_items are asked
        assert full[("asked", model)] == 12 and full[("full", model)] == 12


@pytest.mark.slow
def test_a_board_that_declares_adaptive_runs_adaptively_without_the_flag_once_calibrated(prefect_server, tmp_path):
    from helmflow.pipeline import evaluate_run, preflight, prepare_scenario
    from helmflow.plan.compile import prepare
    from helmflow.storage import Store

    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump(BOARD))
    store = tmp_path / "store"
    args = ["run", "--board-file", str(board), "--storage", str(store)]
    refused = run_cli(*args)
    assert refused.returncode == 2 and f"`helmflow run {board} --no-adaptive`" in refused.stderr, refused.stderr
    # the board's full runs (what `helmflow run --no-adaptive` runs), published through the pipeline's own stages
    full = preflight(Store(str(store)), prepare(str(board), adaptive=False))
    prepared = {s.label: prepare_scenario(Store(str(store)), s) for s in full.scenarios}
    for run in full.runs:
        evaluate_run(Store(str(store)), run, prepared[run.scenario.label])
    fitted = run_cli("calibrate-items", str(board), "--storage", str(store))
    assert fitted.returncode == 0 and "asked: 12 items from 3 models" in fitted.stdout, fitted.stdout + fitted.stderr
    adaptive = run_cli(*args)
    assert adaptive.returncode == 0, adaptive.stdout + adaptive.stderr
    assert "mean ability" in adaptive.stdout and "asked ability" in adaptive.stdout  # the board printed with them
    latest = json.loads((store / "leaderboards" / "adaptive-declared" / "latest.json").read_text())  # the board's own
    rows = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()
    assert {r["deployment"] for r in rows} == set(BOARD["models"])
    for row in rows:
        assert row["asked ability"] is not None and row["full ability"] is None
        assert row["mean_ability"] == row["asked ability"]
    runs = [json.loads(p.read_text()) for p in store.glob("runs/*/run.json")]
    adaptive_runs = [r for r in runs if "-adaptive-" in r["run_id"]]
    assert len(adaptive_runs) == 3 and {r["counts"]["requests"] for r in adaptive_runs} == {3}
    assert {r["counts"]["sent"] for r in adaptive_runs} == {0}  # the full runs' journal answers every item
    for r in adaptive_runs:
        steps = pq.read_table(store / "runs" / r["run_id"] / "trajectory.parquet").to_pylist()
        assert [s["step"] for s in steps] == [1, 2, 3] and steps[0]["ability_before"] == 0.0


def test_a_release_narrowed_to_adaptive_names_its_settings_in_one_line():
    from helmflow.plan.selection import narrowed

    assert narrowed({"models": ["a", "b"], "adaptive": {"max_items": 10, "model_ability": 0.0}}) == (
        "models=a,b; adaptive=max_items:10,model_ability:0.0")
    assert narrowed({"adaptive": False}) == "adaptive=False"


def test_reproduce_adaptive_explains_helms_reeval_recipe_and_its_differences():
    out = run_cli("reproduce", "mmlu", "--adaptive", "--model-ability", "0.5", "--explain")
    assert out.returncode == 0, out.stdout + out.stderr
    text = " ".join(out.stdout.split())
    assert "adaptive (HELM's REEval runner): at most 50 items per scenario and model" in text
    assert "starting at ability 0.5" in text and "`helmflow calibrate-items mmlu`" in text
    for line in ("stair-lab/reeval-difficulty", "drawn from the board's seeded sample", "L-BFGS-B",
                 "not HELM's scenario_to_metric_name"):
        assert line in text, line
    plain = run_cli("reproduce", "mmlu", "--explain")
    assert plain.returncode == 0 and "REEval" not in plain.stdout
