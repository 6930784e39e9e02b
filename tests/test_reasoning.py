"""Reasoning deployments: options checked when the models file loads, mapped by each client kind to its
provider's fields, and the reasoning kept apart from the answer, counted and priced.

The wire tests send through the real ``openai``/``anthropic`` SDKs to a ``helmflow dev-server`` and read
what was sent and billed from the server's own counters.
"""

from __future__ import annotations

import math
import textwrap

import pyarrow as pa
import pytest

from helmflow.clients import DeploymentError, load_deployments
from helmflow.clients.base import split_think_tags
from helmflow.query import run_queries
from helmflow.records import (
    COMPLETION_SCHEMA,
    AdapterSpec,
    Completion,
    Deployment,
    Prompt,
    ReasoningOptions,
)
from helmflow.request_builder import build_requests
from helmflow.versions import model_version
from tests.support.devserver import dev_deployment


def models_file(tmp_path, entry: str) -> str:
    path = tmp_path / "models.yaml"
    path.write_text("deployments:\n" + textwrap.indent(textwrap.dedent(entry).strip(), "  "))
    return str(path)


def prompts(n: int, tag: str = "") -> list[Prompt]:
    """``n`` prompts sharing an instruction line (what the simulated prompt cache keys on)."""
    return [Prompt(instance_id=f"i{i}", split="test", head="Answer the question.\n",
                   query=f"Question {tag}{i}?\nanswer {tag}{i} is here") for i in range(n)]


def requests_for(dep: Deployment, n: int = 4, max_tokens: int = 6, tag: str = ""):
    adapter = AdapterSpec().override(max_tokens=max_tokens, stop=["\n"])
    return build_requests(prompts(n, tag), adapter, dep)


# --------------------------------------------------------------------------- options (fast)
@pytest.mark.parametrize("entry,says", [
    ("{name: a, client: openai, model: o, reasoning: {budget_tokens: 2000}}",
     "client kind 'openai' cannot honour reasoning.budget_tokens"),
    ("{name: a, client: openai, model: o, reasoning: {effort: loud}}", "reasoning.effort"),
    ("{name: a, client: openai, model: o, reasoning: {}}", "give at least one of effort"),
    ("{name: a, client: openai, model: o, logprobs: true, reasoning: {effort: low}}", "no logprobs"),
    ("{name: a, client: openai, model: o, options: {endpoint: completions}, reasoning: {effort: low}}",
     "chat endpoint"),
    ("{name: a, client: anthropic, model: c, reasoning: {effort: high}}", "goes with mode: adaptive"),
    ("{name: a, client: anthropic, model: c, reasoning: {budget_tokens: 500}}", "at least 1024"),
    ("{name: a, client: anthropic, model: c, reasoning: {mode: adaptive, budget_tokens: 2000}}",
     "mode adaptive takes no budget_tokens"),
    ("{name: a, client: anthropic, model: c, reasoning: {parser: field}}",
     "client kind 'anthropic' cannot honour reasoning.parser"),
    ("{name: a, client: openai-compatible, model: m, base_url: 'http://x/v1', reasoning: {mode: adaptive}}",
     "cannot honour reasoning.mode"),
    ("{name: a, client: offline, model: solver, reasoning: {effort: low}}",
     "client kind 'offline' cannot honour reasoning.effort (the reasoning options it takes: none)"),
    ("{name: a, client: huggingface, model: /m, reasoning: {parser: field}}", "parser: think-tags"),
])
def test_a_reasoning_option_a_kind_cannot_honour_is_one_line_at_load(tmp_path, entry, says):
    with pytest.raises(DeploymentError) as err:
        load_deployments(models_file(tmp_path, f"- {entry}"))
    assert says in str(err.value) and "entry 1 ('a')" in str(err.value) and "\n" not in str(err.value)


