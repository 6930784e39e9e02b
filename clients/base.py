"""The contract every provider client implements, and the errors that steer retries."""

from __future__ import annotations

import email.utils
import os
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from helmflow.media import MediaError, MediaStore
from helmflow.records import ContentPart, Deployment, ReasoningOptions, RequestBody

OptionsT = TypeVar("OptionsT", bound=BaseModel)


class ClientError(Exception):
    """A failed request. ``transient`` errors are retried; permanent ones stop the pair at once."""

    transient = True

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class TransientError(ClientError):
    transient = True


class PermanentError(ClientError):
    transient = False


class InvalidOutput(ClientError):
    """A response whose content cannot be kept (a generated image that does not decode, the wrong number
    of images): that completion is an error, re-sent by the next run, and the deployment goes on."""

    transient = True


class Unreachable(TransientError):
    """Nothing listens at the address, or its host name does not resolve. Retried a few times only
    (a server restarting comes back in seconds), then the deployment stops: a wrong base_url would
    otherwise pass for a run of timeouts, retried for minutes."""

    max_attempts = 3


class NotRun(TransientError):
    """A batch line the provider did not run: its batch expired or was cancelled first."""


class Interrupted(PermanentError):
    """Not sent: the run was told to stop (SIGINT or SIGTERM)."""


class BudgetExceeded(PermanentError):
    """Not sent: the request would take the projected spend past ``--budget-usd``."""


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a provider asks us to wait: ``retry-after-ms``, then ``retry-after`` (seconds or HTTP date)."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(float(value) / scale, 0.0)
        except ValueError:
            pass
    parsed = email.utils.parsedate_tz(headers.get("retry-after") or "")
    return max(email.utils.mktime_tz(parsed) - time.time(), 0.0) if parsed else None


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of the secret (and of its long fragments) masked."""
    if not secret:
        return text
    text = text.replace(secret, "***")
    if len(secret) >= 16:  # providers quote keys partially ("sk-abc...wxyz"): mask long substrings too
        for i in range(len(secret) - 11):
            text = text.replace(secret[i : i + 12], "***")
    return text


_FIX = {
    401: "the provider rejected the key in {cred}; check that it holds a valid key for {url}",
    403: "the key in {cred} may not use model {model!r}; check the account's access or the deployment's model",
    404: "model {model!r} (or the endpoint) was not found at {url}; check `model:` and `base_url` of the deployment",
    400: "the provider rejected the request; check the deployment's model and options",
    422: "the provider rejected the request; check the deployment's model and options",
}
_TRANSIENT_STATUS = {408, 409, 425, 429}


def classify(exc: BaseException, deployment: Deployment, secret: str | None, url: str, cred: str | None) -> ClientError:
    """Map an SDK exception to a transient or permanent :class:`ClientError` naming the deployment.

    Permanent messages name the fix; nothing a provider sends back is passed on without redacting
    the key (some providers quote the key they got).
    """
    name = deployment.name
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        server_says = redact(str(getattr(exc, "message", "") or exc), secret)[:300]
        if status in _TRANSIENT_STATUS or status >= 500:
            headers = getattr(getattr(exc, "response", None), "headers", None)
            return TransientError(f"deployment {name!r}: HTTP {status}: {server_says}", retry_after_s(headers))
        fix = _FIX.get(status, "the provider refused the request").format(
            cred=cred or "the deployment's credential (none is configured: set api_key_env)", model=deployment.model,
            url=url)
        detail = "" if status == 401 else f" (provider: {server_says})"
        return PermanentError(f"deployment {name!r}: HTTP {status}: {fix}{detail}")
    kind = type(exc).__name__
    refused = unreachable_reason(exc)
    if refused is not None:
        return Unreachable(f"deployment {name!r}: connection refused: {url}{refused}")
    if any(c.__name__ == "APIConnectionError" for c in type(exc).__mro__):  # incl. the SDKs' timeouts
        return TransientError(f"deployment {name!r}: {kind} talking to {url}: {redact(str(exc), secret)[:200]}")
    if isinstance(exc, ValueError):  # the body was not the JSON it claimed to be
        return malformed(deployment, url, exc)
    return PermanentError(f"deployment {name!r}: unexpected {kind} calling {url}: {redact(str(exc), secret)[:200]}")


def line_error(deployment: Deployment, status: int | None, message: str, secret: str | None = None) -> ClientError:
    """The error of one batch line: HTTP ``status`` 408/409/425/429 or 5xx (or None: the batch did not
    run it) is transient, any other is permanent."""
    text = f"deployment {deployment.name!r}: batch line: {redact(message, secret)[:300]}"
    if status is None:
        return NotRun(text)
    if status in _TRANSIENT_STATUS or status >= 500:
        return TransientError(text)
    return PermanentError(f"{text} (HTTP {status})")


def unreachable_reason(exc: BaseException) -> str | None:
    """``""`` (refused) or a note (name does not resolve) when the cause of ``exc`` is one of those;
    ``None`` otherwise. The SDKs report both as a connect timeout: the cause chain tells them apart."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError):
            return ""
        if isinstance(cause, socket.gaierror):
            return " (its host name does not resolve)"
        cause = cause.__cause__ or cause.__context__
    return None


