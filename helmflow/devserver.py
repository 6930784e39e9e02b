"""A wire-compatible model server on 127.0.0.1 for trying boards without keys, tests and benchmarks (never for
evaluations: its answers are canned).

It answers OpenAI ``/v1/chat/completions``, ``/v1/completions`` and ``/v1/images/generations`` and
Anthropic ``/v1/messages`` with the real JSON shapes (usage, finish reasons, logprobs), so the real SDKs
talk to it over real HTTP. Tokens are whitespace-separated words; the answer comes from a policy:

- ``echo``: the last non-empty line of the last user message (or prompt), like HELM's simple model;
- ``script:FILE``: a JSON list of ``{"contains": ..., "reply": ...}``; the first rule whose text is in
  the prompt answers, otherwise ``echo``;
- ``fn:module:func``: ``func(prompt: str, payload: dict) -> str``.

``/v1/completions`` with ``echo`` sends the prompt back before the answer, with logprobs for its
tokens too (the first one's is null, as vLLM and OpenAI send it) and ``max_tokens`` 0 allowed: how
log-likelihood multiple choice scores an option. A prompt token's logprob follows a copying rule, so
tests can predict it: a word already seen earlier in the prompt gets -0.1, a new word a deterministic
value in (-3.3, -2.3].

Faults are drawn per request with probability ``fault_rate`` from ``faults``: ``429`` (with a small
Retry-After), ``500``, ``503``, ``reset`` (TCP reset, no response), ``hang`` (no answer until the
client gives up), ``badjson`` (a truncated JSON body) and ``empty`` (an empty 200 body).

Permanent errors on purpose: a wrong or missing key when ``api_key_env`` names the expected key
(401; the body echoes the key it got, like some real providers, so redaction is tested), a model
starting with ``forbidden`` (403) or ``unknown`` (404), ``max_tokens`` < 1 (400), and sampling
parameters sent to ``/v1/messages`` with ``anthropic-version`` 2026-10-21 or later (400, as Anthropic does).

Images are accepted in three wire formats: OpenAI chat ``image_url`` parts and OpenAI Responses-style
``input_image`` parts (base64 ``data:`` URLs), and Anthropic ``image`` blocks (base64 source). Each
is decoded with Pillow; one that does not decode, or whose bytes are not the declared MIME type, is
a 400 naming the part. A policy sees the request's parts in order as ``payload["_parts"]`` (text, or
``{"type": "image", "sha256", "mime", "width", "height"}``), so it can answer from the image itself;
``GET /_dev/requests`` returns those sequences for the last 1,000 requests with images; ``GET /_dev/heads`` the
first prompt line of the last 10,000 requests (direct, and batch lines as submitted), in the order they were sent.

Reasoning models, on every wire (``reasoning_words`` says how long each one thinks: a word per token):

- OpenAI chat with ``reasoning_effort``: a reasoning model. It refuses what OpenAI's refuse (400
  "Unsupported parameter": ``temperature`` other than 1, ``top_p``, ``logprobs``, penalties, ``max_tokens``
  instead of ``max_completion_tokens``), hides its reasoning and reports it in
  ``usage.completion_tokens_details.reasoning_tokens``;
- a model id containing ``reasoner`` answers with ``message.reasoning`` (vLLM), ``reasoner-legacy`` with the older
  ``reasoning_content``, and ``think`` with ``<think>…</think>`` (one thought per line) before the answer in
  ``content``, the stop sequences applied to the whole text as by a server without a reasoning parser; such a model
  reads ``reasoning_effort``, vLLM's ``thinking_token_budget`` and ``chat_template_kwargs.enable_thinking``;
- Anthropic ``/v1/messages`` with ``thinking``: ``{type: enabled, budget_tokens}`` (at least 1024 and below
  ``max_tokens``, else 400; a model id containing ``adaptive-only`` refuses it, as Claude 4.7+ do) or ``{type:
  adaptive}`` with ``output_config.effort``: a ``thinking`` block before the text (``redacted_thinking`` for a model
  id containing ``redacted``), counted in ``output_tokens`` and ``output_tokens_details.thinking_tokens``.

Reasoning tokens come out of the output budget: a budget spent while thinking ends the answer with
``length``/``max_tokens`` and no text. Prompt caching is simulated per scope (up to 200,000 prompt heads): the
longest run of whole leading lines (never the last) an earlier request began with is reported as cached (OpenAI
``prompt_tokens_details.cached_tokens``; Anthropic ``cache_read_input_tokens``, outside ``input_tokens``). With the
setting ``anthropic_cache: explicit``, ``/v1/messages`` caches as Anthropic does: only the text up to the last block
marked ``cache_control``, reported as ``cache_creation_input_tokens`` the first time and ``cache_read_input_tokens``
after.

Batches: OpenAI ``/v1/files`` (upload, retrieve, ``content``) and ``/v1/batches`` (create, retrieve, list, cancel),
Anthropic ``/v1/messages/batches`` (create, retrieve, list, cancel, ``results`` at an absolute ``results_url``), each
line answered as the direct endpoint would, in shuffled order, validated as the providers do (``custom_id`` pattern and
uniqueness, the count and size limits, ``url`` equal to the endpoint, no ``stream``). Settings: ``batch_delay_s`` (a
batch ends that long after its creation), ``batch_expire`` (it expires instead, having done its first
``batch_done_fraction`` of lines; a cancelled batch did as much), ``batch_error_rate`` (lines failing with a 500 /
``api_error``). The stats count ``batches``, ``batch_lines`` (and ``batch_line_ids``, ``batch_line_repeats``: a request
in more than one line) and ``batch_answered`` (lines answered: what is billed; ``batch_answered_repeats``).
The stats add the usage the server reported (``usage``: prompt, completion and cached tokens, and the
reasoning tokens generated, reported or not), the
top-level body keys each endpoint received (``body_keys``, e.g. ``chat:reasoning_effort``) and requests per model
(``by_model``), so tests count at the server what was sent and what was billed.

Every request is counted, and so is the sha256 of every request body (``unique``; ``repeats`` are
bodies sent again: what a re-sent request costs); ``GET /_dev/stats`` returns the counts, ``POST /_dev/config`` changes
latency and faults, ``POST /_dev/reset`` zeroes the counts, and ``--count-file`` gets the counts as
JSON (rewritten atomically a few times a second and at exit).

``/v1/images/generations`` draws ``n`` PNGs (1-10) of ``size`` (``WxH``, default 256x256, sides 16-2048) with
the offline ``draw`` model (``clients/offline_image.py``: the shapes and colours the prompt names; ``seed`` in the body
moves them) and answers them as ``b64_json`` (``response_format: url`` is refused with a 400: nothing is hosted).
``guidance_scale`` and ``steps`` are accepted and ignored. The stats list the sha256 of every image sent
(``generated_images``), so a test can check that what was stored is what was sent. The setting ``image_fault``
makes answers untrusted on purpose: ``truncated`` (the second image cut short), ``svg`` (an SVG document in
place of the first image) or ``count`` (one image fewer than asked).

Every path also answers under ``/_scope/NAME/`` (``/_scope/NAME/v1/chat/completions``, ``/_scope/NAME/_dev/stats``,
...): a scope has its own counts, settings, fault draws and image log, created on first use with the settings the
server started with. Point each client (or test) at its own scope and no one's requests show up in another's
counts; the unscoped paths are the default scope, the one ``--count-file`` writes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import importlib
import json
import math
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from helmflow.stopping import terminate

FAULT_KINDS = ("429", "500", "503", "reset", "hang", "badjson", "empty")
#: requests and bytes per batch: OpenAI (an input file), Anthropic (a create call)
BATCH_LIMITS = {"openai": (50_000, 200 * 1024**2), "anthropic": (100_000, 256 * 1024**2)}

Policy = Callable[[str, dict[str, Any]], str]


# --------------------------------------------------------------------------- policies
def echo(prompt: str, payload: dict[str, Any]) -> str:
    lines = [ln for ln in prompt.splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def load_policy(spec: str) -> Policy:
    """``echo``, ``script:FILE`` or ``fn:module:func``; a bad spec fails at start, not per request."""
    if spec == "echo":
        return echo
    if spec.startswith("script:"):
        rules = json.loads(Path(spec[7:]).read_text())
        if not isinstance(rules, list) or not all(isinstance(r, dict) and {"contains", "reply"} <= set(r)
                                                  for r in rules):
            raise ValueError(f"{spec}: expected a JSON list of {{'contains': ..., 'reply': ...}}")

        def scripted(prompt: str, payload: dict[str, Any]) -> str:
            return next((r["reply"] for r in rules if r["contains"] in prompt), echo(prompt, payload))

        return scripted
    if spec.startswith("fn:"):
        module, _, func = spec[3:].rpartition(":")
        if not module:
            raise ValueError(f"{spec}: expected fn:module:func")
        return getattr(importlib.import_module(module), func)
    raise ValueError(f"unknown policy {spec!r}; use echo, script:FILE or fn:module:func")


# --------------------------------------------------------------------------- generation
def _logprob(token: str, i: int) -> float:
    """A deterministic log-probability in [-2.3, -0.01) per (position, token)."""
    return -0.01 - 2.29 * (zlib.crc32(f"{i}|{token}".encode()) / 2**32)


_PROMPT_TOKEN = re.compile(r"\s*\S+|\s+$")


def prompt_tokens(prompt: str) -> list[str]:
    """An echoed prompt's tokens: words with the whitespace before them (they join back to the prompt)."""
    return _PROMPT_TOKEN.findall(prompt)


