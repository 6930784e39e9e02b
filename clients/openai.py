"""OpenAI through the official SDK (``AsyncOpenAI``): chat completions, or raw completions on request.

The SDK's own retries are off (``max_retries=0``): helmflow's query path retries with its own
capped backoff, honouring Retry-After, so a request is never retried twice over. The HTTP transport
is the SDK's aiohttp client (``DefaultAioHttpClient``), sized to the deployment's concurrency.
Requests go through the SDK client's ``post`` (see ``complete`` for why not ``create``); the answer is
read from the SDK's HTTP response as JSON, not built into its typed ``ChatCompletion``/``Completion``.

``options``: ``endpoint`` (``chat``, the default, or ``completions`` for ``/v1/completions``),
``top_logprobs`` (alternatives per token when logprobs are asked; default 0), ``organization`` and
``images`` (:class:`helmflow.media.ImageOptions`: limits, ``detail``, ``reencode: jpeg``).

Reasoning (``reasoning: {effort: ...}``): the chat body carries ``reasoning_effort`` and the output budget
as ``max_completion_tokens`` (it covers the reasoning tokens too), and leaves out ``temperature``, which
OpenAI's reasoning models refuse (a note on the request says so); logprobs and the completions endpoint
cannot go with it (refused when the models file loads). The answer's
``usage.completion_tokens_details.reasoning_tokens`` and ``prompt_tokens_details.cached_tokens`` are
recorded; an answer cut by the budget with no content is ``truncated_in_reasoning``.

Text-to-image requests (a body with ``image_generation``) go through the SDK's images API
(``images.generate``, ``/v1/images/generations``): ``model``, ``prompt``, ``n``, ``size`` (``WxH``, when the
adapter sets one) and ``response_format: b64_json``; ``guidance_scale``, ``steps`` and ``seed``, which OpenAI's
own models do not take, are sent in the body only when the adapter sets them (servers such as Together
read them). The images come back as the base64 the server sent; the query path decodes and checks
each before it is stored. An answer without ``b64_json`` (a URL) is malformed: helmflow fetches no URL a
model hands it. Images are not batched.

Images go out as ``image_url`` content parts holding base64 ``data:`` URLs of the stored bytes in
their original format, in order with the text parts. HELM re-encodes every image as JPEG first;
``images: {reencode: jpeg}`` does the same (the re-encoded image is stored and hashed like any other).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow.clients import client_kind
from helmflow.clients.base import (
    BatchAnswer,
    BatchState,
    Client,
    ClientResult,
    PermanentError,
    classify,
    cut_at_stops,
    image_bytes,
    line_error,
    malformed,
    split_think_tags,
    think_tags,
)
from helmflow.media import ImageOptions, MediaStore
from helmflow.records import ContentPart, Deployment, RequestBody

if TYPE_CHECKING:  # the SDK is imported on first use: `helmflow list` stays fast
    import openai


class OpenAIOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    endpoint: Literal["chat", "completions"] = Field("chat", description="`/v1/chat/completions`, or "
                                                                         "`/v1/completions` for raw prompts")
    top_logprobs: int = Field(0, ge=0, le=20, description="alternatives per token to ask logprobs for")
    organization: str | None = Field(None, description="the OpenAI organization header")
    images: ImageOptions | None = Field(None, description="what the endpoint accepts of images (OpenAI: 20 MB)")


@client_kind("openai")
class OpenAIClient(Client):
    default_api_key_env: str | None = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"
    #: the chat field for the output budget (OpenAI's current name; compatible servers know max_tokens)
    max_tokens_field = "max_completion_tokens"
    reasoning_options: tuple[str, ...] = ("effort",)
    #: what a reasoning request leaves out (OpenAI's reasoning models refuse sampling parameters)
    reasoning_drops_temperature = True

    @classmethod
    def reasoning_problem(cls, deployment: Deployment) -> str | None:
        problem = super().reasoning_problem(deployment)
        if problem or deployment.reasoning is None:
            return problem
        if deployment.options.get("endpoint") == "completions":
            return "reasoning needs the chat endpoint (options.endpoint: chat)"
        if deployment.logprobs and cls.reasoning_drops_temperature:
            return "OpenAI reasoning models return no logprobs: drop logprobs or reasoning"
        return None

    @classmethod
    def reasoning_notes(cls, body: RequestBody) -> list[str]:
        if body.reasoning is None or not cls.reasoning_drops_temperature:
            return []
        return [f"temperature {body.temperature:g} not sent: OpenAI reasoning models accept only their default"]

    sdk_modules = ("httpx2", "openai")

    def __init__(self, deployment: Deployment, media: MediaStore | None = None):
        super().__init__(deployment, media)
        self.options = self.validated_options(OpenAIOptions)
        self.url = deployment.base_url or self.default_base_url
        self._sdk: openai.AsyncOpenAI | None = None
        self._key: str | None = None
        self._endpoint_urls: tuple[str, str] = ("", "")  # the chat and completions URLs, absolute (see complete)

    def _client(self) -> openai.AsyncOpenAI:
        """The SDK client, made on first use on the I/O loop (its aiohttp session binds to that loop)."""
        if self._sdk is None:
            import httpx2
            import openai

            d = self.deployment
            self._key = self.resolve_api_key()
            http = openai.DefaultAioHttpClient(
                limits=httpx2.Limits(
                    max_connections=d.max_concurrency, max_keepalive_connections=d.max_concurrency
                ),
                timeout=d.retry.timeout_s,
            )
            self._sdk = openai.AsyncOpenAI(
                api_key=self._key or "no-key-needed",
                base_url=self.url,
                organization=self.options.organization,
                max_retries=0,
                timeout=d.retry.timeout_s,
                http_client=http,
            )
            base = self._sdk.base_url  # the SDK's own, with the trailing slash it enforces
            self._endpoint_urls = (str(base.join("chat/completions")), str(base.join("completions")))
        return self._sdk

    async def _generate_images(self, body: RequestBody) -> ClientResult:
        """``n`` images through the SDK's images API, as the bytes the server sent (checked by the caller)."""
        sdk = self._client()
        ask = body.image_generation
        assert ask is not None
        extra = {k: v for k, v in (("guidance_scale", ask.guidance_scale), ("steps", ask.steps), ("seed", ask.seed))
                 if v is not None}
        kwargs: dict[str, Any] = {"model": body.model, "prompt": body.prompt or "", "n": ask.n,
                                  "response_format": "b64_json"}
        if ask.size is not None:
            kwargs["size"] = ask.size
        try:
            resp = await sdk.images.generate(**kwargs, extra_body=extra or None)
        except Exception as exc:  # noqa: BLE001 - every SDK failure becomes a classified ClientError
            raise classify(exc, self.deployment, self._key, self.url, self.credential_name()) from None
        try:
            images = [base64.b64decode(d.b64_json or "", validate=True) for d in resp.data or []]
            if any(not d.b64_json for d in resp.data or []):
                raise ValueError("an image came without b64_json")
        except (AttributeError, TypeError, ValueError) as exc:
            raise malformed(self.deployment, self.url, exc) from None
        usage = getattr(resp, "usage", None)
        return ClientResult(text="", prompt_tokens=getattr(usage, "input_tokens", 0) or 0,
                            output_tokens=getattr(usage, "output_tokens", 0) or 0, images=images)

    async def complete(self, body: RequestBody) -> ClientResult:
        if body.image_generation is not None:
            return await self._generate_images(body)
        sdk = self._client()
        import httpx2

        chat = self.options.endpoint == "chat"
        kwargs = await self._body(body)  # what a batch line carries too
        try:
            # what ``chat.completions.create`` / ``completions.create`` do, minus their per-call walk
            # of the typed parameters (a third of the SDK's CPU per request): our body is already
            # plain JSON, exactly what the request hash covers. Auth, HTTP, status errors and the
            # transport are the SDK's own; the answer is read from its HTTP response as JSON
            # (orjson), not built into the SDK's typed models (an eighth of its CPU per request). The path
            # is the endpoint's absolute URL, which the SDK sends as it is instead of parsing and merging
            # a relative one with its base URL per request (a tenth of its CPU per request).
            resp = await sdk.post(self._endpoint_urls[0 if chat else 1], body=kwargs, cast_to=httpx2.Response)
        except Exception as exc:  # noqa: BLE001 - every SDK failure becomes a classified ClientError
            raise classify(exc, self.deployment, self._key, self.url, self.credential_name()) from None
        try:
            answer = _json_loads(resp.content)
            return self._reasoned(_chat_result(answer), body) if chat else _completions_result(answer, body)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise malformed(self.deployment, self.url, exc) from None

    def _chat_kwargs(self, body: RequestBody) -> dict[str, Any]:
        if body.echo:
            raise PermanentError(
                f"deployment {self.deployment.name!r}: log-likelihood scoring (echo) needs the completions endpoint; "
                f"set options.endpoint: completions (vLLM and other base-model servers offer it)"
            )
        messages = (
            [m.model_dump() for m in body.messages] if body.messages is not None
            else [{"role": "user", "content": body.prompt or ""}]
        )
        kwargs: dict[str, Any] = {"model": body.model, "messages": messages, self.max_tokens_field: body.max_tokens,
                                  "temperature": body.temperature}
        if body.reasoning is not None:
            kwargs.update(self._reasoning_fields(body))
            if self.reasoning_drops_temperature:
                kwargs.pop("temperature")
        if body.stop and not think_tags(body):
            kwargs["stop"] = body.stop
        if body.logprobs:
            kwargs["logprobs"] = True
            if self.options.top_logprobs:
                kwargs["top_logprobs"] = self.options.top_logprobs
        return kwargs

    def _reasoning_fields(self, body: RequestBody) -> dict[str, Any]:
        """The provider's fields for the body's reasoning options (OpenAI: ``reasoning_effort``)."""
        r = body.reasoning
        fields: dict[str, Any] = {}
        if r is not None and r.effort is not None:
            fields["reasoning_effort"] = r.effort
        return fields

    def _reasoned(self, result: ClientResult, body: RequestBody) -> ClientResult:
        """The answer apart from the reasoning; flagged when the budget ran out before any answer."""
        if body.reasoning is None:
            return result
        if think_tags(body):
            text, thought, cut = split_think_tags(result.text, result.finish_reason)
            result.text, result.reasoning = text, (result.reasoning + "\n" + thought).strip()
            result.truncated_in_reasoning = cut
            cut_at_stops(result, body.stop)
        elif result.finish_reason == "length" and not result.text.strip():
            result.truncated_in_reasoning = True
        return result

    def _content(self, body: RequestBody) -> list[dict[str, Any]]:
        """Chat content parts in order: text parts, and images as base64 data URLs (original format)."""
        return [self._part(p, body.image_detail) for p in body.parts or []]

    def _part(self, part: ContentPart, detail: str | None) -> dict[str, Any]:
        if part.type == "text":
            return {"type": "text", "text": part.text or ""}
        if part.type != "image":
            raise PermanentError(f"deployment {self.deployment.name!r}: {part.type} parts are not supported")
        image_url = {"url": data_url(self.media, part, self.deployment.name)}
        if detail:
            image_url["detail"] = detail
        return {"type": "image_url", "image_url": image_url}

    def _completions_kwargs(self, body: RequestBody) -> dict[str, Any]:
        if body.parts is not None:
            raise PermanentError(
                f"deployment {self.deployment.name!r}: images need the chat endpoint; set options.endpoint: chat"
            )
        if body.messages is not None:
            raise PermanentError(
                f"deployment {self.deployment.name!r}: chat messages need the chat endpoint; "
                f"set options.endpoint: chat or use a text-prompt adapter"
            )
        kwargs: dict[str, Any] = {"model": body.model, "prompt": body.prompt or "", "max_tokens": body.max_tokens,
                                  "temperature": body.temperature}
        if body.stop:
            kwargs["stop"] = body.stop
        if body.logprobs:
            kwargs["logprobs"] = max(self.options.top_logprobs, 1)
        if body.echo:
            kwargs["echo"] = True
        return kwargs

    # ------------------------------------------------------------------ the Batch API (Files + Batches)
    batch_limits = (50_000, 200 * 1024**2)

    async def _body(self, body: RequestBody) -> dict[str, Any]:
        kwargs = self._chat_kwargs(body) if self.options.endpoint == "chat" else self._completions_kwargs(body)
        if body.parts is not None:
            kwargs["messages"] = [{"role": "user", "content": await asyncio.to_thread(self._content, body)}]
        return kwargs

    def _endpoint(self) -> str:
        return "/v1/chat/completions" if self.options.endpoint == "chat" else "/v1/completions"

    async def batch_line(self, request_hash: str, body: RequestBody) -> dict[str, Any]:
        if body.image_generation is not None:
            raise PermanentError(f"deployment {self.deployment.name!r}: image requests are not batched; "
                                 f"drop batch: true for a text-to-image deployment")
        return {"custom_id": request_hash, "method": "POST", "url": self._endpoint(), "body": await self._body(body)}

    async def batch_submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        sdk = self._client()
        data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()
        try:
            upload = await sdk.files.create(file=("helmflow-batch.jsonl", data), purpose="batch")
            batch = await sdk.batches.create(input_file_id=upload.id, endpoint=self._endpoint(),
                                             completion_window="24h",
                                             metadata={"client": "helmflow", "helmflow_tag": tag})
        except Exception as exc:  # noqa: BLE001 - every SDK failure becomes a classified ClientError
            raise classify(exc, self.deployment, self._key, self.url, self.credential_name()) from None
        return batch.id

    async def batch_find(self, tag: str, lines: int, since: float, known: set[str]) -> str | None:
        try:
            async for b in self._client().batches.list(limit=100):  # newest first
                if (b.metadata or {}).get("helmflow_tag") == tag and b.id not in known:
                    return b.id
                if b.created_at < since - 3600:
                    break
        except Exception as exc:  # noqa: BLE001
            raise classify(exc, self.deployment, self._key, self.url, self.credential_name()) from None
        return None

    async def _retrieve(self, batch_id: str) -> Any:
        try:
            return await self._client().batches.retrieve(batch_id)
        except Exception as exc:  # noqa: BLE001
            raise classify(exc, self.deployment, self._key, self.url, self.credential_name()) from None

    async def batch_poll(self, batch_id: str) -> BatchState:
        b = await self._retrieve(batch_id)
        counts = b.request_counts
        return BatchState(ended=b.status in ("completed", "failed", "expired", "cancelled"), status=b.status,
                          done=(counts.completed + counts.failed) if counts else 0, total=counts.total if counts else 0)

    async def batch_results(self, batch_id: str, bodies: Mapping[str, RequestBody]) -> dict[str, BatchAnswer]:
        b = await self._retrieve(batch_id)
        d = self.deployment
        if b.status == "failed":  # the input did not validate: nothing ran
            why = "; ".join(f"line {e.line}: {e.message}" for e in (b.errors.data if b.errors else []) or [])
            return {h: PermanentError(f"deployment {d.name!r}: batch {batch_id} failed validation: {why or '?'}")
                    for h in bodies}
        out: dict[str, BatchAnswer] = {}
        chat = self.options.endpoint == "chat"
        for file_id in (b.output_file_id, b.error_file_id):  # either may be missing (expired: both read)
            if not file_id:
                continue
            try:
                text = (await (await self._client().files.content(file_id)).aread()).decode()
            except Exception as exc:  # noqa: BLE001
                raise classify(exc, d, self._key, self.url, self.credential_name()) from None
            for raw in text.splitlines():
                if not raw.strip():
                    continue
                line = json.loads(raw)
                h = line.get("custom_id")
                if h not in bodies:
                    continue
                response, error = line.get("response"), line.get("error")
                status = response.get("status_code") if response else None
                if error or status != 200:  # an error line, HTTP or not (both are checked)
                    detail = (error or {}).get("message") or (error or {}).get("code") or \
                        ((response or {}).get("body") or {}).get("error", {}).get("message", "")
                    out[h] = line_error(d, status, str(detail or "no answer"), self._key)
                    continue
                try:
                    answer = response["body"]
                    out[h] = self._reasoned(_chat_result(answer), bodies[h]) if chat else \
                        _completions_result(answer, bodies[h])
                except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
                    out[h] = malformed(d, self.url, exc)
        for h in bodies:  # a line the files do not mention was not run
            out.setdefault(h, line_error(d, None, f"batch {batch_id} ({b.status}) has no line for this request"))
        return out

    async def batch_cancel(self, batch_id: str) -> None:
        try:
            await self._client().batches.cancel(batch_id)
        except Exception as exc:  # noqa: BLE001
            raise classify(exc, self.deployment, self._key, self.url, self.credential_name()) from None

    async def aclose(self) -> None:
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None


