"""Judges: template parsing (valid, malformed, out of range), jury averaging, annotation errors, judge cost
accounting, the budget, the journal, and what a judge change does to the cache keys.

Fast: the model and the judges are offline deployments (``constant`` answers), run through the plain
stage functions with the real query path (limiter, retries, journal). The dev-server and CLI runs are
in test_wildbench.py, test_omni_math.py and test_capabilities_board.py.
"""

from __future__ import annotations

import json

import pytest

from helmflow.clients import load_deployments
from helmflow.judges import TEMPLATES, JudgeFailed, JudgeParseError, jury_scores
from helmflow.metrics.omni_math import parse_omni_math
from helmflow.metrics.wildbench import parse_wildbench
from helmflow.pipeline import adapt_scenario, download_scenario, publish_run, query_pair, score_pair
from helmflow.plan.compile import plan_board
from helmflow.plan.spec import BoardError, load_board
from helmflow.query import BoardRun
from helmflow.records import Annotation, ChatMessage, Deployment, Input, Instance
from tests.support.judge_fixtures import OMNI_FILE, omni_jsonl, omni_rows

WB_JSON = '{{"strengths": "clear and on topic", "weaknesses": "a bit short", "score": {}}}'


# --------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(("text", "score"), [
    ("Analysis...\n" + WB_JSON.format(8), 8.0),
    ("```json\n" + WB_JSON.format('"7"') + "\n```", 7.0),  # a quoted score, as HELM's pattern allows
    (WB_JSON.format(3) + "\nOn reflection:\n" + WB_JSON.format(9), 9.0),  # the last object counts
    (WB_JSON.format("1") , 1.0), (WB_JSON.format(10), 10.0), (WB_JSON.format(6.5), 6.5),
    ('{"score": 4, "weaknesses": "a bit short", "strengths": "clear and on topic"}', 4.0),  # another key order
])  # fmt: skip
def test_wildbench_valid_outputs(text, score):
    verdict = parse_wildbench(text)
    assert verdict.score == score and verdict.details["strengths"] == "clear and on topic"


@pytest.mark.parametrize(("text", "message"), [
    ("The response is good. Score: 8/10", "no {"),
    ('{"score": 8}', "no {"),  # strengths and weaknesses are part of the shape
    (WB_JSON.format('"eight"'), "not a number"),
    (WB_JSON.format(11), "outside 1-10"),
    (WB_JSON.format(0), "outside 1-10"),
    (WB_JSON.format(-3), "outside 1-10"),
])  # fmt: skip
def test_wildbench_malformed_or_out_of_range_is_a_parse_error(text, message):
    with pytest.raises(JudgeParseError, match=message):
        parse_wildbench(text)


def test_omni_math_sections():
    out = parse_omni_math("## Student Final Answer\n4\n\n## Justification\nSame value.\nBoth are 4.\n\n## Equivalence Judgement\ntrue\n")
    assert out.score == 1.0
    assert out.details == {"student_final_answer": "4", "justification": "Same value.\nBoth are 4.", "equivalence_judgement": "TRUE"}
    assert parse_omni_math("## Equivalence Judgement\nFALSE").score == 0.0
    with pytest.raises(JudgeParseError, match="no '## Equivalence Judgement'"):
        parse_omni_math("The answers match, so TRUE.")
    with pytest.raises(JudgeParseError, match="not TRUE or FALSE"):
        parse_omni_math("## Equivalence Judgement\nPROBABLY")


def test_templates_are_ours_versioned_and_filled_in_one_pass():
    inst = Instance(id="i", input=Input(messages=[
        ChatMessage(role="user", content="hi"), ChatMessage(role="assistant", content="hello"),
        ChatMessage(role="user", content="Write {$checklist} literally"),
    ]), extra={"checklist": ["Is it polite?", "Is it short?"]})  # fmt: skip
    prompt = TEMPLATES.get("wildbench").render(inst, "Output quoting {$user_query}")
    assert "USER: hi\n\nASSISTANT: hello" in prompt
    assert "Write {$checklist} literally" in prompt and "Output quoting {$user_query}" in prompt  # not re-substituted
    assert "- Is it polite?\n- Is it short?" in prompt
    assert {t: TEMPLATES.get(t).version for t in ("omni_math", "wildbench")} == {"omni_math": "1", "wildbench": "1"}