def test_the_cli_says_a_bad_reasoning_option_in_one_line_and_exits_2(tmp_path):
    from tests.support.cli import run_cli

    path = models_file(tmp_path, "- {name: r, client: anthropic, model: c, reasoning: {effort: high}}")
    out = run_cli("eval", "dyck_language", "--models", "r", "--models-file", path, "--storage", str(tmp_path / "s"))
    assert out.returncode == 2, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "goes with mode: adaptive" in lines[0]


def test_good_options_load_for_every_kind(tmp_path):
    path = models_file(tmp_path, """
        - {name: o, client: openai, model: o, reasoning: {effort: high}}
        - {name: c, client: anthropic, model: c, reasoning: {budget_tokens: 8000}}
        - {name: ca, client: anthropic, model: c, reasoning: {mode: adaptive, effort: medium}}
        - {name: v, client: openai-compatible, model: m, base_url: 'http://x/v1', reasoning: {parser: field}}
        - {name: t, client: openai-compatible, model: m, base_url: 'http://x/v1', reasoning: {parser: think-tags}}
        - {name: h, client: huggingface, model: /m, reasoning: {parser: think-tags}}
    """)
    deps = load_deployments(path)
    assert deps["c"].reasoning == ReasoningOptions(budget_tokens=8000)
    assert deps["o"].max_tokens_increase == 10_000 and deps["o"].output_budget(100) == 10_100


def test_reasoning_is_part_of_the_model_version_and_no_other_hash_moves():
    plain = Deployment(name="acme/m", client="openai", model="m")
    # pinned: a deployment without reasoning keeps its model version and every request hash
    assert model_version(plain) == "fe13573ce32e5a5d"
    [req] = requests_for(plain, n=1)
    assert req.request_hash == "7546de2e5c1aac0871c82a6de2a3b0890bf01557ef41c52fc5ea5df02d8c5462"
    assert req.body.max_tokens == 6 and req.notes == []
    high = plain.model_copy(update={"reasoning": ReasoningOptions(effort="high")})
    low = plain.model_copy(update={"reasoning": ReasoningOptions(effort="low")})
    assert len({model_version(plain), model_version(high), model_version(low)}) == 3
    [rh], [rl] = requests_for(high, n=1), requests_for(low, n=1)
    assert rh.request_hash != rl.request_hash != req.request_hash
    assert rh.body.max_tokens == 6 + 10_000  # HELM's increase_max_tokens for reasoning models
    assert rh.notes == ["temperature 0 not sent: OpenAI reasoning models accept only their default"]
    off = high.model_copy(update={"increase_max_tokens": 0})
    assert requests_for(off, n=1)[0].body.max_tokens == 6 and model_version(off) != model_version(high)


def test_think_tags_split_the_answer_from_the_reasoning():
    assert split_think_tags("<think>a b</think> 42", "stop") == ("42", "a b", False)
    assert split_think_tags("a b</think>42", "stop") == ("42", "a b", False)  # the template opened the tag
    assert split_think_tags("<think>a b c", "length") == ("", "a b c", True)
    assert split_think_tags("plain 42", "stop") == ("plain 42", "", False)


def test_completions_stored_before_the_reasoning_columns_still_read():
    old = COMPLETION_SCHEMA.remove(COMPLETION_SCHEMA.get_field_index("reasoning"))
    row = Completion(request_hash="h", text="42").model_dump()
    row.pop("reasoning")
    table = pa.Table.from_pylist([row], schema=old)
    widened = pa.Table.from_pylist(table.to_pylist(), schema=COMPLETION_SCHEMA)  # the column is null
    [c] = [Completion.model_validate(r) for r in widened.to_pylist()]
    assert (c.text, c.reasoning, c.reasoning_tokens, c.truncated_in_reasoning) == ("42", "", 0, False)


# --------------------------------------------------------------------------- through the SDKs (slow: a server)
@pytest.mark.slow
def test_openai_reasoning_sends_effort_and_max_completion_tokens_and_no_temperature(dev_server, store):
    dep = dev_deployment(dev_server, "openai", model="o-dev", reasoning={"effort": "low"}, context_window=20000,
                         price_input_per_mtok=2.0, price_output_per_mtok=8.0)
    result = run_queries(store, dep, requests_for(dep, n=4))
    assert result.errors == 0, [c.error for c in result.completions]
    stats = dev_server.stats()
    keys = stats["body_keys"]
    assert keys["chat:reasoning_effort"] == 4 and keys["chat:max_completion_tokens"] == 4
    assert "chat:temperature" not in keys and "chat:max_tokens" not in keys and stats["rejected"] == {}
    c = result.completions[1]
    assert c.text == "answer 1 is here" and c.reasoning == "" and c.reasoning_tokens == 4  # low: 4 words
    assert c.output_tokens == 4 + 4 and not c.truncated_in_reasoning
    usage = stats["usage"]
    assert sum(x.reasoning_tokens for x in result.completions) == usage["reasoning_tokens"] == 16
    assert sum(x.cached_tokens for x in result.completions) == usage["cached_tokens"] == 3 * 3  # the shared head
    total = (usage["prompt_tokens"] * 2.0 + usage["completion_tokens"] * 8.0) / 1e6
    assert math.isclose(sum(x.cost_usd for x in result.completions), total)


@pytest.mark.slow
def test_openai_reasoning_with_too_small_a_budget_is_truncated_in_reasoning(dev_server, store):
    dep = dev_deployment(dev_server, "openai", model="o-dev", reasoning={"effort": "high"}, increase_max_tokens=0)
    result = run_queries(store, dep, requests_for(dep, n=3, max_tokens=10))  # high thinks 16 words
    assert all(c.ok and c.truncated_in_reasoning and c.text == "" and c.finish_reason == "length"
               for c in result.completions)


@pytest.mark.slow
def test_the_dev_server_refuses_temperature_for_an_openai_reasoning_model(dev_server, store):
    """The check the client's dropping answers: sent by hand through the SDK, temperature is a 400."""
    import openai

    sdk = openai.OpenAI(base_url=dev_server.openai_url, api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="temperature"):
        sdk.chat.completions.create(model="o-dev", messages=[{"role": "user", "content": "hi"}], temperature=0,
                                    reasoning_effort="low", max_completion_tokens=50)
    with pytest.raises(openai.BadRequestError, match="max_completion_tokens"):
        sdk.chat.completions.create(model="o-dev", messages=[{"role": "user", "content": "hi"}], max_tokens=50,
                                    reasoning_effort="low")


@pytest.mark.slow
@pytest.mark.parametrize("model,parser", [("dev-reasoner", "field"), ("dev-reasoner-legacy", "field"),
                                          ("dev-think", "think-tags")])
def test_openai_compatible_reads_the_reasoning_field_or_the_think_tags(dev_server, store, model, parser):
    dep = dev_deployment(dev_server, model=model, reasoning={"parser": parser}, context_window=20000)
    result = run_queries(store, dep, requests_for(dep, n=2))
    c = result.completions[0]
    assert c.ok, c.error
    assert c.text == "answer 0 is here" and c.reasoning.split() == [f"thought{i}" for i in range(1, 9)]
    assert c.reasoning_tokens == 8 and c.output_tokens == 12  # counted by the tokenizer: vLLM sends no count
    assert "thought" not in c.text and "<think>" not in c.text
    keys = dev_server.stats()["body_keys"]
    assert keys["chat:temperature"] == 2 and "chat:reasoning_effort" not in keys  # nothing dropped or added
    # think tags: a stop sequence ("\n") would end the thinking, so it is applied to the answer instead
    assert ("chat:stop" in keys) == (parser == "field")
    notes = requests_for(dep, n=1)[0].notes
    assert notes == ([] if parser == "field" else ["stop sequences ['\\n'] not sent: applied to the answer after </think>"])


