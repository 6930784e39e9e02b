"""prefect.yaml run like production: deployments, nightly schedules, workers, retry through a worker.

The slow tests start their own ``prefect server start`` (not the session's): one on SQLite under a
throwaway PREFECT_HOME, one on a throwaway PostgreSQL database with two workers on one process pool.
A fast test checks prefect.yaml against the flows it names, without a server. On the SQLite server, a
nightly deployment whose models file batches is run by a worker against the dev server's batch wire.
Everything goes through the real commands (``prefect work-pool create``, ``prefect deploy``,
``prefect worker start``, ``prefect deployment run``, ``prefect flow-run retry``); what is asserted is
read back from the server's API and from the storage root. Timings go to test-artifacts/.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from uuid import UUID

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.clients.offline import offline_call_count
from helmflow.storage import Store
from tests.support.cli import REPO
from tests.support.pg import create_pg_database, drop_pg_database
from tests.support.prefect_server import ARTIFACTS, PrefectServer, dedicated_prefect_server
from tests.support.processes import stop_process

POOL = "helmflow"  # prefect.yaml's work pool
MODELS = ["offline/solver", "offline/solver-noisy", "offline/echo"]


def _ok(out) -> str:
    assert out.returncode == 0, f"{out.args}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def _record(name: str, **numbers) -> None:
    """Measured numbers, for the report (test-artifacts/deployments-<name>.json)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"deployments-{name}.json").write_text(json.dumps(numbers, indent=2, default=str))
    print(name, numbers)


def _trigger(server: PrefectServer, deployment: str, params: dict) -> UUID:
    out = _ok(server.cli("deployment", "run", deployment, "--params", json.dumps(params)))
    match = re.search(r"UUID: ([0-9a-f-]{36})", out)
    assert match, out
    return UUID(match.group(1))


def _release(store: Store, pointer: str = "latest-subset.json") -> tuple[dict, list[dict]]:
    latest = store.read_json(f"leaderboards/demo/{pointer}")
    release = latest["uri"].removeprefix(store.root.rstrip("/") + "/")
    return latest, store.read_parquet(f"{release}/leaderboard.parquet").to_pylist()


def _cells(store: Store, release: dict) -> set[tuple[str, str]]:
    runs = store.read_parquet(release["uri"].removeprefix(store.root.rstrip("/") + "/") + "/runs.parquet")
    return {(r["deployment"], r["status"]) for r in runs.to_pylist()}


@pytest.fixture
def isolated_imports(monkeypatch):
    """Prefect's script loader puts each entrypoint's folder first on ``sys.path`` and never takes it off,
    and registers the script under its file name: ``flows/`` would then shadow PyPI's ``evaluate``,
    ``safety`` and ``lite`` for every later test in this worker. The path and the module table are put back."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if not name.startswith(("helmflow", "prefect")):
            del sys.modules[name]


def test_prefect_yaml_has_one_nightly_deployment_per_board_whose_flow_takes_its_parameters(isolated_imports):
    """Without a server: what ``prefect deploy`` would load from each entrypoint matches prefect.yaml."""
    from prefect.flows import load_flow_from_entrypoint

    spec = yaml.safe_load((REPO / "prefect.yaml").read_text())
    boards = sorted(p.stem for p in (REPO / "flows").glob("*.yaml"))
    assert sorted(d["name"].removesuffix("-nightly") for d in spec["deployments"]) == boards, \
        "every board spec flows/<board>.yaml gets a <board>-nightly deployment in prefect.yaml"
    for d in spec["deployments"]:
        board = d["name"].removesuffix("-nightly")
        assert (REPO / "flows" / f"{board}.yaml").exists(), f"{d['name']}: no board spec flows/{board}.yaml"
        flow = load_flow_from_entrypoint(f"{REPO}/{d['entrypoint']}")
        assert flow.name == board
        assert set(d["parameters"]) <= set(inspect.signature(flow.fn).parameters)
        assert d["schedules"] == [{"cron": "0 2 * * *", "timezone": "UTC", "active": True}]
        assert d["work_pool"]["name"] == POOL


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory) -> PrefectServer:
    with dedicated_prefect_server(tmp_path_factory.mktemp("prefect-sqlite")) as server:
        assert (server.home / "prefect.db").exists(), "the server's database is SQLite under its own PREFECT_HOME"
        yield server


@pytest.mark.slow
def test_prefect_yaml_deploys_every_board_nightly(sqlite_server):
    """``prefect deploy --all`` on a SQLite server: every board's nightly deployment on the process pool, each
    schedule queueing runs at 02:00 UTC. A worker executing a nightly deployment's run on such a server, with
    the storage root from its environment, is tests/test_prefect_ui.py's (its every assertion reads that run)."""
    server = sqlite_server
    spec = yaml.safe_load((REPO / "prefect.yaml").read_text())
    boards = {d["name"]: d["entrypoint"] for d in spec["deployments"]}
    assert boards == {f"{b}-nightly": f"flows/{b.replace('-', '_')}.py:{b.replace('-', '_')}"
                      for b in (p.stem.replace("_", "-") for p in (REPO / "flows").glob("*.yaml"))}

    started = time.monotonic()
    _ok(server.cli("work-pool", "create", POOL, "--type", "process"))
    _ok(server.cli("deploy", "--all"))
    deployed_s = time.monotonic() - started

    with server.client() as client:
        deployments = {d.name: d for d in client.read_deployments()}
        assert set(deployments) == set(boards)
        for name, d in deployments.items():
            assert d.entrypoint == boards[name] and d.work_pool_name == POOL
            assert [(s.schedule.cron, s.schedule.timezone, s.active) for s in d.schedules] == [("0 2 * * *", "UTC", True)]
            # the pull step records the checkout `prefect deploy` ran in, wherever that is
            assert d.pull_steps == [{"prefect.deployments.steps.set_working_directory": {"directory": str(REPO)}}]
            assert d.parameters == {"selection": {"models": None, "max_instances": None}, "storage": None}
        assert client.read_work_pool(POOL).type == "process"

        # the scheduler turns each cron into runs at 02:00 UTC
        ids, deadline = {d.id for d in deployments.values()}, time.monotonic() + 60
        while True:
            nightly = [r for r in client.read_flow_runs() if r.auto_scheduled]
            if {r.deployment_id for r in nightly} == ids or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert {r.deployment_id for r in nightly} == ids, "the scheduler did not queue every board's nights"
        assert {(r.expected_start_time.astimezone(timezone.utc).hour, r.expected_start_time.minute) for r in nightly} == {(2, 0)}

    # keep a 02:00 run from starting during the test: pausing a schedule removes its future runs
    _ok(server.cli("deployment", "schedule", "pause", "--all"))
    with server.client() as client:
        assert not [r for r in client.read_flow_runs() if r.auto_scheduled and r.state.is_scheduled()]

    _record("sqlite", server_start_s=round(server.startup_s, 1), deploy_all_s=round(deployed_s, 1))


