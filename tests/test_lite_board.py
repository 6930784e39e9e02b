"""The HELM Lite board: its spec, `reproduce lite --explain`, and `helmflow run lite` end to end through the
CLI on mirrored fixtures (web sources served on 127.0.0.1, mirrored by `helmflow mirror lite`), against the
dev server and an offline baseline, on a real Prefect server."""

from __future__ import annotations

import json
import re
import time

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.scenarios.mmlu import LITE_SUBJECTS
from tests.support.cli import flow_run_id_from, run_cli, subflow_runs_of, task_runs_of
from tests.support.devserver import FAST_RETRY
from tests.support.lite_fixtures import serve, source_tree
from tests.support.lite_hub_fixtures import hub_conversion_mirrors

COLUMNS = ["narrative_qa", "natural_qa_openbook_longans", "natural_qa_closedbook", "openbookqa", "mmlu",
           "math_chain_of_thought", "gsm", "legalbench", "med_qa", "wmt_14"]  # HELM's ten, in schema_lite's order
MAIN = {"narrative_qa": "f1_score", "natural_qa_openbook_longans": "f1_score", "natural_qa_closedbook": "f1_score",
        "openbookqa": "exact_match", "mmlu": "exact_match", "math_chain_of_thought": "math_equiv_chain_of_thought",
        "gsm": "final_number_exact_match", "legalbench": "quasi_exact_match", "med_qa": "quasi_exact_match",
        "wmt_14": "bleu_4"}


def test_the_board_has_helms_groups_headline_and_efficiency_table():
    from helmflow.plan.spec import load_board
    from helmflow.scenarios import get_scenario

    spec = load_board("lite")
    groups = {}
    for s in spec.scenarios:
        groups.setdefault(s.group or s.label, []).append(s.label)
    assert set(COLUMNS) <= set(groups) and groups["mmlu"] == [f"mmlu-{s}" for s in LITE_SUBJECTS]
    assert spec.aggregation == ["win_rate"] and spec.max_instances == 1000
    for s in spec.scenarios:
        assert get_scenario(s.name, s.params).main_metric == MAIN[s.group or s.label]
    accuracy, efficiency = spec.metric_groups
    assert [(c.scenario, c.metric) for c in accuracy.columns] == list(MAIN.items())
    assert all(c.metric == "latency_s" and c.lower_is_better for c in efficiency.columns)
    assert {c.scenario for c in efficiency.columns} == set(COLUMNS)


