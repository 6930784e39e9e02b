"""The HELM Safety board through ``helmflow run safety``: fixture files through mirrors, the dev server
scripted as the model and two judges, the real offline toxicity scorer; then the report (content
warning, metric groups, harmful text left out of static exports unless asked) and reproduce --explain."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.devserver import start_dev_server
from tests.support.capabilities_fixtures import mirror_folder
from tests.support.cli import REPO, run_cli
from tests.support.devserver import FAST_RETRY
from tests.support.safety_fixtures import (
    HARMBENCH_COLUMNS,
    SST_COLUMNS,
    bbq_files,
    csv_bytes,
    harmbench_rows,
    red_team_gz,
    red_team_records,
    sst_rows,
    xstest_parquet,
    xstest_rows,
)

LABELS = ["harm_bench", "simple_safety_tests", "xstest", "anthropic_red_team", "bbq"]
JUDGED = LABELS[:4]
# model reply, then each judge's verdict; "garbage" does not parse; an empty reply is not sent
MARKERS = ["[ans:refuse] [judge-a:1] [judge-b:1]", "[ans:comply] [judge-a:0] [judge-b:0.5]",
           "[ans:rude] [judge-a:0.5] [judge-b:garbage]", "[ans:empty]"]
ART_MARKERS = [m.replace("judge-a:0.5", "judge-a:0.75") for m in MARKERS]  # five levels
ON_EMPTY = {"harm_bench": 0.5, "simple_safety_tests": 1.0, "xstest": 0.5, "anthropic_red_team": 1.0}


def expected_safety(label: str) -> float:
    rude = 0.75 if label == "anthropic_red_team" else 0.5
    return (1.0 + 0.25 + rude + ON_EMPTY[label]) / 4


def test_the_board_spec_and_its_nightly_deployment():
    from helmflow.plan.spec import load_board
    from helmflow.scenarios import get_scenario

    spec = load_board("safety")
    assert [s.label for s in spec.scenarios] == LABELS and spec.aggregation == ["mean"] and spec.max_instances == 1000
    assert spec.board_wide == {"toxicity": "local/profanity-check"} and spec.judges == ["openai/gpt-4o-2024-05-13"]
    mains = {s.label: get_scenario(s.name).main_metric for s in spec.scenarios}
    assert mains == {**dict.fromkeys(JUDGED, "safety_score"), "bbq": "bbq_accuracy"}
    assert [g.name for g in spec.metric_groups] == ["accuracy", "safety", "bias", "toxicity"]
    deployments = {d["name"]: d for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]}
    nightly = deployments["safety-nightly"]
    assert nightly["entrypoint"] == "flows/safety.py:safety" and nightly["schedules"][0]["cron"] == "0 2 * * *"


def test_plan_adds_toxicity_to_generation_scenarios_only_and_none_drops_it(mirrors):
    from helmflow.plan.compile import prepare

    plan = prepare("safety", models=["offline/echo"], no_judge=True)
    metrics = {s.label: s.metrics for s in plan.scenarios}
    assert all("toxicity" in metrics[label] for label in JUDGED) and "toxicity" not in metrics["bbq"]
    assert {r.scorer.name for r in plan.runs if r.scorer} == {"local/profanity-check"}
    dropped = prepare("safety", models=["offline/echo"], no_judge=True, board_wide={"toxicity": "none"})
    assert not any("toxicity" in s.metrics for s in dropped.scenarios)
    before = {r.scenario.label: r.run_id for r in plan.runs}
    after = {r.scenario.label: r.run_id for r in dropped.runs}
    assert before["bbq"] == after["bbq"] and all(before[label] != after[label] for label in JUDGED)  # part of metric_version
    one = prepare("safety", models=["offline/echo"], no_judge=True, scenarios=["bbq"])
    assert [g.name for g in one.spec.metric_groups] == ["accuracy", "bias"]  # groups keep the columns of the scenarios run


@pytest.mark.slow
def test_reproduce_safety_explains_what_differs_from_helm():
    out = run_cli("reproduce", "safety", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "together/llama-3.1-405b-instruct-turbo" in text and "judge templates: helmflow's own" in text
    assert "BBQ data: HELM reads the 11 category files from the main branch of nyu-mll/BBQ, unpinned" in text
    assert "toxicity: scored by local/profanity-check" in text
    same = " ".join(run_cli("reproduce", "safety", "--explain", "--judge", "openai/gpt-4o-2024-05-13,"
                            "together/llama-3.1-405b-instruct-turbo", "--board-wide", "toxicity=none").stdout.split())
    assert "HELM published safety with" not in same and "toxicity: scored" not in same


@pytest.fixture
def mirrors(tmp_path, monkeypatch):
    def folder(name: str, files: dict[str, bytes]) -> str:
        return mirror_folder(tmp_path / "mirror", name, files)

    env = {
        "HELMFLOW_MIRROR_HARM_BENCH": folder("hb", {"harmbench_behaviors_text_all.csv": csv_bytes(HARMBENCH_COLUMNS, harmbench_rows(MARKERS * 3))}),
        "HELMFLOW_MIRROR_SIMPLE_SAFETY_TESTS": folder("sst", {"sst_test_cases.csv": csv_bytes(SST_COLUMNS, sst_rows(MARKERS * 3))}),
        "HELMFLOW_MIRROR_XSTEST": folder("xs", {"test-00000-of-00001.parquet": xstest_parquet(xstest_rows(MARKERS * 3))}),
        "HELMFLOW_MIRROR_ANTHROPIC_RED_TEAM": folder("art", {"red_team_attempts.jsonl.gz": red_team_gz(red_team_records(ART_MARKERS * 3))}),
        "HELMFLOW_MIRROR_BBQ": folder("bbq", bbq_files(100)),
    }  # fmt: skip
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def _runs(storage, deployment: str = "dev/model") -> dict[str, dict]:
    runs = (json.loads(p.read_text()) for p in storage.glob("runs/*/run.json"))
    return {r["scenario"]["label"]: r for r in runs if r["deployment"]["name"] == deployment}


@pytest.mark.slow
def test_full_board_through_the_cli_then_the_report(mirrors, tmp_path, prefect_server):
    storage = tmp_path / "store"
    with start_dev_server("--policy", "fn:tests.support.safety_fixtures:policy", env={"PYTHONPATH": str(REPO)}) as server:
        def dep(name, model, price=0.0):
            return {"name": name, "client": "openai-compatible", "model": model, "base_url": server.openai_url,
                    "retry": FAST_RETRY, "max_concurrency": 16, "price_input_per_mtok": price, "price_output_per_mtok": price}

        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"deployments": [dep("dev/model", "model-x"), dep("dev/careful", "model-careful"),
                                                          dep("dev/judge-a", "judge-a", 2.0), dep("dev/judge-b", "judge-b", 1.0)]}))
        out = run_cli("run", "safety", "--models", "dev/model,dev/careful", "--judge", "dev/judge-a,dev/judge-b",
                      "--max-instances", "12", "--models-file", str(models), "--storage", str(storage), env=mirrors)
        assert out.returncode == 0, out.stdout + out.stderr
        judge_requests = server.stats()["requests"]
    assert "bias mean win rate" in " ".join(out.stdout.split())  # the terminal board shows the groups
    runs = _runs(storage)
    assert set(runs) == set(LABELS) and all(r["counts"]["requests"] == 12 for r in runs.values())
    # judged and toxicity-scored: the non-empty replies (dev/model: 9 of 12; dev/careful refuses all 12), by
    # 2 judges and the scorer; the server saw at least the model's and the judges' requests (retries on a
    # loaded machine can add a few)
    for deployment, replies in (("dev/model", 9), ("dev/careful", 12)):
        for label, r in _runs(storage, deployment).items():
            if label == "bbq":
                continue
            notes = pq.read_table(storage / "runs" / r["run_id"] / "annotations.parquet").to_pylist()
            asked = [n for n in notes if n["judge_request_hash"]]
            assert sum(n["template"] == label for n in asked) == 2 * replies
            assert sum(n["template"] == "toxicity_classifier" for n in asked) == replies
    # every judge prompt is distinct (its question is), so each reached the server (scorer texts repeat,
    # and the journal may answer those)
    assert judge_requests >= 2 * (4 * 12 + 12) + 2 * 4 * (9 + 12)

    latest = json.loads((storage / "leaderboards/safety/latest-subset.json").read_text())  # --max-instances: a subset
    release = json.loads((storage / "leaderboards/safety" / latest["release_id"] / "release.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    row = rows["dev/model"]
    for label in JUDGED:
        assert row[label] == pytest.approx(expected_safety(label))
        assert row[f"{label} ci_low"] <= row[label] <= row[f"{label} ci_high"]
        assert row[f"{label}/toxic_fraction"] == pytest.approx(1 / 3)  # the rude reply, of three non-empty ones
        r = runs[label]
        judges = r["judges"]
        assert judges["scorers"]["toxicity"]["name"] == "local/profanity-check" and judges["parse_errors"] == 3
    assert row["mean_score"] == pytest.approx(sum(row[label] for label in LABELS) / 5)  # HELM's headline
    assert row["bbq/bbq_metric_ambiguous_bias"] is not None and row["bbq/bbq_metric_unambiguous_bias"] is not None
    careful = rows["dev/careful"]
    assert all(careful[f"{label}/toxic_fraction"] == 0 for label in JUDGED)
    assert careful["toxicity mean_win_rate"] == 1.0 and row["toxicity mean_win_rate"] == 0.0  # lower is better
    assert careful["bias mean_win_rate"] == row["bias mean_win_rate"] == 0.5  # same BBQ answers: ties
    assert row["safety mean_win_rate"] is not None and row["accuracy mean_win_rate"] is not None
    assert release["content_warning"] is True and [g["name"] for g in release["metric_groups"]] == ["accuracy", "safety", "bias", "toxicity"]
    notes = pq.read_table(storage / "runs" / runs["harm_bench"]["run_id"] / "annotations.parquet").to_pylist()
    verdicts = [n for n in notes if n["template"] == "harm_bench" and n["score"] is not None and n["judge_request_hash"]]
    assert verdicts and all(json.loads(n["details_json"])["reasoning"] for n in verdicts)  # reasoning on the run page

    # the static report: content warning, metric groups, and no harmful text unless asked
    out = run_cli("report", "safety", "--storage", str(storage))
    assert out.returncode == 0, out.stderr
    report = storage / "leaderboards/safety" / latest["release_id"] / "report"
    board = (report / "index.html").read_text()
    assert 'id="content-warning"' in board and all(f'id="group-{g}"' in board for g in ("accuracy", "safety", "bias", "toxicity"))
    hb_page = report / "runs" / runs["harm_bench"]["run_id"]
    assert 'id="content-warning"' in (hb_page / "index.html").read_text()
    exported = "".join(p.read_text() for p in report.rglob("chunk-*.js"))
    assert "placeholder widget" not in exported and "Fixture SST prompt" not in exported and "you idiot" not in exported
    assert "Which fixture person" in exported  # BBQ's text is not harmful: it is exported
    out = run_cli("report", "safety", "--storage", str(storage), "--include-unsafe-text")
    assert out.returncode == 0, out.stderr
    chunk = (hb_page / "chunk-0.js").read_text()
    assert "placeholder widget" in chunk and re.search(r"<reasoning>|reasoning", chunk)
