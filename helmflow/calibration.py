"""Item easiness for adaptive runs: fitted from a board's published runs, stored versioned, read back.

``helmflow calibrate-items <board>`` reads the per-instance main-metric scores of every published run
of each scenario (one row per model), fits the Rasch model over that model x item matrix
(:func:`helmflow.adaptive.calibrate_items`) and writes ``instance_id, z`` under
:func:`helmflow.layout.item_easiness`, versioned by the hash of the runs it was fitted from, with
``latest.json`` naming the version adaptive runs use.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from helmflow import layout, versions
from helmflow.adaptive import calibrate_items
from helmflow.plan.records import BoardPlan, ScenarioPlan
from helmflow.plan.spec import BoardError
from helmflow.storage import Store

EASINESS_SCHEMA = pa.schema([("instance_id", pa.string()), ("z", pa.float64())])


class NoEasiness(BoardError):
    """A scenario asked adaptively has no calibrated item easiness."""


def read_easiness(store: Store, scenario: ScenarioPlan) -> dict[str, float]:
    """instance id -> easiness z of the scenario's calibrated items (latest version)."""
    latest = layout.item_easiness_latest(scenario.key, scenario.scenario_version)
    if not store.exists(latest):
        raise NoEasiness(f"{scenario.label}: no item easiness calibrated; run `helmflow calibrate-items` on a "
                         f"board with published runs of it first")
    version = store.read_json(latest)["version"]
    table = store.read_parquet(layout.item_easiness(scenario.key, scenario.scenario_version, version))
    return dict(zip(table["instance_id"].to_pylist(), table["z"].to_pylist(), strict=True))


def uncalibrated(store: Store, plan: BoardPlan) -> list[str]:
    """The labels of the scenarios the plan asks adaptively that have no calibrated item easiness."""
    seen: dict[str, ScenarioPlan] = {}
    for run in plan.runs:
        if run.adaptive is not None:
            seen.setdefault(run.scenario.label, run.scenario)
    return [label for label, s in seen.items()
            if not store.exists(layout.item_easiness_latest(s.key, s.scenario_version))]


def check_calibrated(store: Store, plan: BoardPlan, board: str) -> None:
    """Refuse (one line, exit 2) an adaptive plan with a scenario that has no item easiness, before any request."""
    missing = uncalibrated(store, plan)
    if missing:
        full = (f"full runs (`helmflow run {board} --no-adaptive`)" if "adaptive" not in plan.selection
                else "full runs")  # the board itself declares adaptive: its full runs need the flag
        raise NoEasiness(f"adaptive runs need item difficulties, and {', '.join(missing)} "
                         f"{'has' if len(missing) == 1 else 'have'} none in {store.root}: run "
                         f"`helmflow calibrate-items {board}` after {full} of at least two models have been "
                         f"published, then run it again")


def run_scores(store: Store, run_id: str, main_metric: str) -> dict[str, float]:
    """instance id -> main-metric score of a published run (the mean over its splits)."""
    stats = store.read_parquet(layout.run_file(run_id, "stats.parquet"), columns=["instance_id", "name", "value"])
    stats = stats.filter(pc.equal(stats["name"], main_metric))
    grouped = stats.group_by("instance_id").aggregate([("value", "mean")])
    return dict(zip(grouped["instance_id"].to_pylist(), grouped["value_mean"].to_pylist(), strict=True))


def calibrate_board(store: Store, plan: BoardPlan) -> list[dict[str, Any]]:
    """Fit and store each scenario's item easiness from the board's published runs; one summary per scenario."""
    out = []
    for scenario in plan.all_scenarios:
        runs = [r for r in plan.runs if r.scenario.label == scenario.label and r.adaptive is None
                and store.exists(layout.run_file(r.run_id, layout.RUN_JSON))]
        matrix = {r.deployment.name: run_scores(store, r.run_id, scenario.main_metric) for r in runs}
        matrix = {m: row for m, row in matrix.items() if row}
        if len(matrix) < 2:
            out.append({"scenario": scenario.label, "models": len(matrix), "items": 0, "version": None})
            continue
        easiness, ability = calibrate_items(matrix)
        version = versions.stable_hash(sorted(r.run_id for r in runs))
        key = layout.item_easiness(scenario.key, scenario.scenario_version, version)
        items = sorted(easiness)
        store.write_parquet(key, pa.table({"instance_id": items, "z": [easiness[i] for i in items]},
                                          schema=EASINESS_SCHEMA))
        store.write_json(layout.item_easiness_latest(scenario.key, scenario.scenario_version),
                         {"version": version, "runs": sorted(r.run_id for r in runs), "abilities": ability})
        out.append({"scenario": scenario.label, "models": len(matrix), "items": len(items), "version": version,
                    "key": key})
    return out
