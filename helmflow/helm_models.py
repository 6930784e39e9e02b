"""HELM's model configuration (``prod_env/``) as a helmflow models file (``helmflow import-helm-models``).

HELM describes a model in three YAML files (``model_deployments.yaml``: endpoint, client class,
tokenizer, window; ``model_metadata.yaml``: display name and description; ``tokenizer_configs.yaml``:
what a tokenizer name is) and its keys in ``credentials.conf``. This maps the deployments whose
client helmflow has (OpenAI, Anthropic, and OpenAI-compatible servers: vLLM, Together, an OpenAI
client with a ``base_url``) onto :class:`~helmflow.records.Deployment` entries, and says what it
could not map: whole entries (other clients) and single fields.

Credentials are names only. ``credentials.conf`` is scanned for its key *names* (its values are
skipped, never kept or printed): HELM gives a client the key ``<host>ApiKey`` of its deployment's
host organization (``openai/…`` -> ``openaiApiKey``) or a per-deployment key under ``deployments``;
here each deployment names the environment variable its client reads (``api_key_env``), and the
report says which variable stands for which HELM key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helmflow.errors import HelmflowError, read_yaml_file

CLASS_PREFIX = "helm.clients."
TOGETHER_URL = "https://api.together.xyz/v1"
# HELM client class (after helm.clients.) -> (our client kind, endpoint, the arg naming the provider model)
CLIENTS: dict[str, tuple[str, str, str | None]] = {
    "openai_client.OpenAIClient": ("openai", "chat", "openai_model_name"),
    "openai_client.OpenAILegacyCompletionsClient": ("openai", "completions", "openai_model_name"),
    "anthropic_client.AnthropicMessagesClient": ("anthropic", "chat", None),
    "together_client.TogetherChatClient": ("openai-compatible", "chat", "together_model"),
    "together_client.TogetherClient": ("openai-compatible", "completions", "together_model"),
    "together_client.TogetherCompletionClient": ("openai-compatible", "completions", "together_model"),
    "vllm_client.VLLMChatClient": ("openai-compatible", "chat", "vllm_model_name"),
    "vllm_client.VLLMClient": ("openai-compatible", "completions", "vllm_model_name"),
}
# Deployment fields HELM has and helmflow keeps elsewhere or not at all (a note each, for the report).
KNOWN_FIELDS = {"name", "model_name", "tokenizer_name", "max_sequence_length", "client_spec", "deprecated"}
ARGS_USED = {"openai_model_name", "together_model", "vllm_model_name", "base_url"}
TIKTOKEN = {"openai/cl100k_base": "cl100k_base", "openai/o200k_base": "o200k_base", "openai/p50k_base": "p50k_base",
            "openai/r50k_base": "r50k_base"}


class HelmModelsError(HelmflowError, ValueError):
    """A prod_env folder or file that cannot be read as HELM's model configuration."""


@dataclass
class Imported:
    deployments: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "<name>: why" for deployments not mapped
    metadata_only: list[str] = field(default_factory=list)  # models described but never deployed
    unmapped_fields: list[str] = field(default_factory=list)  # "<name>: field (why)"
    credentials: list[str] = field(default_factory=list)  # "<HELM key> -> <env var> (deployments)"


def env_name(text: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", text.upper()).strip("_")


# --------------------------------------------------------------------------- credentials.conf: names only
def credential_names(text: str) -> tuple[set[str], set[str]]:
    """The top-level key names of a HOCON ``credentials.conf`` and the deployment names under its
    ``deployments`` object. Values are skipped as they are scanned: nothing of them is returned."""
    keys: set[str] = set()
    deployments: set[str] = set()
    path: list[str] = []
    i, n = 0, len(text)

    def read_token(i: int) -> tuple[str, int]:
        if text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            return text[i + 1:j], j + 1
        j = i
        while j < n and text[j] not in ' \t\r\n:={}",#':
            j += 1
        return text[i:j], j

    def skip_value(i: int) -> int:
        """Past a scalar value (quoted, or up to the end of line, a comma or a closing brace)."""
        if i < n and text[i] == '"':
            return read_token(i)[1]
        while i < n and text[i] not in "\n,}":
            i += 1
        return i

    while i < n:
        c = text[i]
        if c in " \t\r\n,":
            i += 1
        elif c == "#" or text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif c == "}":
            path = path[:-1]
            i += 1
        else:
            key, i = read_token(i)
            if not key:
                i += 1
                continue
            while i < n and text[i] in " \t":
                i += 1
            if path == ["deployments"]:
                deployments.add(key)
            elif not path and key != "deployments":
                keys.add(key)
            if i < n and text[i] in ":=":
                i += 1
                while i < n and text[i] in " \t":
                    i += 1
            if i < n and text[i] == "{":
                path = [*path, key]
                i += 1
            else:
                i = skip_value(i)
    return keys, deployments


# --------------------------------------------------------------------------- the YAML files
def _entries(folder: Path, filename: str, section: str) -> list[dict[str, Any]]:
    path = folder / filename
    if not path.exists():
        return []
    data = read_yaml_file(path, f"HELM {filename}", HelmModelsError) or {}
    items = data.get(section) if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in items):
        raise HelmModelsError(f"{path}: expected `{section}:` as a list of entries, each with a name")
    return items


def _tokenizer(name: str | None, configs: dict[str, dict[str, Any]]) -> str | None:
    """Our tokenizer id for HELM's tokenizer name, when it says what the tokenizer is."""
    if not name:
        return None
    if name in TIKTOKEN:
        return f"tiktoken:{TIKTOKEN[name]}"
    spec = (configs.get(name) or {}).get("tokenizer_spec") or {}
    if str(spec.get("class_name", "")).endswith("HuggingFaceTokenizer"):
        repo = (spec.get("args") or {}).get("pretrained_model_name_or_path") or name
        return f"hf:hf://{repo}"
    return None


