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
