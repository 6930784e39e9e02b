"""Small things a user hits: `serve` says it serves only once it does, `eval` specs take
`label=`, and a custom file's `split` column is read without being mapped."""

from __future__ import annotations

import socket
import subprocess

import httpx
import pytest

from helmflow.cli import build_parser
from helmflow.cli.eval import board_spec
from helmflow.datasets import read_instances
from helmflow.pipeline import download_scenario
from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import ScenarioEntry
from tests.support.cli import REPO, run_cli, spawn_cli
from tests.support.processes import stop_process


def test_serve_on_a_taken_port_is_one_line(tmp_path):
    """Reproduced first: `serve` printed "serving … at http://127.0.0.1:P/" and then uvicorn's bind error."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = run_cli("serve", "--port", str(port), "--storage", str(tmp_path / "store"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "serving" not in out.stdout
    assert out.stderr.strip().splitlines() == [
        f"helmflow: error: cannot serve on 127.0.0.1:{port}: Address already in use (another server is using it: pass --port)"]


@pytest.mark.slow  # starts the web server
def test_serve_prints_its_url_once_it_accepts_connections(tmp_path):
    proc = spawn_cli(["serve", "--port", "0", "--storage", str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE,
                     start_new_session=True)
    try:
        for line in proc.stdout:
            if line.startswith("serving"):
                break
        url = line.split(" at ")[1].strip()
        assert httpx.get(url, timeout=60).status_code == 200  # no retry: bound and listening before the print
    finally:
        stop_process(proc)


def test_eval_spec_label_names_the_board_row():
    args = build_parser().parse_args(["eval", "dyck_language:num_parenthesis_pairs=3,label=dyck-3", "arithmetic",
                                 "--models", "offline/solver"])
    spec = board_spec(args)
    assert [(s["label"], s["params"]) for s in spec["scenarios"]] == [
        ("dyck-3", {"num_parenthesis_pairs": "3"}), ("arithmetic", {})]


def test_eval_dry_run_shows_the_label(tmp_path):
    out = run_cli("eval", "dyck_language:num_parenthesis_pairs=2,label=dyck-two", "--models", "offline/echo",
                  "--max-instances", "2", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "dyck-two" in out.stdout and "num_parenthesis_pairs=2" not in out.stdout


@pytest.mark.parametrize(("params", "splits"), [
    ({}, {"q1": "train", "q2": "test", "q3": "valid"}),             # a column named `split`: read by default
    ({"split": "part"}, {"q1": "test", "q2": "train", "q3": "test"}),  # another column, mapped
])
def test_custom_split_column_is_read_by_default(tmp_path, store, params, splits):
    """Reproduced first: without `split=split` every row, train rows included, was evaluated as test."""
    path = tmp_path / "quiz.csv"
    path.write_text("id,question,answer,split,part\nq1,One?,1,train,test\nq2,Two?,2,test,train\nq3,Three?,3,valid,test\n",
                    encoding="utf-8")
    plan = plan_scenario(ScenarioEntry(name="custom", params={"path": str(path), "id": "id", **params}), None)
    instances = read_instances(store, download_scenario(store, plan).instances_key)
    assert {i.id: i.split for i in instances} == splits


def test_custom_without_a_split_column_is_all_test(tmp_path, store):
    path = tmp_path / "quiz.csv"
    path.write_text("question,answer\nOne?,1\nTwo?,2\n", encoding="utf-8")
    plan = plan_scenario(ScenarioEntry(name="custom", params={"path": str(path)}), None)
    assert {i.split for i in read_instances(store, download_scenario(store, plan).instances_key)} == {"test"}


def test_a_list_option_naming_nothing_is_an_error_not_the_default(tmp_path):
    for flag in ("--models", "--scenarios"):
        out = run_cli("run", "demo", flag, ",", "--dry-run", "--storage", str(tmp_path / "s"))
        assert out.returncode == 2, out.stdout + out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and "names nothing" in out.stderr and out.stdout == ""