def prompt_logprobs(tokens: list[str]) -> list[float | None]:
    """The copying rule: the first token has none; a word seen earlier gets -0.1, a new one (-3.3, -2.3]."""
    seen: set[str] = set()
    out: list[float | None] = []
    for i, t in enumerate(tokens):
        word = t.strip()
        out.append(None if i == 0 else -0.1 if word in seen else -2.3 - zlib.crc32(f"{i}|{t}".encode()) / 2**32)
        seen.add(word)
    return out


@dataclass
class Generated:
    text: str
    tokens: list[str]
    finish: str  # "stop" | "length"
    stop_sequence: str | None
    prompt_tokens: int


def generate(policy: Policy, prompt: str, payload: dict[str, Any], max_tokens: int, stop: list[str]) -> Generated:
    """The policy's answer cut at the first stop sequence, then at ``max_tokens`` words."""
    text = policy(prompt, payload)
    hit = None
    for s in stop:
        if s and s in text and (hit is None or text.index(s) < text.index(hit)):
            hit = s
    if hit is not None:
        text = text[: text.index(hit)]
    words = text.split()
    finish = "stop"
    if len(words) > max_tokens:
        words, finish, hit = words[:max_tokens], "length", None
        text = " ".join(words)
    tokens = [w if i == 0 else " " + w for i, w in enumerate(words)]
    return Generated(text, tokens, finish, hit, len(prompt.split()))


def _content_text(content: Any) -> str:
    """Message content as text: a string, or a list of OpenAI/Anthropic text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


class BadImage(ValueError):
    """An image part that does not decode (a 400)."""


_IMAGE_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def decode_image(data: bytes, mime: str, index: int) -> dict[str, Any]:
    """Check that an image part decodes as the MIME type it declares; describe it for policies."""
    import hashlib
    import io

    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            fmt, (width, height) = img.format, img.size
    except Exception as exc:  # noqa: BLE001 - whatever Pillow raises, the part is bad
        raise BadImage(f"content part {index}: the image does not decode ({type(exc).__name__})") from None
    if _IMAGE_FORMATS.get(fmt or "") != mime:
        raise BadImage(f"content part {index}: declared {mime} but the bytes are {fmt}")
    return {"type": "image", "sha256": hashlib.sha256(data).hexdigest(), "mime": mime, "width": width, "height": height}


def _data_url(url: Any, index: int) -> tuple[bytes, str]:
    import base64
    import binascii

    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise BadImage(f"content part {index}: image_url must be a base64 data: URL (the dev server fetches nothing)")
    head, _, data = url.partition(";base64,")
    try:
        return base64.b64decode(data, validate=True), head[len("data:"):]
    except binascii.Error:
        raise BadImage(f"content part {index}: the data URL is not valid base64") from None


def read_parts(content: Any) -> list[dict[str, Any]]:
    """A message's content as ordered parts (text, or a decoded image's description)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    parts: list[dict[str, Any]] = []
    for i, block in enumerate(content if isinstance(content, list) else []):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in ("text", "input_text"):
            parts.append({"type": "text", "text": block.get("text", "")})
        elif kind == "image_url":  # OpenAI chat
            url = block.get("image_url", {})
            parts.append(decode_image(*_data_url(url.get("url") if isinstance(url, dict) else url, i), i))
        elif kind == "input_image":  # OpenAI Responses
            parts.append(decode_image(*_data_url(block.get("image_url"), i), i))
        elif kind == "image":  # Anthropic
            import base64
            import binascii

            source = block.get("source") or {}
            if source.get("type") != "base64":
                raise BadImage(f"content part {i}: only base64 image sources are accepted")
            try:
                data = base64.b64decode(source.get("data", ""), validate=True)
            except binascii.Error:
                raise BadImage(f"content part {i}: the image data is not valid base64") from None
            parts.append(decode_image(data, source.get("media_type", ""), i))
        else:
            raise BadImage(f"content part {i}: unknown type {kind!r}")
    return parts


# --------------------------------------------------------------------------- reasoning
#: words of reasoning per effort (a word is a token); no effort given: ``medium``
EFFORT_WORDS = {"none": 0, "minimal": 2, "low": 4, "medium": 8, "high": 16, "xhigh": 24, "max": 32}
#: the most words a thinking budget buys (Anthropic budgets start at 1024 tokens)
BUDGET_WORDS = 12


def reasoning_words(n: int, prompt: str) -> list[str]:
    """``n`` words of reasoning about the prompt: ``thought1 ... thoughtN`` (easy to find in a stored answer)."""
    return [f"thought{i + 1}" for i in range(n)]


@dataclass
class Reasoned:
    """An answer after ``reasoning`` words of thought, all within one output budget."""

    reasoning: list[str]
    answer: Generated
    truncated: bool  # the budget ran out while thinking: no answer

    @property
    def output_tokens(self) -> int:
        return len(self.reasoning) + len(self.answer.tokens)


def reason(policy: Policy, prompt: str, payload: dict[str, Any], max_tokens: int, stop: list[str],
           n: int) -> Reasoned:
    thought = reasoning_words(n, prompt)
    if n >= max_tokens:
        return Reasoned(thought[:max_tokens], Generated("", [], "length", None, len(prompt.split())), True)
    return Reasoned(thought, generate(policy, prompt, payload, max_tokens - n, stop), False)


def openai_reasoning_style(payload: dict[str, Any]) -> str | None:
    """How a chat request's model reasons: ``openai`` (hidden), ``field``, ``legacy``, ``tags`` or None."""
    model = str(payload.get("model", ""))
    if "reasoner-legacy" in model:
        return "legacy"
    if "reasoner" in model:
        return "field"
    if "think" in model:
        return "tags"
    return "openai" if "reasoning_effort" in payload else None


_OPENAI_REFUSED = ("top_p", "logprobs", "top_logprobs", "presence_penalty", "frequency_penalty", "logit_bias",
                   "max_tokens")


def openai_reasoning_refusal(payload: dict[str, Any]) -> str | None:
    """What an OpenAI reasoning model refuses in the request (the 400 message), or None."""
    if "temperature" in payload and payload["temperature"] != 1:
        return "Unsupported value: 'temperature' does not support this value with this model. Only the default (1)"
    for key in _OPENAI_REFUSED:
        if key in payload:
            hint = " Use 'max_completion_tokens' instead." if key == "max_tokens" else ""
            return f"Unsupported parameter: '{key}' is not supported with this model.{hint}"
    effort = payload.get("reasoning_effort")
    if effort not in EFFORT_WORDS:
        return f"Invalid value for 'reasoning_effort': {effort!r}"
    return None


def chat_reasoning_words(payload: dict[str, Any]) -> int:
    n = EFFORT_WORDS.get(str(payload.get("reasoning_effort", "medium")), EFFORT_WORDS["medium"])
    budget = payload.get("thinking_token_budget")
    if isinstance(budget, int):
        n = min(n, budget)
    switches = payload.get("chat_template_kwargs") or {}
    if isinstance(switches, dict) and switches.get("enable_thinking") is False:
        n = 0
    return n


