"""Text-to-image over real HTTP: the dev server answers OpenAI's images API with b64_json PNGs, and the
``openai`` client asks through the SDK's own ``images.generate`` (never patched). What the server sent
is what is stored, byte for byte; what it sends wrong (a truncated PNG, an SVG, too few images) is
refused before anything is stored."""

from __future__ import annotations

import base64
import hashlib
import json
import urllib.request

import pytest

from helmflow.clients.offline_image import draw
from helmflow.query import run_queries
from helmflow.records import Prompt
from helmflow.request_builder import build_requests
from helmflow.scenarios.text_to_image import image_adapter
from tests.support.devserver import dev_deployment


def _requests(dep, texts, n=2, **adapter):
    prompts = [Prompt(instance_id=f"id{i}", split="test", query=t) for i, t in enumerate(texts)]
    return build_requests(prompts, image_adapter(n).override(**adapter), dep)


def _post(server, path, payload):
    req = urllib.request.Request(f"{server.openai_url}{path}", data=json.dumps(payload).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer dev-key-not-secret"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.slow
def test_the_dev_server_answers_openais_images_api_with_b64_json(dev_server):
    status, body = _post(dev_server, "/images/generations", {"model": "dev-image", "prompt": "a red circle", "n": 2,
                                                             "size": "64x48", "response_format": "b64_json"})
    assert status == 200 and len(body["data"]) == 2
    images = [base64.b64decode(d["b64_json"]) for d in body["data"]]
    assert images == [draw("a red circle", 0, 64, 48), draw("a red circle", 1, 64, 48)]
    assert dev_server.stats()["generated_images"] == [hashlib.sha256(i).hexdigest() for i in images]
    for bad, says in (({"response_format": "url"}, "only b64_json"), ({"n": 0}, "n: an integer"),
                      ({"size": "big"}, "size: WIDTHxHEIGHT"), ({"prompt": ""}, "prompt")):
        status, body = _post(dev_server, "/images/generations", {"model": "dev-image", "prompt": "x", **bad})
        assert status == 400 and says in body["error"]["message"]


@pytest.mark.slow
def test_the_openai_client_stores_exactly_the_images_the_server_sent(dev_server, store):
    dep = dev_deployment(dev_server, "openai", name="dev/images", model="dev-image", price_per_image=0.04)
    reqs = _requests(dep, ["a blue square", "a green triangle and a yellow circle"], n=3,
                     **{"image_generation.width": 40, "image_generation.height": 32, "image_generation.seed": 7})
    result = run_queries(store, dep, reqs)
    assert result.errors == 0, result.error_messages
    sent = dev_server.stats()["generated_images"]
    stored = [p.sha256 for c in result.completions for p in c.images]
    assert sorted(stored) == sorted(sent) and len(sent) == 6  # the two requests went out concurrently
    for req, completion in zip(reqs, result.completions, strict=True):
        assert completion.cost_usd == pytest.approx(3 * 0.04)
        for i, part in enumerate(completion.images):
            assert store.read_bytes(part.uri) == draw(req.body.prompt, i, 40, 32, 7)
    keys = dev_server.stats()["body_keys"]
    assert keys["images:size"] == 2 and keys["images:seed"] == 2 and "images:guidance_scale" not in keys


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "says"), [("truncated", "image 2: unreadable or truncated"),
                                             ("svg", "image 1: not a readable image"),
                                             ("count", "asked for 2 image(s), got 1")])
def test_images_a_server_sends_wrong_are_refused_and_nothing_is_stored(dev_server, store, fault, says):
    dev_server.configure(image_fault=fault)
    dep = dev_deployment(dev_server, "openai", name="dev/images", model="dev-image")
    result = run_queries(store, dep, _requests(dep, ["a red circle"], n=2))
    assert result.errors == 1 and result.permanent_error is None  # that completion fails; the deployment goes on
    assert says in result.completions[0].error
    assert not result.completions[0].images
    assert not [k for k in store.find("media") if k.endswith(".svg")]
    if fault != "truncated":
        assert not list(store.find("media"))
