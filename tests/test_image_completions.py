"""Images as completions: a text-to-image request carries its parameters (hashed), one completion
carries its N images, each decoded and checked before it is stored once under media/ by its sha256,
and priced at the deployment's price per image. The offline ``draw`` model paints them."""

from __future__ import annotations

import hashlib
import io

import pytest
from PIL import Image

from helmflow.clients import load_deployments
from helmflow.clients.base import ClientResult, InvalidOutput
from helmflow.clients.offline_image import COLORS, MONK_TONES, draw, plan
from helmflow.media import MediaStore
from helmflow.query import run_queries, stored_images
from helmflow.records import AdapterSpec, Deployment, ImageGenerationParams, Prompt
from helmflow.request_builder import build_requests, cost_usd
from helmflow.scenarios import SCENARIOS
from helmflow.scenarios.text_to_image import image_adapter
from helmflow.versions import prompt_version


def _prompts(*texts: str) -> list[Prompt]:
    return [Prompt(instance_id=f"id{i}", split="test", query=t) for i, t in enumerate(texts)]


def test_a_text_adapter_is_serialised_as_before_and_keeps_its_prompt_version():
    assert "image_generation" not in AdapterSpec().model_dump()
    with_images = AdapterSpec(image_generation=ImageGenerationParams())
    assert with_images.model_dump()["image_generation"] == {"width": None, "height": None, "guidance_scale": None,
                                                            "steps": None, "seed": None}
    assert prompt_version(with_images, {}) != prompt_version(AdapterSpec(), {})
    assert AdapterSpec().override(**{"image_generation.width": 64, "image_generation.height": 64}) \
        .image_generation == ImageGenerationParams(width=64, height=64)


def test_every_image_parameter_and_the_image_count_is_part_of_the_request_hash():
    draw_dep = load_deployments()["offline/draw"]
    base = image_adapter(4)
    [req] = build_requests(_prompts("a red circle"), base, draw_dep)
    assert req.body.image_generation is not None and req.body.image_generation.n == 4
    assert req.sample_index == 0  # one request carries the four images
    hashes = {req.request_hash}
    for change in ({"image_generation.width": 64, "image_generation.height": 64},
                   {"image_generation.guidance_scale": 7.5}, {"image_generation.steps": 30},
                   {"image_generation.seed": 1}, {"num_outputs": 1}):
        [other] = build_requests(_prompts("a red circle"), base.override(**change), draw_dep)
        hashes.add(other.request_hash)
    assert len(hashes) == 6
    with pytest.raises(ValueError, match="both width and height"):
        ImageGenerationParams(width=64)


def test_the_offline_model_paints_the_named_shapes_in_their_colours_deterministically():
    assert plan("A red circle next to a blue square and a triangle") == [
        ("circle", COLORS["red"]), ("square", COLORS["blue"]), ("triangle", None)]
    first = draw("A red circle next to a blue square", 0)
    assert first == draw("A red circle next to a blue square", 0)  # same request, same bytes
    assert first != draw("A red circle next to a blue square", 1)  # the four images of a prompt differ
    assert draw("x", 0, seed=1) != draw("x", 0, seed=2)
    with Image.open(io.BytesIO(draw("a green square", 0, 48, 32))) as img:
        assert img.size == (48, 32) and img.format == "PNG"
        colours = {c for _, c in img.convert("RGB").getcolors(10_000)}
    assert COLORS["green"] in colours and (0, 0, 0) in colours  # the shape, with its black outline
    with Image.open(io.BytesIO(draw("a woman reading", 0))) as img:
        assert any(c in MONK_TONES for _, c in img.convert("RGB").getcolors(10_000))  # a face in a Monk tone


def _request(n: int = 2):
    [req] = build_requests(_prompts("two blue circles"), image_adapter(n), load_deployments()["offline/draw"])
    return req


def test_generated_images_are_checked_before_they_are_stored(store):
    media, dep = MediaStore(store), load_deployments()["offline/draw"]
    req = _request(2)
    good = draw("two blue circles", 0)
    with pytest.raises(InvalidOutput, match="image 2: not a readable image"):
        stored_images(media, dep, req, ClientResult(text="", images=[good, b"<svg onload=alert(1)>"]))
    with pytest.raises(InvalidOutput, match="image 1: unreadable or truncated"):
        stored_images(media, dep, req, ClientResult(text="", images=[good[:200], good]))
    with pytest.raises(InvalidOutput, match="asked for 2 image"):
        stored_images(media, dep, req, ClientResult(text="", images=[good]))
    parts = stored_images(media, dep, req, ClientResult(text="", images=[good, good]))
    sha = hashlib.sha256(good).hexdigest()
    assert [(p.sha256, p.mime, p.uri) for p in parts] == [(sha, "image/png", f"media/{sha}.png")] * 2
    assert store.read_bytes(f"media/{sha}.png") == good  # stored once, by its content


def test_an_image_completion_is_journaled_with_its_images_and_priced_per_image(store):
    dep = load_deployments()["offline/draw"].model_copy(update={"price_per_image": 0.02})
    reqs = build_requests(_prompts("a red circle", "a yellow triangle"), image_adapter(4), dep)
    result = run_queries(store, dep, reqs)
    assert result.errors == 0 and result.sent == 2
    for req, completion in zip(reqs, result.completions, strict=True):
        assert len(completion.images) == 4
        assert completion.cost_usd == pytest.approx(cost_usd(dep, completion.prompt_tokens, 0) + 4 * 0.02)
        for i, part in enumerate(completion.images):
            assert store.read_bytes(part.uri) == draw(req.body.prompt, i)
    again = run_queries(store, dep, reqs)  # from the journal: nothing is drawn or paid again
    assert again.sent == 0 and again.reused == 2 and again.cost_usd == 0
    assert [c.images for c in again.completions] == [c.images for c in result.completions]


def test_a_text_model_refuses_an_image_request(store):
    echo = load_deployments()["offline/echo"]
    result = run_queries(store, echo, build_requests(_prompts("a red circle"), image_adapter(1), echo))
    assert result.permanent_error and "generates no images" in result.permanent_error


def test_common_syntactic_processes_lists_helms_prompts_per_phenomenon():
    cls = SCENARIOS.get("common_syntactic_processes")
    negation = cls(phenomenon="negation").load({})
    assert [i.input.text for i in negation][:2] == [
        "A tall woman without a handbag",
        "A man with a red sweater and blue sweater and he is not wearing the former"]
    assert len(negation) == 5 and all(i.split == "test" and not i.references for i in negation)
    sizes = {p: len(cls(phenomenon=p).load({})) for p in ("binding_principles", "passives", "word_order",
                                                          "coordination", "comparatives", "negation", "ellipsis",
                                                          "ambiguity")}
    assert sum(sizes.values()) == 52 and sizes["binding_principles"] == 10 and sizes["ambiguity"] == 6
    adapter = cls(phenomenon="negation").default_adapter
    assert adapter.generation.num_outputs == 4 and adapter.image_generation == ImageGenerationParams()
    assert (adapter.input_prefix, adapter.input_suffix, adapter.output_prefix, adapter.max_train_instances) == \
        ("", "", "", 0)


def test_the_deployment_price_per_image_is_in_the_deployment_schema():
    assert Deployment(name="x", client="offline", model="m", price_per_image=0.04).price_per_image == 0.04
