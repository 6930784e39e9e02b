"""The demo board end to end, through the real CLI, on the session's Prefect server.

What is asserted comes from outside the process under test: task-run states read back through the
Prefect API, the offline models' call counters under the storage root, and file modification times.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helmflow.clients.offline import offline_call_count
from helmflow.flows.evaluate import scenario_groups
from helmflow.plan.records import cell_name
from helmflow.storage import Store
from tests.support.cli import (
    REPO,
    flow_run_id_from,
    read_flow_run,
    run_cli,
    run_prefect,
    subflow_runs_of,
    task_runs_of,
)

pytestmark = pytest.mark.slow

MODELS = ["offline/solver", "offline/solver-noisy", "offline/echo"]


def _counts(store: Store) -> dict[str, int]:
    return {m: offline_call_count(store, m) for m in MODELS}


def _mtimes(root: Path, sub: str) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in (root / sub).rglob("*") if p.is_file()}


def _board_block(stdout: str) -> list[str]:
    """What ``helmflow run`` prints of the board: the count line, then the table to its release line
    (without the progress bars and the flow-run line, which only a run that starts a flow prints)."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith("board ") or "━━━━ " not in ln]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("board "))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("release: "))
    return [ln for ln in lines[start:end] if not ln.startswith(("flow run:", "runs ", "requests "))] + [
        lines[end].removesuffix(" (unchanged: nothing written)")]


def test_warm_rerun_is_all_cached_and_writes_nothing(prefect_server, tmp_path):
    from helmflow.pipeline import preflight
    from helmflow.plan.compile import prepare

    plan = prepare("demo", max_instances=5)
    root = tmp_path / "store"
    args = ["run", "demo", "--max-instances", "5", "--storage", str(root)]
    first = run_cli(*args)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"storage: {root}" in first.stdout
    assert "release:" in first.stdout and "offline/solver" in first.stdout
    assert "ERROR" not in first.stderr, first.stderr[-3000:]  # e.g. an asset event Prefect refused
    store = Store(str(root))
    plan = preflight(store, plan)  # what the run ran: perturbed copies that change nothing are left out
    n_scenarios, n_runs = len(plan.all_scenarios), len(plan.runs)
    counts, runs_before = _counts(store), _mtimes(root, "runs")
    assert counts["offline/solver"] >= 5 * len(plan.scenarios)
    assert len([k for k in runs_before if k.endswith("run.json")]) == n_runs

    second = run_cli(*args, "--force-flow")  # through Prefect, although the release exists
    assert second.returncode == 0, second.stdout + second.stderr
    # prepare (download + adapt) per scenario; one run task (query → score → publish) per pair; one release
    expected, flow_run_id, deadline = n_scenarios + n_runs + 1, flow_run_id_from(second), time.monotonic() + 30
    while len(task_runs := task_runs_of(flow_run_id)) < expected and time.monotonic() < deadline:
        time.sleep(0.5)  # task runs reach the API as events, a moment after the flow run returns
    assert len(task_runs) == expected
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:  # one flow per board: the deployment's flow is named "demo" too
        run = client.read_flow_run(flow_run_id)
        assert client.read_flow(run.flow_id).name == "demo" and run.name.startswith("demo 20"), run.name
    names = {tr.id: tr.name for tr in task_runs}
    for tr in task_runs:  # the graph's edges: each run hangs off its scenario's prepare task run
        if tr.name.startswith("run "):
            scenario = tr.name.removeprefix("run ").split(" x ")[0]
            assert {names[i.id] for i in tr.task_inputs["prepared"]} == {f"prepare {scenario}"}, tr.task_inputs
    assert {tr.state.name for tr in task_runs} == {"Cached"}, sorted((tr.name, tr.state.name) for tr in task_runs)
    # the graph's top level: one subflow run per scenario (its perturbed copies inside), then the release
    groups = scenario_groups(plan)
    subflows = subflow_runs_of(flow_run_id)
    assert sorted(s.name for s in subflows) == sorted(f"demo {label}" for label, _, _ in groups)
    assert {s.state.name for s in subflows} == {"Completed"}
    top = task_runs_of(flow_run_id, top_level=True)  # the release and a task run standing for each subflow
    assert len(top) == len(groups) + 1 == len(plan.scenarios) + 1 < n_scenarios + n_runs + 1, [t.name for t in top]
    assert {t.id for t in top if t.name != "release demo"} == {s.parent_task_run_id for s in subflows}
    cells_in = {tr.id: tr.flow_run_id for tr in task_runs}
    for label, scenarios, runs in groups:  # each subflow holds its scenarios' prepare and run task runs
        [sub] = [s for s in subflows if s.name == f"demo {label}"]
        inside = sorted(names[i] for i, f in cells_in.items() if f == sub.id)
        assert inside == sorted([f"prepare {s.label}" for s in scenarios] + [f"run {cell_name(r)}" for r in runs])
    assert _counts(store) == counts
    assert _mtimes(root, "runs") == runs_before

    latest = store.read_json("leaderboards/demo/latest-subset.json")
    board = pq.read_table(os.path.join(latest["uri"], "leaderboard.parquet")).to_pylist()
    scores = {r["deployment"]: r["mean_score"] for r in board}
    assert scores["offline/solver"] > scores["offline/solver-noisy"] > scores["offline/echo"]  # the board has spread
    meta = pq.read_schema(os.path.join(latest["uri"], "leaderboard.parquet")).metadata
    assert meta[b"helmflow.release_id"].decode() == latest["release_id"]

    # without --force-flow the CLI finds that exact release in storage and starts no flow run
    third = run_cli(*args)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "no Prefect flow run was started" in third.stdout and "flow run:" not in third.stdout
    assert latest["release_id"] in third.stdout and "offline/solver" in third.stdout
    # the same story either way: the count line, the board with its metric groups, and the release line
    assert _board_block(third.stdout) == _board_block(first.stdout), third.stdout
    assert any("fairness mean win rate" in ln for ln in _board_block(first.stdout))
    assert _counts(store) == counts and _mtimes(root, "runs") == runs_before

    # a run's commit marker missing from storage: the check says no, and the flow runs
    missing = next(k for k in runs_before if k.endswith("run.json"))
    (root / missing).unlink()
    fourth = run_cli(*args)
    assert fourth.returncode == 0, fourth.stdout + fourth.stderr
    assert "flow run:" in fourth.stdout and "no Prefect flow run" not in fourth.stdout
    assert _counts(store) == counts