def anthropic_thinking_refusal(payload: dict[str, Any], max_tokens: int) -> str | None:
    thinking = payload.get("thinking")
    if thinking is None:
        return None
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind == "enabled":
        if "adaptive-only" in str(payload.get("model", "")):
            return '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive"'
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= max_tokens:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
        return None
    if kind in ("adaptive", "disabled"):
        effort = (payload.get("output_config") or {}).get("effort")
        if effort is not None and effort not in ("low", "medium", "high", "xhigh", "max"):
            return f"output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max' (got {effort!r})"
        return None
    return f"thinking.type: Input tag {kind!r} found using 'type' does not match any of the expected tags"


def anthropic_thinking_words(payload: dict[str, Any]) -> int | None:
    thinking = payload.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "adaptive"):
        return None
    if thinking["type"] == "enabled":
        return min(int(thinking["budget_tokens"]), BUDGET_WORDS)
    effort = (payload.get("output_config") or {}).get("effort", "high")
    return EFFORT_WORDS.get(effort, EFFORT_WORDS["high"])


#: the most prompt heads a scope's simulated cache holds (a full cache serves what it has, stores no more)
CACHE_ENTRIES = 200_000


def cached_words(seen: set[int], prompt: str) -> int:
    """Words of the longest run of whole leading lines (never the last line) that an earlier request of the
    scope also began with: what a provider's prefix cache would serve. Heads are kept as their hashes
    (this process's ``hash``: the cache lives as long as the server)."""
    text = prompt.rstrip("\n")
    cached = words = key = 0
    start = 0
    while (end := text.find("\n", start)) >= 0:
        line = text[start:end]
        words += len(line.split())
        key = hash((key, line))  # the head so far: each line once, however long the prompt
        if key in seen:
            cached = words
        elif len(seen) < CACHE_ENTRIES:
            seen.add(key)
        start = end + 1
    return cached


# --------------------------------------------------------------------------- the server
@dataclass
class Settings:
    latency_ms: float = 0.0
    fault_rate: float = 0.0
    faults: tuple[str, ...] = FAULT_KINDS
    retry_after_ms: int = 50
    hang_s: float = 3600.0
    seed: int | None = None
    usage: bool = True  # False: OpenAI answers carry no usage, as some compatible servers do
    batch_delay_s: float = 0.0  # a batch ends this long after it was created
    # Anthropic's prompt cache: "auto" (any shared leading lines are read) or "explicit" (only a prefix marked with
    # cache_control: written at 1.25x the first time it is seen, read after, as the API does)
    anthropic_cache: str = "auto"
    batch_expire: bool = False  # a batch expires instead of completing: only batch_done_fraction of it is done
    batch_done_fraction: float = 0.5  # what an expired or cancelled batch finished (its first lines)
    batch_error_rate: float = 0.0  # the share of a batch's lines that fail (HTTP 500 / api_error)
    image_fault: str = ""  # images answered wrong on purpose: "truncated", "svg" or "count" (see the module doc)

    def update(self, changes: dict[str, Any]) -> None:
        for key, value in changes.items():
            if key not in self.__dataclass_fields__:
                raise ValueError(f"unknown setting {key!r}")
            if key == "faults":
                value = parse_faults(value if isinstance(value, str) else ",".join(value))
            setattr(self, key, value)


def _first_text(value: Any) -> str:
    """The first text of a prompt field: a string, or the first text block of a list of blocks or messages."""
    if isinstance(value, str):
        return value
    for item in value if isinstance(value, list) else []:
        if isinstance(item, str):
            return item
        if isinstance(item, dict):
            text = item.get("text") if item.get("type") == "text" else _first_text(item.get("content"))
            if text:
                return str(text)
    return ""


def _note_heads(scope: Scope, payloads: list[Any]) -> None:
    """Keep each request's first prompt line (its system text, else its first message, else its prompt), in
    the order sent: ``GET /_dev/heads`` shows which prompts went out together."""
    heads = []
    for p in payloads:
        if isinstance(p, dict):
            text = _first_text(p.get("system")) or _first_text(p.get("messages")) or _first_text(p.get("prompt"))
            heads.append(text.split("\n", 1)[0][:200])
    scope.heads = [*scope.heads, *heads][-10_000:]


def parse_faults(spec: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in spec.split(",") if k.strip())
    bad = [k for k in kinds if k not in FAULT_KINDS]
    if bad:
        raise ValueError(f"unknown fault kinds {bad}; known: {','.join(FAULT_KINDS)}")
    return kinds


@dataclass
class Counts:
    requests: int = 0
    answered: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    by_endpoint: Counter = field(default_factory=Counter)
    bodies: Counter = field(default_factory=Counter)  # sha256 of each request body: re-sends show up as repeats
    faults: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    images: int = 0
    generated: list[str] = field(default_factory=list)  # sha256 of every generated image sent, in order
    usage: Counter = field(default_factory=Counter)  # tokens the answers reported (prompt, completion, ...)
    body_keys: Counter = field(default_factory=Counter)  # "<endpoint>:<top-level key>" of every JSON body
    by_model: Counter = field(default_factory=Counter)
    batches: int = 0
    batch_lines: Counter = field(default_factory=Counter)  # custom_id -> lines submitted in batches
    batch_answered: Counter = field(default_factory=Counter)  # custom_id -> lines answered (billed)
    changed: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "answered": self.answered,
            "unique": len(self.bodies),
            "repeats": self.requests - len(self.bodies),
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "by_endpoint": dict(self.by_endpoint),
            "faults": dict(self.faults),
            "rejected": dict(self.rejected),
            "images": self.images,
            "generated_images": list(self.generated),
            "usage": dict(self.usage),
            "body_keys": dict(self.body_keys),
            "by_model": dict(self.by_model),
            "batches": self.batches,
            "batch_lines": sum(self.batch_lines.values()),
            "batch_line_ids": len(self.batch_lines),
            "batch_line_repeats": sum(self.batch_lines.values()) - len(self.batch_lines),
            "batch_answered": sum(self.batch_answered.values()),
            "batch_answered_repeats": sum(self.batch_answered.values()) - len(self.batch_answered),
        }


@dataclass
class Scope:
    """One counter scope: its settings, counts, fault draws and the last 1,000 requests that carried images."""

    settings: Settings
    counts: Counts = field(default_factory=Counts)
    rng: random.Random = field(default_factory=random.Random)
    image_requests: list[list[dict[str, Any]]] = field(default_factory=list)
    heads: list[str] = field(default_factory=list)  # the first prompt line of the last 10,000 requests, as sent
    prefixes: set[int] = field(default_factory=set)  # prompt heads sent before: the simulated prompt cache
    files: dict[str, tuple[bytes, str, str]] = field(default_factory=dict)  # id -> (bytes, purpose, filename)
    batches: dict[str, DevBatch] = field(default_factory=dict)

    @classmethod
    def new(cls, settings: Settings) -> Scope:
        return cls(settings, rng=random.Random(settings.seed))


@dataclass
class DevBatch:
    """A batch as the dev server keeps it: its request lines, answered all at once when it ends."""

    id: str
    wire: str  # "openai" or "anthropic"
    endpoint: str  # "chat", "completions" or "messages"
    lines: list[tuple[str, dict[str, Any]]]  # (custom_id, body)
    created: float
    version: str = ""
    input_file_id: str | None = None
    metadata: dict[str, Any] | None = None
    cancelled_at: float | None = None
    ended_at: float | None = None
    status: str = "in_progress"  # OpenAI's terminal names: completed, expired, cancelled, failed
    failure: list[dict[str, Any]] = field(default_factory=list)  # validation errors (OpenAI ``failed``)
    outcomes: list[tuple[str, str, dict[str, Any] | None]] = field(default_factory=list)  # (custom_id, kind, body)
    output_file_id: str | None = None
    error_file_id: str | None = None