def malformed(deployment: Deployment, url: str, exc: BaseException) -> TransientError:
    """A 200 whose body is not a usable completion (truncated, empty, missing fields): worth a retry."""
    return TransientError(f"deployment {deployment.name!r}: malformed response from {url} ({type(exc).__name__})")


def image_bytes(media: MediaStore, part: ContentPart, deployment: str) -> bytes:
    """A stored image's checked bytes; a missing or corrupted one stops the pair (re-sending cannot help)."""
    try:
        return media.read(part)
    except (MediaError, FileNotFoundError) as exc:
        raise PermanentError(f"deployment {deployment!r}: {exc}") from None


@dataclass
class ClientResult:
    text: str
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    output_tokens: int = 0
    tokens: list[str] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    text_offsets: list[int] | None = None  # where each token starts (echo: in the prompt, then the output)
    reasoning: str = ""  # the model's thinking, apart from ``text`` (the answer)
    reasoning_tokens: int | None = None  # as the provider counted them (None: it did not say)
    cached_tokens: int = 0  # prompt tokens read from the provider's cache
    cache_write_tokens: int = 0  # prompt tokens written to the provider's cache (Anthropic)
    truncated_in_reasoning: bool = False  # the output budget ran out before the answer began
    images: list[bytes] = field(default_factory=list)  # generated images, as the provider sent them (untrusted)


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


@dataclass
class BatchState:
    """A provider batch as its last poll saw it: ended or not, and how many of its lines are done."""

    ended: bool
    status: str
    done: int = 0
    total: int = 0


#: what a batch's result holds for one request: its answer, or the error that line got
BatchAnswer = ClientResult | ClientError


def think_tags(body: RequestBody) -> bool:
    """The reasoning comes back inside the text as ``<think>…</think>``: stop sequences are then applied
    to the answer after it (:func:`cut_at_stops`), not sent, so a ``"\n"`` cannot end the thinking."""
    return body.reasoning is not None and body.reasoning.parser == "think-tags"


def cut_at_stops(result: ClientResult, stops: list[str]) -> ClientResult:
    """The answer cut at its first stop sequence (the finish reason is then ``stop``), as HELM cuts outputs."""
    cut = min((result.text.index(s) for s in stops if s and s in result.text), default=None)
    if cut is not None:
        result.text, result.finish_reason = result.text[:cut], "stop"
    return result


def split_think_tags(text: str, finish_reason: str) -> tuple[str, str, bool]:
    """``(answer, reasoning, truncated_in_reasoning)`` of a text holding ``<think>…</think>``.

    The reasoning is what the tags enclose; an output that starts inside them (the chat template
    opened the tag in the prompt, as DeepSeek-R1's and Qwen3's do) is reasoning up to ``</think>``.
    A ``<think>`` never closed means the budget ran out while thinking: no answer at all.
    """
    close = text.rfind(THINK_CLOSE)
    if close >= 0:
        head, answer = text[:close], text[close + len(THINK_CLOSE):]
        open_at = head.find(THINK_OPEN)
        reasoning = head[open_at + len(THINK_OPEN):] if open_at >= 0 else head
        return answer.strip(), reasoning.replace(THINK_OPEN, "").strip(), False
    open_at = text.find(THINK_OPEN)
    if open_at >= 0:
        return "", text[open_at + len(THINK_OPEN):].strip(), finish_reason == "length"
    return text, "", False


