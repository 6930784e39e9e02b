"""``helmflow eval``: scenario specs + models + adapter overrides as an ad-hoc board through the same flow."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helmflow.clients.offline import offline_call_count
from helmflow.storage import Store
from tests.support.cli import run_cli


@pytest.mark.parametrize(
    "args, message",
    [
        (["dyck_language:num_parenthesis_pairs=2"], "eval needs --models"),
        (["dyck_language:num_parenthesis_pairs=9", "--models", "offline/solver"], "num_parenthesis_pairs"),
        (["dyck_language:num_parenthesis_pairs", "--models", "offline/solver"], "expected key=value"),
        (["nothing:x=1", "--models", "offline/solver"], "unknown scenario 'nothing'"),
        (["arithmetic", "--models", "offline/solver", "--adapter", "bogus=1"], "unknown adapter field 'bogus'"),
        (["arithmetic", "--models", "offline/solver", "--adapter", "method=telepathy"], "unknown adapter method 'telepathy'"),
        (["arithmetic", "--models", "offline/ghost"], "unknown model(s) offline/ghost"),
        (["arithmetic", "--models", "offline/solver", "--metrics", "nope"], "unknown metric 'nope'"),
    ],
)
def test_bad_eval_input_is_one_clear_error_before_any_work(tmp_path: Path, args, message):
    out = run_cli("eval", *args, "--storage", str(tmp_path / "store"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr, out.stderr
    assert not (tmp_path / "store").exists()


@pytest.mark.slow
def test_eval_runs_an_ad_hoc_board_through_the_flow(prefect_server, tmp_path: Path):
    root = tmp_path / "store"
    args = ["eval", "synthetic_reasoning:mode=variable_substitution,num_valid=0,num_test=20", "arithmetic:choices=3",
            "--models", "offline/solver,offline/echo", "--adapter", "max_train_instances=1",
            "--max-instances", "6", "--storage", str(root)]
    out = run_cli(*args)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "flow run:" in out.stdout and "eval-synthetic_reasoning" in out.stdout
    (board_dir,) = root.glob("leaderboards/eval-synthetic_reasoning-*")  # the name carries the spec's hash
    latest = json.loads((board_dir / "latest.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    label = "synthetic_reasoning:mode=variable_substitution,num_valid=0,num_test=20"
    assert rows["offline/solver"][label] == 1.0 and rows["offline/echo"][label] == 0.0
    assert rows["offline/solver"]["arithmetic:choices=3"] == 1.0
    runs = [json.loads(p.read_text()) for p in root.glob("runs/*/run.json")]
    assert len(runs) == 4
    assert {r["adapter"]["max_train_instances"] for r in runs} == {1}
    assert {r["adapter"]["method"] for r in runs} == {"generation", "multiple_choice_joint"}
    assert {r["counts"]["requests"] for r in runs} == {6}
    # the same eval again reuses every task: nothing is re-sent, the release is the same one
    calls = offline_call_count(Store(str(root)), "offline/solver")
    assert calls == 12
    again = run_cli(*args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert offline_call_count(Store(str(root)), "offline/solver") == calls
    assert json.loads((board_dir / "latest.json").read_text()) == latest
    # another evaluation of the same scenario is another board: it never moves this one's latest.json
    other = run_cli("eval", "synthetic_reasoning:mode=variable_substitution,num_valid=0,num_test=20",
                    "--models", "offline/echo", "--max-instances", "3", "--storage", str(root))
    assert other.returncode == 0, other.stdout + other.stderr
    assert len(list(root.glob("leaderboards/eval-synthetic_reasoning-*"))) == 2
    assert json.loads((board_dir / "latest.json").read_text()) == latest


def _board(*argv: str) -> dict:
    from helmflow.cli import build_parser
    from helmflow.cli.eval import board_spec

    return board_spec(build_parser().parse_args(["eval", *argv]))


def test_a_file_scenario_is_named_after_its_file():
    spec = _board("custom:path=/data/exams/quiz.jsonl,answer=answer,id=id", "--models", "offline/solver")
    (entry,) = spec["scenarios"]
    assert entry["label"] == "quiz" and spec["name"].startswith("eval-quiz-")
    assert entry["params"]["path"] == "/data/exams/quiz.jsonl"  # the full spec stays in the run's parameters
    both = _board("custom:path=/a/quiz.csv", "custom:path=s3://b/quiz.csv?versionId=3", "--models", "offline/solver")
    assert [e["label"] for e in both["scenarios"]] == ["custom:path=/a/quiz.csv", "custom:path=s3://b/quiz.csv?versionId=3"]
    named = _board("custom:path=/a/quiz.csv,label=Quiz A", "--models", "offline/solver")
    assert named["scenarios"][0]["label"] == "Quiz A"
    plain = _board("arithmetic:choices=3", "--models", "offline/solver")
    assert plain["scenarios"][0]["label"] == "arithmetic:choices=3" and plain["name"].startswith("eval-arithmetic-")
