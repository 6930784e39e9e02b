"""HELM's model configuration (``prod_env/``) as a helmflow models file (``helmflow import-helm-models``).

HELM describes a model in three YAML files (``model_deployments.yaml``: endpoint, client class,
tokenizer, window; ``model_metadata.yaml``: display name and description; ``tokenizer_configs.yaml``:
what a tokenizer name is) and its keys in ``credentials.conf``. This maps the deployments whose
client helmflow has (OpenAI, Anthropic, and OpenAI-compatible servers: vLLM, Together, an OpenAI
client with a ``base_url``) onto :class:`~helmflow.records.Deployment` entries, and says what it
could not map: whole entries (other clients) and single fields.

Credentials are names only. ``credentials.conf`` is scanned for its key *names* (its values are
skipped, never kept or printed; a line the scanner cannot read is reported by its number only):
HELM gives a client the key ``<host>ApiKey`` of its deployment's host organization
(``openai/…`` -> ``openaiApiKey``) or a per-deployment key under ``deployments``; here each
deployment names the environment variable its client reads (``api_key_env``), and the
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
KEY_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")  # the shape of HELM's key names (openaiApiKey, huggingfaceToken)
UNQUOTED_STOP = set(' \t\r\n:={}[],"#$+`^?!@*&\\')


class _Unparsed(Exception):
    """A token the scanner cannot read; ``line`` is 1-based. Carries no text of the file."""

    def __init__(self, line: int, rest_of_file: bool = False) -> None:
        super().__init__(f"unparsed line {line}")
        self.line, self.rest_of_file = line, rest_of_file


@dataclass
class Credentials:
    """What ``credentials.conf`` says, by name only: top-level keys, the deployments under
    ``deployments``, and the lines the scanner could not read (by number: their text is never kept)."""

    keys: set[str] = field(default_factory=set)
    deployments: set[str] = field(default_factory=set)
    unparsed: list[int] = field(default_factory=list)
    odd_names: list[int] = field(default_factory=list)  # lines of keys not shaped like a key name: not echoed


def read_credentials(text: str) -> Credentials:
    """Scan a HOCON ``credentials.conf`` for its key *names*. Values, in any form HOCON gives them (quoted,
    triple-quoted over lines, unquoted, on the line after their key, concatenated, substitutions, lists,
    objects), are skipped as they are scanned and nothing of them is returned. Whatever the scanner cannot read
    is reported as its line number only, so a value it misreads can never be taken for a key and echoed."""
    out = Credentials()
    n = len(text)
    pos = 0

    def line_of(i: int) -> int:
        return text.count("\n", 0, i) + 1

    def skip_space(i: int, newlines: bool) -> int:
        while i < n:
            c = text[i]
            if c in " \t\r\ufeff" or (newlines and c == "\n"):
                i += 1
            elif c == "#" or text.startswith("//", i):
                while i < n and text[i] != "\n":
                    i += 1
            else:
                break
        return i

    def quoted(i: int) -> int:
        """Past a "..." string starting at i (one line, backslash escapes)."""
        j = i + 1
        while j < n and text[j] not in '"\n':
            j += 2 if text[j] == "\\" else 1
        if j >= n or text[j] != '"':
            raise _Unparsed(line_of(i))
        return j + 1

    def triple(i: int) -> int:
        end = text.find('"""', i + 3)
        if end < 0:
            raise _Unparsed(line_of(i), rest_of_file=True)
        end += 3
        while end < n and text[end] == '"':  # HOCON: extra quotes at the end belong to the string
            end += 1
        return end

    def key_path(i: int) -> tuple[list[str], int]:
        """A key: unquoted parts (split at dots) and quoted parts (kept whole), HOCON's path expression."""
        path: list[str] = []
        start = i
        while i < n:
            if text.startswith('"""', i):
                raise _Unparsed(line_of(i))
            if text[i] == '"':
                j = quoted(i)
                path.append(text[i + 1:j - 1])
            else:
                j = i
                while j < n and text[j] not in UNQUOTED_STOP and not text.startswith("//", j):
                    j += 1
                if j == i:
                    break
                path += [part for part in text[i:j].split(".") if part]
            i = j
        if i == start or not path:
            raise _Unparsed(line_of(start))
        return path, i

    def array(i: int) -> int:
        """Past a [...] starting at i, strings and nesting included."""
        depth, j = 0, i
        while j < n:
            j = skip_space(j, newlines=True)
            if j >= n:
                break
            c = text[j]
            if text.startswith('"""', j):
                j = triple(j)
            elif c == '"':
                j = quoted(j)
            elif c in "[{":
                depth += 1
                j += 1
            elif c in "]}":
                depth -= 1
                j += 1
                if depth == 0:
                    return j
            else:
                j += 1
        raise _Unparsed(line_of(i), rest_of_file=True)

    def value(i: int) -> int:
        """Past one value (with HOCON's concatenation of values on one line), not past its end of line."""
        i = skip_space(i, newlines=True)  # a value may start on the line after its separator
        if i >= n:
            raise _Unparsed(line_of(i - 1))
        first = True
        while i < n:
            c = text[i]
            if text.startswith('"""', i):
                i = triple(i)
            elif c == '"':
                i = quoted(i)
            elif text.startswith("${", i):
                end = text.find("}", i)
                if end < 0 or "\n" in text[i:end]:
                    raise _Unparsed(line_of(i))
                i = end + 1
            elif c == "[":
                i = array(i)
            elif c == "{":
                if not first:
                    raise _Unparsed(line_of(i))
                return i  # an object: the caller descends
            elif c in "\n,}]#" or text.startswith("//", i):
                if first:
                    raise _Unparsed(line_of(i))
                return i
            elif c in " \t\r":
                i += 1
            else:  # unquoted text: up to a character that ends it
                j = i
                while j < n and text[j] not in '\n,}]"#[' and not text.startswith("//", j) \
                        and not text.startswith("${", j):
                    j += 1
                i = j
            first = False
        return i

    path: list[list[str]] = []
    pos = skip_space(pos, newlines=True)
    if pos < n and text[pos] == "{":  # a root object in braces
        pos += 1
        path.append([])
    while True:
        pos = skip_space(pos, newlines=True)
        if pos >= n:
            break
        start = pos
        try:
            c = text[pos]
            if c == ",":
                pos += 1
                continue
            if c == "}":
                if not path:
                    raise _Unparsed(line_of(pos))
                path.pop()
                pos += 1
                continue
            keys, pos = key_path(pos)
            if keys == ["include"] and text[pos:pos + 1] in " \t":
                raise _Unparsed(line_of(start))
            pos = skip_space(pos, newlines=False)
            if text.startswith("+=", pos):
                pos += 2
            elif pos < n and text[pos] in ":=":
                pos += 1
            elif not (pos < n and text[pos] == "{"):
                raise _Unparsed(line_of(start))  # a key needs a separator or an object
            pos = value(pos)
            full = [k for p in path for k in p] + keys
            if full[0] == "deployments":
                if len(full) >= 2:
                    out.deployments.add(".".join(full[1:]))
            elif KEY_NAME.fullmatch(full[0]):
                out.keys.add(full[0])
            else:
                out.odd_names.append(line_of(start))
            if pos < n and text[pos] == "{":
                path.append(keys)
                pos += 1
                continue
            pos = skip_space(pos, newlines=False)
            if pos < n and text[pos] not in "\n,}":
                raise _Unparsed(line_of(pos))
        except _Unparsed as bad:
            out.unparsed.append(bad.line)
            if bad.rest_of_file:
                break
            next_line = 0
            for _ in range(bad.line):  # on at the start of the line after the unreadable one
                next_line = text.find("\n", next_line) + 1
                if next_line == 0:
                    next_line = n
                    break
            pos = max(next_line, start + 1)
    out.unparsed = sorted(set(out.unparsed))
    return out


