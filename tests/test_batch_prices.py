"""Batch and cache prices (fast): what a completion costs from the usage a provider reports."""

from __future__ import annotations

import math

import pytest

from helmflow.clients import DeploymentError, load_deployments
from helmflow.records import Deployment
from helmflow.request_builder import cost_usd

PRICED = {"price_input_per_mtok": 3.0, "price_output_per_mtok": 15.0}


def test_a_batched_request_costs_the_batch_discount_of_its_real_time_price():
    dep = Deployment(name="a/claude", client="anthropic", model="m", **PRICED)
    real = cost_usd(dep, 1000, 100)
    assert math.isclose(real, (1000 * 3.0 + 100 * 15.0) / 1e6)
    assert math.isclose(cost_usd(dep, 1000, 100, batch=True), 0.5 * real)
    cheaper = dep.model_copy(update={"batch_discount": 0.4})
    assert math.isclose(cost_usd(cheaper, 1000, 100, batch=True), 0.4 * real)


def test_cache_reads_and_writes_cost_their_declared_prices_and_the_discount_applies_on_top():
    dep = Deployment(name="a/claude", client="anthropic", model="m", price_cached_input_per_mtok=0.3,
                     price_cache_write_per_mtok=3.75, **PRICED)
    # 1,000 prompt tokens: 600 read from the cache, 300 written to it, 100 plain
    usd = cost_usd(dep, 1000, 100, cached_tokens=600, cache_write_tokens=300)
    assert math.isclose(usd, (100 * 3.0 + 600 * 0.3 + 300 * 3.75 + 100 * 15.0) / 1e6)
    assert math.isclose(cost_usd(dep, 1000, 100, 600, True, 300), 0.5 * usd)
    plain = Deployment(name="a/plain", client="anthropic", model="m", **PRICED)  # no cache prices: input price
    assert math.isclose(cost_usd(plain, 1000, 100, 600, cache_write_tokens=300), cost_usd(plain, 1000, 100))


def test_batch_on_a_kind_without_a_batch_api_is_refused_when_the_models_file_loads(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text("deployments:\n  - {name: local/vllm, client: openai-compatible, model: m, batch: true}\n")
    with pytest.raises(DeploymentError, match="has no batch API"):
        load_deployments(models)
    models.write_text("deployments:\n  - {name: a/gpt, client: openai, model: m, batch: true, batch_discount: 2}\n")
    with pytest.raises(DeploymentError, match="batch_discount"):
        load_deployments(models)


def test_prompt_cache_on_a_kind_that_marks_no_breakpoints_is_refused_when_the_models_file_loads(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text("deployments:\n  - {name: a/gpt, client: openai, model: m, prompt_cache: true}\n")
    with pytest.raises(DeploymentError, match="prompt_cache: client kind 'openai' marks no cache breakpoints"):
        load_deployments(models)
    models.write_text("deployments:\n  - {name: a/claude, client: anthropic, model: m, prompt_cache: true}\n")
    assert load_deployments(models)["a/claude"].prompt_cache


def test_batch_selection_turns_batch_mode_on_for_the_kinds_with_a_batch_api_only(tmp_path):
    from helmflow.plan.compile import prepare

    models = tmp_path / "models.yaml"
    models.write_text("deployments:\n"
                      "  - {name: a/gpt, client: openai, model: m, api_key_env: HOME}\n"
                      "  - {name: a/claude, client: anthropic, model: m, api_key_env: HOME}\n"
                      "  - {name: a/vllm, client: openai-compatible, model: m, base_url: 'http://127.0.0.1:9/v1'}\n")
    board = {"name": "b", "version": "1", "models": ["a/gpt", "a/claude", "a/vllm", "offline/echo"],
             "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": 3}}]}
    plain = prepare(board, models_file=str(models))
    batched = prepare(board, models_file=str(models), batch=True)
    assert not any(r.deployment.batch for r in plain.runs)
    assert {r.deployment.name: r.deployment.batch for r in batched.runs} == {
        "a/gpt": True, "a/claude": True, "a/vllm": False, "offline/echo": False}
    # the same runs: batch mode is not part of what is asked
    assert [r.run_id for r in plain.runs] == [r.run_id for r in batched.runs]
    assert not batched.selection  # not a subset of the board