def test_jury_mean_is_over_the_judges_that_parsed():
    def note(judge, score, sample=0):
        return Annotation(instance_id="i", sample_index=sample, request_hash="r", judge=judge, template="wildbench",
                          template_version="1", score=score, error=None if score is not None else "unparsable")

    assert jury_scores([note("a", 8.0), note("b", 5.0), note("c", None)], "wildbench") == {0: 6.5}
    assert jury_scores([note("a", None), note("b", None)], "wildbench") == {}
    assert jury_scores([note("a", 8.0), note("a", 2.0, sample=1)], "wildbench") == {0: 8.0, 1: 2.0}
    assert jury_scores([note("a", 8.0)], "omni_math") == {}


# --------------------------------------------------------------------------- a judged run through the stages
OMNI_MARKERS = ["[ans:x]"] * 6
OMNI_BOARD = {"name": "judged", "version": "t", "models": ["t/model"], "scenarios": [{"name": "omni_math"}]}


def offline(name: str, answer: str, **fields) -> Deployment:
    return Deployment.model_validate({"name": name, "client": "offline", "model": "constant",
                                      "options": {"behavior": "constant", "answer": answer}, **fields})


@pytest.fixture
def omni_mirror(tmp_path, monkeypatch):
    folder = tmp_path / "omni"
    folder.mkdir()
    (folder / OMNI_FILE).write_bytes(omni_jsonl(omni_rows(OMNI_MARKERS)))
    monkeypatch.setenv("HELMFLOW_MIRROR_OMNI_MATH", str(folder))
    return folder


JUDGE_TRUE = "## Student Final Answer\n4\n\n## Justification\nok\n\n## Equivalence Judgement\nTRUE"
JUDGE_FALSE = JUDGE_TRUE.replace("\nTRUE", "\nFALSE")


@pytest.fixture
def deployments():
    deps = load_deployments()
    for d in [
        offline("t/model", "Reasoning. \\boxed{4}"),  # right for problem 1 only (answer \frac{8}{2})
        offline("t/empty", ""),
        offline("t/judge-true", JUDGE_TRUE, price_input_per_mtok=2.0, price_output_per_mtok=10.0),
        offline("t/judge-false", JUDGE_FALSE, price_input_per_mtok=1.0, price_output_per_mtok=1.0),
        offline("t/judge-garbage", "TRUE, I think."),
        Deployment(name="t/judge-keyed", client="openai", model="gpt-x", api_key_env="HELMFLOW_TEST_UNSET_JUDGE_KEY"),
    ]:
        deps[d.name] = d
    return deps


def run_pair(store, deployments, judges, no_judge=False, model="t/model", budget=None):
    plan = plan_board(load_board({**OMNI_BOARD, "models": [model]}), deployments, judges=judges, no_judge=no_judge)
    (run,) = plan.runs
    data = download_scenario(store, run.scenario)
    query = query_pair(store, run, adapt_scenario(store, run.scenario, data))
    score = score_pair(store, run, data, query, budget)
    return run, query, score, publish_run(store, run, query, score)


def table(store, key):
    return store.read_parquet(key).to_pylist()


def summary(store, run_id):
    return {r["name"]: r for r in table(store, f"runs/{run_id}/summary.parquet")}


