"""The HELM Finance board: FinQA's DSL programs interpreted as data and compared symbolically (checked by hand and
against FinQA's own evaluator in crfm-helm 0.5.16: the same verdicts on 3,000 generated programs), FinanceBench's
judge template and labels, BANKING77's CSV rows; and `helmflow run finance` end to end through the CLI on
mirrored fixtures (rows we wrote in each dataset's raw shape) against offline models and an offline judge on a
real Prefect server."""

from __future__ import annotations

import csv
import io
import json
import random

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.judges import TEMPLATES, JudgeParseError
from helmflow.metrics.fin_qa import Invalid, equal_program, execution_correct, run_program, tokenize
from helmflow.metrics.financebench import parse_financebench
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.banking77 import LABELS
from helmflow.scenarios.fin_qa import COMMIT as FINQA_COMMIT
from helmflow.scenarios.financebench import COMMIT as FINANCEBENCH_COMMIT
from tests.support.cli import run_cli
from tests.support.lite_fixtures import serve

TABLE = [["in millions", "2019", "2018"], ["revenue", "$ 1,200", "$ 1,000 (a)"], ["cost", "300", "5%"]]


def test_programs_are_tokenized_and_run_as_finqa_does():
    assert tokenize("subtract(1200, 1000), divide(#0, 1000)") == [
        "subtract(", "1200", "1000", ")", "divide(", "#0", "1000", ")", "EOF"]
    assert run_program(tokenize("subtract(1200, 1000), divide(#0, 1000)"), TABLE) == 0.2
    assert run_program(tokenize("table_sum(revenue, none)"), TABLE) == 2200.0  # "$ 1,000 (a)" reads 1000
    assert run_program(tokenize("table_average(cost, none)"), TABLE) == pytest.approx((300 + 0.05) / 2)
    assert run_program(tokenize("greater(5%, const_m1)"), TABLE) == "yes"
    assert run_program(tokenize("divide(1, 3)"), TABLE) == 0.33333  # rounded to 5 places
    for bad in ("divide(1, 0)", "exp(10, 1000000)", "add(#1, 2)", "table_max(profit, none)", "sqrt(4, 2)",
                "add(1, 2", "exp(const_m1, 0.5)", "__import__('os').system('touch /tmp/x')", ""):
        with pytest.raises(Invalid):
            run_program(tokenize(bad), TABLE)
    assert execution_correct("0.2", tokenize("subtract(1200, 1000), divide(#0, 1000)"), TABLE)
    assert execution_correct("yes", tokenize("greater(2, 1)"), TABLE) and not execution_correct("no", tokenize(
        "greater(2, 1)"), TABLE)
    assert not execution_correct("0.2", tokenize("divide(1, 0)"), TABLE)


def test_program_accuracy_is_finqas_symbolic_check():
    gold = tokenize("subtract(1200, 1000), divide(#0, 1000)")
    # the gold's arguments are the symbols a0 = 1200, a1 = 1000: (a0 - a1) / a1
    assert equal_program(gold, gold)
    assert equal_program(gold, tokenize("divide(1200, 1000), subtract(#0, const_1)")) is False  # const_1: no symbol
    assert equal_program(tokenize("add(1200, 1000)"), tokenize("add(1000, 1200)"))  # commutes
    assert not equal_program(tokenize("subtract(1200, 1000)"), tokenize("subtract(1000, 1200)"))
    assert equal_program(tokenize("multiply(2, 3), multiply(#0, 4)"), tokenize("multiply(3, 4), multiply(2, #0)"))
    assert not equal_program(gold, tokenize("subtract(1200, 1000), divide(#1, 1000)"))  # a step refers to itself
    assert not equal_program(gold, tokenize("subtract(1200, 999)"))  # an argument the gold never uses
    assert equal_program(tokenize("table_max(revenue, none)"), tokenize("table_max(revenue, none)"))
    assert not equal_program(tokenize("table_max(revenue, none)"), tokenize("table_min(revenue, none)"))
    assert not equal_program(gold, tokenize("import os"))


def finqa_row(i: int, program: str, answer: str) -> dict:
    return {"id": f"ACME/2019/page_{i}.pdf-1", "pre_text": ["revenue grew .", "costs fell ."],
            "post_text": ["amounts in millions ."], "filename": f"ACME/2019/page_{i}.pdf",
            "table_ori": TABLE, "table": TABLE,
            "qa": {"question": f"what was the change {i}?", "program": program, "exe_ans": answer,
                   "gold_inds": {"table_1": "revenue ..."}, "program_re": program, "ann_table_rows": [1]}}


