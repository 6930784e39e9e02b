"""helmflow's own cost per board cell, without Prefect: wall and CPU seconds of query → score → publish.

    python benchmarks/cell_cost.py [--runs 100] [--max-instances 5] [--baseline OTHER_PYTHON] [--rounds 3]

A board of offline deployments × the first four demo scenarios (as ``benchmarks/scale.py``) is
planned, pre-flighted and prepared, then every cell is evaluated one after the other in this process
through :func:`helmflow.pipeline.evaluate_run` (what the ``run`` task calls), then the release is
published: on cold storage, at ``--max-instances 5``, so nearly all of it is per-cell overhead
(Parquet and JSON files, the journal, scoring's intervals). Prefect's own cost per task run is not
in it (``benchmarks/scale.py`` measures the whole command).

--baseline: the same measured by another interpreter whose ``helmflow`` is the code to compare
against (e.g. a venv over a ``git worktree`` at an older commit), alternating with this one
``--rounds`` times, each on fresh storage, so both see the same machine load. Prints seconds per
cell of each and the ratios, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCALE = Path(__file__).resolve().parent / "scale.py"


def measure(runs: int, max_instances: int, deployments_min: int) -> dict[str, float]:
    """Per cell: wall and CPU seconds of evaluate_run, and of the release, on fresh storage here."""
    import importlib.util

    from helmflow.aggregate import publish_release
    from helmflow.pipeline import evaluate_run, preflight, prepare_scenario
    from helmflow.plan.compile import prepare
    from helmflow.plan.spec import load_board
    from helmflow.storage import Store

    spec = importlib.util.spec_from_file_location("scale", SCALE)
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    scenarios = [s.label for s in load_board("demo").scenarios]
    n_dep, n_scen = scale.shape(runs, deployments_min, len(scenarios))
    with tempfile.TemporaryDirectory(prefix="helmflow-cells-") as work:
        names = scale.models_file(Path(work) / "models.yaml", n_dep)
        store = Store(f"{work}/store")
        plan = prepare(board="demo", models=names, scenarios=scenarios[:n_scen], max_instances=max_instances,
                        models_file=f"{work}/models.yaml")
        plan = preflight(store, plan)
        prepared = {s.label: prepare_scenario(store, s) for s in plan.all_scenarios}
        wall, cpu = time.perf_counter(), time.process_time()
        outcomes = [evaluate_run(store, r, prepared[r.scenario.label]) for r in plan.runs]
        cells = time.perf_counter() - wall, time.process_time() - cpu
        wall, cpu = time.perf_counter(), time.process_time()
        publish_release(store, plan, outcomes, [])
        release = time.perf_counter() - wall, time.process_time() - cpu
    n = len(plan.runs)
    return {"cells": n, "wall": cells[0] / n, "cpu": cells[1] / n, "release_wall": release[0] / n,
            "release_cpu": release[1] / n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--max-instances", type=int, default=5)
    ap.add_argument("--deployments-min", type=int, default=25)
    ap.add_argument("--baseline", default="", help="another Python whose helmflow to measure side by side")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="measure once here and print JSON (used for --baseline)")
    opts = ap.parse_args()
    if opts.json:
        print(json.dumps(measure(opts.runs, opts.max_instances, opts.deployments_min)))
        return 0
    codes = [("this", sys.executable)] + ([("baseline", opts.baseline)] if opts.baseline else [])
    load = os.getloadavg()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, {opts.runs} cells at "
          f"--max-instances {opts.max_instances}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("| round | code | wall s/cell | CPU s/cell | release wall s/cell | load |\n|---|---|---|---|---|---|")
    results: dict[str, list[dict[str, float]]] = {}
    for round_ in range(opts.rounds):
        for label, python in codes[::-1] if round_ % 2 == 0 else codes:
            out = subprocess.run([python, str(Path(__file__).resolve()), "--json", "--runs", str(opts.runs),
                                  "--max-instances", str(opts.max_instances), "--deployments-min",
                                  str(opts.deployments_min)],
                                 capture_output=True, text=True, cwd=tempfile.gettempdir(), check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            results.setdefault(label, []).append(row)
            print(f"| {round_ + 1} | {label} | {row['wall']:.4f} | {row['cpu']:.4f} | {row['release_wall']:.4f} "
                  f"| {os.getloadavg()[0]:.2f} |", flush=True)
    if opts.baseline:
        med = {label: {k: statistics.median(r[k] for r in rows) for k in ("wall", "cpu")} for label, rows in results.items()}
        print(f"\nmedian wall s/cell: this {med['this']['wall']:.4f}, baseline {med['baseline']['wall']:.4f}, "
              f"ratio {med['this']['wall'] / med['baseline']['wall']:.2f}; CPU s/cell: this {med['this']['cpu']:.4f}, "
              f"baseline {med['baseline']['cpu']:.4f}, ratio {med['this']['cpu'] / med['baseline']['cpu']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