def test_failed_pair_gives_partial_release_and_flow_retry_reruns_only_it(prefect_server, tmp_path):
    root = tmp_path / "store"
    store = Store(str(root))
    # dyck-3: a demo scenario without perturbation runs, so a cell is one run
    base = ["run", "demo", "--max-instances", "5", "--storage", str(root), "--scenarios", "dyck-3"]
    ok = run_cli(*base, "--models", "offline/solver")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    latest_before = store.read_json("leaderboards/demo/latest-subset.json")

    models_file = tmp_path / "models.yaml"
    models_file.write_text(
        "deployments:\n"
        "  - {name: offline/echo, client: offline, model: echo, revision: '1', options: {behavior: echo, fail: always}}\n"
    )
    failing = run_cli(*base, "--models", "offline/solver,offline/solver-noisy,offline/echo", "--models-file", str(models_file))
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "partial release" in failing.stdout
    # an expected failure is the one line above: no Prefect warning ("Failed to serialize ... QueryFailed")
    # (the models file's own warning, that it replaces a shipped deployment, is expected)
    warnings = [line for line in failing.stderr.splitlines()
                if "WARNING" in line and "overrides the shipped deployment 'offline/echo'" not in line]
    assert "Failed to serialize" not in failing.stdout + failing.stderr and not warnings, failing.stderr
    flow_run_id = flow_run_id_from(failing)
    assert read_flow_run(flow_run_id).state.is_failed()

    # every other pair is published; the failed cell is marked missing; latest.json did not move
    assert store.read_json("leaderboards/demo/latest-subset.json") == latest_before
    partial = store.read_json("leaderboards/demo/latest-subset-partial.json")
    assert partial["status"] == "partial"
    cells = {(r["deployment"], r["status"]) for r in pq.read_table(os.path.join(partial["uri"], "runs.parquet")).to_pylist()}
    assert cells == {("offline/solver", "complete"), ("offline/solver-noisy", "complete"), ("offline/echo", "missing")}
    release = store.read_json(partial["uri"].removeprefix(str(root) + "/") + "/release.json")
    assert release["status"] == "partial" and "fail: always" in release["failed"][0]["error"]

    # the provider is fixed; retrying the same flow run re-executes only the failed pair's tasks
    models_file.write_text(
        "deployments:\n  - {name: offline/echo, client: offline, model: echo, revision: '1', options: {behavior: echo}}\n"
    )
    counts = _counts(store)
    before = {tr.id for tr in task_runs_of(flow_run_id)}
    retry = run_prefect("flow-run", "retry", str(flow_run_id), "--entrypoint", "flows/evaluate.py:evaluate",
                        cwd=REPO, env=dict(os.environ))
    assert retry.returncode == 0, retry.stdout + retry.stderr
    assert read_flow_run(flow_run_id).state.is_completed()
    new_runs = [tr for tr in task_runs_of(flow_run_id) if tr.id not in before]
    executed = sorted(tr.name for tr in new_runs if tr.state.name == "Completed")
    cached = [tr for tr in new_runs if tr.state.name == "Cached"]
    assert executed == ["release demo", "run dyck-3 x offline/echo"], executed
    assert len(cached) == 1 + 2, sorted((tr.name, tr.state.name) for tr in new_runs)  # prepare; 2 pairs
    # the retry ran the scenario's subflow again: a new subflow run beside the failed one, under the same parent
    subflows = subflow_runs_of(flow_run_id)
    assert [(s.name, s.state.name) for s in subflows] == [("demo dyck-3", "Failed"), ("demo dyck-3", "Completed")]
    assert subflows[0].parent_task_run_id == subflows[1].parent_task_run_id
    after = _counts(store)
    assert after["offline/echo"] == counts["offline/echo"] + 5
    assert after["offline/solver"] == counts["offline/solver"] and after["offline/solver-noisy"] == counts["offline/solver-noisy"]
    assert store.read_json("leaderboards/demo/latest-subset.json")["release_id"] != latest_before["release_id"]


def test_board_runs_on_s3(prefect_server, s3_root, tmp_path):
    out = run_cli("run", "demo", "--max-instances", "3", "--models", "offline/solver", "--scenarios", "arithmetic-3",
                  "--storage", s3_root, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    store = Store(s3_root)
    latest = store.read_json("leaderboards/demo/latest-subset.json")
    assert latest["uri"].startswith(s3_root)
    rows = store.read_parquet(latest["uri"].removeprefix(s3_root + "/") + "/leaderboard.parquet").to_pylist()
    assert rows[0]["deployment"] == "offline/solver" and rows[0]["mean_score"] == 1.0
    assert store.find("prefect-results"), "task results are persisted on S3 too"
    assert not (tmp_path / "helmflow-store").exists()