class Client(ABC):
    """One instance per deployment per process; ``complete`` is called concurrently from one event loop.

    A client knows its deployment and where a request's images are read from (``media``), nothing
    else of storage: what it returns is journaled by the caller.
    """

    def __init__(self, deployment: Deployment, media: MediaStore | None = None):
        self.deployment = deployment
        self.media = media if media is not None else MediaStore(None)

    #: the variable a key is read from when a deployment names no credential (None: no key needed)
    default_api_key_env: str | None = None
    #: a classifier answers a JSON object of scores for the text it is sent (e.g. toxicity), not text
    classifier: bool = False
    #: modules the client imports on its first request; the CLI imports them beforehand on a side
    #: thread while it waits for Prefect (:func:`helmflow.clients.preload_sdks`), not on the I/O loop
    sdk_modules: tuple[str, ...] = ()
    #: modules beyond the base install the client needs, and the extra that installs them
    requires: tuple[str, ...] = ()
    extra: str | None = None
    #: the ``reasoning:`` options this kind honours; a deployment asking for another is refused at load
    reasoning_options: tuple[str, ...] = ()

    @classmethod
    def reasoning_problem(cls, deployment: Deployment) -> str | None:
        """Why this kind cannot honour the deployment's ``reasoning`` options, in one line (None: it can).
        Checked when the models file loads, so a mistake stops before any request."""
        r = deployment.reasoning
        if r is None:
            return None
        given = [k for k in ReasoningOptions.model_fields if getattr(r, k) is not None]
        refused = [k for k in given if k not in cls.reasoning_options]
        if refused:
            takes = ", ".join(cls.reasoning_options) if cls.reasoning_options else "none"
            return (f"client kind {deployment.client!r} cannot honour reasoning.{refused[0]} "
                    f"(the reasoning options it takes: {takes})")
        return None

    @classmethod
    def reasoning_request_problem(cls, deployment: Deployment, max_tokens: int) -> str | None:
        """Why requests of ``max_tokens`` cannot carry the deployment's reasoning options (checked when a
        run is planned, before any request)."""
        return None

    @classmethod
    def reasoning_notes(cls, body: RequestBody) -> list[str]:
        """What of ``body`` this kind leaves out because of its reasoning options (recorded on the request)."""
        return []

    @classmethod
    def missing_modules(cls) -> list[str]:
        """The modules of :attr:`requires` that are not installed (found without importing them)."""
        import importlib.util

        return [m for m in cls.requires if importlib.util.find_spec(m) is None]

    def credential_name(self) -> str | None:
        """Where the key comes from, by name only: ``$VAR`` or ``secret:<block>``."""
        d = self.deployment
        if d.api_key_secret and not d.api_key_env:
            return f"secret:{d.api_key_secret}"
        env = d.api_key_env or self.default_api_key_env
        return f"${env}" if env else None

    def resolve_api_key(self) -> str | None:
        """The key, looked up by the credential's *name*; never stored on a record or returned upward."""
        d = self.deployment
        env = d.api_key_env or (None if d.api_key_secret else self.default_api_key_env)
        if env:
            value = os.environ.get(env)
            if not value:
                raise PermanentError(
                    f"deployment {d.name!r}: environment variable {env} is not set; export it or "
                    f"point api_key_env at the variable that holds the key"
                )
            return value
        if d.api_key_secret:
            from prefect.blocks.system import Secret

            try:
                # _sync: also called on the I/O loop, where Prefect would otherwise hand back a coroutine
                return Secret.load(d.api_key_secret, _sync=True).get()  # type: ignore[call-arg,union-attr]
            except Exception as exc:  # noqa: BLE001 - any lookup failure is a missing credential
                raise PermanentError(
                    f"deployment {d.name!r}: Prefect Secret block {d.api_key_secret!r} could not be loaded "
                    f"({type(exc).__name__})"
                ) from None
        return None

    def validated_options(self, model: type[OptionsT], label: str = "options") -> OptionsT:
        """``deployment.options`` as the client's typed options; a mistake stops before any request."""
        try:
            return model.model_validate(self.deployment.options)
        except ValidationError as exc:
            e = exc.errors()[0]
            where = ".".join(map(str, e["loc"]))
            raise PermanentError(
                f"deployment {self.deployment.name!r}: bad {label}: {where + ': ' if where else ''}{e['msg']}"
            ) from None

    def check_credentials(self) -> None:
        """Raise :class:`PermanentError` before the first request if a credential is missing."""
        self.resolve_api_key()

    @abstractmethod
    async def complete(self, body: RequestBody) -> ClientResult: ...

    #: ``prompt_cache: true`` marks the shared prefix with the provider's cache breakpoints
    prompt_cache_marks: bool = False

    # A client whose provider has a batch API (``batch: true``) implements these five; see helmflow.batches.
    #: requests and bytes per batch (0: no batch API)
    batch_limits: tuple[int, int] = (0, 0)

    async def batch_line(self, request_hash: str, body: RequestBody) -> dict[str, Any]:
        """One request as a line of a batch, ``request_hash`` as its ``custom_id``."""
        raise PermanentError(f"deployment {self.deployment.name!r}: client kind {self.deployment.client!r} "
                             f"has no batch API")

    async def batch_submit(self, lines: list[dict[str, Any]], tag: str) -> str:
        """Create a batch of ``lines`` (labelled ``tag`` where the provider keeps metadata); its id."""
        raise NotImplementedError

    async def batch_find(self, tag: str, lines: int, since: float, known: set[str]) -> str | None:
        """The id of a batch created with ``tag`` (of ``lines`` lines, at ``since`` Unix seconds or later, none of
        ``known``) whose id was never recorded: a run killed between creating it and writing its record."""
        raise NotImplementedError

    async def batch_poll(self, batch_id: str) -> BatchState:
        raise NotImplementedError

    async def batch_results(self, batch_id: str, bodies: Mapping[str, RequestBody]) -> dict[str, BatchAnswer]:
        """The ended batch's answers by request hash (lines the provider did not finish are transient errors)."""
        raise NotImplementedError

    async def batch_cancel(self, batch_id: str) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass
