"""MedHELM's configurable benchmark: a user's YAML (prompt template, a CSV, metrics, a jury with its own
criteria and judges) run with `helmflow eval <yaml>` against the dev server, its published numbers computed by
hand; a bad file is one line and exit 2 before anything is sent."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.devserver import start_dev_server
from tests.support.cli import REPO, run_cli
from tests.support.devserver import FAST_RETRY

JUDGE_PROMPT = """You are a nurse educator. Rate the reply to a patient's question.
<question>{{QUESTION}}</question>
<reply>{{RESPONSE}}</reply>
<reference>{{GOLD_RESPONSE}}</reference>
Rate each criterion from 1 to 5 and answer with one JSON object.
<rubric_criteria>{"safety": ["score", "explanation"], "plainness": ["score", "explanation"]}</rubric_criteria>
"""

# the model answers each row's [ans:...]; each judge scores (safety, plainness) from its marker, and a judge
# without one replies with prose, which does not parse and is dropped
ROWS = [
    ("Can I shower with my new cast? [ans:no] [judge-a:5,3] [judge-b:4,4]", "no", '["yes"]'),
    ("Should I stop my statin when I feel well? [ans:yes] [judge-a:2,2]", "no", '["yes"]'),
    ("When is my follow-up? [ans:]", "in two weeks", "[]"),  # empty reply: not judged, the default
]


def _write(tmp_path: Path, **overrides) -> Path:
    import csv

    with (tmp_path / "questions.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "correct_answer", "incorrect_answers"])
        w.writerows(ROWS)
    (tmp_path / "judge.txt").write_text(JUDGE_PROMPT)
    config = {
        "name": "discharge_questions",
        "description": "Patients' questions after discharge",
        "prompt": "Answer the patient's question in plain words.\nQuestion: {question}\n",
        "dataset_file": "questions.csv",
        "max_tokens": 64,
        "metrics": [{"name": "exact_match"},
                    {"name": "jury_score", "main": True, "prompt_file": "judge.txt", "default_score": 1.0,
                     "judges": ["dev/judge-a", {"name": "dev/judge-b", "model_name": "judge-b"}]}],
        **overrides,
    }
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.parametrize("overrides, message", [
    ({"metrics": [{"name": "bleu_9"}]}, "metrics.0.name: Input should be 'exact_match'"),
    ({"prompt": "Q: {question} {patient_age}"}, "no column 'patient_age'"),
    ({"dataset_file": "missing.csv"}, "missing.csv does not exist"),
    ({"metrics": [{"name": "jury_score", "prompt": "Rate {{RESPONSE}}.", "judges": ["dev/judge-a"]}]},
     "metrics.jury_score: name the criteria"),
    ({"colour": "blue"}, "colour: unknown field"),
])
def test_a_bad_benchmark_file_is_one_line_and_exit_2_before_anything_is_sent(tmp_path, overrides, message):
    out = run_cli("eval", str(_write(tmp_path, **overrides)), "--models", "offline/echo",
                  "--storage", str(tmp_path / "store"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "bench.yaml" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not (tmp_path / "store").exists()


@pytest.mark.slow
def test_a_benchmark_yaml_runs_through_eval_with_its_own_jury(tmp_path, prefect_server):
    bench = _write(tmp_path)
    storage = tmp_path / "store"
    with start_dev_server("--policy", "fn:tests.support.medhelm_fixtures:configured_policy",
                          env={"PYTHONPATH": str(REPO)}) as server:
        models = tmp_path / "models.yaml"
        models.write_text(yaml.safe_dump({"deployments": [
            {"name": name, "client": "openai-compatible", "model": model, "base_url": server.openai_url,
             "retry": FAST_RETRY} for name, model in (("dev/model", "model-x"), ("dev/judge-a", "judge-a"),
                                                      ("dev/judge-b", "judge-b"))]}))
        # the judges are the file's: no --judge
        out = run_cli("eval", str(bench), "--models", "dev/model", "--models-file", str(models),
                      "--storage", str(storage))
        assert out.returncode == 0, out.stdout + out.stderr
        # another wording of the jury only: the same instances and prompts, a new metric_version (re-judged)
        (tmp_path / "judge.txt").write_text(JUDGE_PROMPT.replace("nurse educator", "pharmacist"))
        again = run_cli("eval", str(bench), "--models", "dev/model", "--models-file", str(models),
                        "--storage", str(storage))
        assert again.returncode == 0, again.stdout + again.stderr
    runs = {p.parent.name: json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")}
    worded = {rid: pq.read_table(storage / "runs" / rid / "annotations.parquet").column("prompt").to_pylist()
              for rid in runs}
    (first,) = [runs[rid] for rid, prompts in worded.items() if any("nurse educator" in p for p in prompts)]
    (second,) = [runs[rid] for rid, prompts in worded.items() if any("pharmacist" in p for p in prompts)]
    # the query key (scenario, prompt and model versions) is the same: the stored answers are judged again
    same = [first["versions"][k] == second["versions"][k] for k in ("scenario_version", "prompt_version", "metric_version")]
    assert same == [True, True, False]
    assert first["judges"]["templates"] != second["judges"]["templates"]
    run_json = first
    board = sorted(storage.glob("leaderboards/eval-discharge_questions-*"))[0]
    latest = json.loads((board / "latest.json").read_text())
    (row,) = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()
    # the jury, pooled over the criteria of the judges that parsed: (5+3+4+4)/4 = 4, (2+2)/2 = 2 (judge-b
    # dropped), the empty reply the file's default 1.0; the cell is their mean
    assert row["discharge_questions"] == pytest.approx((4 + 2 + 1) / 3)
    run = storage / "runs" / run_json["run_id"]
    summary = {r["name"]: r for r in pq.read_table(run / "summary.parquet").to_pylist() if r["split"] == "test"}
    assert summary["exact_match"]["mean"] == pytest.approx(1 / 3)  # "no" right; "yes" and "" wrong
    assert summary["jury_score"]["mean"] == pytest.approx(7 / 3)
    assert summary["discharge_questions_jury_judge_errors"]["mean"] == pytest.approx(1 / 3)
    bodies = [json.loads(r["body_json"]) for r in pq.read_table(run / "requests.parquet").to_pylist()]
    assert {b["max_tokens"] for b in bodies} == {64} and {tuple(b.get("stop") or ()) for b in bodies} == {()}
    assert any(b["prompt"].startswith("Answer the patient's question in plain words.\nQuestion: Can I shower")
               for b in bodies)
    notes = pq.read_table(run / "annotations.parquet").to_pylist()
    assert {n["judge"] for n in notes} == {"dev/judge-a", "dev/judge-b"}
    sent = [n for n in notes if n["prompt"]]
    assert len(sent) == 4 and all("<rubric_criteria>" in n["prompt"] and "{{" not in n["prompt"] for n in sent)
    assert any("Can I shower with my new cast?" in n["prompt"] and "<reply>no</reply>" in n["prompt"] for n in sent)


def test_data_path_points_a_gated_scenario_at_the_users_folder(tmp_path):
    from tests.support.medhelm_fixtures import billing_feather

    (tmp_path / "mimic").mkdir()
    (tmp_path / "mimic" / "mimiciv_icd10.feather").write_bytes(billing_feather())
    env = {"HELMFLOW_MIRROR": "", "HELMFLOW_MIRROR_MIMICIV_BILLING_CODE": ""}
    out = run_cli("show", "medhelm", "--data-path", f"mimiciv_billing_code={tmp_path / 'mimic'}", env=env)
    assert out.returncode == 0, out.stderr
    shown = " ".join(out.stdout.split())
    assert "left out: mimic_bhc" in shown and "left out: mimiciv_billing_code" not in shown
    assert "mimiciv_billing_code_f1" in shown  # planned with the board, from the user's folder
    for bad, message in ((f"mimic_bhc={tmp_path / 'nowhere'}", "is not a folder"),
                         (f"mimic-iv={tmp_path}", "unknown scenario 'mimic-iv'"), ("mimic_bhc", "expected SCENARIO=DIR")):
        out = run_cli("run", "medhelm", "--data-path", bad, "--storage", str(tmp_path / "store"), env=env)
        assert out.returncode == 2 and message in out.stderr, out.stderr
    assert not (tmp_path / "store").exists()
