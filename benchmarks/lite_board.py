"""HELM Lite at full shape on fixtures: wall time and Prefect task runs of `helmflow run` with 28 runs per model.

    python benchmarks/lite_board.py [--models offline/first-option,offline/echo] [--max-instances 50]

Builds every Lite source as fixture files (tests/support/lite_fixtures.py: the web archives, served on 127.0.0.1 and
mirrored with `helmflow mirror lite`; tests/support/lite_hub_fixtures.py: MATH, LegalBench and WMT14's Parquet
conversions as per-scenario mirrors), writes a board file with HELM Lite's 28 run entries (flows/lite.yaml's
entries plus MATH x 7, LegalBench x 5, WMT14 x 5, and GSM8K when its scenario is registered), and runs it
through the real CLI twice: cold (fresh storage) and warm (`--force-flow`: every task a cache hit). Prints
seconds, runs, requests and the task runs Prefect recorded (read from the flow run through the API when
PREFECT_API_URL points at a server; else counted from the plan: a prepare per entry, a run per cell, a release).
A benchmark, not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.support

MATH_SUBJECTS = ["algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory",
                 "prealgebra", "precalculus"]
LEGALBENCH = ["abercrombie", "corporate_lobbying", "international_citizenship_questions", "function_of_decision_section", "proa"]
PAIRS = ["cs-en", "de-en", "fr-en", "hi-en", "ru-en"]


def hub_mirrors(root: Path) -> dict[str, str]:
    from tests.support.lite_hub_fixtures import legalbench_files, math_files, wmt_files

    folders = {"HELMFLOW_MIRROR_MATH": {**math_files(200, 150)},
               "HELMFLOW_MIRROR_LEGALBENCH": {k: v for s in LEGALBENCH for k, v in legalbench_files(s).items()},
               "HELMFLOW_MIRROR_WMT_14": {k: v for p in PAIRS for k, v in wmt_files(p, 300, 60, 60).items()}}
    env = {}
    for var, files in folders.items():
        folder = root / var.lower()
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        env[var] = str(folder)
    return env


def board_file(path: Path) -> int:
    from helmflow.scenarios import SCENARIOS

    spec = yaml.safe_load((REPO / "flows/lite.yaml").read_text())
    entries = spec["scenarios"]
    entries += [{"name": "math", "params": {"subject": s, "level": 1}, "label": f"math-{s}", "group": "math_chain_of_thought"}
                for s in MATH_SUBJECTS]
    gsm = next((n for n in ("gsm", "gsm8k") if n in SCENARIOS), None)
    if gsm:  # GSM8K's scenario lands separately; without it the board has 27 runs per model
        entries.append({"name": gsm, "label": "gsm"})
    entries += [{"name": "legalbench", "params": {"subset": s}, "label": f"legalbench-{s}", "group": "legalbench"} for s in LEGALBENCH]
    entries += [{"name": "wmt_14", "params": {"language_pair": p}, "label": f"wmt_14-{p}", "group": "wmt_14"} for p in PAIRS]
    spec.update(name="lite-bench", scenarios=entries, helm_differences=[])
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return len(entries)


def task_runs(out: str) -> int | None:
    found = re.search(r"flow run: ([0-9a-f-]{36})", out)
    if not (found and os.environ.get("PREFECT_API_URL")):
        return None
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        return len(client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(found.group(1))]))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="offline/first-option,offline/echo")
    parser.add_argument("--max-instances", type=int, default=None, help="cap per run (default: the board's 1,000)")
    args = parser.parse_args()
    from tests.support.lite_fixtures import serve, source_tree

    work = Path(tempfile.mkdtemp(prefix="lite-bench-"))
    env = dict(os.environ, COLUMNS="200")
    root = source_tree(work / "src", small=True)
    with serve(root) as host:
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "helmflow", "mirror", "lite", "--to", str(work / "mirror")],
                             env={**env, "HELMFLOW_SOURCE_HOST": host.url}, capture_output=True, text=True)
        mirror_s = time.monotonic() - t0
    if out.returncode:
        sys.exit(out.stdout + out.stderr)
    env.update(HELMFLOW_MIRROR=str(work / "mirror"), **hub_mirrors(work))
    entries = board_file(work / "lite-bench.yaml")
    models = args.models.split(",")
    print(f"HELM Lite on fixtures: {entries} runs per model x {len(models)} models; mirror lite took {mirror_s:.1f} s")
    cmd = [sys.executable, "-m", "helmflow", "run", str(work / "lite-bench.yaml"), "--models", args.models,
           "--storage", str(work / "store")]
    if args.max_instances:
        cmd += ["--max-instances", str(args.max_instances)]
    for label, extra in (("cold", []), ("warm", ["--force-flow"])):
        t0 = time.monotonic()
        out = subprocess.run(cmd + extra, env=env, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if out.returncode:
            sys.exit(f"{label}: exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        runs = [json.loads(p.read_text()) for p in (work / "store").glob("runs/*/run.json")]
        requests = sum(r["counts"]["requests"] for r in runs)
        counted = task_runs(out.stdout)
        expected = entries + entries * len(models) + 1
        shown = f"{counted} task runs (Prefect API)" if counted is not None else f"{expected} task runs (plan: {entries} prepare + {entries * len(models)} run + 1 release)"
        print(f"  {label}: {wall:.1f} s, {len(runs)} runs published, {requests} requests, {shown}")
    print(f"  machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; storage {work / 'store'}")


if __name__ == "__main__":
    main()
