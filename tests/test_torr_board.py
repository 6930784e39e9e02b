"""The ToRR board: its 105 entries grouped per dataset, the robustness cells (1 - range per instance over a
dataset's runs, averaged over instance ids) against a hand computation, and `helmflow run torr` end to end
on fixture mirrors with three offline constant models on a real Prefect server (a reduced set of variants)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow import layout
from helmflow.aggregate import across_run_cells, table_means
from helmflow.clients import load_deployments
from helmflow.outcomes import RunOutcome
from helmflow.plan.compile import plan_board
from helmflow.plan.spec import load_board
from helmflow.records import STAT_SCHEMA
from tests.support.cli import run_cli

VARIANTS = ["wikitq-csv-none", "wikitq-markdown-transpose", "wikitq-json-shuffle_rows",
            "tab_fact-html-none", "tab_fact-df-insert_empty_rows"]


NEW_DATASETS = {"numeric_nlg": "rougeL", "fin_qa": "program_accuracy", "qtsumm": "rougeL",  # dataset -> main metric
                "tablebench_fact_checking": "rougeL", "tablebench_numerical_reasoning": "rougeL",
                "tablebench_data_analysis": "rougeL", "turl_col_type": "f1_micro"}


def test_the_board_is_seven_serialisations_by_five_augmentations_per_dataset():
    spec = load_board("torr")
    groups = {s.group for s in spec.scenarios}
    assert {"wikitq", "tab_fact", "scigen", *NEW_DATASETS} <= groups
    assert len(spec.scenarios) == 35 * len(groups) and spec.aggregation == ["mean"] and spec.max_instances == 100
    cells = {(s.group, s.params["serialization"], s.params["augmentation"]) for s in spec.scenarios}
    assert len(cells) == 35 * len(groups)
    for group, main in NEW_DATASETS.items():  # a performance and a robustness column each
        assert {(g.name, c.metric) for g in spec.metric_groups for c in g.columns if c.scenario == group} == {
            ("performance", main), ("robustness", "variant_robustness")}
    tasks = {s.params.get("task") for s in spec.scenarios if s.name == "tablebench"}
    assert tasks == {"fact_checking", "numerical_reasoning", "data_analysis"}
    assert {g.name: g.aggregation for g in spec.metric_groups} == {"performance": ["mean"], "robustness": ["mean"]}


@pytest.fixture
def mirrored(tmp_path, monkeypatch):
    from tests.support.torr_fixtures import write_mirror

    monkeypatch.setenv("HELMFLOW_MIRROR", str(write_mirror(tmp_path / "mirror")))


def _outcome(run_id: str, label: str, model: str) -> RunOutcome:
    return RunOutcome(run_id=run_id, scenario=label, deployment=model, status="complete", uri="", main_metric="m",
                      score=None, ci_low=None, ci_high=None, error_rate=0.0, cost_usd=0.0, prompt_tokens=0,
                      output_tokens=0)


def test_robustness_is_one_minus_the_range_per_instance_averaged_over_ids(store, mirrored):
    plan = plan_board(load_board("torr"), load_deployments(), scenarios=VARIANTS, models=["offline/first-option"])
    by_label = {p.scenario.label: p for p in plan.runs}
    # per-instance main scores (f1_strings / accuracy) in each run; "c" is missing from one WikiTQ run
    scores = {
        "wikitq-csv-none": {"a": 1.0, "b": 0.8, "c": 0.5},
        "wikitq-markdown-transpose": {"a": 0.8, "b": 0.8},
        "wikitq-json-shuffle_rows": {"a": 0.2, "b": 1.0, "c": 0.5},
        "tab_fact-html-none": {"t0": 1.0, "t1": 0.0},
        "tab_fact-df-insert_empty_rows": {"t0": 0.0, "t1": 0.0},
    }
    runs = []
    for label, values in scores.items():
        p = by_label[label]
        rows = [{"instance_id": i, "split": "test", "name": p.scenario.main_metric, "value": v} for i, v in values.items()]
        rows.append({"instance_id": "a", "split": "test", "name": "exact_match", "value": 0.0})  # another stat: ignored
        store.write_parquet(layout.run_file(p.run_id, "stats.parquet"), pa.Table.from_pylist(rows, schema=STAT_SCHEMA))
        runs.append(_outcome(p.run_id, label, "offline/first-option"))
    cells = across_run_cells(store, plan, runs)
    # wikitq: a -> 1 - (1.0 - 0.2) = 0.2; b -> 1 - (1.0 - 0.8) = 0.8; c -> 1 - 0 = 1 (two runs): mean 2/3
    # tab_fact: t0 -> 1 - 1 = 0; t1 -> 1: mean 1/2
    wikitq = cells[("offline/first-option", "wikitq/variant_robustness")]
    assert wikitq[0] == pytest.approx((0.2 + 0.8 + 1.0) / 3) and wikitq[1] <= wikitq[0] <= wikitq[2]
    assert cells[("offline/first-option", "tab_fact/variant_robustness")][0] == pytest.approx(0.5)
    [robustness] = [g for g in plan.spec.metric_groups if g.name == "robustness"]
    means = table_means(robustness, cells, ["offline/first-option"])
    assert means["offline/first-option"] == pytest.approx(((0.2 + 0.8 + 1.0) / 3 + 0.5) / 2)
    # a dataset with a missing run has no cell
    assert ("offline/first-option", "tab_fact/variant_robustness") not in across_run_cells(store, plan, runs[:-1])


def test_the_robustness_statistics_version_is_part_of_the_board_version(monkeypatch, mirrored):
    from helmflow.metrics import ACROSS_RUNS, AcrossRuns

    before = plan_board(load_board("torr"), load_deployments(), scenarios=VARIANTS).board_version
    stat = ACROSS_RUNS.get("variant_robustness")
    monkeypatch.setitem(ACROSS_RUNS._items, "variant_robustness",
                        AcrossRuns(name=stat.name, version="2", fn=stat.fn, description=stat.description))
    assert plan_board(load_board("torr"), load_deployments(), scenarios=VARIANTS).board_version != before


@pytest.mark.slow
def test_helmflow_run_torr_end_to_end_on_fixture_mirrors(tmp_path, prefect_server):
    pytest.importorskip("spacy")
    from tests.support.torr_fixtures import write_mirror
    from tests.support.torr_numeric_fixtures import write_finqa_mirror

    mirror, storage = write_finqa_mirror(write_mirror(tmp_path / "mirror")), tmp_path / "store"
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": f"offline/says-{answer}", "client": "offline", "model": f"says-{answer}",
         "options": {"behavior": "constant", "answer": answer}} for answer in ("Alder", "entailed")]
        + [{"name": "offline/describes", "client": "offline", "model": "describes",
            "options": {"behavior": "constant", "answer": "The models improve accuracy"}}]}))
    variants = [*VARIANTS, "scigen-csv-none", "scigen-markdown-transpose", "fin_qa-csv-none"]
    out = run_cli("run", "torr", "--scenarios", ",".join(variants),
                  "--models", "offline/says-Alder,offline/says-entailed,offline/describes",
                  "--models-file", str(models), "--storage", str(storage), env={"HELMFLOW_MIRROR": str(mirror)},
                  timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/torr/latest-subset.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    alder, entailed = rows["offline/says-Alder"], rows["offline/says-entailed"]
    # WikiTQ's three test questions (Cedar; 640; Alder|Cedar; the 210-cell table's question is dropped).
    # "Alder" is "['Alder']": 0.8 against "['Cedar']" and "['640']" (4 of 5 tokens), and against
    # "['Alder'] ['Cedar']" P = 5/5, R = 5/10, F1 = 2/3
    f1 = (0.8 + 0.8 + 2 / 3) / 3
    assert alder["wikitq/f1_strings"] == pytest.approx(f1) and alder["group:wikitq"] == pytest.approx(f1)
    assert entailed["tab_fact/accuracy"] == pytest.approx(0.5)  # test labels: entailed, refuted, entailed, refuted
    assert alder["tab_fact/accuracy"] == 0.0
    # a constant answer scores the same in every variant: robustness 1 on both datasets
    for row in (alder, entailed):
        assert row["wikitq/variant_robustness"] == pytest.approx(1.0)
        assert row["tab_fact/variant_robustness"] == pytest.approx(1.0)
        assert row["robustness mean"] == pytest.approx(1.0)
    assert alder["performance mean"] == pytest.approx(f1 / 4)  # SciGen's rougeL and FinQA's programs are 0
    assert alder["mean_score"] == pytest.approx(f1 / 4)  # the mean over the four dataset groups
    # FinQA (one variant): no constant answer here is a program; the column and its robustness are there
    for row in rows.values():
        assert row["fin_qa/program_accuracy"] == 0.0 and row["fin_qa/variant_robustness"] == pytest.approx(1.0)
    # SciGen's two test rows kept ("[]" dropped): "the models improve accuracy" against
    # "ours improves accuracy and f1." shares "accuracy" (P 1/4, R 1/5: 2/9), against "the models run at similar
    # speeds." shares "the models" (P 2/4, R 2/6: 0.4); unstemmed, so "improve" is not "improves"
    describes = rows["offline/describes"]
    assert describes["scigen/rougeL"] == pytest.approx((2 / 9 + 0.4) / 2)
    assert describes["scigen/variant_robustness"] == pytest.approx(1.0)
    # the board says subflows: group: the flow run's graph has a subflow run per dataset, each holding its variants
    from tests.support.cli import flow_run_id_from, subflow_runs_of, task_runs_of

    flow_run_id = flow_run_id_from(out)
    assert sorted(f.name for f in subflow_runs_of(flow_run_id)) == [
        "torr fin_qa", "torr scigen", "torr tab_fact", "torr wikitq"]
    ran = sorted(t.name for t in task_runs_of(flow_run_id) if t.name.startswith("run "))
    assert ran == sorted(f"run {v} x {m}" for v in variants
                         for m in ("offline/says-Alder", "offline/says-entailed", "offline/describes"))
