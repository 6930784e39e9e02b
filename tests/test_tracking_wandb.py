"""Releases logged as offline Weights & Biases runs: the real command (``track --to wandb:…``, ``run --track
wandb:…``) with no API key and every host the SDK could reach pointed at a local socket that counts connections;
the run files read back with wandb's own record messages (:mod:`tests.support.wandb_offline`)."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.storage import Store
from tests.support.cli import run_cli
from tests.support.network import ConnectionCounter
from tests.support.tiny_board import TINY
from tests.support.wandb_offline import OfflineRun, read_run

PROJECT = "helmflow-boards"


@pytest.fixture
def no_network(monkeypatch):
    """No W&B key or mode in the environment (helmflow sets offline mode itself); W&B's server and every proxied
    host at the counter (on 127.0.0.2: a request to it as W&B's base URL goes through the proxy, the counter again);
    127.0.0.1 reached directly (the Prefect API)."""
    counter = ConnectionCounter()
    for name in [n for n in os.environ if n.startswith("WANDB_")]:
        monkeypatch.delenv(name)
    env = {"WANDB_BASE_URL": counter.url, "HTTP_PROXY": counter.url, "HTTPS_PROXY": counter.url,
           "http_proxy": counter.url, "https_proxy": counter.url, "NO_PROXY": "127.0.0.1,localhost",
           "no_proxy": "127.0.0.1,localhost"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield counter
    counter.sock.close()


@pytest.fixture(scope="module")
def tiny_release(tmp_path_factory) -> tuple[Store, str]:
    from helmflow import pipeline
    from helmflow.plan.compile import prepare
    from tests.support.tiny_board import release

    root = tmp_path_factory.mktemp("wandb-store")
    board = root / "tiny.yaml"
    board.write_text(TINY)
    store = Store(str(root / "store"))
    return store, release(store, pipeline.preflight(store, prepare(str(board)))).release_id


def _md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def check_release_run(run: OfflineRun, store: Store, board: str, release_id: str, *, report: bool) -> None:
    """The offline run holds the release: its versions as config, every numeric cell as summary, its files as
    artifacts (each entry's digest the md5 of the store's bytes, its file beside the run)."""
    prefix = f"leaderboards/{board}/{release_id}"
    assert run.exit_code == 0 and run.run.project == PROJECT and run.run.display_name == f"{board} {release_id}"
    assert run.run.job_type == "helmflow-release" and run.run.run_group == board
    config = run.config
    assert (config["board"], config["release_id"], config["status"]) == (board, release_id, "complete")
    assert config["report"] == ("logged" if report else "missing")
    for r in pq.read_table(Path(store.root, prefix, "runs.parquet")).to_pylist():
        cell = f"{r['scenario']}/{r['deployment']}"
        assert config[f"{cell}/run_id"] == r["run_id"] and config[f"{cell}/main_metric"] == r["main_metric"]
        manifest = json.loads(store.read_bytes(f"runs/{r['run_id']}/run.json"))
        for name, value in manifest["versions"].items():
            assert config[f"{cell}/{name}"] == value, (cell, name)
    cells = {}
    for row in pq.read_table(Path(store.root, prefix, "leaderboard.parquet")).to_pylist():
        for column, value in row.items():
            if column != "deployment" and isinstance(value, int | float) and not isinstance(value, bool) \
                    and math.isfinite(value):
                cells[f"{row['deployment']}/{column}"] = float(value)
    assert any(k.endswith(" ci_low") for k in cells) and any(k.endswith(" ci_high") for k in cells)
    summary = {k: v for k, v in run.summary.items() if not k.startswith("_")}
    assert summary.keys() == cells.keys()
    for k, v in cells.items():
        assert math.isclose(summary[k], v), k
    [step] = run.history
    assert {k: v for k, v in step.items() if not k.startswith("_")} == summary

    artifacts = {a.type: a for a in run.artifacts}
    assert set(artifacts) == ({"helmflow-release", "helmflow-report"} if report else {"helmflow-release"})
    files = artifacts["helmflow-release"]
    assert files.name == f"{board}-release" and set(files.aliases) == {release_id, "latest"}
    assert json.loads(files.metadata)["release_id"] == release_id
    contents = {c.path: c for c in files.manifest.contents}
    assert set(contents) == {f"release/{f}" for f in ("leaderboard.parquet", "runs.parquet", "release.json")}
    for path, entry in contents.items():
        data = store.read_bytes(f"{prefix}/{path.removeprefix('release/')}")
        assert entry.digest == _md5(data) and entry.size == len(data)
        local = Path(entry.local_path)
        assert local.is_relative_to(run.folder) and local.read_bytes() == data  # `wandb sync` finds it there
    if report:
        pages = {c.path for c in artifacts["helmflow-report"].manifest.contents}
        assert "report/index.html" in pages and any(p.startswith("report/runs/") for p in pages), pages


def offline_runs(folder: Path) -> list[Path]:
    return sorted(folder.glob("wandb/offline-run-*"))


def test_a_release_becomes_an_offline_wandb_run_without_the_network(tiny_release, no_network, tmp_path: Path):
    store, release_id = tiny_release
    runs_dir = tmp_path / "wb"
    out = run_cli("track", "tiny", "--to", f"wandb:{PROJECT}:{runs_dir}", "--storage", store.root)
    assert out.returncode == 0, out.stdout + out.stderr
    [folder] = offline_runs(runs_dir)
    assert f"tracked   tiny {release_id} as W&B offline run" in out.stdout
    assert f"`wandb sync {folder}` uploads it" in out.stdout, out.stdout
    run = read_run(folder)
    assert run.run.run_id in folder.name and run.run.run_id.startswith(f"tiny-{release_id}-")
    check_release_run(run, store, "tiny", release_id, report=True)

    # the same release again: nothing logged, no second offline run
    again = run_cli("track", "tiny", "--to", f"wandb:{PROJECT}:{runs_dir}", "--storage", store.root)
    assert again.returncode == 0 and "is already W&B offline run" in again.stdout and "nothing logged" in again.stdout
    assert offline_runs(runs_dir) == [folder]
    assert no_network.connections == 0  # not one connection to W&B or through a proxy


def test_bad_wandb_targets_are_one_line_before_any_work(tiny_release, tmp_path: Path, capsys):
    from helmflow.cli import main

    store, _ = tiny_release
    board = tmp_path / "bad.yaml"
    board.write_text(TINY + "tracking: {wandb: {project: 'a?b'}}\n")
    for args, said in ((["run", "demo", "--track", "wandb:"], "give mlflow:URI"),
                       (["run", "demo", "--track", "wandb:team/proj"], "W&B project 'team/proj'"),
                       (["run", "demo", "--track", "neptune:proj"], "or wandb:PROJECT[:DIR]"),
                       (["run", "--board-file", str(board)], "W&B project 'a?b'"),
                       (["track", "tiny", "--to", "wandb:proj", "--experiment", "x"], "a W&B target names its project")):
        storage = store.root if args[0] == "track" else str(tmp_path / "s")
        assert main([*args, "--storage", storage]) == 2, args
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, (args, err)
    assert not (tmp_path / "s").exists()
    assert not Path("wandb").exists() and not (Path(store.root) / "wandb").exists()


@pytest.mark.slow
def test_run_track_wandb_logs_the_release_it_publishes(prefect_server, no_network, tmp_path: Path):
    board = tmp_path / "board.yaml"
    spec = yaml.safe_load(TINY)
    spec["name"] = "tracked-wb"
    board.write_text(yaml.safe_dump(spec))
    root = tmp_path / "store"
    runs_dir = tmp_path / "wb"
    out = run_cli("run", "--board-file", str(board), "--storage", str(root), "--track", f"wandb:{PROJECT}:{runs_dir}")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "as W&B offline run" in out.stdout, out.stdout
    [release_dir] = root.glob("leaderboards/tracked-wb/*-*/")
    [folder] = offline_runs(runs_dir)
    check_release_run(read_run(folder), Store(str(root)), "tracked-wb", release_dir.name, report=True)
    assert no_network.connections == 0


@pytest.mark.slow
def test_a_flow_runs_release_is_logged_from_the_board_spec_and_track_adds_its_report(prefect_server, no_network,
                                                                                    tmp_path: Path):
    """The board's flow called as a worker calls it (no `helmflow run` around it): its `tracking: {wandb}` logs the
    release without the report; `helmflow track` then logs the report in a report-only run of the same group."""
    import subprocess
    import sys

    runs_dir = tmp_path / "wb"
    spec = yaml.safe_load(TINY)
    spec.update(name="nightly-wb", models=["offline/solver"], scenarios=spec["scenarios"][:1],  # one cell is enough
                tracking={"wandb": {"project": PROJECT, "dir": str(runs_dir)}})
    board = tmp_path / "nightly.yaml"
    board.write_text(yaml.safe_dump(spec))
    root = tmp_path / "store"
    code = ("import sys\nfrom helmflow.flows.evaluate import evaluate\n"
            "s = evaluate(board=sys.argv[1], storage=sys.argv[2], return_state=True)\n"
            "print('release:', s.result()['release_id'])\n")
    out = subprocess.run([sys.executable, "-c", code, str(board), str(root)], capture_output=True, text=True,
                         timeout=600, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    [release_id] = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("release:")]
    [folder] = offline_runs(runs_dir)
    store = Store(str(root))
    check_release_run(read_run(folder), store, "nightly-wb", release_id, report=False)

    added = run_cli("track", "nightly-wb", "--to", f"wandb:{PROJECT}:{runs_dir}", "--storage", str(root))
    assert added.returncode == 0 and "its report added" in added.stdout, added.stdout + added.stderr
    [report_folder] = [f for f in offline_runs(runs_dir) if f != folder]
    report = read_run(report_folder)
    assert report.exit_code == 0 and report.run.job_type == "helmflow-report" and report.run.run_group == "nightly-wb"
    assert report.run.run_id == read_run(folder).run.run_id + "-report"
    [artifact] = report.artifacts
    assert artifact.name == "nightly-wb-report" and release_id in artifact.aliases
    assert "report/index.html" in {c.path for c in artifact.manifest.contents}
    again = run_cli("track", "nightly-wb", "--to", f"wandb:{PROJECT}:{runs_dir}", "--storage", str(root))
    assert again.returncode == 0 and "nothing logged" in again.stdout, again.stdout + again.stderr
    assert len(offline_runs(runs_dir)) == 2
    assert no_network.connections == 0