@pytest.mark.slow
def test_a_server_without_a_reasoning_parser_stops_inside_the_thinking(dev_server):
    """Why the stop sequences of a think-tags deployment are not sent (the dev server as such a server)."""
    import openai

    sdk = openai.OpenAI(base_url=dev_server.openai_url, api_key="k", max_retries=0)
    resp = sdk.chat.completions.create(model="r1-think", messages=[{"role": "user", "content": "a\nb"}],
                                       max_tokens=50, stop=["\n"])
    assert resp.choices[0].message.content == "<think>thought1" and resp.choices[0].finish_reason == "stop"


@pytest.mark.slow
def test_openai_compatible_think_tags_cut_by_the_budget(dev_server, store):
    dep = dev_deployment(dev_server, model="dev-think", reasoning={"parser": "think-tags", "budget_tokens": 5},
                         increase_max_tokens=0)
    result = run_queries(store, dep, requests_for(dep, n=2, max_tokens=4))
    c = result.completions[0]
    assert c.truncated_in_reasoning and c.text == "" and c.reasoning.split() == ["thought1", "thought2", "thought3", "thought4"]
    assert dev_server.stats()["body_keys"]["chat:thinking_token_budget"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("reasoning,thinking_words", [({"budget_tokens": 2000}, 12),
                                                      ({"mode": "adaptive", "effort": "low"}, 4)])
def test_anthropic_thinking_is_kept_apart_and_counted(dev_server, store, reasoning, thinking_words):
    dep = dev_deployment(dev_server, "anthropic", model="claude-dev", reasoning=reasoning, context_window=200000,
                         price_input_per_mtok=3.0, price_output_per_mtok=15.0)
    result = run_queries(store, dep, requests_for(dep, n=3))
    assert result.errors == 0, [c.error for c in result.completions]
    c = result.completions[2]
    assert c.text == "answer 2 is here" and c.reasoning.split() == [f"thought{i + 1}" for i in range(thinking_words)]
    assert c.reasoning_tokens == thinking_words and c.output_tokens == thinking_words + 4
    stats = dev_server.stats()
    assert stats["body_keys"]["messages:thinking"] == 3 and "messages:temperature" not in stats["body_keys"]
    assert ("messages:output_config" in stats["body_keys"]) == ("effort" in reasoning)
    usage = stats["usage"]
    assert sum(x.prompt_tokens for x in result.completions) == usage["prompt_tokens"]  # cached ones included
    assert sum(x.cached_tokens for x in result.completions) == usage["cached_tokens"] == 2 * 3
    total = (usage["prompt_tokens"] * 3.0 + usage["completion_tokens"] * 15.0) / 1e6
    assert math.isclose(sum(x.cost_usd for x in result.completions), total)


@pytest.mark.slow
def test_an_adaptive_only_model_refuses_a_thinking_budget(dev_server, store):
    dep = dev_deployment(dev_server, "anthropic", model="claude-adaptive-only", reasoning={"budget_tokens": 2000},
                         context_window=200000)
    result = run_queries(store, dep, requests_for(dep, n=2))
    assert result.errors == 2 and "adaptive" in (result.completions[0].error or "")
    ok = dev_deployment(dev_server, "anthropic", model="claude-adaptive-only",
                        reasoning={"mode": "adaptive", "effort": "high"}, context_window=200000)
    assert run_queries(store, ok, requests_for(ok, n=2)).errors == 0


def test_anthropic_budget_at_or_above_max_tokens_is_a_planning_error():
    from helmflow.plan.compile import BoardError, plan_run, plan_scenario
    from helmflow.plan.spec import ScenarioEntry

    dep = Deployment(name="c", client="anthropic", model="c", context_window=200000,
                     reasoning=ReasoningOptions(budget_tokens=20000))
    scenario = plan_scenario(ScenarioEntry(name="dyck_language", params={"num_parenthesis_pairs": 3}), 2, {})
    with pytest.raises(BoardError, match="budget_tokens 20000 must be below max_tokens"):
        plan_run(scenario, dep)
    assert plan_run(scenario, dep.model_copy(update={"increase_max_tokens": 30000})).deployment.name == "c"



def test_reproduce_explain_states_the_token_budget_of_each_reasoning_deployment(tmp_path):
    from tests.support.cli import run_cli

    path = models_file(tmp_path, """
        - {name: r/openai, client: openai, model: o, context_window: 200000, reasoning: {effort: high}}
        - {name: r/off, client: openai, model: o, reasoning: {effort: low}, increase_max_tokens: 0}
    """)
    out = run_cli("reproduce", "lite", "--explain", "--models", "r/openai,r/off,offline/echo", "--models-file", path)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert ("token budget, r/openai: reasoning (effort=high); every request's max_tokens is raised by 10,000 "
            "(HELM's increase_max_tokens run expander" in text)
    assert "token budget, r/off: reasoning (effort=low) with increase_max_tokens 0" in text
    assert "token budget, offline/echo" not in text  # a plain deployment's budget is the adapter's


def test_a_board_or_eval_increase_replaces_the_deployments_own(tmp_path):
    from helmflow.cli.eval import board_spec
    from helmflow.plan.compile import plan_board
    from helmflow.plan.spec import load_board

    path = models_file(tmp_path, """
        - {name: r/openai, client: openai, model: o, context_window: 200000, reasoning: {effort: high}}
    """)
    deps = load_deployments(path)
    spec = {"name": "b", "version": "1", "models": ["r/openai", "offline/echo"],
            "scenarios": [{"name": "dyck_language", "params": {"num_parenthesis_pairs": 3}}]}
    default = {r.deployment.name: r for r in plan_board(load_board(spec), deps).runs}
    assert default["r/openai"].deployment.max_tokens_increase == 10_000
    assert default["offline/echo"].deployment.max_tokens_increase == 0
    raised = {r.deployment.name: r for r in plan_board(load_board({**spec, "increase_max_tokens": 500}), deps).runs}
    assert raised["r/openai"].deployment.max_tokens_increase == 500 == raised["offline/echo"].deployment.max_tokens_increase
    assert raised["r/openai"].run_id != default["r/openai"].run_id
    assert raised["offline/echo"].run_id != default["offline/echo"].run_id
    import argparse

    args = argparse.Namespace(models=["r/openai"], scenario=["dyck_language:num_parenthesis_pairs=3"], adapter={},
                              metrics=None, main_metric=None, name=None, max_instances=None, increase_max_tokens=0)
    assert board_spec(args)["increase_max_tokens"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_cached_prompt_tokens_cost_the_cached_price(dev_server, store, kind):
    dep = dev_deployment(dev_server, kind, price_input_per_mtok=4.0, price_cached_input_per_mtok=0.4,
                         price_output_per_mtok=10.0)
    result = run_queries(store, dep, requests_for(dep, n=5))
    assert result.errors == 0
    usage = dev_server.stats()["usage"]
    assert usage["cached_tokens"] == 4 * 3 == sum(c.cached_tokens for c in result.completions)
    billed = ((usage["prompt_tokens"] - usage["cached_tokens"]) * 4.0 + usage["cached_tokens"] * 0.4
              + usage["completion_tokens"] * 10.0) / 1e6
    assert math.isclose(sum(c.cost_usd for c in result.completions), billed)
    assert sum(c.prompt_tokens for c in result.completions) == usage["prompt_tokens"]


def test_efficiency_columns_cost_per_correct_and_reasoning_tokens_per_instance():
    from helmflow.aggregate import efficiency_columns
    from helmflow.outcomes import RunOutcome

    def cell(label, score, cost, instances, reasoning_tokens=0, truncated=None):
        return RunOutcome(run_id=label, scenario=label, deployment="m", status="complete", uri="", main_metric="em",
                          score=score, ci_low=None, ci_high=None, error_rate=0.0, cost_usd=cost, prompt_tokens=0,
                          output_tokens=0, instances=instances, reasoning_tokens=reasoning_tokens,
                          truncated_in_reasoning=truncated)

    cells = {("m", "a"): cell("a", 0.5, 0.03, 10, 400, 0.2), ("m", "b"): cell("b", 1.0, 0.01, 5, 100, 0.0)}
    out = efficiency_columns({"deployment": "m"}, ["a", "b"], cells)
    assert out["cost_per_correct_usd"] == pytest.approx(0.04 / (5 + 5))
    assert out["reasoning_tokens"] == 500 and out["reasoning_tokens_per_instance"] == pytest.approx(500 / 15)
    assert out["a truncated_in_reasoning"] == 0.2 and out["b truncated_in_reasoning"] == 0.0
    judged = {**cells, ("m", "b"): cell("b", 7.5, 0.01, 5)}  # a 1-10 judge scale counts no correct answers
    assert efficiency_columns({"deployment": "m"}, ["a", "b"], judged)["cost_per_correct_usd"] is None
    plain = {("m", "a"): cell("a", 0.0, 0.03, 10)}
    out = efficiency_columns({"deployment": "m"}, ["a", "b"], plain)
    assert out["cost_per_correct_usd"] is None and out["a truncated_in_reasoning"] is None
    assert out["b truncated_in_reasoning"] is None  # no run


@pytest.mark.slow
def test_redacted_anthropic_thinking_is_marked_and_still_counted(dev_server, store):
    dep = dev_deployment(dev_server, "anthropic", model="claude-redacted", reasoning={"budget_tokens": 1024},
                         context_window=200000)
    [c] = run_queries(store, dep, requests_for(dep, n=1)).completions
    assert c.ok and c.text == "answer 0 is here" and c.reasoning == "[redacted thinking]" and c.reasoning_tokens == 12


@pytest.mark.slow
def test_eval_refuses_a_bad_increase_in_one_line(tmp_path):
    from tests.support.cli import run_cli

    path = models_file(tmp_path, "- {name: r/o, client: openai, model: o, context_window: 200000, "
                                 "reasoning: {effort: high}}")
    base = ["eval", "dyck_language:num_parenthesis_pairs=3", "--models", "r/o", "--models-file", path,
            "--storage", str(tmp_path / "s"), "--dry-run"]
    negative = run_cli(*base, "--increase-max-tokens", "-1")
    assert negative.returncode == 2 and "--increase-max-tokens must be 0 or more" in negative.stderr
    too_big = run_cli(*base, "--increase-max-tokens", "300000", env={"OPENAI_API_KEY": "x"})
    assert too_big.returncode == 2, too_big.stdout + too_big.stderr
    assert "raised by increase_max_tokens 300000" in too_big.stderr and "context_window 200000" in too_big.stderr
    fits = run_cli(*base, env={"OPENAI_API_KEY": "x"})  # the default raise: 5 requests of 5 + 10,000 tokens
    assert fits.returncode == 0, fits.stdout + fits.stderr
    assert "50025" in fits.stdout  # the max output tokens column


@pytest.mark.slow
@pytest.mark.parametrize("kind,reasoning", [("openai", {"effort": "low"}), ("anthropic", {"budget_tokens": 1024})])
def test_batched_reasoning_requests_carry_the_same_fields_and_keep_the_reasoning(dev_server, store, kind, reasoning):
    dep = dev_deployment(dev_server, kind, model="claude-dev" if kind == "anthropic" else "o-dev", batch=True,
                         batch_poll_s=0.1, reasoning=reasoning, context_window=200000)
    result = run_queries(store, dep, requests_for(dep, n=3))
    assert result.errors == 0, [c.error for c in result.completions]
    stats = dev_server.stats()
    keys = stats["body_keys"]
    assert "chat" not in stats["by_endpoint"] and "messages" not in stats["by_endpoint"]  # batch lines only
    if kind == "openai":
        assert keys["chat:reasoning_effort"] == 3 and "chat:temperature" not in keys
        assert all(c.reasoning_tokens == 4 and c.reasoning == "" for c in result.completions)
    else:
        assert keys["messages:thinking"] == 3
        assert all(c.reasoning.split()[0] == "thought1" and c.reasoning_tokens == 12 for c in result.completions)
    assert all(c.text.startswith("answer") and "thought" not in c.text for c in result.completions)
