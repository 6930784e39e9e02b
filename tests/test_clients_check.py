"""``helmflow check`` through the real CLI: credentials by name, a 1-token request per endpoint,
and an exit code that says which kind of check failed."""

from __future__ import annotations

import pytest
import yaml

from helmflow.check import EXIT_BOTH, EXIT_CREDENTIALS, EXIT_ENDPOINTS
from tests.support.cli import run_cli

pytestmark = pytest.mark.slow


@pytest.fixture
def models_file(dev_server, tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/ok", "client": "openai-compatible", "model": "m", "base_url": dev_server.openai_url},
        {"name": "dev/keyed", "client": "anthropic", "model": "m", "base_url": dev_server.url,
         "api_key_env": "HELMFLOW_CHECK_KEY"},
        {"name": "dev/broken", "client": "openai", "model": "unknown-model", "base_url": dev_server.openai_url,
         "api_key_env": "HELMFLOW_CHECK_OTHER"},
    ]}))
    return path


def test_exit_codes_say_which_check_failed(models_file, dev_server):
    env = {"HELMFLOW_CHECK_OTHER": "sk-check-SENTINEL-value"}
    ok = run_cli("check", "--models-file", str(models_file), "--models", "dev/ok", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "ok (" in ok.stdout and dev_server.stats()["by_endpoint"] == {"chat": 1}

    missing = run_cli("check", "--models-file", str(models_file), "--models", "dev/ok,dev/keyed", env=env)
    assert missing.returncode == EXIT_CREDENTIALS, missing.stdout + missing.stderr
    assert "$HELMFLOW_CHECK_KEY missing" in missing.stdout and "not tried" in missing.stdout

    broken = run_cli("check", "--models-file", str(models_file), "--models", "dev/ok,dev/broken", env=env)
    assert broken.returncode == EXIT_ENDPOINTS, broken.stdout + broken.stderr
    assert "$HELMFLOW_CHECK_OTHER set" in broken.stdout and "404" in broken.stdout

    both = run_cli("check", "--models-file", str(models_file), "--models", "dev/keyed,dev/broken", env=env)
    assert both.returncode == EXIT_BOTH
    for out in (ok, missing, broken, both):
        assert "SENTINEL" not in out.stdout + out.stderr

    fixed = run_cli("check", "--models-file", str(models_file), "--models", "dev/keyed",
                    env={**env, "HELMFLOW_CHECK_KEY": "sk-anything"})
    assert fixed.returncode == 0 and "$HELMFLOW_CHECK_KEY set" in fixed.stdout


def test_unknown_deployment_is_bad_input(models_file):
    out = run_cli("check", "--models-file", str(models_file), "--models", "dev/nope")
    assert out.returncode == 2 and "dev/nope" in out.stderr


def test_run_refuses_a_board_with_a_missing_credential_before_any_work(models_file, dev_server, tmp_path):
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "creds", "version": "1", "models": ["dev/ok", "dev/keyed"],
        "scenarios": [{"name": "arithmetic", "params": {"digits": 2, "num_test": 5}}],
    }))
    root = tmp_path / "store"
    out = run_cli("run", "--board-file", str(board), "--models-file", str(models_file), "--storage", str(root))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "dev/keyed" in out.stderr and "HELMFLOW_CHECK_KEY is not set" in out.stderr
    assert dev_server.requests == 0 and not root.exists()


def test_a_reasoning_deployment_is_probed_with_its_reasoning_fields(dev_server, tmp_path):
    path = tmp_path / "reasoning.yaml"
    path.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/o", "client": "openai", "model": "o-dev", "base_url": dev_server.openai_url,
         "api_key_env": "HELMFLOW_CHECK_OTHER", "reasoning": {"effort": "low"}},
        {"name": "dev/claude", "client": "anthropic", "model": "claude-dev", "base_url": dev_server.url,
         "api_key_env": "HELMFLOW_CHECK_OTHER", "reasoning": {"budget_tokens": 4000}},
    ]}))
    out = run_cli("check", "--models-file", str(path), "--models", "dev/o,dev/claude", env={"HELMFLOW_CHECK_OTHER": "k"})
    assert out.returncode == 0, out.stdout + out.stderr
    stats = dev_server.stats()
    # OpenAI: the effort and no temperature (a reasoning model refuses it); Anthropic: no 1,024-token budget
    assert stats["body_keys"]["chat:reasoning_effort"] == 1 and "chat:temperature" not in stats["body_keys"]
    assert "messages:thinking" not in stats["body_keys"] and stats["rejected"] == {}
    assert stats["usage"]["completion_tokens"] <= 2 * 16