@pytest.mark.slow
def test_production_topology_postgres_two_workers_and_retry_reruns_only_the_failed_pair(tmp_path, s3_root):
    """Prefect on PostgreSQL, two workers on one pool, one S3 bucket (moto) for everything.

    One pair fails; the flow run ends Failed after a partial release. The models file is fixed and
    the run is retried the way the UI's Retry button does it (``prefect flow-run retry``, no
    entrypoint): with the first worker gone, the other worker re-executes the same flow run, and
    only the failed pair's tasks run again — every other task is Cached from shared storage.
    """
    database = create_pg_database("helmflow_topology")
    try:
        with dedicated_prefect_server(tmp_path / "prefect-pg", database=database) as server:
            assert not (server.home / "prefect.db").exists(), "the server uses PostgreSQL, not SQLite"
            started = time.monotonic()
            _ok(server.cli("work-pool", "create", POOL, "--type", "process"))
            _ok(server.cli("deploy", "--name", "demo-nightly"))
            _ok(server.cli("deployment", "schedule", "pause", "--all"))
            workers = {name: server.start_worker(POOL, name) for name in ("worker-a", "worker-b")}
            _wait_workers_online(server, set(workers))

            store = Store(s3_root)
            models_file = tmp_path / "models.yaml"
            _models_file(models_file, fail=True)
            # dyck-3: a demo scenario without perturbation runs, so one cell is one run
            params = {"storage": s3_root, "selection": {"max_instances": 5, "scenarios": ["dyck-3"], "models": MODELS},
                      "models_file": str(models_file)}
            flow_run_id = _trigger(server, "demo/demo-nightly", params)
            failed = server.wait_flow_run(flow_run_id)
            partial_s = time.monotonic() - started
            assert failed.state.is_failed(), f"{failed.state}\n{server.tail()}"
            assert "partial release" in (failed.state.message or "")

            partial, board = _release(store, "latest-subset-partial.json")
            assert partial["status"] == "partial" and partial["uri"].startswith(s3_root)
            assert _cells(store, partial) == {("offline/solver", "complete"), ("offline/solver-noisy", "complete"),
                                              ("offline/echo", "missing")}
            assert not store.exists("leaderboards/demo/latest-subset.json")
            assert store.find("prefect-results"), "task results live in the bucket, where every worker finds them"

            # the provider is fixed; the worker that ran the first attempt goes away
            _models_file(models_file, fail=False)
            first_worker = failed.labels["prefect.worker.name"]
            stop_process(workers.pop(first_worker))
            counts = {m: offline_call_count(store, m) for m in MODELS}
            before = {tr.id for tr in server.task_runs(flow_run_id)}

            retried_at = time.monotonic()
            _ok(server.cli("flow-run", "retry", str(flow_run_id)))
            retried = server.wait_flow_run(flow_run_id, after_runs=failed.run_count)
            retry_s = time.monotonic() - retried_at
            assert retried.state.is_completed(), f"{retried.state}\n{server.tail()}"
            assert retried.id == flow_run_id and retried.run_count == failed.run_count + 1
            assert retried.labels["prefect.worker.name"] == next(iter(workers)) != first_worker

            new_runs = [tr for tr in server.task_runs(flow_run_id) if tr.id not in before]
            states = {tr.name: tr.state.name for tr in new_runs}
            executed = sorted(name for name, state in states.items() if state == "Completed")
            cached = sorted(name for name, state in states.items() if state == "Cached")
            assert executed == ["release demo", "run dyck-3 x offline/echo"], states
            assert len(cached) == len(new_runs) - len(executed) == 1 + 2, states  # prepare; the 2 other pairs

            after = {m: offline_call_count(store, m) for m in MODELS}
            assert after == dict(counts, **{"offline/echo": counts["offline/echo"] + 5})
            latest, board = _release(store)
            assert latest["status"] == "complete" and latest["release_id"] != partial["release_id"]
            assert {r["deployment"] for r in board} == set(MODELS)
            _record("postgres", server_start_s=round(server.startup_s, 1), deploy_to_partial_release_s=round(partial_s, 1),
                    retry_s=round(retry_s, 1), first_worker=first_worker, retry_worker=retried.labels["prefect.worker.name"],
                    retry_executed=executed, retry_cached=len(cached), calls_before_retry=counts, calls_after_retry=after)
    finally:
        drop_pg_database(database)


def _models_file(path: Path, fail: bool) -> None:
    options = "{behavior: echo, fail: always}" if fail else "{behavior: echo}"
    path.write_text(f"deployments:\n  - {{name: offline/echo, client: offline, model: echo, revision: '1', options: {options}}}\n")