@pytest.mark.slow
def test_reproduce_lite_explains_every_difference_from_helm():
    out = run_cli("reproduce", "lite", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    for needle in ("follow_format: HELM adds its note only for models it tags instruction-following",
                   "helmflow's own sentence naming the topic", "multiple choice: one output token", "efficiency: mean seconds per request",
                   "narrative_qa: the master-branch zip", "natural_qa: the five dev files", "openbookqa:", "med_qa: the Google Drive zip"):
        assert needle in text, needle
    assert text.count("mmlu: data.tar") == 1  # five subject entries, said once


@pytest.mark.slow
def test_helmflow_run_lite_end_to_end_on_mirrored_fixtures(tmp_path, prefect_server, dev_server):
    root = source_tree(tmp_path / "src", small=True)
    mirror = tmp_path / "mirror"
    with serve(root) as host:
        # MATH, LegalBench and WMT14 come from mirrors of the Hub's Parquet conversions, copied into the root mirror
        out = run_cli("mirror", "lite", "--to", str(mirror), env={"HELMFLOW_SOURCE_HOST": host.url, **hub_conversion_mirrors(tmp_path)})
    assert out.returncode == 0, out.stdout + out.stderr
    storage = tmp_path / "store"
    env = {"HELMFLOW_MIRROR": str(mirror)}  # no source host: the run reads the mirror only
    # the dev server: this worker's, seen through a scope of this test's own (its counts are this test's)
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/model", "client": "openai-compatible", "model": "model-x", "base_url": dev_server.openai_url,
         # a generous attempt timeout: on a loaded machine FAST_RETRY's 2 s gives up on answers the server
         # still sends (and counts), and the re-sends would hide a request sent twice for another reason
         "retry": {**FAST_RETRY, "timeout_s": 60}, "max_concurrency": 16}]}))
    started = time.monotonic()
    out = run_cli("run", "lite", "--models", "dev/model,offline/first-option", "--models-file", str(models),
                  "--storage", str(storage), env=env, timeout=900)
    wall_s = time.monotonic() - started
    assert out.returncode == 0, out.stdout + out.stderr
    stats = dev_server.stats()
    runs = [json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")]
    assert len(runs) == 56  # 28 runs per model
    # --models narrows the board: a subset release (latest-subset.json), as any selection
    latest = json.loads((storage / "leaderboards/lite/latest-subset.json").read_text())
    rows = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()
    assert {r["deployment"] for r in rows} == {"dev/model", "offline/first-option"}
    for row in rows:
        assert all(row[f"group:{c}"] is not None for c in COLUMNS)
        subjects = [row[f"mmlu-{s}"] for s in LITE_SUBJECTS]
        assert row["group:mmlu"] == pytest.approx(sum(subjects) / 5)  # the column is the macro-mean of its runs
        assert row["mmlu/exact_match"] == pytest.approx(row["group:mmlu"])
        assert row["efficiency mean_win_rate"] is not None and row["accuracy mean_win_rate"] == pytest.approx(row["mean_win_rate"])
    # two models: in every column one wins (1, 0) or they tie (0.5 each), so the two mean win rates sum to 1
    assert sum(r["mean_win_rate"] for r in rows) == pytest.approx(1.0)
    assert sum(r["efficiency mean_win_rate"] for r in rows) == pytest.approx(1.0)
    release = json.loads((storage / "leaderboards/lite" / latest["release_id"] / "release.json").read_text())
    assert "no declared sha256" in json.dumps(release["unverified_data"])  # recorded pins are said to be unpinned
    dev_requests = sum(r["counts"]["requests"] for r in runs if r["deployment"]["name"] == "dev/model")
    # every recorded request reached the server once; a client timeout on a loaded machine may re-send
    # one, counted apart as a repeat
    assert stats["unique"] == dev_requests > 0 and stats["requests"] - stats["unique"] <= 2, stats
    tasks = task_runs_of(flow_run_id_from(out))
    names = sorted(t.name for t in tasks)
    # the flow reads as the board: a prepare per scenario entry, a run per cell, one release
    assert len([n for n in names if n.startswith("prepare ")]) == 28 and "prepare mmlu-econometrics" in names
    assert len([n for n in names if n.startswith("run ")]) == 56 and "run med_qa x dev/model" in names
    assert "run wmt_14-fr-en x dev/model" in names and "prepare math-precalculus" in names
    assert names.count("release lite") == 1 and len(tasks) == 85 and all(t.state.is_completed() for t in tasks)
    # the graph's top level is the board's 28 scenario entries, each a subflow run with its prepare and cells,
    # and the release: 29 nodes, not 85
    subflows = subflow_runs_of(flow_run_id_from(out))
    assert len(subflows) == 28 and "lite mmlu-econometrics" in {s.name for s in subflows}
    assert all(s.state.is_completed() for s in subflows)
    assert len(task_runs_of(flow_run_id_from(out), top_level=True)) == 28 + 1
    # the Prefect UI's leaderboard artifact reads by HELM's ten columns and the two win rates, one screen
    # wide: not one column per run (28), and no empty mean score (Lite ranks by win rate alone)
    table = _leaderboard_artifact(flow_run_id_from(out))
    assert {r["deployment"] for r in table} == {"dev/model", "offline/first-option"}
    keys = list(table[0])
    assert "mean score" not in keys and not [k for k in keys if k.startswith("mmlu-")], keys
    assert keys[:2] == ["deployment", "mean win rate"] and "mmlu/exact_match" in keys, keys
    assert keys[2] == "rank (95%)" and all(re.fullmatch(r"\d+( \(\d+–\d+\))?", r["rank (95%)"]) for r in table)
    assert "accuracy mean win rate" in keys and "efficiency mean win rate" in keys and len(keys) == 3 + 2 + 2 * 10, keys
    assert all(r["accuracy mean win rate"] not in ("—", "missing") for r in table)
    print(f"lite board on fixtures: {len(runs)} runs, {len(tasks)} task runs, {dev_requests} dev-server requests, "
          f"wall {wall_s:.1f} s")


def _leaderboard_artifact(flow_run_id) -> list[dict]:
    """The ``lite-leaderboard`` table artifact of a flow run, read back through the Prefect API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        [artifact] = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]), key=ArtifactFilterKey(any_=["lite-leaderboard"])))
    data = artifact.data
    return json.loads(data) if isinstance(data, str) else data
