"""Requests saved by adaptive testing at equal ranking, on the demo board's offline models.

    python benchmarks/adaptive_efficiency.py [--items 1,2,3,5,10,20,45] [--storage DIR]

Without Prefect, on fresh storage (or ``--storage``): every cell of the demo board's eight scenarios
(no perturbed copies) is run in full (45 instances each) through :func:`helmflow.pipeline.evaluate_run`,
:func:`helmflow.calibration.calibrate_board` fits the item easiness from those runs, then the board
is run adaptively at each ``--items`` N. The full run ranks the models by their mean main score over
the scenarios (the demo board's ``mean`` aggregation); an adaptive run ranks them by their mean
ability (``mean_ability``). Printed per N: requests the adaptive runs asked (what a fresh adaptive run
would send; here the journal answers all of them), the full run's requests, the saving, Kendall's
tau-b between the two rankings, and each model's mean ability.

The easiness is fitted from the same models' full runs (in sample): with four models this measures the
item choice and the ability refit, not how well difficulties fitted on other models transfer.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

from scipy.stats import kendalltau


def measure(storage: str, items: list[int]) -> list[dict]:
    from helmflow import layout
    from helmflow.calibration import calibrate_board
    from helmflow.pipeline import evaluate_run, preflight, prepare_scenario
    from helmflow.plan.compile import prepare
    from helmflow.plan.spec import load_board
    from helmflow.storage import Store

    store = Store(storage)
    spec = load_board("demo")
    board = spec.model_copy(update={"scenarios": [e.model_copy(update={"perturbations": []})
                                                  for e in spec.scenarios]}).model_dump(mode="json")
    full = preflight(store, prepare(board))
    prepared = {s.label: prepare_scenario(store, s) for s in full.all_scenarios}
    outcomes = [evaluate_run(store, r, prepared[r.scenario.label]) for r in full.runs]
    full_requests = sum(store.read_json(layout.run_json(o.run_id))["counts"]["requests"] for o in outcomes)
    models = list(full.spec.models)
    mean_score = {m: sum(o.score or 0.0 for o in outcomes if o.deployment == m) / len(full.scenarios)
                  for m in models}
    calibrate_board(store, full)
    rows = []
    for n in items:
        plan = prepare(board, max_instances=n, adaptive=True)
        done = [evaluate_run(store, r, prepared[r.scenario.label]) for r in plan.runs]
        asked = sum(store.read_json(layout.run_json(o.run_id))["counts"]["requests"] for o in done)
        ability = {m: sum(o.ability or 0.0 for o in done if o.deployment == m) / len(plan.scenarios)
                   for m in models}
        tau = kendalltau([mean_score[m] for m in models], [ability[m] for m in models]).statistic
        rows.append({"items": n, "asked": asked, "full": full_requests, "tau": float(tau), "ability": ability,
                     "mean_score": mean_score})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", default="1,2,3,5,10,20,45", help="comma-separated adaptive item counts N")
    ap.add_argument("--storage", help="storage root (default: a fresh temporary folder)")
    opts = ap.parse_args()
    items = [int(x) for x in opts.items.split(",")]
    started = time.perf_counter()
    if opts.storage:
        rows = measure(opts.storage, items)
    else:
        with tempfile.TemporaryDirectory(prefix="helmflow-adaptive-") as work:
            rows = measure(f"{work}/store", items)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, demo board (8 scenarios x 4 offline models), "
          f"{time.perf_counter() - started:.0f} s")
    print("full run mean score: " + ", ".join(f"{m} {v:.3f}" for m, v in rows[0]["mean_score"].items()))
    print("| N | adaptive requests | full requests | saved | Kendall tau-b | mean ability per model |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        abilities = ", ".join(f"{m} {v:.2f}" for m, v in r["ability"].items())
        print(f"| {r['items']} | {r['asked']} | {r['full']} | {1 - r['asked'] / r['full']:.0%} | {r['tau']:.2f} "
              f"| {abilities} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