@pytest.mark.slow
def test_jury_of_three_averages_the_parsed_and_counts_the_unparsable(store, omni_mirror, deployments):
    run, _query, _score, out = run_pair(store, deployments, ["t/judge-true", "t/judge-false", "t/judge-garbage"])
    notes = table(store, f"runs/{run.run_id}/annotations.parquet")
    assert len(notes) == 6 * 3 and {n["judge"] for n in notes} == {"t/judge-true", "t/judge-false", "t/judge-garbage"}
    garbage = [n for n in notes if n["judge"] == "t/judge-garbage"]
    assert all(n["score"] is None and n["error"].startswith("unparsable judge output") for n in garbage)
    assert all(n["raw_output"] == "TRUE, I think." for n in garbage)  # shown as the judge said it
    assert {n["template"]: n["template_version"] for n in notes} == {"omni_math": "1"}
    s = summary(store, run.run_id)
    assert s["omni_math_accuracy"]["mean"] == 0.5 and s["omni_math_accuracy"]["count"] == 6  # mean(1, 0), not /3
    assert s["omni_math_judge_errors"]["mean"] == 1.0 and s["omni_math_judges_parsed"]["mean"] == 2.0
    # the rule-based check is computed beside it: only problem 1 (\frac{8}{2}) equals the boxed 4
    stats = {(r["instance_id"], r["name"]): r["value"] for r in table(store, f"runs/{run.run_id}/stats.parquet")}
    assert [stats[(f"id{k}", "omni_math_rule_equivalence")] for k in range(6)] == [0, 1, 0, 0, 0, 0]
    info = json.loads(store.fs.open(store.path(f"runs/{run.run_id}/run.json")).read())
    assert info["judges"]["parse_errors"] == 6 and info["judges"]["request_errors"] == 0
    assert [j["name"] for j in info["judges"]["deployments"]] == ["t/judge-true", "t/judge-false", "t/judge-garbage"]
    assert info["status"] == "complete" and out.score == 0.5  # unparsable is counted, not a run error


def test_judge_cost_is_summed_separately(store, omni_mirror, deployments):
    priced = deployments["t/model"].model_copy(update={"price_input_per_mtok": 3.0, "price_output_per_mtok": 4.0})
    deployments["t/model"] = priced
    run, _query, _score, out = run_pair(store, deployments, ["t/judge-true", "t/judge-false"])
    notes = table(store, f"runs/{run.run_id}/annotations.parquet")
    by_judge = {j: [n for n in notes if n["judge"] == j] for j in ("t/judge-true", "t/judge-false")}
    for judge, price_in, price_out in (("t/judge-true", 2.0, 10.0), ("t/judge-false", 1.0, 1.0)):
        for n in by_judge[judge]:
            assert n["prompt_tokens"] > 100 and n["output_tokens"] > 0
            assert n["cost_usd"] == pytest.approx((n["prompt_tokens"] * price_in + n["output_tokens"] * price_out) / 1e6)
    judge_cost = sum(n["cost_usd"] for n in notes)
    completions = table(store, f"runs/{run.run_id}/completions.parquet")
    model_cost = sum(c["cost_usd"] for c in completions)
    info = json.loads(store.fs.open(store.path(f"runs/{run.run_id}/run.json")).read())
    assert info["judge_cost_usd"] == pytest.approx(judge_cost) and judge_cost > 0
    assert info["cost_usd"] == pytest.approx(model_cost) and model_cost > 0  # the model's own, without the judges'
    assert out.judge_cost_usd == pytest.approx(judge_cost)
    assert info["judges"]["tokens"]["prompt"] == sum(n["prompt_tokens"] for n in notes)


def test_budget_covers_judge_requests(store, omni_mirror, deployments):
    """The model is free; the judge is priced past a tiny budget: judging stops before sending."""
    with pytest.raises(JudgeFailed, match="budget"):
        run_pair(store, deployments, ["t/judge-true"], budget=BoardRun(1e-6))
    _run, query, score, _out = run_pair(store, deployments, ["t/judge-true"])  # no budget: everything is judged now
    assert query.sent == 0 and score.judge_sent == 6 and score.judge_reused == 0  # nothing was sent (or paid) before


def test_empty_model_output_is_not_sent_and_gets_the_fixed_verdict(store, omni_mirror, deployments):
    run, _query, score, out = run_pair(store, deployments, ["t/judge-true"], model="t/empty")
    notes = table(store, f"runs/{run.run_id}/annotations.parquet")
    assert all(n["judge_request_hash"] is None and n["score"] == 0.0 and n["cost_usd"] == 0 for n in notes)
    assert score.judge_sent == 0 and out.score == 0.0  # FALSE, not missing: HELM's rule for empty outputs


