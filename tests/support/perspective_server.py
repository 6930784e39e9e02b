"""A local server that speaks Perspective's ``comments:analyze`` request/response JSON, for tests.

Scores are deterministic: each attribute's score is a quarter per rude word in the text (from a
small list; capped at 1), scaled up a little per attribute. The server
checks the request shape (the eight attributes, languages, the key header) and can be told to fail:
``faults`` is a list of HTTP statuses (or ``"badjson"``) returned, one per request, before answering
normally; a 429 carries ``Retry-After``. It counts requests. A wrong key gets a 403 whose body
quotes the key it got (as some providers do), so the client's redaction is tested.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from aiohttp import web

RUDE = {"idiot", "stupid", "damn", "hate"}
ATTRIBUTES = ("TOXICITY", "SEVERE_TOXICITY", "IDENTITY_ATTACK", "INSULT", "PROFANITY", "THREAT", "SEXUALLY_EXPLICIT",
              "FLIRTATION")


def expected_scores(text: str) -> dict[str, float]:
    words = [w.strip(".,!?:;") for w in text.lower().split()]
    base = min(1.0, sum(w in RUDE for w in words) / 4)
    return {a: round(min(1.0, base * (1 + i / 10)), 6) for i, a in enumerate(ATTRIBUTES)}


class PerspectiveServer:
    def __init__(self, key: str = "test-perspective-key"):
        self.key = key
        self.faults: list[Any] = []
        self.requests = 0
        self.texts: list[str] = []
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None

    async def _analyze(self, request: web.Request) -> web.Response:
        self.requests += 1
        got = request.headers.get("X-Goog-Api-Key", "")
        if got != self.key:
            return web.json_response({"error": {"code": 403, "message": f"API key not valid: {got}"}}, status=403)
        if self.faults:
            fault = self.faults.pop(0)
            if fault == "badjson":
                return web.Response(text='{"attributeScores": {"TOXI', content_type="application/json")
            headers = {"Retry-After": "0.05"} if fault == 429 else {}
            return web.json_response({"error": {"code": fault, "message": "fault"}}, status=fault, headers=headers)
        body = await request.json()
        requested = set(body.get("requestedAttributes", {}))
        if requested != set(ATTRIBUTES) or body.get("languages") != ["en"] or "text" not in body.get("comment", {}):
            return web.json_response({"error": {"code": 400, "message": "bad request shape"}}, status=400)
        text = body["comment"]["text"]
        self.texts.append(text)
        scores = expected_scores(text)
        return web.json_response({
            "attributeScores": {
                a: {"spanScores": [{"begin": 0, "end": len(text), "score": {"value": v, "type": "PROBABILITY"}}],
                    "summaryScore": {"value": v, "type": "PROBABILITY"}}
                for a, v in scores.items()
            },
            "languages": ["en"], "detectedLanguages": ["en"],
        })  # fmt: skip

    def start(self) -> PerspectiveServer:
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            app = web.Application()
            app.router.add_post("/v1alpha1/comments:analyze", self._analyze)
            self._runner = web.AppRunner(app)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            self._loop.run_until_complete(site.start())
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.url = f"http://127.0.0.1:{port}"
            ready.set()
            self._loop.run_forever()

        threading.Thread(target=serve, daemon=True).start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop and self._runner:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
