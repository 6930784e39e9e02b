"""The file-backed scenario: column mapping, pinning by sha256, mirroring with a manifest, schema errors,
and (slow) a board file that uses it, run through the CLI and the flow."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helmflow.datasets import read_instances
from helmflow.pipeline import download_scenario
from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import ScenarioEntry
from tests.support.cli import run_cli

# Items written for these tests (not from any benchmark).
CSV = (
    "id,question,a,b,c,answer,split\n"
    "q1,What colour is a clear daytime sky?,green,blue,red,B,train\n"
    'q2,"How many legs does a spider have, usually?",eight,six,four,0,test\n'
    "q3,Which word is spelled with a diaeresis?,naive,naïve,knave,naïve,test\n"
)
JSONL = (
    '{"key": "x1", "prompt": "2 + 2 = ?", "options": ["3", "4"], "label": "B"}\n'
    "\n"
    '{"key": "x2", "prompt": "Capital letter of ünïcode?", "options": ["Ü", "U"], "label": "A"}\n'
)


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    path = tmp_path / "quiz.csv"
    path.write_text(CSV, encoding="utf-8")
    return path


def _params(path: Path, **extra) -> dict:
    return {"path": str(path), "choices": "a|b|c", "id": "id", "split": "split", **extra}


def test_csv_rows_become_instances_and_are_mirrored_with_a_checksum_manifest(csv_file, store):
    plan = plan_scenario(ScenarioEntry(name="custom", params=_params(csv_file)), None)
    digest = hashlib.sha256(CSV.encode()).hexdigest()
    assert plan.dataset_revision == digest and plan.checksums == {"quiz.csv": digest}
    assert plan.adapter.method == "multiple_choice_joint"
    data = download_scenario(store, plan)
    prefix = f"datasets/custom/{digest}"
    assert store.read_json(f"{prefix}/manifest.json") == {"quiz.csv": digest}
    assert store.read_bytes(f"{prefix}/quiz.csv") == CSV.encode()
    insts = read_instances(store, data.instances_key)
    assert [(i.id, i.split, [r.text for r in i.references if r.correct]) for i in insts] == [
        ("q1", "train", ["blue"]),       # letter
        ("q2", "test", ["eight"]),       # 0-based index
        ("q3", "test", ["naïve"]),       # option text
    ]
    assert insts[1].input.text == "How many legs does a spider have, usually?"


def test_a_changed_file_is_a_new_revision_and_scenario_version(csv_file):
    before = plan_scenario(ScenarioEntry(name="custom", params=_params(csv_file)), None)
    csv_file.write_text(CSV + "q4,One more?,x,y,z,C,test\n", encoding="utf-8")
    after = plan_scenario(ScenarioEntry(name="custom", params=_params(csv_file)), None)
    assert after.dataset_revision != before.dataset_revision
    assert after.scenario_version != before.scenario_version


def test_jsonl_with_a_list_column_and_generation_without_choices(tmp_path, store):
    path = tmp_path / "q.jsonl"
    path.write_text(JSONL, encoding="utf-8")
    params = {"path": str(path), "question": "prompt", "choices": "options", "answer": "label", "id": "key"}
    plan = plan_scenario(ScenarioEntry(name="custom", params=params), None)
    insts = read_instances(store, download_scenario(store, plan).instances_key)
    assert [(i.id, [r.text for r in i.references if r.correct]) for i in insts] == [("x1", ["4"]), ("x2", ["Ü"])]
    free = plan_scenario(ScenarioEntry(name="custom", params={**params, "choices": "", "answer": "prompt"}), None)
    assert free.adapter.method == "generation"


@pytest.mark.parametrize(
    "params, message",
    [
        ({"question": "prompt"}, "no column 'prompt'"),
        ({"choices": "a|b|d"}, "no column 'd'"),
        ({"answer": "question"}, ("line 2, column 'question': 'What colour is a clear daytime sky?' is not a letter, "
                                  "a 0-based index or the text of one of its 3 options")),
        ({"split": "question"}, "line 2, column 'question'"),
    ],
)
def test_schema_errors_name_the_file_and_the_column_through_the_cli(csv_file, tmp_path, params, message):
    spec = "custom:" + ",".join(f"{k}={v}" for k, v in _params(csv_file, **params).items())
    out = run_cli("eval", spec, "--models", "offline/solver", "--dry-run", "--storage", str(tmp_path / "store"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert str(csv_file) in out.stderr and message in out.stderr, out.stderr
    assert not (tmp_path / "store").exists()


@pytest.mark.slow
def test_missing_and_malformed_files_are_clear_errors(tmp_path):
    out = run_cli("eval", f"custom:path={tmp_path / 'nope.csv'}", "--models", "offline/solver", "--dry-run")
    assert out.returncode == 2 and "nope.csv" in out.stderr and "does not exist" in out.stderr, out.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "a"}\n{not json\n')
    out = run_cli("eval", f"custom:path={bad}", "--models", "offline/solver", "--dry-run")
    assert out.returncode == 2 and str(bad) in out.stderr and "line 2 is not JSON" in out.stderr, out.stderr
    out = run_cli("eval", f"custom:path={tmp_path / 'data.txt'}", "--models", "offline/solver", "--dry-run")
    assert out.returncode == 2 and "format=csv or format=jsonl" in out.stderr, out.stderr


@pytest.mark.slow
def test_board_file_with_a_custom_scenario_runs_through_the_flow(prefect_server, csv_file, tmp_path):
    # a board spec is data: scenarios with parameters and adapter overrides, models, main metric, version
    board = tmp_path / "my_board.yaml"
    board.write_text(
        "name: my-board\n"
        "version: '1'\n"
        "models: [offline/solver, offline/first-option]\n"
        "scenarios:\n"
        f"  - name: custom\n    params: {json.dumps(_params(csv_file))}\n"
        "    adapter: {max_train_instances: 1}\n"
        "    metrics: [multiple_choice_accuracy, exact_match]\n"
        "    main_metric: exact_match\n"
        "    label: quiz\n"
        "  - name: dyck_language\n    params: {num_parenthesis_pairs: 2, num_test: 4}\n    label: dyck\n"
    )
    root = tmp_path / "store"
    out = run_cli("run", "--board-file", str(board), "--storage", str(root))
    assert out.returncode == 0, out.stdout + out.stderr
    digest = hashlib.sha256(CSV.encode()).hexdigest()
    assert json.loads((root / f"datasets/custom/{digest}/manifest.json").read_text()) == {"quiz.csv": digest}
    latest = json.loads((root / "leaderboards/my-board/latest.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    # first-option always answers A: right on q2 (eight), wrong on q3 (naïve is B)
    assert rows["offline/first-option"]["quiz"] == 0.5 and rows["offline/solver"]["dyck"] == 1.0
    run_dirs = [p for p in (root / "runs").iterdir() if (p / "run.json").exists()]
    assert len(run_dirs) == 4
    quiz = [json.loads((p / "run.json").read_text()) for p in run_dirs]
    assert {r["scenario"]["label"] for r in quiz} == {"quiz", "dyck"}
    custom_run = next(r for r in quiz if r["scenario"]["label"] == "quiz")
    # a user's file is pinned by its own sha256: nothing about it is unverified
    assert custom_run["dataset"] == {"revision": digest, "checksums": {"quiz.csv": digest}, "unverified": {}}
    assert custom_run["adapter"]["max_train_instances"] == 1


@pytest.mark.slow
def test_data_the_adapter_cannot_use_is_bad_input_before_any_work(tmp_path):
    """An instance the adapter refuses (27 options to letter) was a ValueError inside the
    adapt task (a traceback, or exit 1 and an empty partial release); it is now exit 2 with one line,
    from --dry-run and from a real run alike, before Prefect starts."""
    path = tmp_path / "wide.jsonl"
    options = [f"option {k}" for k in range(27)]
    path.write_text(json.dumps({"key": "w1", "prompt": "Pick one.", "options": options, "label": "option 3"}) + "\n"
                    + json.dumps({"key": "w2", "prompt": "Pick again.", "options": options[:3], "label": "A"}) + "\n")
    spec = f"custom:path={path},question=prompt,choices=options,answer=label,id=key"
    for extra in (["--dry-run"], []):
        out = run_cli("eval", spec, "--models", "offline/solver", "--storage", str(tmp_path / "store"), *extra)
        assert out.returncode == 2, out.stdout + out.stderr
        assert "instance 'w1' has 27 options; at most 26 can be lettered" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "flow run" not in out.stdout
