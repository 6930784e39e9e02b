"""Anthropic through the official SDK (``AsyncAnthropic``): the Messages API.

System messages go in the ``system`` parameter (the Anthropic way), not in the conversation. The
API refuses whitespace-only stop sequences (such as ``"\\n"``), so those are applied to the answer
here and the others are sent. The SDK (2.x) speaks API version 2026-10-21, which refuses sampling
parameters: ``temperature`` is recorded in the request (and its hash) but not sent. The Messages API
returns no logprobs. SDK retries are off: the query path retries, honouring Retry-After.

Reasoning: ``budget_tokens`` sends ``thinking: {type: enabled, budget_tokens}`` (at least 1024 and
below max_tokens, checked when the run is planned); ``mode: adaptive`` sends ``thinking: {type:
adaptive}`` with ``output_config: {effort}`` (the only thinking Claude 4.7+ accept). Thinking blocks
become the completion's reasoning (redacted ones are marked), the text blocks its answer; the usage's
``output_tokens_details.thinking_tokens`` and ``cache_read_input_tokens`` are recorded, and the prompt
tokens count the cached and cache-written input too.

Images go out as base64 ``image`` blocks in order with the text blocks; empty or whitespace-only
text blocks are dropped (the API refuses them). The provider's limits (8000 px a side, 5 MB) are the
kind's defaults in :mod:`helmflow.media`, so a larger image is shrunk before the request is built
and the change is recorded on the request (``options.images`` overrides them).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from helmflow.clients import client_kind
from helmflow.clients.base import (
    BatchAnswer,
    BatchState,
    Client,
    ClientError,
    ClientResult,
    PermanentError,
    classify,
    image_bytes,
    line_error,
    malformed,
)
from helmflow.media import ImageOptions, MediaStore
from helmflow.records import Deployment, RequestBody

if TYPE_CHECKING:  # the SDK is imported on first use: `helmflow list` stays fast
    import anthropic

#: the HTTP status of each error type (a batch line's error has a type, no status)
_ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
                 "permission_error": 403, "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
                 "timeout_error": 504, "api_error": 500, "overloaded_error": 529}
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


#: Anthropic's ``output_config.effort`` values
_EFFORTS = ("low", "medium", "high", "xhigh", "max")
_MIN_BUDGET = 1024


class AnthropicOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    images: ImageOptions | None = Field(None, description="what the endpoint accepts of images (default: the "
                                                          "API's 8000 px a side and 5 MB)")


@client_kind("anthropic")
class AnthropicClient(Client):
    default_api_key_env = "ANTHROPIC_API_KEY"
    default_base_url = "https://api.anthropic.com"
    sdk_modules = ("httpx2", "anthropic")
    reasoning_options = ("budget_tokens", "mode", "effort")

    @classmethod
    def reasoning_problem(cls, deployment: Deployment) -> str | None:
        problem = super().reasoning_problem(deployment)
        r = deployment.reasoning
        if problem or r is None:
            return problem
        if r.effort is not None and r.mode != "adaptive":
            return "anthropic: reasoning.effort goes with mode: adaptive (or give budget_tokens for a thinking budget)"
        if r.effort is not None and r.effort not in _EFFORTS:
            return f"anthropic: reasoning.effort {r.effort!r} is not one of {', '.join(_EFFORTS)}"
        if r.budget_tokens is not None and r.budget_tokens < _MIN_BUDGET:
            return f"anthropic: reasoning.budget_tokens must be at least {_MIN_BUDGET} (got {r.budget_tokens})"
        return None

    @classmethod
    def reasoning_request_problem(cls, deployment: Deployment, max_tokens: int) -> str | None:
        r = deployment.reasoning
        if r is not None and r.budget_tokens is not None and r.budget_tokens >= max_tokens:
            return (f"anthropic: reasoning.budget_tokens {r.budget_tokens} must be below max_tokens {max_tokens}; "
                    f"raise increase_max_tokens or lower the budget")
        return None

    def __init__(self, deployment: Deployment, media: MediaStore | None = None):
        super().__init__(deployment, media)
        self.validated_options(AnthropicOptions)
        self.url = deployment.base_url or self.default_base_url
        self._sdk: anthropic.AsyncAnthropic | None = None
        self._key: str | None = None
        self._heads: set[int] = set()  # line heads of the prompts built so far (prompt_cache)
        self._cuts: dict[int, int] = {}  # each prompt text's marked head, as first built (a retry marks the same)

    def _client(self) -> anthropic.AsyncAnthropic:
        if self._sdk is None:
            import anthropic
            import httpx2

            d = self.deployment
            self._key = self.resolve_api_key()
            http = anthropic.DefaultAioHttpClient(
                limits=httpx2.Limits(
                    max_connections=d.max_concurrency, max_keepalive_connections=d.max_concurrency
                ),
                timeout=d.retry.timeout_s,
            )
            self._sdk = anthropic.AsyncAnthropic(
                api_key=self._key, base_url=self.url, max_retries=0, timeout=d.retry.timeout_s, http_client=http
            )
        return self._sdk

    async def _request(self, body: RequestBody) -> dict[str, Any]:
        """The Messages ``create`` parameters for ``body`` (a batch line's ``params`` too)."""
        if body.echo:
            raise PermanentError(
                f"deployment {self.deployment.name!r}: the Messages API returns no logprobs, so it cannot score a "
                f"prompt (log-likelihood multiple choice); use multiple_choice_joint"
            )
        if body.parts is not None:
            system, messages = "", [{"role": "user", "content": await asyncio.to_thread(self._content, body)}]
        elif body.messages is not None:
            system = "\n\n".join(m.content for m in body.messages if m.role == "system")
            messages = [{"role": m.role, "content": m.content} for m in body.messages if m.role != "system"]
        else:
            system, messages = "", [{"role": "user", "content": body.prompt or ""}]
        sent_stops = [s for s in body.stop if s.strip()]
        kwargs: dict[str, Any] = {"model": body.model, "messages": messages, "max_tokens": body.max_tokens}
        if system:
            kwargs["system"] = system
        if self.deployment.prompt_cache:
            self._mark_prefix(kwargs)
        if sent_stops:
            kwargs["stop_sequences"] = sent_stops
        r = body.reasoning
        if r is not None:
            if r.budget_tokens is not None and r.budget_tokens >= body.max_tokens:
                raise PermanentError(f"deployment {self.deployment.name!r}: reasoning.budget_tokens {r.budget_tokens} "
                                     f"must be below max_tokens {body.max_tokens}")
            if r.mode == "adaptive":
                kwargs["thinking"] = {"type": "adaptive"}
                if r.effort is not None:
                    kwargs["output_config"] = {"effort": r.effort}
            elif r.budget_tokens is not None:
                kwargs["thinking"] = {"type": "enabled", "budget_tokens": r.budget_tokens}
        return kwargs

    async def complete(self, body: RequestBody) -> ClientResult:
        kwargs = await self._request(body)
        sdk = self._client()
        try:
            resp = await sdk.messages.create(**kwargs)
        except Exception as exc:  # noqa: BLE001 - every SDK failure becomes a classified ClientError
            raise classify(exc, self.deployment, self._key, self.url, self.credential_name()) from None
        return self._parse(resp, body)

    def _parse(self, resp: Any, body: RequestBody) -> ClientResult:
        """A Message (direct, or a batch line's) as the completion's result."""
        try:
            text = "".join(b.text for b in resp.content if b.type == "text")
            thought = "\n\n".join(b.thinking if b.type == "thinking" else "[redacted thinking]"
                                   for b in resp.content if b.type in ("thinking", "redacted_thinking"))
            finish = _FINISH.get(resp.stop_reason or "", resp.stop_reason or "")
            usage = resp.usage
            cached = usage.cache_read_input_tokens or 0
            written = usage.cache_creation_input_tokens or 0
            prompt_tokens = usage.input_tokens + cached + written
            output_tokens = usage.output_tokens
            details = getattr(usage, "output_tokens_details", None)
            thinking_tokens = getattr(details, "thinking_tokens", None) if details is not None else None
        except (AttributeError, TypeError) as exc:
            raise malformed(self.deployment, self.url, exc) from None
        local_stops = [s for s in body.stop if s and not s.strip()]
        cut = min((text.index(s) for s in local_stops if s in text), default=None)
        if cut is not None:
            text, finish = text[:cut], "stop"
        r = body.reasoning
        return ClientResult(text=text, finish_reason=finish, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                            reasoning=thought, reasoning_tokens=thinking_tokens, cached_tokens=cached,
                            cache_write_tokens=written,
                            truncated_in_reasoning=r is not None and finish == "length" and not text.strip())

    prompt_cache_marks = True
    _EPHEMERAL = {"type": "ephemeral"}

    def _mark_prefix(self, kwargs: dict[str, Any]) -> None:
        """``cache_control`` on the shared prefix: the system text; in a text prompt, the longest run of whole
        leading lines (never the last) an earlier prompt of this client began with (the instructions and the
        in-context examples, which every instance of a run shares); in a conversation, the turn before the last."""
        if "system" in kwargs:
            kwargs["system"] = [{"type": "text", "text": kwargs["system"], "cache_control": self._EPHEMERAL}]
        messages = kwargs["messages"]
        if len(messages) > 1 and isinstance(messages[-2]["content"], str) and messages[-2]["content"].strip():
            messages[-2] = {**messages[-2], "content": [{"type": "text", "text": messages[-2]["content"],
                                                          "cache_control": self._EPHEMERAL}]}
        elif len(messages) == 1 and isinstance(messages[0]["content"], str):
            text = messages[0]["content"]
            cut = self._shared_head(text)
            if cut and text[:cut].strip() and text[cut:].strip():
                messages[0] = {**messages[0], "content": [
                    {"type": "text", "text": text[:cut], "cache_control": self._EPHEMERAL},
                    {"type": "text", "text": text[cut:]}]}

    def _shared_head(self, text: str) -> int:
        """Characters of the longest run of leading lines (never the last) an earlier prompt began with; the
        same for the same text (a retry's own first attempt is not an earlier prompt)."""
        whole = hash(text)
        if (known := self._cuts.get(whole)) is not None:
            return known
        seen = self._heads
        cut = key = start = 0
        while (end := text.find("\n", start)) >= 0 and end < len(text.rstrip("\n")):
            key = hash((key, text[start:end]))
            if key in seen:
                cut = end + 1
            elif len(seen) < 200_000:
                seen.add(key)
            start = end + 1
        if len(self._cuts) < 200_000:
            self._cuts[whole] = cut
        return cut

    # ------------------------------------------------------------------ Message Batches
    batch_limits = (100_000, 256 * 1024**2)

    async def batch_line(self, request_hash: str, body: RequestBody) -> dict[str, Any]:
        return {"custom_id": request_hash, "params": await self._request(body)}

    def _failed(self, exc: Exception) -> Exception:
        return classify(exc, self.deployment, self._key, self.url, self.credential_name())

    async def batch_submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        try:
            batch = await self._client().messages.batches.create(requests=lines)
        except Exception as exc:  # noqa: BLE001 - every SDK failure becomes a classified ClientError
            raise self._failed(exc) from None
        return batch.id

    async def batch_find(self, tag: str, lines: int, since: float, known: set[str]) -> str | None:
        """Message Batches keep no metadata: the oldest unrecorded batch of as many requests created since the
        intent was written (within a minute of clock skew) is taken for it."""
        found: list[tuple[float, str]] = []
        try:
            async for b in self._client().messages.batches.list(limit=100):  # newest first
                created = b.created_at.timestamp()
                if created < since - 60:
                    break
                c = b.request_counts
                if b.id not in known and c.processing + c.succeeded + c.errored + c.canceled + c.expired == lines:
                    found.append((created, b.id))
        except Exception as exc:  # noqa: BLE001
            raise self._failed(exc) from None
        return min(found)[1] if found else None

    async def batch_poll(self, batch_id: str) -> BatchState:
        try:
            b = await self._client().messages.batches.retrieve(batch_id)
        except Exception as exc:  # noqa: BLE001
            raise self._failed(exc) from None
        c = b.request_counts
        total = c.processing + c.succeeded + c.errored + c.canceled + c.expired
        return BatchState(ended=b.processing_status == "ended", status=b.processing_status,
                          done=total - c.processing, total=total)

    async def batch_results(self, batch_id: str, bodies: Mapping[str, RequestBody]) -> dict[str, BatchAnswer]:
        d = self.deployment
        out: dict[str, BatchAnswer] = {}
        try:
            async for line in await self._client().messages.batches.results(batch_id):
                h, result = line.custom_id, line.result
                if h not in bodies:
                    continue
                if result.type == "succeeded":
                    try:
                        out[h] = self._parse(result.message, bodies[h])
                    except ClientError as exc:
                        out[h] = exc
                elif result.type == "errored":
                    kind = getattr(result.error.error, "type", "api_error")
                    status = _ERROR_STATUS.get(kind, 500)
                    out[h] = line_error(d, status, f"{kind}: {getattr(result.error.error, 'message', '')}", self._key)
                else:  # canceled or expired: not run
                    out[h] = line_error(d, None, f"batch {batch_id}: {result.type}")
        except Exception as exc:  # noqa: BLE001
            raise self._failed(exc) from None
        for h in bodies:
            out.setdefault(h, line_error(d, None, f"batch {batch_id} has no result for this request"))
        return out

    async def batch_cancel(self, batch_id: str) -> None:
        try:
            await self._client().messages.batches.cancel(batch_id)
        except Exception as exc:  # noqa: BLE001
            raise self._failed(exc) from None

    def _content(self, body: RequestBody) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        for part in body.parts or []:
            if part.type == "text":
                if (part.text or "").strip():
                    blocks.append({"type": "text", "text": part.text})
            elif part.type == "image":
                data = base64.b64encode(image_bytes(self.media, part, self.deployment.name)).decode()
                blocks.append({"type": "image", "source": {"type": "base64", "media_type": part.mime, "data": data}})
            else:
                raise PermanentError(f"deployment {self.deployment.name!r}: {part.type} parts are not supported")
        return blocks

    async def aclose(self) -> None:
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None
