"""A board with a reasoning deployment of every client kind, end to end through the CLI, Prefect, the real
SDKs and the dev server (the huggingface one a tiny local checkpoint whose chat template has a thinking
switch): what was sent and billed is counted at the server, what was stored is read from the Parquet."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support.cli import run_cli

pytestmark = pytest.mark.slow

N = 12
PRICES = {"price_input_per_mtok": 2.0, "price_output_per_mtok": 8.0}
SERVED = ["dev/openai-r", "dev/openai-tight", "dev/claude-budget", "dev/claude-adaptive", "dev/vllm-field",
          "dev/vllm-legacy", "dev/vllm-tags"]


def deployments(server, hf_model: str, effort: str = "low") -> list[dict]:
    key = {"api_key_env": "HELMFLOW_DEV_KEY"}
    v1 = server.openai_url
    return [
        {"name": "dev/openai-r", "client": "openai", "model": "o-dev", "base_url": v1, **key, **PRICES,
         "context_window": 20000, "reasoning": {"effort": effort}},
        # no increase: arithmetic's 8 tokens are spent thinking (high: 16 words)
        {"name": "dev/openai-tight", "client": "openai", "model": "o-tight", "base_url": v1, **key, **PRICES,
         "reasoning": {"effort": "high"}, "increase_max_tokens": 0},
        {"name": "dev/claude-budget", "client": "anthropic", "model": "claude-dev", "base_url": server.url, **key,
         **PRICES, "context_window": 200000, "reasoning": {"budget_tokens": 2000}},
        {"name": "dev/claude-adaptive", "client": "anthropic", "model": "claude-adaptive-only", "base_url": server.url,
         **key, **PRICES, "context_window": 200000, "reasoning": {"mode": "adaptive", "effort": "medium"}},
        {"name": "dev/vllm-field", "client": "openai-compatible", "model": "qwen-reasoner", "base_url": v1, **PRICES,
         "context_window": 20000, "reasoning": {"parser": "field"}},
        {"name": "dev/vllm-legacy", "client": "openai-compatible", "model": "r1-reasoner-legacy", "base_url": v1,
         **PRICES, "context_window": 20000, "reasoning": {"parser": "field"}},
        {"name": "dev/vllm-tags", "client": "openai-compatible", "model": "r1-think", "base_url": v1, **PRICES,
         "context_window": 20000, "reasoning": {"parser": "think-tags"}},
        {"name": "dev/hf-thinking", "client": "huggingface", "model": hf_model, "tokenizer": f"hf:{hf_model}",
         "context_window": 256, "increase_max_tokens": 8, "options": {"device": "cpu"},
         "reasoning": {"parser": "think-tags"}},
    ]


def completions(root, name: str) -> list[dict]:
    for run_json in root.glob("runs/*/run.json"):
        if json.loads(run_json.read_text())["deployment"]["name"] == name:
            return pq.read_table(run_json.parent / "completions.parquet").to_pylist()
    raise AssertionError(f"no run of {name}")


def test_a_board_of_reasoning_deployments_of_every_kind(prefect_server, dev_server, tmp_path):
    pytest.importorskip("torch")
    from tests.support.tiny_hf import THINKING_TEMPLATE, build_tiny_model

    hf_model = str(build_tiny_model(tmp_path / "tiny-thinking", chat_template=THINKING_TEMPLATE))
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": deployments(dev_server, hf_model)}))
    board = tmp_path / "board.yaml"
    names = [*SERVED, "dev/hf-thinking"]
    board.write_text(yaml.safe_dump({
        "name": "reasoners", "version": "1", "models": names,
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": N}, "label": "arith",
                       "adapter": {"method": "chat", "max_train_instances": 1}}],
    }))
    root = tmp_path / "store"
    args = ["run", "--board-file", str(board), "--models-file", str(models), "--storage", str(root)]
    env = {"HELMFLOW_DEV_KEY": "dev-key-not-secret"}
    first = run_cli(*args, env=env)
    assert first.returncode == 0, first.stdout + first.stderr

    stats = dev_server.stats()
    keys = stats["body_keys"]
    assert stats["rejected"] == {} and stats["requests"] == len(SERVED) * N
    # OpenAI: reasoning_effort and max_completion_tokens, never temperature; compatible servers: as before
    assert keys["chat:reasoning_effort"] == 2 * N and keys["chat:max_completion_tokens"] == 2 * N
    assert keys["chat:temperature"] == 3 * N and keys["chat:max_tokens"] == 3 * N  # the three vLLM ones
    # arithmetic stops at "\n": sent to all but the think-tags deployment, which cuts its answer itself
    assert keys["chat:stop"] == 4 * N
    # Anthropic: thinking on both, the adaptive one's effort in output_config, no sampling parameters
    assert keys["messages:thinking"] == 2 * N and keys["messages:output_config"] == N
    assert not [k for k in keys if k.startswith("messages:") and k.split(":")[1] in ("temperature", "top_k")]

    for name in [*SERVED, "dev/hf-thinking"]:
        rows = completions(root, name)
        assert len(rows) == N and all(r["error"] is None for r in rows), name
        assert not [r["text"] for r in rows if "thought" in r["text"] or "<think>" in r["text"]], name
    for name in ("dev/claude-budget", "dev/claude-adaptive", "dev/vllm-field", "dev/vllm-legacy", "dev/vllm-tags"):
        assert all(r["reasoning"].split()[:2] == ["thought1", "thought2"] and r["reasoning_tokens"] > 0
                   for r in completions(root, name)), name
    assert all(r["reasoning"] == "" and r["reasoning_tokens"] == 4 for r in completions(root, "dev/openai-r"))
    assert all(r["reasoning"] and r["truncated_in_reasoning"] for r in completions(root, "dev/hf-thinking"))

    # cost: the server's token counts times the prices (reasoning tokens at the output price)
    usage = stats["usage"]
    cost = sum(r["cost_usd"] for name in SERVED for r in completions(root, name))
    assert math.isclose(cost, (usage["prompt_tokens"] * 2.0 + usage["completion_tokens"] * 8.0) / 1e6)
    assert sum(r["reasoning_tokens"] for n in SERVED for r in completions(root, n)) == usage["reasoning_tokens"]

    [lb_path] = root.glob("leaderboards/reasoners/*/leaderboard.parquet")
    rows = {r["deployment"]: r for r in pq.read_table(lb_path).to_pylist()}
    assert rows["dev/openai-tight"]["arith truncated_in_reasoning"] == 1.0
    assert rows["dev/openai-r"]["arith truncated_in_reasoning"] == 0.0
    assert rows["dev/openai-r"]["reasoning_tokens_per_instance"] == 4.0
    report = run_cli("report", "reasoners", "--storage", str(root))
    assert report.returncode == 0, report.stdout + report.stderr
    [page] = root.glob("leaderboards/reasoners/*/report/index.html")
    assert "100% truncated in reasoning" in page.read_text()

    # a new effort on one deployment re-sends that deployment's requests, and only those
    before = dev_server.stats()["by_model"]
    models.write_text(yaml.safe_dump({"deployments": deployments(dev_server, hf_model, effort="medium")}))
    second = run_cli(*args, env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    after = dev_server.stats()["by_model"]
    assert {m: after[m] - before.get(m, 0) for m in after if after[m] != before.get(m, 0)} == {"o-dev": N}