def test_batch_max_wait_is_a_duration_and_a_bad_one_is_one_line_when_the_models_file_loads(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text("deployments:\n"
                      "  - {name: a/gpt, client: openai, model: m, batch: {max_wait: 6h}}\n"
                      "  - {name: a/claude, client: anthropic, model: m, batch: {max_wait: 1h30m}}\n"
                      "  - {name: a/secs, client: openai, model: m, batch: true, batch_max_wait_s: 90}\n"
                      "  - {name: a/plain, client: openai, model: m, batch: true}\n")
    deps = load_deployments(models)
    assert [(deps[n].batch, deps[n].batch_max_wait_s) for n in ("a/gpt", "a/claude", "a/secs", "a/plain")] == [
        (True, 6 * 3600.0), (True, 5400.0), (True, 90.0), (True, None)]
    for bad, said in [("{max_wait: 6x}", "batch.max_wait: '6x' is not a duration (e.g. 6h, 30m, 90s)"),
                      ("{max_wait: 0}", "batch.max_wait: 0 must be a duration above zero"),
                      ("{max_wait: -2h}", "batch.max_wait: '-2h' is not a duration"),
                      ("{max_wait: true}", "batch.max_wait: True is not a duration"),
                      ("{wait: 6h}", "batch: unknown option(s) wait; known: max_wait")]:
        models.write_text(f"deployments:\n  - {{name: a/gpt, client: openai, model: m, batch: {bad}}}\n")
        with pytest.raises(DeploymentError) as caught:
            load_deployments(models)
        assert said in str(caught.value) and "\n" not in str(caught.value) and "Value error" not in str(caught.value)
        assert caught.value.exit_code == 2
    models.write_text("deployments:\n  - {name: a/gpt, client: openai, model: m, batch: {max_wait: 1h}, "
                      "batch_max_wait_s: 60}\n")
    with pytest.raises(DeploymentError, match="batch.max_wait and batch_max_wait_s both given"):
        load_deployments(models)


def test_requests_sharing_leading_lines_are_ordered_together_and_a_grouped_order_is_kept():
    from helmflow.query import prefix_order
    from helmflow.records import Request, RequestBody

    def req(prompt: str, i: int) -> Request:
        body = RequestBody(model="m", prompt=prompt, max_tokens=1, temperature=0.0)
        return Request(request_hash=f"h{i}", instance_id=f"i{i}", split="test", body=body)

    # two trials' few-shot heads interleaved (as a calibrated prompt and its answer-free twin would be),
    # one zero-shot prompt, and a prompt holding only the first example of trial A
    prompts = ["Instr\nA1\nA2\nQ0", "Instr\nB1\nB2\nQ0", "Q9", "Instr\nA1\nA2\nQ1", "Instr\nB1\nB2\nQ1",
               "Instr\nA1\nQ2", "Instr\nA1\nA2\nQ3"]
    ordered = [r.body.prompt for r in prefix_order([req(p, i) for i, p in enumerate(prompts)])]
    assert ordered == ["Instr\nA1\nA2\nQ0", "Instr\nA1\nA2\nQ1", "Instr\nA1\nA2\nQ3", "Instr\nA1\nQ2",
                       "Instr\nB1\nB2\nQ0", "Instr\nB1\nB2\nQ1", "Q9"]
    grouped = [req(f"Instr\nA1\nQ{i}", i) for i in range(5)] + [req(f"Other\nQ{i}", 5 + i) for i in range(3)]
    assert prefix_order(grouped) == grouped
    assert prefix_order([]) == []


def test_a_retried_prompt_is_marked_as_its_first_attempt_was():
    """The first prompt of a head goes unmarked; sent again (a retry), it is not its own earlier prompt."""
    import asyncio

    from helmflow.clients.anthropic import AnthropicClient
    from helmflow.records import RequestBody

    client = AnthropicClient(Deployment(name="a/claude", client="anthropic", model="m", prompt_cache=True))

    def marks(prompt: str) -> list[str]:
        body = RequestBody(model="m", prompt=prompt, max_tokens=1, temperature=0.0)
        content = asyncio.run(client._request(body))["messages"][0]["content"]
        return [] if isinstance(content, str) else [b["text"] for b in content if "cache_control" in b]

    head = "Instructions\nexample 1\nexample 2\n"
    assert marks(head + "Question 0?") == []
    assert marks(head + "Question 0?") == []  # a retry: still unmarked, not "Question 0?" marked as shared
    assert marks(head + "Question 1?") == [head]
    assert marks(head + "Question 1?") == [head]
