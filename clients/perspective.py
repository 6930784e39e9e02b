"""Google's Perspective API (``commentanalyzer v1alpha1``): toxicity scores for a text, over HTTP.

A Perspective deployment is a *classifier*: the request's prompt is the text to score, and the
completion's text is a JSON object of the eight attribute scores HELM asks for (TOXICITY,
SEVERE_TOXICITY, IDENTITY_ATTACK, INSULT, PROFANITY, THREAT, SEXUALLY_EXPLICIT, FLIRTATION), each
the first span's score as HELM reads it. Requests go through the query path like any model's, so
they share the deployment's limiter (Perspective's default quota is 1 request per second:
``requests_per_minute: 60`` in the shipped deployment), retries with capped backoff honouring
``Retry-After`` on 429/5xx, and the journal (scoring again re-sends nothing already scored).

The key is read by name (``PERSPECTIVE_API_KEY`` by default, or ``api_key_env`` /
``api_key_secret``) and sent in the ``X-Goog-Api-Key`` header, never in the URL, so no error
message or log line can carry it. Texts are cut to 20,480 characters (the API's limit); languages
are ``["en"]`` as in HELM. ``base_url`` replaces Google's endpoint (a proxy, or a local server in
tests).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from helmflow.clients import client_kind
from helmflow.clients.base import Client, ClientResult, PermanentError, TransientError, redact, retry_after_s
from helmflow.media import MediaStore
from helmflow.records import Deployment, RequestBody

ATTRIBUTES = ("TOXICITY", "SEVERE_TOXICITY", "IDENTITY_ATTACK", "INSULT", "PROFANITY", "THREAT", "SEXUALLY_EXPLICIT",
              "FLIRTATION")
MAX_TEXT_CHARS = 20_480
DEFAULT_URL = "https://commentanalyzer.googleapis.com"

if TYPE_CHECKING:
    import aiohttp


def analyze_body(text: str) -> dict[str, Any]:
    """The JSON HELM's client sends for one text."""
    return {
        "comment": {"text": text[:MAX_TEXT_CHARS]},
        "requestedAttributes": {a: {} for a in ATTRIBUTES},
        "languages": ["en"],
        "spanAnnotations": True,
    }


def attribute_scores(payload: dict[str, Any]) -> dict[str, float]:
    """Each attribute's first span score (HELM reads ``spanScores[0]``, not ``summaryScore``)."""
    scores = payload["attributeScores"]
    return {a: float(scores[a]["spanScores"][0]["score"]["value"]) for a in ATTRIBUTES}


@client_kind("perspective")
class PerspectiveClient(Client):
    default_api_key_env = "PERSPECTIVE_API_KEY"
    classifier = True

    def __init__(self, deployment: Deployment, media: MediaStore | None = None):
        super().__init__(deployment, media)
        self.url = (deployment.base_url or DEFAULT_URL).rstrip("/") + "/v1alpha1/comments:analyze"
        self._session: aiohttp.ClientSession | None = None
        self._key: str | None = None

    async def complete(self, body: RequestBody) -> ClientResult:
        import aiohttp

        if self._session is None:  # made on the I/O loop it will run on
            self._key = self.resolve_api_key()
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.deployment.retry.timeout_s))
        name = self.deployment.name
        headers = {"X-Goog-Api-Key": self._key or "", "Content-Type": "application/json"}
        try:
            async with self._session.post(self.url, json=analyze_body(body.prompt or ""), headers=headers) as resp:
                raw = await resp.read()
                status, resp_headers = resp.status, resp.headers
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise TransientError(f"deployment {name!r}: {type(exc).__name__} talking to {self.url}") from None
        said = redact(raw.decode("utf-8", "replace"), self._key)[:300]
        if status == 429 or status >= 500:
            raise TransientError(f"deployment {name!r}: HTTP {status}: {said}", retry_after_s(resp_headers))
        if status in (401, 403):
            raise PermanentError(f"deployment {name!r}: HTTP {status}: Perspective rejected the key in "
                                 f"{self.credential_name()}; check that it is a valid key with the API enabled")
        if status != 200:
            raise PermanentError(f"deployment {name!r}: HTTP {status}: Perspective refused the request ({said})")
        try:
            scores = attribute_scores(json.loads(raw))
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise TransientError(f"deployment {name!r}: malformed response from {self.url} "
                                 f"({type(exc).__name__})") from None
        return ClientResult(text=json.dumps(scores, sort_keys=True))

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
