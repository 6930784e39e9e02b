"""Production behaviours on real local servers: S3 (moto) everywhere, crash safety of publication,
incremental refresh, retry of a failed flow run, lineage, and the Dask task runner.

Counts come from outside the process under test: offline call counters under the storage root,
task-run states read through the Prefect API, and the files in the store.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import textwrap
from pathlib import Path
from uuid import UUID

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from helmflow.clients.offline import offline_call_count
from helmflow.storage import TMP_PREFIX, Store
from tests.support import release_faults
from tests.support.cli import flow_run_id_from, run_cli, spawn_cli, task_runs_of

pytestmark = pytest.mark.slow


def _ok(out: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert out.returncode == 0, out.stdout + out.stderr
    return out


# --------------------------------------------------------------------------- S3
def test_s3_cache_hit_across_processes_and_release_read_with_pyarrow(prefect_server, s3_root, moto_s3, tmp_path):
    args = ["run", "demo", "--max-instances", "4", "--models", "offline/solver,offline/echo",
            "--scenarios", "dyck-3", "--storage", s3_root]
    _ok(run_cli(*args, cwd=tmp_path))
    store = Store(s3_root)
    counts = offline_call_count(store, "offline/solver")
    second = _ok(run_cli(*args, "--force-flow", cwd=tmp_path))
    assert {tr.state.name for tr in task_runs_of(flow_run_id_from(second))} == {"Cached"}
    assert offline_call_count(store, "offline/solver") == counts == 4
    third = _ok(run_cli(*args, cwd=tmp_path))  # the release on S3 is found without starting Prefect
    assert "no Prefect flow run was started" in third.stdout and "flow run:" not in third.stdout

    # read the release straight from S3 with pyarrow's own S3 client, not ours
    latest = store.read_json("leaderboards/demo/latest-subset.json")
    s3 = pafs.S3FileSystem(endpoint_override=moto_s3, access_key="testing", secret_key="testing", region="us-east-1", scheme="http")
    table = pq.read_table(latest["uri"].removeprefix("s3://") + "/leaderboard.parquet", filesystem=s3)
    assert sorted(table.column("deployment").to_pylist()) == ["offline/echo", "offline/solver"]
    assert table.schema.metadata[b"helmflow.release_id"].decode() == latest["release_id"]


def test_crash_between_leaderboard_and_latest_keeps_previous_release(prefect_server, s3_root, tmp_path):
    base = ["run", "demo", "--max-instances", "3", "--scenarios", "dyck-3", "--storage", s3_root]
    _ok(run_cli(*base, "--models", "offline/solver", cwd=tmp_path))
    store = Store(s3_root)
    before = store.read_json("leaderboards/demo/latest-subset.json")

    crashed = run_cli(*base, "--models", "offline/solver,offline/echo", cwd=tmp_path,
                      env=release_faults.fault_env("after-leaderboard"))
    assert crashed.returncode != 0
    assert store.read_json("leaderboards/demo/latest-subset.json") == before
    prefix = before["uri"].removeprefix(s3_root + "/")
    assert store.read_parquet(f"{prefix}/leaderboard.parquet").num_rows == 1
    assert store.read_json(f"{prefix}/release.json")["status"] == "complete"


def test_killed_local_writer_leaves_only_ignored_temporaries_that_compact_removes(tmp_path):
    root = tmp_path / "store"
    script = textwrap.dedent(f"""
        import os, time
        from helmflow.storage import Store
        store = Store({str(root)!r})
        store.write_json("leaderboards/b/latest.json", {{"release_id": "old"}})
        def hang(src, dst):
            print("writing", flush=True)
            time.sleep(60)
        os.replace = hang
        store.write_json("leaderboards/b/latest.json", {{"release_id": "new"}})
    """)
    proc = spawn_cli([], code=script, cwd=Path.cwd(), stdout=subprocess.PIPE)  # forked, as `python -c script`
    assert proc.stdout.readline().strip() == "writing"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    store = Store(str(root))
    temporaries = [p for p in (root / "leaderboards" / "b").iterdir() if p.name.startswith(TMP_PREFIX)]
    assert len(temporaries) == 1
    assert store.ls("leaderboards/b") == ["leaderboards/b/latest.json"]
    assert store.read_json("leaderboards/b/latest.json") == {"release_id": "old"}

    out = _ok(run_cli("compact", "--storage", str(root), "--older-than", "0"))
    assert "removed 1 temporaries" in out.stdout
    assert not [p for p in (root / "leaderboards" / "b").iterdir() if p.name.startswith(TMP_PREFIX)]


# --------------------------------------------------------------------------- incremental refresh
PLUGIN = '''
from pydantic import BaseModel, ConfigDict
from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import Scenario, scenario


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    revision: str = "r1"


@scenario("revisioned_sums")
class RevisionedSums(Scenario):
    """Sums whose 'dataset' has a revision, to show a new revision re-runs only this scenario."""

    VERSION = "1"
    Params = Params
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    default_adapter = AdapterSpec(max_train_instances=0, generation=GenerationParams(max_tokens=5, stop=["\\n"]))

    def dataset_revision(self) -> str:
        return self.params.revision

    def load(self, files):
        offset = 1 if self.params.revision == "r1" else 100
        return [Instance(id=f"s{i}", input=Input(text=f"What is {i} + {offset}?"),
                         references=[Reference(text=str(i + offset), correct=True)]) for i in range(4)]
'''


def _board(path, models, revision):
    path.write_text(json.dumps({
        "name": "nightly", "version": "1", "models": models, "max_instances": 4,
        "scenarios": [
            {"name": "arithmetic", "params": {"digits": 2}, "label": "arith"},
            {"name": "revisioned_sums", "params": {"revision": revision}, "label": "sums"},
        ],
    }))
    return path


def _run_dirs(root):
    return {p.name for p in (root / "runs").iterdir()} if (root / "runs").exists() else set()


def _releases(root):
    return sorted(p.name for p in (root / "leaderboards" / "nightly").iterdir() if p.is_dir())


def test_incremental_refresh_new_model_new_revision_unchanged(prefect_server, tmp_path):
    root = tmp_path / "store"
    plugin = tmp_path / "revisioned.py"
    plugin.write_text(PLUGIN)
    store = Store(str(root))
    run = lambda board: run_cli("--plugin", str(plugin), "run", "--board-file", str(board), "--storage", str(root))  # noqa: E731

    _ok(run(_board(tmp_path / "b1.yaml", ["offline/solver"], "r1")))
    runs1, solver1 = _run_dirs(root), offline_call_count(store, "offline/solver")
    assert len(runs1) == 2 and solver1 == 8

    # a model is added: only its two runs are evaluated, and a new release is published
    _ok(run(_board(tmp_path / "b2.yaml", ["offline/solver", "offline/echo"], "r1")))
    runs2 = _run_dirs(root)
    assert len(runs2 - runs1) == 2 and offline_call_count(store, "offline/solver") == solver1
    assert offline_call_count(store, "offline/echo") == 8
    assert len(_releases(root)) == 2

    # a new dataset revision for one scenario: only that scenario's runs (both models) re-run
    third = _ok(run(_board(tmp_path / "b3.yaml", ["offline/solver", "offline/echo"], "r2")))
    runs3 = _run_dirs(root)
    assert len(runs3 - runs2) == 2
    assert offline_call_count(store, "offline/solver") == solver1 + 4
    executed = {tr.name for tr in task_runs_of(flow_run_id_from(third)) if tr.state.name != "Cached"}
    assert executed and all("sums" in n or n.startswith(("prepare", "release")) for n in executed), executed

    # unchanged: nothing is evaluated and no release is written
    releases = _releases(root)
    _ok(run(_board(tmp_path / "b4.yaml", ["offline/solver", "offline/echo"], "r2")))
    assert _releases(root) == releases and _run_dirs(root) == runs3
    assert offline_call_count(store, "offline/solver") == solver1 + 4


# --------------------------------------------------------------------------- retry + lineage
def test_helmflow_retry_says_what_reruns_then_reruns_it(prefect_server, tmp_path):
    root = tmp_path / "store"
    models = tmp_path / "models.yaml"
    models.write_text("deployments:\n  - {name: flaky/echo, client: offline, model: echo, options: {behavior: echo, fail: always}}\n")
    args = ["run", "demo", "--max-instances", "3", "--scenarios", "dyck-3", "--models", "offline/solver,flaky/echo",
            "--models-file", str(models), "--storage", str(root)]
    failed = run_cli(*args)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    flow_run_id = flow_run_id_from(failed)

    models.write_text("deployments:\n  - {name: flaky/echo, client: offline, model: echo, options: {behavior: echo}}\n")
    dry = _ok(run_cli("retry", str(flow_run_id), "--dry-run"))
    assert "will re-execute 1 pair(s)" in dry.stdout and "dyck-3 x flaky/echo" in dry.stdout
    assert "offline/solver" not in dry.stdout.split("every other task")[-1]
    _ok(run_cli("retry", str(flow_run_id)))
    store = Store(str(root))
    # the first permanent error stopped the pair (1 call); the retry sent its 3 requests
    assert offline_call_count(store, "flaky/echo") == 1 + 3
    assert offline_call_count(store, "offline/solver") == 3
    assert store.read_json("leaderboards/demo/latest-subset.json")["status"] == "complete"


def test_lineage_matches_run_json_and_prefect(prefect_server, tmp_path):
    root = tmp_path / "store"
    _ok(run_cli("run", "demo", "--max-instances", "3", "--scenarios", "dyck-3,arithmetic-3", "--models",
                "offline/solver", "--storage", str(root)))
    everything = _ok(run_cli("lineage", "demo", "--storage", str(root)))
    assert "dyck-3 x offline/solver" in everything.stdout and "arithmetic-3 x offline/solver" in everything.stdout
    out = _ok(run_cli("lineage", "demo", "--storage", str(root), "--cell", "dyck-3 x offline/solver"))
    assert "arithmetic-3 x" not in out.stdout  # the release's own header still names its subset
    assert _ok(run_cli("lineage", "demo", "--storage", str(root), "--scenario", "dyck-3")).stdout == out.stdout
    bad = run_cli("lineage", "demo", "--storage", str(root), "--model", "offline/ghost")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "offline/ghost" in bad.stderr, bad.stderr
    store = Store(str(root))
    run_id = re.search(r"run ([0-9a-f]{16})", out.stdout).group(1)
    run = store.read_json(f"runs/{run_id}/run.json")
    for field in ("scenario_version", "prompt_version", "model_version", "metric_version"):
        assert f"{field} {run['versions'][field]}" in out.stdout
    assert f"dataset revision {run['dataset']['revision']}" in out.stdout
    assert f"Prefect flow run {run['lineage']['flow_run_id']}" in out.stdout
    # one task queries, scores and publishes a pair: its id is printed once, saying what it covers
    lineage = run["lineage"]
    assert lineage["query_task_run_id"] == lineage["score_task_run_id"] == lineage["publish_task_run_id"]
    assert f"task run {lineage['query_task_run_id']} (query, score and publish)" in out.stdout
    assert out.stdout.count(lineage["query_task_run_id"]) == 1

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        task_run = client.read_task_run(UUID(run["lineage"]["query_task_run_id"]))
        subflow = client.read_flow_run(task_run.flow_run_id)  # the scenario's subflow run, inside the board's
        standing_for = client.read_task_run(subflow.parent_task_run_id)
    assert task_run.name == "run dyck-3 x offline/solver"
    assert task_run.state.is_completed()
    assert subflow.name == "demo dyck-3" and str(subflow.id) != run["lineage"]["flow_run_id"]
    assert str(standing_for.flow_run_id) == run["lineage"]["flow_run_id"]


# --------------------------------------------------------------------------- Dask
def test_dask_runner_gives_same_runs_and_leaderboard_as_threads(prefect_server, tmp_path):
    import prefect_dask  # noqa: F401 - the dask extra is part of the test install; missing is a failure
    results = {}
    for runner in ("thread", "dask"):
        root = tmp_path / runner
        _ok(run_cli("run", "demo", "--max-instances", "3", "--scenarios", "arithmetic-3,dyck-3",
                    "--models", "offline/solver,offline/solver-noisy", "--storage", str(root), "--task-runner", runner,
                    timeout=600))
        store = Store(str(root))
        latest = store.read_json("leaderboards/demo/latest-subset.json")
        prefix = latest["uri"].removeprefix(str(root) + "/")
        board = store.read_parquet(f"{prefix}/leaderboard.parquet").to_pylist()
        runs = sorted(store.read_parquet(f"{prefix}/runs.parquet").column("run_id").to_pylist())
        results[runner] = (runs, board, latest["release_id"].split("-")[-1])
    assert results["thread"] == results["dask"]
