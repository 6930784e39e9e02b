"""WildBench: rows -> chat instances as HELM builds them, the pinned source, bad rows refused, and a run
judged by a jury on the dev server (scripted as the model and two judges), through the real SDK.

Fixture rows are written here in the dataset's schema (judge_fixtures.py); none comes from WildBench.
"""

from __future__ import annotations

import pytest

from helmflow.clients import load_deployments
from helmflow.devserver import start_dev_server
from helmflow.pipeline import adapt_scenario, download_scenario, publish_run, query_pair, score_pair
from helmflow.plan.compile import plan_board, plan_scenario
from helmflow.plan.spec import ScenarioEntry, load_board
from helmflow.records import prompt_from_row
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.storage import Store
from tests.support.cli import REPO
from tests.support.devserver import dev_deployment
from tests.support.judge_fixtures import WILDBENCH_FILE, WILDBENCH_REV, wildbench_parquet, wildbench_rows

MARKERS = [
    "[ans:right] [judge-a:8] [judge-b:6]",  # jury mean 7
    "[ans:right] [judge-a:9] [judge-b:garbage]",  # 9: the unparsable verdict is left out, and counted
    "[ans:right] [judge-a:11] [judge-b:3]",  # 3: 11 is out of range, an annotation error
    "[ans:empty] [judge-a:10] [judge-b:10]",  # empty output: not sent, score 1
    "[ans:right] [judge-a:garbage] [judge-b:garbage]",  # no verdict parsed: missing, not 0
]
EXPECTED = {"id0": 7.0, "id1": 9.0, "id2": 3.0, "id3": 1.0}


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    folder = tmp_path / "wildbench"
    folder.mkdir()
    (folder / WILDBENCH_FILE).write_bytes(wildbench_parquet(wildbench_rows(MARKERS)))
    monkeypatch.setenv("HELMFLOW_MIRROR_WILDBENCH", str(folder))
    return folder


def test_rows_become_chat_instances_with_their_checklist(mirror):
    instances = get_scenario("wildbench").load({WILDBENCH_FILE: str(mirror / WILDBENCH_FILE)})
    assert [i.id for i in instances] == [f"id{k}" for k in range(5)] and {i.split for i in instances} == {"test"}
    first = instances[0]
    assert [(m.role, m.content) for m in first.input.messages] == [
        ("user", "Fixture warm-up question 0?"), ("assistant", "Fixture warm-up answer 0."),
        ("user", f"Fixture task 0: write two sentences about topic 0. {MARKERS[0]}"),
    ]  # fmt: skip
    assert first.extra["checklist"] == ["Does the reply cover topic 0?", "Is it exactly two sentences?"]
    assert first.extra["wildbench_id"] == "wb-fixture-0" and first.references == []


def test_source_is_pinned_and_the_prompt_is_the_conversation(mirror, tmp_path):
    scen = get_scenario("wildbench")
    (source,) = scen.sources()
    assert source.url == f"hf://datasets/allenai/WildBench@{WILDBENCH_REV}/v2/{WILDBENCH_FILE}" and source.sha256 is None
    plan = plan_scenario(ScenarioEntry(name="wildbench", params={"subset": "v2"}), None)
    gen = plan.adapter.generation
    assert (plan.adapter.method, gen.max_tokens, gen.temperature, gen.num_outputs) == ("chat", 2000, 0.0, 1)
    assert plan.main_metric == "wildbench_score_rescaled"
    store = Store(str(tmp_path / "store"))
    prompts = store.read_parquet(adapt_scenario(store, plan, download_scenario(store, plan)).prompts_key).to_pylist()
    messages = prompt_from_row(prompts[0]).messages
    assert [m.role for m in messages] == ["user", "assistant", "user"]  # sent as they are, no system turn


def test_bad_conversations_are_refused(tmp_path):
    rows = wildbench_rows(["a", "b"])
    rows[1]["conversation_input"][-1]["role"] = "assistant"
    path = tmp_path / WILDBENCH_FILE
    path.write_bytes(wildbench_parquet(rows))
    with pytest.raises(ScenarioError, match="row 1 .*must end with a user turn"):
        get_scenario("wildbench").load({WILDBENCH_FILE: str(path)})


@pytest.mark.slow
def test_a_jury_on_the_dev_server(mirror, tmp_path):
    with start_dev_server("--policy", "fn:tests.support.judge_fixtures:policy", env={"PYTHONPATH": str(REPO)}) as server:
        deps = load_deployments()
        for name, model, price in (("dev/model", "model-x", 0.0), ("dev/judge-a", "judge-a", 5.0), ("dev/judge-b", "judge-b", 1.0)):
            deps[name] = dev_deployment(server, name=name, model=model, price_input_per_mtok=price, price_output_per_mtok=price)
        board = load_board({"name": "wb", "version": "t", "models": ["dev/model"], "scenarios": [{"name": "wildbench"}]})
        (run,) = plan_board(board, deps, judges=["dev/judge-a", "dev/judge-b"]).runs
        store = Store(str(tmp_path / "store"))
        data = download_scenario(store, run.scenario)
        query = query_pair(store, run, adapt_scenario(store, run.scenario, data))
        score = score_pair(store, run, data, query)
        out = publish_run(store, run, query, score)
        assert server.stats()["requests"] == 5 + 2 * 4  # the empty output was judged by no one
    stats = {(r["instance_id"], r["name"]): r["value"] for r in store.read_parquet(f"runs/{run.run_id}/stats.parquet").to_pylist()}
    for iid, score_1_10 in EXPECTED.items():
        assert stats[(iid, "wildbench_score")] == score_1_10
        assert stats[(iid, "wildbench_score_rescaled")] == pytest.approx((score_1_10 - 1) / 9)
    assert ("id4", "wildbench_score") not in stats and stats[("id4", "wildbench_judge_errors")] == 2
    assert stats[("id1", "wildbench_judge_errors")] == 1 and stats[("id2", "wildbench_judge_errors")] == 1
    assert out.score == pytest.approx(sum((s - 1) / 9 for s in EXPECTED.values()) / 4)
    notes = store.read_parquet(f"runs/{run.run_id}/annotations.parquet").to_pylist()
    out_of_range = next(n for n in notes if n["instance_id"] == "id2" and n["judge"] == "dev/judge-a")
    assert out_of_range["score"] is None and "outside 1-10" in out_of_range["error"]
    kept = next(n for n in notes if n["instance_id"] == "id0" and n["judge"] == "dev/judge-a")
    assert '"strengths": "clear"' in kept["details_json"] and "Fixture task 0" in kept["prompt"]
    assert score.judge_parse_errors == 4 and score.judge_cost_usd > 0
    assert score.judge_cost_usd == pytest.approx(sum(n["cost_usd"] for n in notes))