FINQA_TRAIN = [finqa_row(0, "subtract(1200, 1000)", 200.0), finqa_row(1, "table_sum(revenue, none)", 2200.0)]
FINQA_TEST = [finqa_row(2, "subtract(1200, 1000), divide(#0, 1000)", 0.2),
              finqa_row(3, "divide(1200, 1000)", 1.2), finqa_row(4, "greater(1200, 1000)", "yes")]


def test_fin_qa_rows_become_helms_input_with_the_answer_and_table_kept(tmp_path):
    files = {}
    for split, rows in (("train", FINQA_TRAIN), ("test", FINQA_TEST)):
        (tmp_path / f"{split}.json").write_text(json.dumps(rows))
        files[f"{split}.json"] = str(tmp_path / f"{split}.json")
    instances = get_scenario("fin_qa").load(files)
    assert [i.split for i in instances] == ["train"] * 2 + ["test"] * 3
    assert instances[2].input.text == ("Pre-table text: revenue grew .\ncosts fell .\n"
                                       "Table: " + json.dumps(TABLE) + "\nPost-table text: amounts in millions .\n"
                                       "Question: what was the change 2?")
    assert instances[2].references[0].text == "subtract(1200, 1000), divide(#0, 1000)"
    assert instances[2].extra["exe_ans"] == "0.2" and instances[4].extra["exe_ans"] == "yes"
    assert instances[2].extra["table"] == TABLE