def _wait_workers_online(server: PrefectServer, names: set[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    with server.client() as client:
        while True:
            online = {w.name for w in client.read_workers_for_work_pool(POOL) if w.status.value == "ONLINE"}
            if names <= online:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"workers online: {online}, wanted {names}\n{server.tail()}")
            time.sleep(1)


@pytest.mark.slow
def test_a_nightly_deployment_with_batch_true_runs_unattended_and_publishes_when_its_batch_ends(
        sqlite_server, dev_server, tmp_path):
    """A deployment of a one-cell board whose models file says ``batch: true``, run by a worker with no terminal:
    the requests go in batch lines, the flow run waits for the batch, the release is published at half price."""
    server, batched = sqlite_server, dev_server
    batched.configure(batch_delay_s=2.0)  # still running at the first polls: the cell must wait for it
    prices = {"price_input_per_mtok": 2.0, "price_output_per_mtok": 8.0}
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/gpt", "client": "openai", "model": "gpt-dev", "base_url": batched.openai_url, "batch": True,
         "batch_poll_s": 0.2, "api_key_env": "HELMFLOW_BATCH_KEY", **prices}]}))
    board = {"name": "nightly-batch", "version": "1", "models": ["dev/gpt"],
             "scenarios": [{"name": "arithmetic", "params": {"digits": 3, "num_test": 4, "seed": 0}, "label": "arith"}]}
    root = tmp_path / "store"
    params = {"board": board, "models_file": str(models), "storage": str(root)}
    _ok(server.cli("work-pool", "create", POOL, "--type", "process", "--overwrite"))
    # the board's parameters are the deployment's own: a night's run is triggered with none
    _ok(server.cli("deploy", "flows/evaluate.py:evaluate", "--name", "nightly-batch", "--pool", POOL,
                   "--cron", "0 2 * * *", "--timezone", "UTC", "--params", json.dumps(params)))
    _ok(server.cli("deployment", "schedule", "pause", "--all"))  # no 02:00 run during the test
    with server.client() as client:
        deployment = client.read_deployment_by_name("evaluate-board/nightly-batch")
    assert [s.schedule.cron for s in deployment.schedules] == ["0 2 * * *"] and deployment.parameters == params
    pointer = root / "leaderboards/nightly-batch/latest.json"
    assert not pointer.exists()

    out = _ok(server.cli("deployment", "run", "evaluate-board/nightly-batch"))
    flow_run_id = UUID(re.search(r"UUID: ([0-9a-f-]{36})", out).group(1))
    worker = server.start_worker(POOL, "night", HELMFLOW_BATCH_KEY="sk-batch-test")  # no terminal: output to a file
    try:
        run = server.wait_flow_run(flow_run_id)
    finally:
        stop_process(worker)
    assert run.state.is_completed(), f"{run.state}\n{server.tail()}"
    assert run.parameters == params and run.labels["prefect.worker.name"] == "night"

    # every request went in one batch line; none real-time
    stats = batched.stats()
    assert stats["requests"] == 0 and stats["by_endpoint"].get("chat", 0) == 0, stats
    assert stats["batches"] == 1 and stats["batch_lines"] == stats["batch_line_ids"] == stats["batch_answered"] == 4
    # the flow run ended after its batch did, and the release it published is the pointer's
    store = Store(str(root))
    [record] = [json.loads(p.read_text()) for p in (root / "batches").rglob("*.json")]
    assert record["state"] == "ended" and len(record["hashes"]) == 4
    submitted = datetime.fromisoformat(record["submitted_at"])
    assert run.end_time.timestamp() >= submitted.timestamp() + 2.0
    latest = json.loads(pointer.read_text())
    assert latest["status"] == "complete"
    [row] = store.read_parquet(f"leaderboards/nightly-batch/{latest['release_id']}/leaderboard.parquet").to_pylist()
    [run_json] = root.glob("runs/*/run.json")
    completions = pq.read_table(run_json.parent / "completions.parquet").to_pylist()
    assert len(completions) == 4 and all(c["error"] is None for c in completions)
    # charged half the deployment's price for the tokens the batch answered
    list_price = sum(c["prompt_tokens"] * prices["price_input_per_mtok"] + c["output_tokens"] *
                     prices["price_output_per_mtok"] for c in completions) / 1e6
    assert list_price > 0 and sum(c["cost_usd"] for c in completions) == pytest.approx(0.5 * list_price, rel=1e-9)
    assert row["deployment"] == "dev/gpt" and row["cost_usd"] == pytest.approx(0.5 * list_price, rel=1e-9)

    # the cell's query task run waited in the state named AwaitingBatch, then went on to Completed
    query_task_run = json.loads(run_json.read_text())["lineage"]["query_task_run_id"]
    deadline = time.monotonic() + 60  # Prefect records task run states from events, a moment later
    with server.client() as client:
        while (history := [s.name for s in sorted(client.read_task_run_states(UUID(query_task_run)),
                                                  key=lambda s: s.timestamp)])[-1:] != ["Completed"]:
            assert time.monotonic() < deadline, history
            time.sleep(0.5)
    assert history[history.index("AwaitingBatch") - 1:] == ["Running", "AwaitingBatch", "Running", "Completed"], history
