"""``helmflow import-helm-models``: HELM's prod_env model configuration, written here in HELM's schema
(model_deployments.yaml, model_metadata.yaml, tokenizer_configs.yaml, credentials.conf), becomes a
models file that helmflow runs; no key value is ever copied or printed."""

from __future__ import annotations

import datetime

import pytest
import yaml

from tests.support.cli import run_cli

SECRET = "VALUE-must-not-leak"


def write_prod_env(root, base_url: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    deployments = [
        {"name": "openai/gpt-4o-2024-05-13", "model_name": "openai/gpt-4o-2024-05-13", "tokenizer_name": "openai/o200k_base",
         "max_sequence_length": 128000, "max_request_length": 128001,
         "client_spec": {"class_name": "helm.clients.openai_client.OpenAIClient"}},
        {"name": "anthropic/claude-3-5-sonnet-20241022", "model_name": "anthropic/claude-3-5-sonnet-20241022",
         "tokenizer_name": "anthropic/claude", "max_sequence_length": 200000,
         "client_spec": {"class_name": "helm.clients.anthropic_client.AnthropicMessagesClient"}},
        {"name": "together/llama-fixture-8b", "model_name": "fixture/llama-fixture-8b", "tokenizer_name": "fixture/llama-tok",
         "max_sequence_length": 8192,
         "client_spec": {"class_name": "helm.clients.together_client.TogetherChatClient",
                         "args": {"together_model": "fixture-org/Llama-Fixture-8B-Turbo"}}},
        {"name": "vllm/fixture-chat", "model_name": "fixture/fixture-chat", "tokenizer_name": "fixture/llama-tok",
         "max_sequence_length": 4096,
         "client_spec": {"class_name": "helm.clients.vllm_client.VLLMChatClient",
                         "args": {"base_url": base_url, "vllm_model_name": "dev-model"}}},
        {"name": "vllm/fixture-base", "model_name": "fixture/fixture-base", "tokenizer_name": "fixture/unknown-tok",
         "max_sequence_length": 2048,
         "client_spec": {"class_name": "helm.clients.vllm_client.VLLMClient", "args": {"base_url": base_url}}},
        {"name": "myorg/custom-model", "model_name": "myorg/custom-model", "max_sequence_length": 4096,
         "window_service_spec": {"class_name": "helm.benchmark.window_services.default_window_service.DefaultWindowService"},
         "client_spec": {"class_name": "helm.clients.openai_client.OpenAIClient",
                         "args": {"base_url": base_url, "org_id": "org-fixture", "api_key": f"sk-{SECRET}"}}},
        {"name": "google/fixture-gemini", "model_name": "google/fixture-gemini",
         "client_spec": {"class_name": "helm.clients.google_genai_client.GoogleGenAIClient"}},
        {"name": "huggingface/fixture-gpt2", "model_name": "fixture/gpt2",
         "client_spec": {"class_name": "helm.clients.huggingface_client.HuggingFaceClient"}},
    ]
    metadata = [
        {"name": "openai/gpt-4o-2024-05-13", "display_name": "GPT-4o (2024-05-13)", "description": "A fixture description.",
         "creator_organization_name": "OpenAI", "access": "limited", "release_date": datetime.date(2024, 5, 13),
         "num_parameters": 200_000_000_000, "tags": ["TEXT_MODEL_TAG"]},
        {"name": "fixture/fixture-chat", "display_name": "Fixture Chat", "description": "Served by vLLM.", "access": "open",
         "release_date": "sometime", "num_parameters": "7B"},
        {"name": "fixture/described-only", "display_name": "Never deployed", "description": "No deployment."},
    ]
    tokenizers = [{"name": "fixture/llama-tok", "tokenizer_spec": {
        "class_name": "helm.tokenizers.huggingface_tokenizer.HuggingFaceTokenizer",
        "args": {"pretrained_model_name_or_path": "fixture-org/Llama-Fixture-8B"}}}]
    (root / "model_deployments.yaml").write_text(yaml.safe_dump({"model_deployments": deployments}))
    (root / "model_metadata.yaml").write_text(yaml.safe_dump({"models": metadata}))
    (root / "tokenizer_configs.yaml").write_text(yaml.safe_dump({"tokenizer_configs": tokenizers}))
    (root / "credentials.conf").write_text(
        "# HELM credentials (HOCON)\n"
        f'openaiApiKey: "sk-{SECRET}"\n'
        f"anthropicApiKey = sk-ant-{SECRET}\n"
        f'perspectiveApiKey: "{SECRET}", togetherApiKey: "{SECRET}" // two on a line\n'
        "deployments {\n"
        f'  "myorg/custom-model": "{SECRET}"\n'
        "}\n"
    )


@pytest.mark.slow
def test_import_maps_supported_deployments_lists_the_rest_and_never_copies_a_key(tmp_path, dev_server):
    prod_env = tmp_path / "prod_env"
    write_prod_env(prod_env, dev_server.openai_url)
    out_file = tmp_path / "models.yaml"
    out = run_cli("import-helm-models", str(prod_env), "--to", str(out_file))
    assert out.returncode == 1, out.stdout + out.stderr  # two deployments could not be imported
    text = out_file.read_text()
    assert SECRET not in text + out.stdout + out.stderr and "Traceback" not in out.stderr
    deps = {d["name"]: d for d in yaml.safe_load(text)["deployments"]}
    assert set(deps) == {"openai/gpt-4o-2024-05-13", "anthropic/claude-3-5-sonnet-20241022", "together/llama-fixture-8b",
                         "vllm/fixture-chat", "vllm/fixture-base", "myorg/custom-model"}
    gpt = deps["openai/gpt-4o-2024-05-13"]
    assert (gpt["client"], gpt["model"], gpt["api_key_env"], gpt["tokenizer"], gpt["context_window"]) == \
        ("openai", "gpt-4o-2024-05-13", "OPENAI_API_KEY", "tiktoken:o200k_base", 128000)
    assert gpt["description"].startswith("GPT-4o (2024-05-13)") and "A fixture description." in gpt["description"]
    assert gpt["metadata"] == {"display_name": "GPT-4o (2024-05-13)", "creator": "OpenAI", "access": "limited",
                               "release_date": "2024-05-13", "parameters": 200_000_000_000}
    # what does not fit is left out, not guessed: a date that is no date, a size that is no number
    assert deps["vllm/fixture-chat"]["metadata"] == {"display_name": "Fixture Chat", "access": "open"}
    assert "metadata" not in deps["vllm/fixture-base"]  # no model_metadata.yaml entry
    claude = deps["anthropic/claude-3-5-sonnet-20241022"]
    assert (claude["client"], claude["model"], claude["api_key_env"]) == ("anthropic", "claude-3-5-sonnet-20241022",
                                                                          "ANTHROPIC_API_KEY")
    together = deps["together/llama-fixture-8b"]
    assert (together["client"], together["model"], together["base_url"], together["api_key_env"], together["tokenizer"]) == \
        ("openai-compatible", "fixture-org/Llama-Fixture-8B-Turbo", "https://api.together.xyz/v1", "TOGETHER_API_KEY",
         "hf:hf://fixture-org/Llama-Fixture-8B")
    chat, base = deps["vllm/fixture-chat"], deps["vllm/fixture-base"]
    assert chat["model"] == "dev-model" and "api_key_env" not in chat and "options" not in chat  # HELM sends vLLM no key
    assert base["model"] == "fixture/fixture-base" and base["options"] == {"endpoint": "completions"}
    custom = deps["myorg/custom-model"]  # HELM's OpenAI client at another base_url, with its own key
    assert (custom["client"], custom["base_url"], custom["api_key_env"]) == \
        ("openai-compatible", dev_server.openai_url, "HELMFLOW_KEY_MYORG_CUSTOM_MODEL")
    err = " ".join(out.stderr.split())
    assert "google/fixture-gemini: client helm.clients.google_genai_client.GoogleGenAIClient has no helmflow client kind" in err
    assert "huggingface/fixture-gpt2: client" in err
    assert "openai/gpt-4o-2024-05-13: max_request_length" in err and "myorg/custom-model: window_service_spec" in err
    assert "myorg/custom-model: client_spec.args.org_id" in err and "client_spec.args.api_key (a key in the YAML: not copied" in err
    assert "anthropic/claude-3-5-sonnet-20241022: tokenizer_name 'anthropic/claude'" in err
    assert "vllm/fixture-base: tokenizer_name 'fixture/unknown-tok'" in err
    assert "openaiApiKey -> $OPENAI_API_KEY (found in credentials.conf; used by openai/gpt-4o-2024-05-13)" in err
    assert "anthropicApiKey -> $ANTHROPIC_API_KEY (found in credentials.conf" in err
    assert "deployments.myorg/custom-model -> $HELMFLOW_KEY_MYORG_CUSTOM_MODEL" in err
    assert "perspectiveApiKey: used by no imported deployment" in err and "fixture/described-only" in err

    # the models file is one helmflow reads: list it, and reach the vLLM-style endpoints (chat and completions)
    listed = run_cli("list", "models", "--models-file", str(out_file))
    assert listed.returncode == 0 and "vllm/fixture-base" in listed.stdout, listed.stderr
    checked = run_cli("check", "--models", "vllm/fixture-chat,vllm/fixture-base", "--models-file", str(out_file))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    stats = dev_server.stats()
    assert stats["requests"] == 2 and stats["by_endpoint"] == {"chat": 1, "completions": 1}, stats


@pytest.mark.slow
def test_bad_prod_env_is_one_clear_error(tmp_path):
    out = run_cli("import-helm-models", str(tmp_path / "nowhere"))
    assert out.returncode == 2 and "is not a folder" in out.stderr
    (tmp_path / "empty").mkdir()
    out = run_cli("import-helm-models", str(tmp_path / "empty"))
    assert out.returncode == 2 and "has no model deployments" in out.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model_deployments.yaml").write_text("model_deployments: {name: x}\n")
    out = run_cli("import-helm-models", str(bad))
    assert out.returncode == 2 and "expected `model_deployments:` as a list" in out.stderr and "Traceback" not in out.stderr
    (bad / "model_deployments.yaml").write_text("model_deployments: [\n")
    out = run_cli("import-helm-models", str(bad))
    assert out.returncode == 2 and "is not valid YAML" in out.stderr


# Every form HELM's credentials.conf (HOCON, read by pyhocon) takes, each holding its own sentinel value. The key
# names are reported, the values never: not in the output, nor the models file, nor anything written beside it.
CONF_FORMS = [
    ('openaiApiKey: "sk-QUOTED-SENTINEL"', "openaiApiKey"),
    ('anthropicApiKey: """sk-TRIPLE-SENTINEL"""', "anthropicApiKey"),
    ('cohereApiKey = """sk-TRIPLE-MULTI-SENTINEL\nsecond-line-MULTI-SENTINEL"""', "cohereApiKey"),
    ("togetherApiKey: sk-UNQUOTED-SENTINEL", "togetherApiKey"),
    ("ai21ApiKey:\n    sk-NEXTLINE-SENTINEL", "ai21ApiKey"),
    ('googleApiKey =\n  "sk-NEXTLINE-QUOTED-SENTINEL"', "googleApiKey"),
    ("mistralaiApiKey = sk-EQUALS-SENTINEL", "mistralaiApiKey"),
    ("writerApiKey=sk-NOSPACE-SENTINEL # a comment sk-COMMENT-SENTINEL", "writerApiKey"),
    ("// sk-SLASHCOMMENT-SENTINEL", None),
    ('perspectiveApiKey: "sk-A-SENTINEL" "sk-CONCAT-SENTINEL"', "perspectiveApiKey"),
    ("huggingfaceToken: ${?HF_TOKEN-SENTINEL}", "huggingfaceToken"),
    ('nvidiaApiKey: ["sk-LIST-SENTINEL",\n  sk-LIST2-SENTINEL]', "nvidiaApiKey"),
    ('yandexApiKey { key: "sk-NESTED-SENTINEL" }', "yandexApiKey"),
    ('"quotedKeyApiKey": "sk-QUOTEDKEY-SENTINEL"', "quotedKeyApiKey"),
    ('deployments {\n  "myorg/custom": """sk-DEPLOY-SENTINEL"""\n  other/x: sk-DEPLOY2-SENTINEL\n}', None),
]
UNREADABLE = [  # lines the scanner cannot read: reported by number, never echoed
    'brokenApiKey: "sk-UNTERMINATED-SENTINEL',
    "sk-BARE-TOKEN-SENTINEL",
    'include "sk-INCLUDE-SENTINEL.conf"',
]


def test_credentials_conf_in_every_hocon_form_never_echoes_a_value(tmp_path):
    prod_env = tmp_path / "prod_env"
    prod_env.mkdir()
    (prod_env / "model_deployments.yaml").write_text(yaml.safe_dump({"model_deployments": [
        {"name": "openai/gpt-fixture", "model_name": "openai/gpt-fixture",
         "client_spec": {"class_name": "helm.clients.openai_client.OpenAIClient"}}]}))
    lines = ["# HELM credentials"]
    for text, _ in CONF_FORMS:
        lines.append(text)
    first_bad = len("\n".join(lines).splitlines()) + 1
    lines += UNREADABLE
    lines.append('lastApiKey: "sk-LAST-SENTINEL"')  # read after the unreadable lines
    (prod_env / "credentials.conf").write_text("\n".join(lines) + "\n")
    out_file = tmp_path / "out" / "models.yaml"
    out_file.parent.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    out = run_cli("import-helm-models", str(prod_env), "--to", str(out_file),
                  env={"HOME": str(home), "PREFECT_HOME": str(home / "prefect")})
    assert out.returncode == 0, out.stdout + out.stderr
    written = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*")
                      if p.is_file() and p.name != "credentials.conf")
    for where in (out.stdout, out.stderr, written):
        assert "SENTINEL" not in where, where
    err = " ".join(out.stderr.split())
    assert "openaiApiKey -> $OPENAI_API_KEY (found in credentials.conf; used by openai/gpt-fixture)" in err
    for _, key in CONF_FORMS[1:]:
        if key:
            assert f"{key}: used by no imported deployment" in err, (key, err)
    assert "lastApiKey: used by no imported deployment" in err
    for n in range(first_bad, first_bad + len(UNREADABLE)):
        assert f"unparsed line {n}" in err, (n, err)
    assert "Traceback" not in out.stderr