def banking_csv(rows: list[tuple[str, str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["text", "category"])
    writer.writerows(rows)
    return out.getvalue().encode()


BANKING_TRAIN = [("Where is my new card?", "card_arrival"), ("My refund is missing", "Refund_not_showing_up")]
BANKING_TEST = [("Has my card shipped, \"yet\"?", "card_arrival"), ("Why was the payment reverted", "reverted_card_payment?"),
                ("How do I top up by card", "topping_up_by_card")]  # fmt: skip


def test_banking77_reads_the_csv_files_and_knows_the_77_labels(tmp_path):
    assert len(LABELS) == len(set(LABELS)) == 77
    files = {}
    for split, rows in (("train", BANKING_TRAIN), ("test", BANKING_TEST)):
        (tmp_path / f"{split}.csv").write_bytes(banking_csv(rows))
        files[f"{split}.csv"] = str(tmp_path / f"{split}.csv")
    instances = get_scenario("banking77").load(files)
    assert [(i.split, i.input.text, i.references[0].text) for i in instances][2] == (
        "test", 'Has my card shipped, "yet"?', "card_arrival")
    assert get_scenario("banking77").default_adapter.instructions.count("\n") == 77
    (tmp_path / "test.csv").write_bytes(banking_csv([("x", "card_arival")]))
    with pytest.raises(ScenarioError, match="'card_arival' is not one of the 77"):
        get_scenario("banking77").load(files)


def financebench_rows(n: int) -> bytes:
    return "".join(json.dumps({
        "financebench_id": f"financebench_id_{i:05d}", "company": "ACME", "doc_name": "ACME_2019_10K",
        "question_type": "metrics-generated", "question": f"What was ACME's FY2019 revenue {i}?",
        "answer": f"${i} million", "justification": "", "dataset_subset_label": "OPEN_SOURCE",
        "evidence": [{"evidence_text": "Revenue ...", "doc_name": "ACME_2019_10K", "evidence_page_num": 40,
                      "evidence_text_full_page": f"Revenue was ${i} million."}],
    }) + "\n" for i in range(n)).encode()


def test_financebench_moves_ten_to_train_and_its_judge_reads_helms_labels(tmp_path):
    (tmp_path / "f.jsonl").write_bytes(financebench_rows(12))
    instances = get_scenario("financebench").load({"financebench_open_source.jsonl": str(tmp_path / "f.jsonl")})
    train = set(random.Random(0).sample(range(12), k=10))
    assert [i.split for i in instances] == ["train" if k in train else "test" for k in range(12)]
    assert instances[3].input.text == "Evidence: Revenue was $3 million.\nQuestion: What was ACME's FY2019 revenue 3?"
    (tmp_path / "f.jsonl").write_bytes(financebench_rows(9))
    with pytest.raises(ScenarioError, match="needs at least that many"):
        get_scenario("financebench").load({"financebench_open_source.jsonl": str(tmp_path / "f.jsonl")})
    template = TEMPLATES.get("financebench")
    prompt = template.render(instances[3], "  $3m ")
    assert "Question: What was ACME's FY2019 revenue 3?" in prompt and "Model's response: $3m" in prompt
    assert "Gold answer: $3 million" in prompt
    verdict = parse_financebench('```json\n{"explanation": "same amount", "label": "correct_answer"}\n```')
    assert verdict.score == 1.0 and verdict.details["label"] == "correct_answer"
    assert parse_financebench('{"label": "failure_to_answer"}').score == 0.0
    for bad in ("no json", '{"label": "maybe"}', "{not json}"):
        with pytest.raises(JudgeParseError):
            parse_financebench(bad)
    assert template.on_empty.details["label"] == "failure_to_answer"


def _sources(root):
    raw = "raw.githubusercontent.com"
    files = {
        f"{raw}/czyssrs/FinQA/{FINQA_COMMIT}/dataset/train.json": json.dumps(FINQA_TRAIN).encode(),
        f"{raw}/czyssrs/FinQA/{FINQA_COMMIT}/dataset/test.json": json.dumps(FINQA_TEST).encode(),
        f"{raw}/patronus-ai/financebench/{FINANCEBENCH_COMMIT}/data/financebench_open_source.jsonl":
            financebench_rows(12),
        f"{raw}/PolyAI-LDN/task-specific-datasets/master/banking_data/train.csv": banking_csv(BANKING_TRAIN),
        f"{raw}/PolyAI-LDN/task-specific-datasets/master/banking_data/test.csv": banking_csv(BANKING_TEST),
    }
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


def test_reproduce_finance_names_helms_judge_and_the_conf():
    out = run_cli("reproduce", "finance", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "GPT-4o 2024-05-13" in text and "fin_qa: the predicted program is interpreted as data" in text


@pytest.mark.slow
def test_helmflow_run_finance_end_to_end_on_mirrored_fixtures(tmp_path, prefect_server):
    mirror, storage = tmp_path / "mirror", tmp_path / "store"
    with serve(_sources(tmp_path / "src")) as host:
        out = run_cli("mirror", "finance", "--to", str(mirror), env={
            "HELMFLOW_SOURCE_HOST": host.url, "HELMFLOW_GITHUB_RAW": f"{host.url}/raw.githubusercontent.com"})
    assert out.returncode == 0, out.stdout + out.stderr
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "offline/program", "client": "offline", "model": "program",
         "options": {"behavior": "constant", "answer": "subtract(1200, 1000), divide(#0, 1000)"}},
        {"name": "offline/card-arrival", "client": "offline", "model": "card-arrival",
         "options": {"behavior": "constant", "answer": "card_arrival"}},
        {"name": "offline/judge", "client": "offline", "model": "judge",
         "options": {"behavior": "constant", "answer": '{"explanation": "matches", "label": "correct_answer"}'}}]}))
    out = run_cli("run", "finance", "--models", "offline/program,offline/card-arrival", "--judge", "offline/judge",
                  "--models-file", str(models), "--storage", str(storage), env={"HELMFLOW_MIRROR": str(mirror)},
                  timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/finance/latest-subset.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    program, card = rows["offline/program"], rows["offline/card-arrival"]
    # FinQA's three test programs: (a0 - a1) / a1 (the answer), a0 / a1, a0 > a1: right once; it runs to 0.2,
    # the first's answer only
    assert program["fin_qa"] == pytest.approx(1 / 3)
    runs = (json.loads(p.read_text()) for p in storage.glob("runs/*/run.json"))
    fin_qa = next(r for r in runs if r["scenario"]["label"] == "fin_qa" and r["deployment"]["name"] == "offline/program")
    summary = {(s["name"], s["split"]): s for s in pq.read_table(storage / "runs" / fin_qa["run_id"] / "summary.parquet")
               .to_pylist()}
    assert summary[("execution_accuracy", "test")]["mean"] == pytest.approx(1 / 3)
    assert card["fin_qa"] == 0.0
    # the judge calls every (non-empty) answer correct: FinanceBench's two test questions
    assert program["financebench"] == card["financebench"] == 1.0
    # BANKING77's test labels: card_arrival, reverted_card_payment?, topping_up_by_card
    assert card["banking77"] == pytest.approx(1 / 3)
    assert program["banking77"] == 0.0
    assert program["mean_win_rate"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert card["mean_win_rate"] == pytest.approx((0 + 0.5 + 1) / 3)