def credential_names(text: str) -> tuple[set[str], set[str]]:
    """The top-level key names of a HOCON ``credentials.conf`` and the deployment names under its
    ``deployments`` object (see :func:`read_credentials`)."""
    found = read_credentials(text)
    return found.keys, found.deployments


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


def model_facts(meta: dict[str, Any]) -> dict[str, Any]:
    """The board's model facts from one ``model_metadata.yaml`` entry; a value that does not fit
    (an access level HELM does not define, a date that is not one) is left out rather than guessed."""
    facts: dict[str, Any] = {}
    if meta.get("display_name"):
        facts["display_name"] = " ".join(str(meta["display_name"]).split())
    if meta.get("creator_organization_name"):
        facts["creator"] = " ".join(str(meta["creator_organization_name"]).split())
    params = meta.get("num_parameters")
    if isinstance(params, int | float) and not isinstance(params, bool) and 0 <= params < 1e15:
        facts["parameters"] = int(params)
    date = str(meta.get("release_date") or "")[:10]  # YAML reads 2024-05-13 as a date
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        facts["release_date"] = date
    if str(meta.get("access") or "") in ("open", "limited", "closed"):
        facts["access"] = str(meta["access"])
    return facts


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
    creds = read_credentials(conf.read_text(encoding="utf-8-sig", errors="replace")) if conf.exists() else Credentials()
    keys, per_deployment = creds.keys, creds.deployments

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
            out.unmapped_fields.append(f"{name}: tokenizer_name {entry['tokenizer_name']!r} "
                                       "(not a tiktoken encoding and no HuggingFaceTokenizer in "
                                       "tokenizer_configs.yaml; set tokenizer:, else prompts are "
                                       "fitted by whitespace words)")
        if entry.get("max_sequence_length"):
            dep["context_window"] = int(entry["max_sequence_length"])
        if endpoint == "completions":
            dep["options"] = {"endpoint": "completions"}
        about = meta.get("display_name") or model_name
        description = " ".join(str(meta.get("description") or "").split())
        dep["description"] = (f"{about} (imported from HELM's {model_name})"
                              + (f": {description}" if description else ""))
        if entry.get("deprecated"):
            dep["description"] += " [deprecated in HELM]"
        facts = model_facts(meta)
        if facts:
            dep["metadata"] = facts
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
                               + (" (google/perspective reads $PERSPECTIVE_API_KEY)"
                                  if key == "perspectiveApiKey" else ""))
    for line in creds.odd_names:
        out.credentials.append(f"credentials.conf line {line}: a key not shaped like a key name (not shown)")
    for line in creds.unparsed:
        out.credentials.append(f"credentials.conf: unparsed line {line} (not read; nothing of it is shown)")
    deployed = {str(e.get("model_name") or e["name"]) for e in deployments}
    for model in sorted(set(metadata) - deployed):
        out.metadata_only.append(model)
    return out