class DevServer:
    def __init__(self, settings: Settings, policy: Policy, api_key: str | None = None, count_file: str | None = None):
        self.initial = dataclasses.replace(settings)  # what a new scope starts with
        self.policy = policy
        self.api_key = api_key
        self.count_file = Path(count_file) if count_file else None
        self.root = Scope.new(settings)
        self.scopes: dict[str, Scope] = {}
        self._ids = 0

    @property
    def settings(self) -> Settings:
        return self.root.settings

    @property
    def counts(self) -> Counts:
        return self.root.counts

    def scope(self, request) -> Scope:
        name = request.match_info.get("scope")
        if name is None:
            return self.root
        if name not in self.scopes:
            self.scopes[name] = Scope.new(dataclasses.replace(self.initial))
        return self.scopes[name]

    # ------------------------------------------------------------------ app
    def app(self):
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024**2)
        for prefix in ("", "/_scope/{scope:[A-Za-z0-9_.-]{1,100}}"):
            app.router.add_post(f"{prefix}/v1/chat/completions", self._chat)
            app.router.add_post(f"{prefix}/v1/completions", self._completions)
            app.router.add_post(f"{prefix}/v1/messages", self._messages)
            app.router.add_post(f"{prefix}/v1/images/generations", self._images)
            app.router.add_get(f"{prefix}/_dev/stats", self._stats)
            app.router.add_get(f"{prefix}/_dev/requests", self._requests)
            app.router.add_get(f"{prefix}/_dev/heads", self._heads)
            app.router.add_post(f"{prefix}/_dev/config", self._config)
            app.router.add_post(f"{prefix}/_dev/reset", self._reset)
            app.router.add_post(f"{prefix}/v1/files", self._file_create)
            app.router.add_get(f"{prefix}/v1/files/{{fid}}", self._file_get)
            app.router.add_get(f"{prefix}/v1/files/{{fid}}/content", self._file_content)
            app.router.add_post(f"{prefix}/v1/batches", self._batch_create)
            app.router.add_get(f"{prefix}/v1/batches", self._batch_list)
            app.router.add_get(f"{prefix}/v1/batches/{{bid}}", self._batch_get)
            app.router.add_post(f"{prefix}/v1/batches/{{bid}}/cancel", self._batch_cancel)
            app.router.add_post(f"{prefix}/v1/messages/batches", self._mbatch_create)
            app.router.add_get(f"{prefix}/v1/messages/batches", self._mbatch_list)
            app.router.add_get(f"{prefix}/v1/messages/batches/{{bid}}", self._mbatch_get)
            app.router.add_post(f"{prefix}/v1/messages/batches/{{bid}}/cancel", self._mbatch_cancel)
            app.router.add_get(f"{prefix}/v1/messages/batches/{{bid}}/results", self._mbatch_results)
        return app

    async def _stats(self, request):
        from aiohttp import web

        scope = self.scope(request)
        return web.json_response({**scope.counts.as_dict(), "settings": scope.settings.__dict__})

    async def _requests(self, request):
        from aiohttp import web

        return web.json_response(self.scope(request).image_requests)

    async def _heads(self, request):
        from aiohttp import web

        return web.json_response(self.scope(request).heads)

    async def _config(self, request):
        from aiohttp import web

        scope = self.scope(request)
        try:
            changes = await request.json()
            scope.settings.update(changes)
        except (ValueError, TypeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        if "seed" in changes:
            scope.rng = random.Random(scope.settings.seed)
        return web.json_response(scope.settings.__dict__)

    async def _reset(self, request):
        from aiohttp import web

        scope = self.scope(request)
        scope.counts = Counts()
        scope.prefixes = set()
        scope.heads = []
        return web.json_response(scope.counts.as_dict())

    # ------------------------------------------------------------------ endpoints
    async def _chat(self, request):
        return await self._serve(request, "chat")

    async def _completions(self, request):
        return await self._serve(request, "completions")

    async def _messages(self, request):
        return await self._serve(request, "messages")

    async def _images(self, request):
        return await self._serve(request, "images")

    async def _serve(self, request, endpoint: str):
        scope = self.scope(request)
        c = scope.counts
        c.in_flight += 1
        c.max_in_flight = max(c.max_in_flight, c.in_flight)
        try:
            return await self._answer(request, endpoint, scope, c)
        finally:
            c.in_flight -= 1

    async def _answer(self, request, endpoint: str, scope: Scope, c: Counts):
        from aiohttp import web

        c.requests += 1
        c.by_endpoint[endpoint] += 1
        c.bodies[hashlib.sha256(await request.read()).hexdigest()] += 1
        c.changed = True
        anthropic = endpoint == "messages"
        s, rng = scope.settings, scope.rng
        fault = s.faults and s.fault_rate > 0 and rng.random() < s.fault_rate and rng.choice(s.faults)
        if fault:
            c.faults[fault] += 1
        if s.latency_ms:
            await asyncio.sleep(s.latency_ms / 1000)
        if fault:
            return await self._fault(request, fault, anthropic, s)
        denied = self._auth(request, anthropic)
        if denied is not None:
            c.rejected["401"] += 1
            return denied
        try:
            payload = json.loads(await request.read())
        except ValueError:
            c.rejected["400"] += 1
            return _error(400, "request body is not JSON", anthropic)
        _note_heads(scope, [payload])
        status, body = self._respond(endpoint, payload, request.headers.get("anthropic-version", ""), scope)
        return web.Response(status=status, body=json.dumps(body).encode(), content_type="application/json")

    def _respond(self, endpoint: str, payload: Any, version: str, scope: Scope) -> tuple[int, dict[str, Any]]:
        """The status and JSON body answering one request (direct, or a line of a batch)."""
        c, s = scope.counts, scope.settings
        anthropic = endpoint == "messages"
        if not isinstance(payload, dict):
            c.rejected["400"] += 1
            return 400, _error_body(400, "request body is not a JSON object", anthropic)
        c.body_keys.update(f"{endpoint}:{k}" for k in payload)
        c.by_model[str(payload.get("model", ""))] += 1
        model = str(payload.get("model", ""))
        if model.startswith("forbidden"):
            c.rejected["403"] += 1
            return 403, _error_body(403, f"this key may not use model {model!r}", anthropic)
        if model.startswith("unknown") or not model:
            c.rejected["404"] += 1
            return 404, _error_body(404, f"The model {model!r} does not exist", anthropic)
        if endpoint == "images":
            return self._images_body(payload, scope)
        sampling = [k for k in ("temperature", "top_p", "top_k") if k in payload]
        if anthropic and sampling and version >= "2026-10-21":
            c.rejected["400"] += 1  # what API version 2026-10-21 answers
            return 400, _error_body(400, f"{sampling[0]}: Extra inputs are not permitted", anthropic)
        max_tokens = payload.get("max_tokens", payload.get("max_completion_tokens", 16))
        least = 0 if endpoint == "completions" and payload.get("echo") else 1  # vLLM scores a prompt with 0
        if not isinstance(max_tokens, int) or max_tokens < least:
            c.rejected["400"] += 1
            return 400, _error_body(400, "max_tokens must be a positive integer", anthropic)
        refused = None
        if endpoint == "chat" and openai_reasoning_style(payload) == "openai":
            refused = openai_reasoning_refusal(payload)
        elif anthropic:
            refused = anthropic_thinking_refusal(payload, max_tokens)
        if refused:
            c.rejected["400"] += 1
            return 400, _error_body(400, refused, anthropic)
        try:
            self._read_images(payload, scope)
        except BadImage as exc:
            c.rejected["400"] += 1
            return 400, _error_body(400, str(exc), anthropic)
        body = getattr(self, f"_{endpoint}_body")(payload, max_tokens, s, scope)
        c.answered += 1
        return 200, body

    def _images_body(self, payload: dict[str, Any], scope: Scope) -> tuple[int, dict[str, Any]]:
        """OpenAI's images API answer: ``n`` PNGs drawn from the prompt, base64 in ``b64_json``."""
        import base64

        from helmflow.clients.offline_image import draw

        c = scope.counts
        prompt, n, size = payload.get("prompt"), payload.get("n", 1), payload.get("size") or "256x256"
        problem = None
        if not isinstance(prompt, str) or not prompt:
            problem = "prompt: a non-empty string is required"
        elif not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 10:
            problem = "n: an integer from 1 to 10"
        elif payload.get("response_format", "b64_json") != "b64_json":
            problem = "response_format: only b64_json is served here (the dev server hosts no image URLs)"
        found = re.fullmatch(r"(\d+)x(\d+)", size) if isinstance(size, str) else None
        if problem is None and (found is None or not all(16 <= int(v) <= 2048 for v in found.groups())):
            problem = f"size: WIDTHxHEIGHT with sides from 16 to 2048, not {size!r}"
        if problem:
            c.rejected["400"] += 1
            return 400, _error_body(400, problem, False)
        assert found is not None
        width, height = int(found.group(1)), int(found.group(2))
        seed = payload.get("seed") if isinstance(payload.get("seed"), int) else None
        images = [draw(str(prompt), i, width, height, seed) for i in range(n)]
        fault = scope.settings.image_fault
        if fault == "truncated" and len(images) > 1:
            images[1] = images[1][: len(images[1]) // 2]
        elif fault == "svg":
            images[0] = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect width="9" height="9"/></svg>'
        elif fault == "count":
            images = images[:-1]
        c.generated = [*c.generated, *(hashlib.sha256(i).hexdigest() for i in images)][-10_000:]
        c.answered += 1
        return 200, {"created": int(time.time()),
                     "data": [{"b64_json": base64.b64encode(i).decode(), "revised_prompt": None} for i in images]}

    def _read_images(self, payload: dict[str, Any], scope: Scope) -> None:
        """Decode the last user turn's parts into ``payload["_parts"]`` and remember requests with images."""
        users = [m for m in payload.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
        if not users or isinstance(users[-1].get("content"), str):
            return
        parts = read_parts(users[-1].get("content"))
        payload["_parts"] = parts
        if any(p["type"] == "image" for p in parts):
            scope.image_requests = [*scope.image_requests[-999:], parts]
            scope.counts.images += sum(p["type"] == "image" for p in parts)

    def _next_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}-dev{self._ids:08d}"

    def _chat_body(self, payload: dict[str, Any], max_tokens: int, settings: Settings, scope: Scope) -> dict[str, Any]:
        msgs = payload.get("messages") or []
        users = [m for m in msgs if m.get("role") == "user"]
        prompt = _content_text(users[-1]["content"]) if users else ""
        stop = payload.get("stop") or []
        stops = [stop] if isinstance(stop, str) else stop
        style = openai_reasoning_style(payload)
        message: dict[str, Any] = {"role": "assistant", "refusal": None}
        reasoning_tokens, thought_words = None, 0
        if style is None:
            g = generate(self.policy, prompt, payload, max_tokens, stops)
            message["content"], output_tokens = g.text, len(g.tokens)
        else:
            tags = style == "tags"  # a server without a reasoning parser: the stops apply to the whole text
            r = reason(self.policy, prompt, payload, max_tokens, [] if tags else stops, chat_reasoning_words(payload))
            g, thought = r.answer, ("\n" if tags else " ").join(r.reasoning)
            output_tokens, thought_words = r.output_tokens, len(r.reasoning)
            if tags:
                content = f"<think>{thought}" + ("" if r.truncated else f"</think>{g.text}")
                hit = min((content.index(s) for s in stops if s and s in content), default=None)
                if hit is not None:
                    content = content[:hit]
                    g = dataclasses.replace(g, finish="stop")
                    output_tokens = len(content.split())
                    thought_words = min(thought_words, output_tokens)
                message["content"] = content
            else:
                message["content"] = g.text
                if style in ("field", "legacy"):
                    message["reasoning" if style == "field" else "reasoning_content"] = thought
            if style == "openai":
                reasoning_tokens = len(r.reasoning)
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": g.finish,
            "logprobs": None,
        }
        if payload.get("logprobs"):
            top = int(payload.get("top_logprobs") or 0)
            choice["logprobs"] = {
                "content": [
                    {
                        "token": t,
                        "logprob": _logprob(t, i),
                        "bytes": list(t.encode()),
                        "top_logprobs": [{"token": t, "logprob": _logprob(t, i), "bytes": list(t.encode())}][:top],
                    }
                    for i, t in enumerate(g.tokens)
                ],
                "refusal": None,
            }
        prompt_all = "\n".join(_content_text(m.get("content")) for m in msgs if isinstance(m, dict))
        usage = None
        if settings.usage:
            usage = _openai_usage(g, output_tokens, reasoning_tokens, cached_words(scope.prefixes, prompt_all))
            # the reasoning tokens generated, whether the answer reports them (OpenAI) or not (vLLM)
            scope.counts.usage.update({**_usage_counts(usage), "reasoning_tokens": thought_words})
        return {
            "id": self._next_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": payload["model"],
            "system_fingerprint": "fp_devserver",
            "choices": [choice],
            "usage": usage,
        }

    def _completions_body(self, payload: dict[str, Any], max_tokens: int, settings: Settings,
                          scope: Scope) -> dict[str, Any]:
        prompt = payload.get("prompt") or ""
        prompt = prompt[0] if isinstance(prompt, list) and prompt else prompt
        stop = payload.get("stop") or []
        prompt = str(prompt)
        g = generate(self.policy, prompt, payload, max_tokens, [stop] if isinstance(stop, str) else stop)
        echo = bool(payload.get("echo"))
        logprobs = None
        if payload.get("logprobs") is not None:
            tokens, values = [], []
            if echo:
                tokens = prompt_tokens(prompt)
                values = prompt_logprobs(tokens)
            tokens += g.tokens
            values += [_logprob(t, i) for i, t in enumerate(g.tokens)]
            offsets, pos = [], 0 if echo else len(prompt)
            for t in tokens:
                offsets.append(pos)
                pos += len(t)
            logprobs = {
                "tokens": tokens,
                "token_logprobs": values,
                "top_logprobs": [None if v is None else {t: v} for t, v in zip(tokens, values)],
                "text_offset": offsets,
            }
        text = prompt + g.text if echo else g.text
        usage = _openai_usage(g, len(g.tokens)) if settings.usage else None
        if usage is not None:
            scope.counts.usage.update(_usage_counts(usage))
        return {
            "id": self._next_id("cmpl"),
            "object": "text_completion",
            "created": int(time.time()),
            "model": payload["model"],
            "choices": [{"index": 0, "text": text, "finish_reason": g.finish, "logprobs": logprobs}],
            "usage": usage,
        }

    def _messages_body(self, payload: dict[str, Any], max_tokens: int, settings: Settings,
                       scope: Scope) -> dict[str, Any]:
        msgs = payload.get("messages") or []
        users = [m for m in msgs if m.get("role") == "user"]
        prompt = _content_text(users[-1]["content"]) if users else ""
        stops = payload.get("stop_sequences") or []
        thinking = anthropic_thinking_words(payload)
        content: list[dict[str, Any]] = []
        if thinking is None:
            g = generate(self.policy, prompt, payload, max_tokens, stops)
            output_tokens, thinking_tokens = len(g.tokens), None
        else:
            r = reason(self.policy, prompt, payload, max_tokens, stops, thinking)
            g, output_tokens, thinking_tokens = r.answer, r.output_tokens, len(r.reasoning)
            thought = " ".join(r.reasoning)
            if "redacted" in str(payload.get("model", "")):  # thinking the safety systems flagged: opaque
                content.append({"type": "redacted_thinking", "data": hashlib.sha256(thought.encode()).hexdigest()})
            else:
                content.append({"type": "thinking", "thinking": thought,
                                "signature": hashlib.sha256(thought.encode()).hexdigest()[:32]})
        if g.text or thinking is None:
            content.append({"type": "text", "text": g.text})
        system = _content_text(payload.get("system") or "")
        stop_reason = "max_tokens" if g.finish == "length" else "stop_sequence" if g.stop_sequence else "end_turn"
        total = g.prompt_tokens + len(system.split())
        whole = "\n".join([system, *(_content_text(m.get("content")) for m in msgs if isinstance(m, dict))])
        written = 0
        if settings.anthropic_cache == "explicit":  # as Anthropic does: only a marked prefix is cached
            marked = _marked_prefix(payload)
            words = min(len(marked.split()), total) if marked else 0
            key = hash(("marked", marked))
            cached = words if marked and key in scope.prefixes else 0
            written = words - cached
            if marked and len(scope.prefixes) < CACHE_ENTRIES:
                scope.prefixes.add(key)
        else:
            cached = min(cached_words(scope.prefixes, whole), total)
        usage: dict[str, Any] = {"input_tokens": total - cached - written, "output_tokens": output_tokens}
        if cached:
            usage["cache_read_input_tokens"] = cached
        if written:
            usage["cache_creation_input_tokens"] = written
            scope.counts.usage.update({"cache_write_tokens": written})
        if thinking_tokens is not None:
            usage["output_tokens_details"] = {"thinking_tokens": thinking_tokens}
        scope.counts.usage.update({"prompt_tokens": total, "completion_tokens": output_tokens,
                                   "reasoning_tokens": thinking_tokens or 0, "cached_tokens": cached})
        return {
            "id": self._next_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": payload["model"],
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": g.stop_sequence,
            "usage": usage,
        }

    # ------------------------------------------------------------------ batches (OpenAI Files + Batches, Anthropic)
    def _batch_call(self, request, name: str, anthropic: bool) -> tuple[Scope, Any]:
        """Count a batch-API call; the scope, and a 401 response when the key is wrong (else None)."""
        scope = self.scope(request)
        scope.counts.by_endpoint[name] += 1
        scope.counts.changed = True
        denied = self._auth(request, anthropic)
        if denied is not None:
            scope.counts.rejected["401"] += 1
        return scope, denied

    def _settle(self, scope: Scope, b: DevBatch) -> None:
        """Answer the batch's lines once it has ended (its delay passed, it was cancelled or expires):
        an expired or cancelled batch answers its first ``batch_done_fraction`` of lines, the rest are not done."""
        s = scope.settings
        now = time.time()
        if b.ended_at is not None or b.status == "failed":
            return
        due = now >= b.created + s.batch_delay_s
        if b.cancelled_at is None and not due:
            return
        cut = b.cancelled_at is not None or s.batch_expire
        done = math.floor(len(b.lines) * s.batch_done_fraction) if cut else len(b.lines)
        unfinished = "canceled" if b.cancelled_at is not None else "expired"
        for i, (custom_id, body) in enumerate(b.lines):
            if i >= done:
                b.outcomes.append((custom_id, unfinished, None))
                continue
            if s.batch_error_rate and scope.rng.random() < s.batch_error_rate:
                b.outcomes.append((custom_id, "error", _error_body(500, "The server had an error (dev server batch)",
                                                                   b.wire == "anthropic") | {"_status": 500}))
                continue
            status, answer = self._respond(b.endpoint, dict(body), b.version, scope)
            if status == 200:
                scope.counts.batch_answered[custom_id] += 1
                b.outcomes.append((custom_id, "ok", answer))
            else:
                b.outcomes.append((custom_id, "error", answer | {"_status": status}))
        scope.rng.shuffle(b.outcomes)  # no order is promised
        b.ended_at = now
        b.status = "cancelled" if b.cancelled_at is not None else "expired" if s.batch_expire else "completed"
        if b.wire == "openai":
            out, err = [], []
            for custom_id, kind, answered in b.outcomes:
                line: dict[str, Any] = {"id": self._next_id("batch_req"), "custom_id": custom_id}
                if kind == "ok":
                    out.append({**line, "response": {"status_code": 200, "request_id": self._next_id("req"),
                                                     "body": answered}, "error": None})
                elif kind == "error" and answered is not None:
                    code = answered.pop("_status")
                    err.append({**line, "response": {"status_code": code, "request_id": self._next_id("req"),
                                                     "body": answered}, "error": None})
                else:
                    code = "batch_cancelled" if kind == "canceled" else "batch_expired"
                    err.append({**line, "response": None,
                                "error": {"code": code, "message": f"This request could not be executed ({code})."}})
            if out:
                b.output_file_id = self._store_file(scope, out, "batch_output", f"{b.id}_output.jsonl")
            if err:
                b.error_file_id = self._store_file(scope, err, "batch_output", f"{b.id}_error.jsonl")
        scope.counts.changed = True

    def _store_file(self, scope: Scope, lines: list[dict[str, Any]], purpose: str, filename: str) -> str:
        fid = self._next_id("file")
        scope.files[fid] = ("".join(json.dumps(x) + "\n" for x in lines).encode(), purpose, filename)
        return fid

    @staticmethod
    def _file_object(fid: str, entry: tuple[bytes, str, str]) -> dict[str, Any]:
        data, purpose, filename = entry
        return {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": filename, "purpose": purpose, "status": "processed"}

    async def _file_create(self, request):
        from aiohttp import web

        scope, denied = self._batch_call(request, "files", False)
        if denied is not None:
            return denied
        form = await request.post()
        upload, purpose = form.get("file"), str(form.get("purpose", ""))
        if upload is None or not hasattr(upload, "file"):
            return _error(400, "file: a file is required", False)
        data = upload.file.read()
        if purpose == "batch" and len(data) > BATCH_LIMITS["openai"][1]:
            return _error(400, "batch input files are limited to 200 MB", False)
        fid = self._next_id("file")
        scope.files[fid] = (data, purpose, str(getattr(upload, "filename", "upload.jsonl")))
        return web.json_response(self._file_object(fid, scope.files[fid]))

    def _stored_file(self, request) -> tuple[str, Any, Any]:
        """(file id, its stored entry, None), or (id, None, the error response) for a refused call or an
        unknown id: what the file object and its content routes both look up first."""
        scope, denied = self._batch_call(request, "files", False)
        fid = request.match_info["fid"]
        if denied is not None:
            return fid, None, denied
        if fid not in scope.files:
            return fid, None, _error(404, f"No such File object: {fid}", False)
        return fid, scope.files[fid], None

    async def _file_get(self, request):
        from aiohttp import web

        fid, stored, refused = self._stored_file(request)
        return refused if refused is not None else web.json_response(self._file_object(fid, stored))

    async def _file_content(self, request):
        from aiohttp import web

        _, stored, refused = self._stored_file(request)
        return refused if refused is not None else web.Response(body=stored[0], content_type="application/octet-stream")

    def _openai_batch(self, scope: Scope, b: DevBatch) -> dict[str, Any]:
        self._settle(scope, b)
        n, s = len(b.lines), scope.settings
        done = sum(1 for _, kind, _ in b.outcomes if kind == "ok")
        failed = len(b.outcomes) - done
        if b.ended_at is None and b.status != "failed":  # progress as OpenAI reports it: a count that grows
            elapsed = time.time() - b.created
            done = min(n, int(n * elapsed / s.batch_delay_s)) if s.batch_delay_s else n
        status = b.status
        if status == "in_progress" and b.cancelled_at is not None:
            status = "cancelling"
        stamp = int(b.ended_at) if b.ended_at else None
        path = "chat/completions" if b.endpoint == "chat" else b.endpoint
        return {
            "id": b.id, "object": "batch", "endpoint": f"/v1/{path}",
            "input_file_id": b.input_file_id, "completion_window": "24h", "status": status,
            "created_at": int(b.created), "in_progress_at": int(b.created), "expires_at": int(b.created) + 86400,
            "completed_at": stamp if status == "completed" else None,
            "expired_at": stamp if status == "expired" else None,
            "cancelled_at": stamp if status == "cancelled" else None,
            "cancelling_at": int(b.cancelled_at) if b.cancelled_at else None,
            "failed_at": int(b.created) if status == "failed" else None,
            "output_file_id": b.output_file_id, "error_file_id": b.error_file_id,
            "errors": {"object": "list", "data": b.failure} if b.failure else None,
            "request_counts": None if status == "failed" else {"total": n, "completed": done, "failed": failed},
            "metadata": b.metadata,
        }

    async def _batch_create(self, request):
        from aiohttp import web

        scope, denied = self._batch_call(request, "batches", False)
        if denied is not None:
            return denied
        try:
            payload = json.loads(await request.read())
            fid, endpoint = payload["input_file_id"], payload["endpoint"]
        except (ValueError, KeyError, TypeError):
            return _error(400, "input_file_id and endpoint are required", False)
        if payload.get("completion_window") != "24h":
            return _error(400, "completion_window: only '24h' is supported", False)
        kinds = {"/v1/chat/completions": "chat", "/v1/completions": "completions"}
        if endpoint not in kinds:
            return _error(400, f"endpoint {endpoint!r} is not served by the dev server", False)
        if fid not in scope.files:
            return _error(404, f"No such File object: {fid}", False)
        b = DevBatch(self._next_id("batch"), "openai", kinds[endpoint], [], time.time(), input_file_id=fid,
                     metadata=payload.get("metadata"))
        seen: set[str] = set()
        for i, raw in enumerate(scope.files[fid][0].decode().splitlines()):
            try:
                line = json.loads(raw)
                custom_id, body = str(line["custom_id"]), line["body"]
            except (ValueError, KeyError, TypeError):
                b.failure.append({"code": "invalid_json_line", "message": "not a request line", "line": i + 1})
                continue
            problem = ("custom_id is used twice" if custom_id in seen else
                       "method must be POST" if line.get("method") != "POST" else
                       "url must equal the batch's endpoint" if line.get("url") != endpoint else
                       "stream is not allowed in a batch" if isinstance(body, dict) and body.get("stream") else None)
            if problem:
                b.failure.append({"code": "invalid_request", "message": problem, "param": "custom_id", "line": i + 1})
            seen.add(custom_id)
            b.lines.append((custom_id, body))
        if len(b.lines) > BATCH_LIMITS["openai"][0]:
            b.failure.append({"code": "too_many_requests", "message": "at most 50,000 requests per batch",
                              "line": None})
        if b.failure or not b.lines:
            b.status = "failed"
            b.failure = b.failure or [{"code": "empty_file", "message": "the input file has no lines", "line": None}]
        else:
            scope.counts.batches += 1
            scope.counts.batch_lines.update(c for c, _ in b.lines)
            _note_heads(scope, [body for _, body in b.lines])
        scope.batches[b.id] = b
        return web.json_response(self._openai_batch(scope, b))

    async def _batch_get(self, request):
        from aiohttp import web

        scope, denied = self._batch_call(request, "batches", False)
        if denied is not None:
            return denied
        b = scope.batches.get(request.match_info["bid"])
        if b is None or b.wire != "openai":
            return _error(404, f"No such Batch: {request.match_info['bid']}", False)
        return web.json_response(self._openai_batch(scope, b))

    async def _batch_list(self, request):
        from aiohttp import web

        scope, denied = self._batch_call(request, "batches", False)
        if denied is not None:
            return denied
        data = [self._openai_batch(scope, b) for b in reversed(scope.batches.values()) if b.wire == "openai"]
        return web.json_response({"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None, "has_more": False})

    async def _batch_cancel(self, request):
        from aiohttp import web

        scope, denied = self._batch_call(request, "batches", False)
        if denied is not None:
            return denied
        b = scope.batches.get(request.match_info["bid"])
        if b is None or b.wire != "openai":
            return _error(404, f"No such Batch: {request.match_info['bid']}", False)
        self._settle(scope, b)
        if b.ended_at is None and b.status != "failed":
            b.cancelled_at = time.time()
        return web.json_response(self._openai_batch(scope, b))

    def _anthropic_batch(self, request, scope: Scope, b: DevBatch) -> dict[str, Any]:
        self._settle(scope, b)
        kinds = Counter(kind for _, kind, _ in b.outcomes)
        ended = b.ended_at is not None

        def rfc(t: float | None) -> str | None:
            return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z") if t else None

        base = str(request.url.origin()) + request.path.split("/v1/messages/batches")[0]
        return {
            "id": b.id, "type": "message_batch", "processing_status": "ended" if ended else
            "canceling" if b.cancelled_at else "in_progress",
            # as the API does: every request counts as processing until the whole batch ends
            "request_counts": {"processing": 0 if ended else len(b.lines), "succeeded": kinds["ok"],
                               "errored": kinds["error"], "canceled": kinds["canceled"], "expired": kinds["expired"]},
            "created_at": rfc(b.created), "expires_at": rfc(b.created + 86400), "ended_at": rfc(b.ended_at),
            "cancel_initiated_at": rfc(b.cancelled_at), "archived_at": None,
            "results_url": f"{base}/v1/messages/batches/{b.id}/results" if ended else None,
        }

    async def _mbatch_create(self, request):
        from aiohttp import web

        scope, denied = self._batch_call(request, "message_batches", True)
        if denied is not None:
            return denied
        raw = await request.read()
        if len(raw) > BATCH_LIMITS["anthropic"][1]:
            return _error(413, "a batch is limited to 256 MB", True)
        try:
            requests = json.loads(raw)["requests"]
            lines = [(str(r["custom_id"]), r["params"]) for r in requests]
        except (ValueError, KeyError, TypeError):
            return _error(400, "requests: a list of {custom_id, params} is required", True)
        ids = [c for c, _ in lines]
        bad = [c for c in ids if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", c)]
        problem = ("requests: at least one request is required" if not lines else
                   f"requests: at most 100,000 requests, not {len(lines)}" if len(lines) > BATCH_LIMITS["anthropic"][0]
                   else f"custom_id {bad[0]!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$" if bad else
                   "custom_id values must be unique within a batch" if len(set(ids)) != len(ids) else
                   "stream is not allowed in a batch" if any(p.get("stream") for _, p in lines) else None)
        if problem:
            scope.counts.rejected["400"] += 1
            return _error(400, problem, True)
        b = DevBatch(self._next_id("msgbatch"), "anthropic", "messages", lines, time.time(),
                     version=request.headers.get("anthropic-version", ""))
        scope.counts.batches += 1
        scope.counts.batch_lines.update(ids)
        _note_heads(scope, [params for _, params in lines])
        scope.batches[b.id] = b
        return web.json_response(self._anthropic_batch(request, scope, b))

    def _mbatch(self, request, scope: Scope) -> DevBatch | None:
        b = scope.batches.get(request.match_info["bid"])
        return b if b is not None and b.wire == "anthropic" else None

    async def _mbatch_get(self, request):
        from aiohttp import web

        scope, denied = self._batch_call(request, "message_batches", True)
        if denied is not None:
            return denied
        b = self._mbatch(request, scope)
        if b is None:
            return _error(404, f"batch {request.match_info['bid']!r} not found", True)
        return web.json_response(self._anthropic_batch(request, scope, b))

    async def _mbatch_list(self, request):
        from aiohttp import web

        scope, denied = self._batch_call(request, "message_batches", True)
        if denied is not None:
            return denied
        data = [self._anthropic_batch(request, scope, b) for b in reversed(scope.batches.values())
                if b.wire == "anthropic"]
        return web.json_response({"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None})

    async def _mbatch_cancel(self, request):
        from aiohttp import web

        scope, denied = self._batch_call(request, "message_batches", True)
        if denied is not None:
            return denied
        b = self._mbatch(request, scope)
        if b is None:
            return _error(404, f"batch {request.match_info['bid']!r} not found", True)
        self._settle(scope, b)
        if b.ended_at is None:
            b.cancelled_at = time.time()
        return web.json_response(self._anthropic_batch(request, scope, b))

    async def _mbatch_results(self, request):
        from aiohttp import web

        scope, denied = self._batch_call(request, "message_batches", True)
        if denied is not None:
            return denied
        b = self._mbatch(request, scope)
        if b is None:
            return _error(404, f"batch {request.match_info['bid']!r} not found", True)
        self._settle(scope, b)
        if b.ended_at is None:
            return _error(400, "the batch has not ended: its results are not ready", True)
        out = []
        for custom_id, kind, body in b.outcomes:
            if kind == "ok":
                result: dict[str, Any] = {"type": "succeeded", "message": body}
            elif kind == "error" and body is not None:
                body = {k: v for k, v in body.items() if k != "_status"}
                result = {"type": "errored", "error": {**body, "request_id": self._next_id("req")}}
            else:
                result = {"type": kind}
            out.append(json.dumps({"custom_id": custom_id, "result": result}) + "\n")
        return web.Response(body="".join(out).encode(), content_type="application/binary")

    # ------------------------------------------------------------------ faults and auth
    def _auth(self, request, anthropic: bool):
        if self.api_key is None:
            return None
        got = request.headers.get("x-api-key") if anthropic else None
        if got is None:
            auth = request.headers.get("Authorization", "")
            got = auth.removeprefix("Bearer ")
        if got == self.api_key:
            return None
        # like some real providers, quote the key that was sent: clients must not pass this on verbatim
        return _error(401, f"Incorrect API key provided: {got}", anthropic)

    async def _fault(self, request, kind: str, anthropic: bool, settings: Settings):
        from aiohttp import web

        if kind == "429":
            s = settings.retry_after_ms
            return _error(429, "Rate limit reached (dev server)", anthropic,
                          {"retry-after-ms": str(s), "retry-after": str(max(1, math.ceil(s / 1000)))})
        if kind in ("500", "503"):
            return _error(int(kind), "The server had an error (dev server)", anthropic)
        if kind == "badjson":
            return web.Response(body=b'{"id": "truncated", "choices": [{"index": 0, "mess',
                                content_type="application/json")
        if kind == "empty":
            return web.Response(body=b"", content_type="application/json")
        if kind == "hang":
            await asyncio.sleep(settings.hang_s)
            return _error(504, "hung request finally answered", anthropic)
        # reset: abort the connection with a TCP RST and never answer
        transport = request.transport
        sock = transport.get_extra_info("socket") if transport else None
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        if transport is not None:
            transport.abort()
        raise asyncio.CancelledError  # aiohttp drops the handler quietly; nothing is written

    # ------------------------------------------------------------------ count file
    def write_counts(self) -> None:
        if self.count_file is None:
            return
        tmp = self.count_file.with_name(f"_tmp.{self.count_file.name}.{os.getpid()}")
        tmp.write_text(json.dumps(self.counts.as_dict()))
        os.replace(tmp, self.count_file)
        self.counts.changed = False

    async def count_writer(self, every_s: float = 0.2) -> None:
        while True:
            await asyncio.sleep(every_s)
            if self.counts.changed:
                self.write_counts()


def _marked_prefix(payload: dict[str, Any]) -> str:
    """The text up to and including the last block marked ``cache_control`` (system, then messages), or ""."""
    blocks: list[tuple[str, bool]] = []
    system = payload.get("system")
    for part in system if isinstance(system, list) else [{"text": system or ""}]:
        if isinstance(part, dict):
            blocks.append((str(part.get("text", "")), "cache_control" in part))
    for m in payload.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        for part in content if isinstance(content, list) else [{"text": content or ""}]:
            if isinstance(part, dict):
                blocks.append((str(part.get("text", "")), "cache_control" in part))
    last = max((i for i, (_, marked) in enumerate(blocks) if marked), default=-1)
    return "\n".join(text for text, _ in blocks[: last + 1])


def _openai_usage(g: Generated, output_tokens: int, reasoning_tokens: int | None = None,
                  cached: int = 0) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": g.prompt_tokens, "completion_tokens": output_tokens,
                             "total_tokens": g.prompt_tokens + output_tokens}
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": min(cached, g.prompt_tokens)}
    return usage


def _usage_counts(usage: dict[str, Any]) -> dict[str, int]:
    return {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"],
            "reasoning_tokens": (usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0),
            "cached_tokens": (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)}


_OPENAI_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_error",
                 404: "invalid_request_error", 429: "rate_limit_error", 500: "server_error", 503: "server_error",
                 504: "server_error"}
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 503: "overloaded_error",
                    504: "api_error"}


def _error(status: int, message: str, anthropic: bool, headers: dict[str, str] | None = None):
    from aiohttp import web

    body = _error_body(status, message, anthropic)
    return web.Response(status=status, body=json.dumps(body).encode(), content_type="application/json", headers=headers)


def _error_body(status: int, message: str, anthropic: bool) -> dict[str, Any]:
    if anthropic:
        body = {"type": "error", "error": {"type": _ANTHROPIC_TYPES.get(status, "api_error"), "message": message}}
    else:
        body = {"error": {"message": message, "type": _OPENAI_TYPES.get(status, "server_error"), "param": None,
                          "code": None}}
    return body


# --------------------------------------------------------------------------- running
async def serve(server: DevServer, port: int, ready: Callable[[int], None] | None = None) -> None:
    from aiohttp import web

    runner = web.AppRunner(server.app(), access_log=None, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024, reuse_address=True)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]
    writer = asyncio.create_task(server.count_writer())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready:
        ready(bound)
    try:
        await stop.wait()
    finally:
        writer.cancel()
        server.write_counts()
        await runner.cleanup()


# --------------------------------------------------------------------------- in its own process
DEFAULTS = {"latency_ms": 0.0, "fault_rate": 0.0, "faults": ",".join(FAULT_KINDS), "retry_after_ms": 50,
            "hang_s": 3600.0, "seed": None, "usage": True}


class DevServerHandle:
    """A running ``helmflow dev-server`` process, with its counts and settings over HTTP: those of the default
    scope, or of ``scope`` (its own counts and settings; see :meth:`scoped`)."""

    def __init__(self, proc: subprocess.Popen, port: int, scope: str | None = None):
        self.proc = proc
        self.port = port
        self.scope = scope
        self.url = f"http://127.0.0.1:{port}" + (f"/_scope/{scope}" if scope else "")
        self.openai_url = f"{self.url}/v1"

    def scoped(self, scope: str) -> DevServerHandle:
        """The same server seen through its own counter scope (fresh counts, the server's start settings)."""
        return DevServerHandle(self.proc, self.port, scope)

    def stats(self) -> dict[str, Any]:
        import httpx

        return httpx.get(f"{self.url}/_dev/stats", timeout=10).json()

    @property
    def requests(self) -> int:
        return self.stats()["requests"]

    def heads(self) -> list[str]:
        """The first prompt line of the last 10,000 requests, in the order they were sent (batch lines too)."""
        import httpx

        return httpx.get(f"{self.url}/_dev/heads", timeout=10).json()

    def configure(self, **settings: Any) -> None:
        import httpx

        httpx.post(f"{self.url}/_dev/config", json=settings, timeout=10).raise_for_status()

    def reset(self) -> None:
        """Counts to zero and settings back to :data:`DEFAULTS`."""
        import httpx

        httpx.post(f"{self.url}/_dev/reset", timeout=10).raise_for_status()
        self.configure(**DEFAULTS)

    def stop(self) -> None:
        terminate(self.proc, grace_s=10)


@contextlib.contextmanager
def start_dev_server(*args: str, env: dict[str, str] | None = None) -> Iterator[DevServerHandle]:
    """``helmflow dev-server --port 0 *args`` in its own process (so its CPU is not the client's),
    stopped on exit: the one way tests and benchmarks start it."""
    proc = subprocess.Popen([sys.executable, "-m", "helmflow.cli", "dev-server", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, **(env or {})))
    line = proc.stdout.readline() if proc.stdout else ""
    found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if not found:
        proc.kill()
        raise RuntimeError(f"dev server did not start: {line}{proc.stdout.read() if proc.stdout else ''}")
    handle = DevServerHandle(proc, int(found.group(1)))
    try:
        yield handle
    finally:
        handle.stop()


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0 picks a free one; default 8765)")
    p.add_argument("--latency-ms", type=float, default=0.0, help="delay before every answer")
    p.add_argument("--fault-rate", type=float, default=0.0, help="probability that a request gets a fault")
    p.add_argument("--faults", default=",".join(FAULT_KINDS),
                   help=f"fault kinds to draw from ({','.join(FAULT_KINDS)})")
    p.add_argument("--policy", default="echo", help="echo | script:FILE | fn:module:func")
    p.add_argument("--count-file", help="keep the request counts in this JSON file")
    p.add_argument("--retry-after-ms", type=int, default=50, help="Retry-After of 429 faults")
    p.add_argument("--hang-s", type=float, default=3600.0, help="how long a 'hang' fault holds the request")
    p.add_argument("--seed", type=int, help="seed of the fault draws")
    p.add_argument("--api-key-env", help="require the key held by this environment variable (401 otherwise)")
    p.add_argument("--no-usage", action="store_true", help="leave usage out of OpenAI answers")


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.fault_rate <= 1:
        raise ValueError("--fault-rate must be between 0 and 1")
    settings = Settings(latency_ms=args.latency_ms, fault_rate=args.fault_rate, faults=parse_faults(args.faults),
                        retry_after_ms=args.retry_after_ms, hang_s=args.hang_s, seed=args.seed, usage=not args.no_usage)
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ValueError(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    server = DevServer(settings, load_policy(args.policy), api_key, args.count_file)

    def ready(port: int) -> None:
        print(f"helmflow dev-server listening on http://127.0.0.1:{port}", flush=True)

    asyncio.run(serve(server, args.port, ready))
    return 0


def add_parser(subparsers) -> None:
    """The ``helmflow dev-server`` command."""
    p = subparsers.add_parser(
        "dev-server", help="serve OpenAI/Anthropic-compatible endpoints on 127.0.0.1: try a board without keys",
        description="A wire-compatible model server with latency and fault injection: point a deployment's "
                    "base_url at it to try a board without keys or money (docs/models.md: the dev server).",
    )
    add_arguments(p)
    p.set_defaults(func=run)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m helmflow.devserver", description=__doc__.split("\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
