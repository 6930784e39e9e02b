"""Releases logged to MLflow: a board run through the real command against a real ``mlflow server`` on
127.0.0.1 (a local SQLite backend store, artifacts in a folder), read back with MLflow's own client."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support.cli import run_cli, run_python
from tests.support.processes import free_port, stop_process, wait_http


@pytest.mark.slow
def test_a_bad_track_target_is_one_line_before_any_work(tmp_path: Path):
    out = run_cli("run", "demo", "--track", "neptune:somewhere", "--storage", str(tmp_path / "s"))
    assert out.returncode == 2 and "give mlflow:URI" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    pytest.importorskip("mlflow")
    root = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    log = (root / "server.log").open("w")
    # MLflow's job execution (huey consumers for its GenAI jobs: seven processes, about 7 CPU-s to start) is off:
    # helmflow logs runs, params, metrics and artifacts, none of which goes through a job
    env = dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("mlflow")), "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}", "--artifacts-destination", str(root / "artifacts"),
         "--workers", "1"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/health", timeout=240, proc=proc)
        yield url
    finally:
        stop_process(proc, timeout=5)  # a server that takes longer to stop on SIGTERM is killed
        log.close()


@pytest.mark.slow
def test_each_release_becomes_an_mlflow_run(prefect_server, mlflow_server: str, tmp_path: Path):
    from mlflow.tracking import MlflowClient

    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "tracked", "version": "1", "models": ["offline/solver", "offline/solver-noisy"], "max_instances": 4,
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "ops": "+"}, "label": "add"},
                      {"name": "arithmetic", "params": {"digits": 2, "ops": "-"}, "label": "sub"}],
        "tracking": {"mlflow": {"uri": mlflow_server, "experiment": "helmflow-boards"}},
    }))
    root = tmp_path / "store"
    out = run_cli("run", "--board-file", str(board), "--storage", str(root))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "as MLflow run" in out.stdout and "experiment 'helmflow-boards'" in out.stdout, out.stdout

    [release_dir] = root.glob("leaderboards/tracked/*-*/")
    rows = {r["deployment"]: r for r in pq.read_table(release_dir / "leaderboard.parquet").to_pylist()}
    client = MlflowClient(tracking_uri=mlflow_server)
    experiment = client.get_experiment_by_name("helmflow-boards")
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == f"tracked {release_dir.name}"
    assert run.data.tags["helmflow.release_id"] == release_dir.name
    params, metrics = run.data.params, run.data.metrics
    assert params["board"] == "tracked" and params["release_id"] == release_dir.name
    runs = pq.read_table(release_dir / "runs.parquet").to_pylist()
    for r in runs:
        assert params[f"{r['scenario']}/{r['deployment']}/run_id"] == r["run_id"]
        assert params[f"{r['scenario']}/{r['deployment']}/model_version"]
    for deployment, row in rows.items():
        for column in ("add", "add ci_low", "add ci_high", "sub", "mean_score"):
            assert math.isclose(metrics[f"{deployment}/{column}"], row[column]), (deployment, column)
    assert metrics["offline/solver/add"] == 1.0  # the solver answers every sum
    files = {f.path for f in client.list_artifacts(run.info.run_id, "release")}
    assert files == {"release/leaderboard.parquet", "release/runs.parquet", "release/release.json"}
    report = {f.path for f in client.list_artifacts(run.info.run_id, "report")}
    assert "report/index.html" in report, report
    local = client.download_artifacts(run.info.run_id, "release/leaderboard.parquet", str(tmp_path / "dl"))
    assert Path(local).read_bytes() == (release_dir / "leaderboard.parquet").read_bytes()

    # the same release is not logged twice, whether the board runs again or `track` is asked
    again = run_cli("track", "tracked", "--to", f"mlflow:{mlflow_server}", "--experiment", "helmflow-boards",
                    "--storage", str(root))
    assert again.returncode == 0 and "nothing logged" in again.stdout, again.stdout + again.stderr
    assert len(client.search_runs([experiment.experiment_id])) == 1


@pytest.mark.slow
def test_a_deployments_refreshes_each_add_an_mlflow_run(prefect_server, mlflow_server: str, tmp_path: Path):
    """The board's flow called as a worker calls it (no `helmflow run` around it): each refresh that publishes a
    new release logs it itself, without the static report, which `helmflow track` then adds."""
    from mlflow.tracking import MlflowClient

    board = tmp_path / "nightly.yaml"
    board.write_text(yaml.safe_dump({
        "name": "nightly", "version": "1", "models": ["offline/solver"], "max_instances": 3,
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "ops": "+"}, "label": "add"}],
        "tracking": {"mlflow": {"uri": mlflow_server, "experiment": "nightly-board"}},
    }))
    root = tmp_path / "store"
    code = ("import sys\nfrom helmflow.flows.evaluate import evaluate\n"
            "for n in (3, 3, 4):  # two nights of the same board, then a night after it grew\n"
            "    s = evaluate(board=sys.argv[1], selection={'max_instances': n}, storage=sys.argv[2], return_state=True)\n"
            "    print('release:', s.state_details.flow_run_id, s.result()['release_id'])\n")
    out = run_python(code, str(board), str(root), cwd=Path.cwd(), timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    _, releases = zip(*(line.split()[1:] for line in out.stdout.splitlines() if line.startswith("release:")))
    assert len(releases) == 3 and releases[0] == releases[1] != releases[2], releases

    client = MlflowClient(tracking_uri=mlflow_server)
    experiment = client.get_experiment_by_name("nightly-board")
    runs = {r.data.tags["helmflow.release_id"]: r for r in client.search_runs([experiment.experiment_id])}
    assert set(runs) == {releases[0], releases[2]}  # one MLflow run per release: the charts follow the board
    for release_id, run in runs.items():
        assert run.info.status == "FINISHED" and run.data.tags["helmflow.report"] == "missing"
        row = pq.read_table(root / "leaderboards" / "nightly" / release_id / "leaderboard.parquet").to_pylist()[0]
        assert math.isclose(run.data.metrics["offline/solver/add"], row["add"])
        assert {f.path for f in client.list_artifacts(run.info.run_id, "release")} == {
            "release/leaderboard.parquet", "release/runs.parquet", "release/release.json"}
        assert not client.list_artifacts(run.info.run_id, "report")

    added = run_cli("track", "nightly", "--release", releases[2], "--to", f"mlflow:{mlflow_server}",
                    "--experiment", "nightly-board", "--storage", str(root))
    assert added.returncode == 0 and "its report added" in added.stdout, added.stdout + added.stderr
    latest = client.get_run(runs[releases[2]].info.run_id)
    assert latest.data.tags["helmflow.report"] == "logged", latest.data.tags
    assert "report/index.html" in {f.path for f in client.list_artifacts(latest.info.run_id, "report")}
    assert len(client.search_runs([experiment.experiment_id])) == 2