def convert(folder: str | Path) -> Imported:
    """Read ``prod_env/`` (the three YAML files and credentials.conf, whichever exist)."""
    root = Path(folder)
    if not root.is_dir():
        raise HelmModelsError(f"{root} is not a folder (HELM's prod_env/, holding model_deployments.yaml)")
    deployments = _entries(root, "model_deployments.yaml", "model_deployments")
    if not deployments:
        raise HelmModelsError(f"{root} has no model deployments (model_deployments.yaml with `model_deployments:`)")
    metadata = {e["name"]: e for e in _entries(root, "model_metadata.yaml", "models")}
    configs = {e["name"]: e for e in _entries(root, "tokenizer_configs.yaml", "tokenizer_configs")}
    conf = root / "credentials.conf"
    keys, per_deployment = credential_names(conf.read_text(encoding="utf-8-sig")) if conf.exists() else (set(), set())

    out = Imported()
    used: dict[str, tuple[str, list[str]]] = {}  # HELM key -> (env var, deployments)
    for entry in deployments:
        name = entry["name"]
        spec = entry.get("client_spec") or {}
        class_name = str(spec.get("class_name", ""))
        mapped = CLIENTS.get(class_name.removeprefix(CLASS_PREFIX))
        if mapped is None:
            out.skipped.append(f"{name}: client {class_name or '(none)'} has no helmflow client kind "
                               "(mapped: OpenAI, Anthropic, Together, vLLM)")
            continue
        kind, endpoint, model_arg = mapped
        args = dict(spec.get("args") or {})
        model_name = str(entry.get("model_name") or name)
        engine = model_name.split("/", 1)[-1]
        if class_name.endswith("vllm_client.VLLMClient") or class_name.endswith("VLLMChatClient"):
            engine = model_name  # HELM's vLLM clients send the whole model name
        model = str(args.get(model_arg) or engine) if model_arg else engine
        base_url = args.get("base_url")
        if class_name.endswith(("TogetherChatClient", "TogetherClient", "TogetherCompletionClient")):
            base_url = base_url or TOGETHER_URL
        if kind == "openai" and base_url:
            kind = "openai-compatible"  # HELM's OpenAI client pointed at another server
        if kind == "openai-compatible" and not base_url:
            out.skipped.append(f"{name}: {class_name} without base_url: no endpoint to send to")
            continue
        meta = metadata.get(model_name, {})
        dep: dict[str, Any] = {"name": name, "client": kind, "model": model}
        if base_url:
            dep["base_url"] = str(base_url)
        host = name.split("/", 1)[0]
        helm_key = name if name in per_deployment else f"{host}ApiKey"
        if "api_key" in args:
            out.unmapped_fields.append(f"{name}: client_spec.args.api_key (a key in the YAML: not copied; "
                                       "export it in the variable named by api_key_env)")
        if not class_name.startswith(f"{CLASS_PREFIX}vllm_client"):  # HELM sends vLLM no key
            env = f"HELMFLOW_KEY_{env_name(name)}" if name in per_deployment else f"{env_name(host)}_API_KEY"
            dep["api_key_env"] = env
            used.setdefault(f"deployments.{name}" if name in per_deployment else helm_key, (env, []))[1].append(name)
        tokenizer = _tokenizer(entry.get("tokenizer_name"), configs)
        if tokenizer:
            dep["tokenizer"] = tokenizer
        elif entry.get("tokenizer_name"):
            out.unmapped_fields.append(f"{name}: tokenizer_name {entry['tokenizer_name']!r} (not a tiktoken encoding and "
                                       "no HuggingFaceTokenizer in tokenizer_configs.yaml; set tokenizer:, else prompts are "
                                       "fitted by whitespace words)")
        if entry.get("max_sequence_length"):
            dep["context_window"] = int(entry["max_sequence_length"])
        if endpoint == "completions":
            dep["options"] = {"endpoint": "completions"}
        about = meta.get("display_name") or model_name
        description = " ".join(str(meta.get("description") or "").split())
        dep["description"] = f"{about} (imported from HELM's {model_name})" + (f": {description}" if description else "")
        if entry.get("deprecated"):
            dep["description"] += " [deprecated in HELM]"
        for key in sorted(set(entry) - KNOWN_FIELDS):
            out.unmapped_fields.append(f"{name}: {key} (no helmflow field; the window is context_window, fitted with "
                                       "the tokenizer)" if key in ("max_request_length", "window_service_spec")
                                       else f"{name}: {key}")
        for key in sorted(set(args) - ARGS_USED - {"api_key"}):
            out.unmapped_fields.append(f"{name}: client_spec.args.{key}")
        out.deployments.append(dep)
    for helm_key, (env, names) in sorted(used.items()):
        state = "found in credentials.conf" if helm_key in keys or helm_key.startswith("deployments.") else \
            "not in credentials.conf"
        out.credentials.append(f"{helm_key} -> ${env} ({state}; used by {', '.join(names)})")
    for key in sorted(keys - set(used)):
        out.credentials.append(f"{key}: used by no imported deployment"
                               + (" (google/perspective reads $PERSPECTIVE_API_KEY)" if key == "perspectiveApiKey" else ""))
    deployed = {str(e.get("model_name") or e["name"]) for e in deployments}
    for model in sorted(set(metadata) - deployed):
        out.metadata_only.append(model)
    return out