def data_url(media: MediaStore, part: ContentPart, deployment: str) -> str:
    return f"data:{part.mime};base64,{base64.b64encode(image_bytes(media, part, deployment)).decode()}"


def _json_loads(data: bytes) -> Any:
    """The body as JSON: orjson (Prefect brings it), else, or when orjson refuses it, ``json``, which
    also reads what orjson does not (a lone surrogate's ``\\ud800`` escape: the completion keeps it
    replaced and counted, ``Completion.invalid_chars``); what neither reads raises ``ValueError``."""
    try:
        import orjson
    except ImportError:
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def _object(value: Any) -> dict[str, Any]:
    """A JSON object of the answer (``None``: an empty one); anything else is malformed."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _chat_result(resp: dict[str, Any]) -> ClientResult:
    """The answer of a chat completion's JSON, and what a reasoning model adds: its reasoning text when
    the server sends it (vLLM's ``message.reasoning``, then the older ``reasoning_content``), its
    reasoning and cached token counts. A missing ``choices``, ``message`` or token count is malformed."""
    choice = _object(resp["choices"][0])
    logprobs = choice.get("logprobs")
    content = _object(logprobs).get("content") if logprobs is not None else None
    message, usage = _object(choice["message"]), resp.get("usage")
    reasoning = message.get("reasoning") or message.get("reasoning_content")
    usage = _object(usage) if usage is not None else None
    details = _object(usage.get("completion_tokens_details")) if usage else {}
    cached = usage.get("prompt_tokens_details") if usage else None
    return ClientResult(
        text=message.get("content") or "",
        finish_reason=choice.get("finish_reason") or "",
        prompt_tokens=usage["prompt_tokens"] if usage else 0,
        output_tokens=usage["completion_tokens"] if usage else 0,
        tokens=[t["token"] for t in content or []],
        logprobs=[t["logprob"] for t in content or []],
        reasoning=reasoning if isinstance(reasoning, str) else "",
        reasoning_tokens=details.get("reasoning_tokens"),
        cached_tokens=(_object(cached).get("cached_tokens") or 0) if cached is not None else 0,
    )


def _completions_result(resp: dict[str, Any], body: RequestBody) -> ClientResult:
    """An echo's text starts with the prompt: the completion keeps only what was generated, while its
    tokens, logprobs and offsets cover both (the prompt's first token has no logprob: 0 here)."""
    choice = _object(resp["choices"][0])
    lp = choice.get("logprobs")
    lp = _object(lp) if lp is not None else None
    text = choice.get("text") or ""
    if body.echo and text.startswith(body.prompt or ""):
        text = text[len(body.prompt or ""):]
    usage = resp.get("usage")
    usage = _object(usage) if usage is not None else None
    offsets = lp.get("text_offset") if lp is not None else None
    return ClientResult(
        text=text,
        finish_reason=choice.get("finish_reason") or "",
        prompt_tokens=usage["prompt_tokens"] if usage else 0,
        output_tokens=usage["completion_tokens"] if usage else 0,
        tokens=list(lp.get("tokens") or []) if lp is not None else [],
        logprobs=[x if x is not None else 0.0 for x in lp.get("token_logprobs") or []] if lp is not None else [],
        text_offsets=list(offsets) if offsets is not None else None,
    )
