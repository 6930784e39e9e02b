"""Any server that speaks OpenAI's API (vLLM, Ollama, llama.cpp server, LM Studio, Together,
OpenRouter), through the official ``openai`` SDK pointed at the deployment's ``base_url``.

Same options as the ``openai`` kind; ``endpoint: completions`` sends raw prompts to
``/v1/completions`` (base models), ``chat`` (default) uses ``/v1/chat/completions``. A key is sent
only when the deployment names one (local servers need none).

Reasoning: ``parser: field`` reads the message's ``reasoning`` (then the older ``reasoning_content``,
as vLLM sends them) and ``parser: think-tags`` cuts ``<think>…</think>`` out of the answer (stop
sequences are then applied to the answer here, not sent: a ``"\n"`` would otherwise end the thinking);
``effort`` is sent as ``reasoning_effort`` and ``budget_tokens`` as vLLM's ``thinking_token_budget``.
Sampling parameters are sent as they are (open servers take them).
"""

from __future__ import annotations

from typing import Any

from helmflow.clients import client_kind
from helmflow.clients.base import PermanentError, think_tags
from helmflow.clients.openai import OpenAIClient
from helmflow.media import MediaStore
from helmflow.records import Deployment, RequestBody


@client_kind("openai-compatible")
class OpenAICompatibleClient(OpenAIClient):
    default_api_key_env: str | None = None
    max_tokens_field = "max_tokens"
    batch_limits = (0, 0)  # vLLM and most compatible servers have no /v1/batches: requests go out concurrently
    reasoning_options = ("parser", "effort", "budget_tokens")
    reasoning_drops_temperature = False

    @classmethod
    def reasoning_notes(cls, body: RequestBody) -> list[str]:
        if think_tags(body) and body.stop:
            return [f"stop sequences {body.stop!r} not sent: applied to the answer after </think>"]
        return []

    def _reasoning_fields(self, body: RequestBody) -> dict[str, Any]:
        fields = super()._reasoning_fields(body)
        if body.reasoning is not None and body.reasoning.budget_tokens is not None:
            fields["thinking_token_budget"] = body.reasoning.budget_tokens
        return fields

    def __init__(self, deployment: Deployment, media: MediaStore | None = None):
        if not deployment.base_url:
            raise PermanentError(
                f"deployment {deployment.name!r}: an openai-compatible deployment needs base_url "
                f"(e.g. http://localhost:8000/v1 for vLLM, http://localhost:11434/v1 for Ollama)"
            )
        super().__init__(deployment, media)