def test_no_judge_leaves_judge_metrics_missing_and_keeps_rule_based(store, omni_mirror, deployments):
    run, _query, score, out = run_pair(store, deployments, None, no_judge=True)
    assert run.judges == [] and score.annotations_key is None
    s = summary(store, run.run_id)
    assert "omni_math_accuracy" not in s and out.score is None  # missing, not 0
    assert s["omni_math_rule_equivalence"]["mean"] == pytest.approx(1 / 6)
    assert not store.exists(f"runs/{run.run_id}/annotations.parquet")


@pytest.mark.slow
def test_judge_change_changes_run_id_not_query_key_and_rejudges_without_requerying(store, omni_mirror, deployments):
    first, _q1, _s1, _ = run_pair(store, deployments, ["t/judge-true"])
    second, q2, s2, out = run_pair(store, deployments, ["t/judge-false"])
    assert first.query_key == second.query_key and q2.sent == 0 and q2.reused == 6  # the model is not asked again
    assert first.run_id != second.run_id and first.metric_version != second.metric_version
    assert first.score_key != second.score_key and s2.judge_sent == 6 and out.score == 0.0
    again, _q3, s3, _ = run_pair(store, deployments, ["t/judge-true"])  # back to the first judge: all journaled
    assert again.run_id == first.run_id and s3.judge_sent == 0 and s3.judge_reused == 6
    nojudge, *_ = run_pair(store, deployments, None, no_judge=True)
    assert len({first.run_id, second.run_id, nojudge.run_id}) == 3 and nojudge.query_key == first.query_key


def test_a_judge_does_not_touch_unjudged_scenarios(deployments):
    spec = load_board({"name": "b", "version": "t", "models": ["offline/solver"], "scenarios": [{"name": "arithmetic"}]})
    plans = [plan_board(spec, deployments, judges=["t/judge-true"]), plan_board(spec, deployments, judges=["t/judge-false"]),
             plan_board(spec, deployments)]
    assert len({p.runs[0].run_id for p in plans}) == 1 and plans[0].runs[0].judges == []
    assert len({p.board_version for p in plans}) == 1  # same runs, same release


def test_judges_are_checked_up_front(omni_mirror, deployments, monkeypatch):
    spec = load_board(OMNI_BOARD)
    monkeypatch.delenv("HELMFLOW_TEST_UNSET_JUDGE_KEY", raising=False)
    with pytest.raises(BoardError, match="HELMFLOW_TEST_UNSET_JUDGE_KEY.*--no-judge"):
        plan_board(spec, deployments, judges=["t/judge-keyed"])
    with pytest.raises(BoardError, match="unknown judge deployment.*t/nobody"):
        plan_board(spec, deployments, judges=["t/nobody"])
    with pytest.raises(BoardError, match="omni_math need.*a judge.*--no-judge"):
        plan_board(spec, deployments)
    monkeypatch.setenv("HELMFLOW_TEST_UNSET_JUDGE_KEY", "set-now")
    (run,) = plan_board(spec, deployments, judges=["t/judge-keyed"]).runs
    assert [j.name for j in run.judges] == ["t/judge-keyed"]
    assert plan_board(spec, deployments, judges=["t/judge-keyed"], check_credentials=False).runs


def test_dry_run_prices_the_judges_worst_case(omni_mirror, deployments):
    from helmflow.dryrun import estimate

    spec = load_board(OMNI_BOARD)
    rows = estimate(plan_board(spec, deployments, judges=["t/judge-true", "t/judge-false"]))
    model, *judges = rows
    assert model.deployment == "t/model" and [r.deployment for r in judges] == [
        "t/judge-true judging t/model", "t/judge-false judging t/model"]
    true = judges[0]
    assert true.requests == 6 and true.max_output_tokens == 6 * 4096  # the template's judge budget
    assert true.prompt_tokens > 6 * 4096 + 6 * 100  # the template and problem, plus the model's whole max_tokens
    assert true.worst_case_usd == pytest.approx((true.prompt_tokens * 2.0 + true.max_output_tokens * 10.0) / 1e6)
    assert len(estimate(plan_board(spec, deployments, no_judge=True))) == 1


