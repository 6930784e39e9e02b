"""Images through the real SDKs to the dev server: every image's bytes arrive intact, in order with
the text, for every client kind (the dev server decodes each part and reports its sha256)."""

from __future__ import annotations

import base64
import hashlib
import io
from typing import Any

import httpx
import pytest
from PIL import Image

from helmflow.adapters import adapt
from helmflow.devserver import start_dev_server
from helmflow.media import MediaStore
from helmflow.query import run_queries
from helmflow.records import AdapterSpec, ContentPart, GenerationParams, Input, Instance, Reference
from helmflow.request_builder import build_requests
from helmflow.storage import Store
from tests.support.devserver import dev_deployment


def image_shas(prompt: str, payload: dict[str, Any]) -> str:
    """Dev-server policy: the sha256 prefixes of the images it received, in order (answers from the image)."""
    return " ".join(p["sha256"][:10] for p in payload.get("_parts", []) if p["type"] == "image")


def encoded(fmt: str, color: tuple[int, int, int], size=(12, 9)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format=fmt)
    return buf.getvalue()


def instances(store: Store) -> list[Instance]:
    media = MediaStore(store)
    images = [media.put(encoded(fmt, c), fmt) for fmt, c in
              [("PNG", (250, 0, 0)), ("JPEG", (0, 250, 0)), ("GIF", (0, 0, 250)), ("WEBP", (250, 250, 0))]]
    out = []
    for i in range(4):
        first, second = images[i], images[(i + 1) % 4]
        parts = [ContentPart(type="text", text=f"Compare {i}: "), first, ContentPart(type="text", text=" with "), second,
                 ContentPart(type="text", text=" now.")]
        out.append(Instance(id=f"i{i}", input=Input(parts=parts), references=[Reference(text="x", correct=True)]))
    return out


SPEC = AdapterSpec(instructions="Look.", input_prefix="", input_suffix="\n", output_prefix="Answer: ",
                   max_train_instances=0, generation=GenerationParams(max_tokens=8))


def sequence(parts: list[ContentPart], drop_blank: bool) -> list[tuple[str, str]]:
    return [(p.type, p.text if p.type == "text" else p.sha256) for p in parts
            if not (drop_blank and p.type == "text" and not (p.text or "").strip())]


def received(server) -> list[list[tuple[str, str]]]:
    got = httpx.get(f"{server.url}/_dev/requests", timeout=10).json()
    return [[(p["type"], p["text"] if p["type"] == "text" else p["sha256"]) for p in parts] for parts in got]


@pytest.fixture(scope="module")
def image_server():
    with start_dev_server("--policy", "fn:tests.test_vision_clients:image_shas") as server:
        yield server


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["openai", "openai-compatible", "anthropic"])
def test_each_image_reaches_the_server_intact_and_in_order(image_server, store, kind):
    httpx.post(f"{image_server.url}/_dev/reset", timeout=10)
    before = len(received(image_server))
    dep = dev_deployment(image_server, kind, options={"images": {"max_side": 4096}})
    prompts = adapt(SPEC, instances(store))
    requests = build_requests(prompts, SPEC, dep, store)
    result = run_queries(store, dep, requests)
    assert result.errors == 0 and result.sent == 4
    seen = received(image_server)[before:]
    assert len(seen) == 4
    for req, completion in zip(requests, result.completions, strict=True):
        # Anthropic refuses blank text blocks: the client drops them (HELM does the same)
        expected = sequence(req.body.parts, drop_blank=kind == "anthropic")
        assert expected in seen, f"{kind}: the server got another sequence for {req.instance_id}"
        shas = [s for t, s in expected if t == "image"]
        assert completion.text == " ".join(s[:10] for s in shas)  # the policy answered from the images
    formats = {p.mime for r in requests for p in r.body.parts if p.type == "image"}
    assert formats == {"image/png", "image/jpeg", "image/gif", "image/webp"}  # sent in their original formats
    assert image_server.stats()["images"] >= 8


@pytest.mark.slow
def test_reencode_jpeg_for_helm_parity_is_what_the_server_gets(image_server, store):
    dep = dev_deployment(image_server, "openai-compatible", options={"images": {"reencode": "jpeg", "detail": "high"}})
    requests = build_requests(adapt(SPEC, instances(store)), SPEC, dep, store)
    assert {p.mime for r in requests for p in r.body.parts if p.type == "image"} == {"image/jpeg"}
    assert all(r.media_transforms for r in requests)  # every non-JPEG image was re-encoded, and it says so
    result = run_queries(store, dep, requests)
    assert result.errors == 0
    shas = [p.sha256 for p in requests[0].body.parts if p.type == "image"]
    assert result.completions[0].text == " ".join(s[:10] for s in shas)


@pytest.mark.slow
def test_dev_server_refuses_images_that_do_not_decode(image_server):
    png = encoded("PNG", (1, 2, 3))
    bad = [
        ({"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png[: len(png) // 2]).decode()}},
         "does not decode"),
        ({"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(png).decode()}},
         "declared image/jpeg but the bytes are PNG"),
        ({"type": "image_url", "image_url": {"url": "http://example.com/cat.png"}}, "base64 data: URL"),
    ]
    for part, message in bad:
        r = httpx.post(f"{image_server.url}/v1/chat/completions", timeout=10, json={
            "model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, part]}]})
        assert r.status_code == 400 and message in r.json()["error"]["message"]
    ok = httpx.post(f"{image_server.url}/v1/chat/completions", timeout=10, json={
        "model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/png;base64," + base64.b64encode(png).decode()}]}]})
    assert ok.status_code == 200
    assert ok.json()["choices"][0]["message"]["content"] == hashlib.sha256(png).hexdigest()[:10]