def test_failed_judge_requests_mark_the_run_and_are_resent_next_time(store, omni_mirror, deployments):
    """Transport errors after retries are annotation errors that make the run "errors" (never cached);
    the next run sends exactly those again. A permanent judge error stops the pair, naming the judge."""
    flaky = offline("t/judge-flaky", JUDGE_TRUE, max_error_rate=1.0, retry={"attempts": 1})
    deployments["t/judge-flaky"] = flaky.model_copy(update={"options": {**flaky.options, "fail": "rate:1.0"}})
    run, _, score, out = run_pair(store, deployments, ["t/judge-flaky"])
    notes = table(store, f"runs/{run.run_id}/annotations.parquet")
    assert all(n["score"] is None and n["error"].startswith("judge request failed") for n in notes)
    assert score.judge_errors == 6 and out.status == "errors" and out.score is None
    deployments["t/judge-flaky"] = flaky  # the same judge (same versions), healthy again
    again, _, score, out = run_pair(store, deployments, ["t/judge-flaky"])
    assert again.run_id == run.run_id and score.judge_sent == 6 and out.status == "complete" and out.score == 1.0
    deployments["t/judge-broken"] = offline("t/judge-broken", JUDGE_TRUE, options={"behavior": "constant", "fail": "always"})
    with pytest.raises(JudgeFailed, match="judge 't/judge-broken'.*configured to fail"):
        run_pair(store, deployments, ["t/judge-broken"])


def judge_true(prompt: str, payload: dict) -> str:
    """A dev-server policy: every judge verdict is TRUE."""
    return JUDGE_TRUE


@pytest.mark.slow
def test_a_reasoning_judge_keeps_its_reasoning_in_the_annotation(store, omni_mirror, deployments):
    from helmflow.devserver import start_dev_server
    from tests.support.devserver import dev_deployment

    with start_dev_server("--policy", "fn:tests.test_judges:judge_true") as srv:
        judge = dev_deployment(srv, "anthropic", name="t/judge-thinking", model="claude-dev", context_window=200000,
                               reasoning={"budget_tokens": 2000}, price_input_per_mtok=3.0,
                               price_output_per_mtok=15.0)
        run, _q, score, _out = run_pair(store, {**deployments, judge.name: judge}, [judge.name])
        stats = srv.stats()
    notes = table(store, f"runs/{run.run_id}/annotations.parquet")
    assert len(notes) == 6 and all(n["score"] == 1.0 and n["raw_output"] == JUDGE_TRUE for n in notes)
    # the verdict is parsed from the answer; the thinking behind it is kept beside it, with its tokens
    assert all(n["reasoning"].split() == [f"thought{i}" for i in range(1, 13)] for n in notes)
    assert all(n["reasoning_tokens"] == 12 for n in notes)
    assert stats["body_keys"]["messages:thinking"] == 6 and stats["rejected"] == {}
    usage = stats["usage"]
    assert score.judge_cost_usd == pytest.approx((usage["prompt_tokens"] * 3 + usage["completion_tokens"] * 15) / 1e6)


@pytest.mark.slow
def test_a_batch_judge_judges_through_message_batches_at_the_batch_price(store, omni_mirror, deployments):
    from helmflow.devserver import start_dev_server
    from tests.support.devserver import dev_deployment

    with start_dev_server("--policy", "fn:tests.test_judges:judge_true") as srv:
        judge = dev_deployment(srv, "anthropic", name="t/judge-batched", model="claude-dev", context_window=200000,
                               price_input_per_mtok=3.0, price_output_per_mtok=15.0, batch=True, batch_poll_s=0.05)
        run, _q, score, _out = run_pair(store, {**deployments, judge.name: judge}, [judge.name])
        stats = srv.stats()
    notes = table(store, f"runs/{run.run_id}/annotations.parquet")
    assert len(notes) == 6 and all(n["score"] == 1.0 and n["raw_output"] == JUDGE_TRUE for n in notes)
    assert stats["requests"] == 0 and stats["batches"] == 1 and stats["batch_answered"] == 6  # no real-time call
    usage = stats["usage"]
    real = (usage["prompt_tokens"] * 3 + usage["completion_tokens"] * 15) / 1e6
    assert score.judge_cost_usd == pytest.approx(0.5 * real)
