"""The ``diffusers`` client on a tiny Stable Diffusion pipeline built here (random UNet, VAE and CLIP text
encoder, saved to a folder; nothing downloaded), through the query path: every stored image is the PNG that
diffusers' own pipeline draws for that prompt, the request's parameters and the generator seed ``seed + i``."""

from __future__ import annotations

import functools
import io

import pytest

from helmflow.clients import make_client
from helmflow.clients.base import PermanentError
from helmflow.query import run_queries
from helmflow.records import Deployment, Prompt
from helmflow.request_builder import build_requests
from helmflow.scenarios.text_to_image import image_adapter

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")


@pytest.fixture(scope="module")
def tiny_sd(tmp_path_factory):
    from tests.support.tiny_hf import build_tiny_diffusers

    return build_tiny_diffusers(tmp_path_factory.mktemp("sd") / "tiny-sd")


def _deployment(folder, **options) -> Deployment:
    return Deployment(name="local/tiny-sd", client="diffusers", model=str(folder), revision="tiny",
                      options={"device": "cpu", **options})


def _requests(dep, texts, n, **adapter):
    prompts = [Prompt(instance_id=f"id{i}", split="test", query=t) for i, t in enumerate(texts)]
    return build_requests(prompts, image_adapter(n).override(**adapter), dep)


@functools.cache
def _pipeline(folder):
    from diffusers import DiffusionPipeline

    pipe = DiffusionPipeline.from_pretrained(str(folder))
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _by_diffusers(folder, prompt: str, seed: int, **kwargs) -> bytes:
    """The image diffusers' pipeline draws on its own (loaded apart from the client's), encoded as PNG."""
    image = _pipeline(folder)(prompt, generator=torch.Generator("cpu").manual_seed(seed), **kwargs).images[0]
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def test_each_stored_image_is_what_the_pipeline_draws_for_its_prompt_parameters_and_seed(tiny_sd, store):
    from PIL import Image

    dep = _deployment(tiny_sd, seed=11)
    reqs = _requests(dep, ["a red circle", "a blue square"], n=2,
                     **{"image_generation.width": 24, "image_generation.height": 16, "image_generation.steps": 2,
                        "image_generation.guidance_scale": 3.0})
    result = run_queries(store, dep, reqs)
    assert result.errors == 0, result.error_messages
    for req, completion in zip(reqs, result.completions, strict=True):
        stored = [store.read_bytes(p.uri) for p in completion.images]
        assert stored == [_by_diffusers(tiny_sd, req.body.prompt, 11 + i, width=24, height=16, num_inference_steps=2,
                                        guidance_scale=3.0) for i in range(2)]
        assert stored[0] != stored[1]  # image i draws from seed + i
        with Image.open(io.BytesIO(stored[0])) as img:
            assert img.size == (24, 16)
    # the request's own seed wins over the deployment's; unset parameters are the pipeline's defaults
    reqs = _requests(dep, ["a red circle"], n=1, **{"image_generation.seed": 3, "image_generation.steps": 1})
    result = run_queries(store, dep, reqs)
    assert [store.read_bytes(p.uri) for p in result.completions[0].images] == [
        _by_diffusers(tiny_sd, "a red circle", 3, num_inference_steps=1)]


def test_a_pipeline_that_cannot_be_loaded_or_a_refused_size_is_one_line(tiny_sd, tmp_path, store):
    with pytest.raises(PermanentError, match="not a diffusers pipeline folder"):
        make_client(_deployment(tmp_path)).check_credentials()
    hub = Deployment(name="hub/sd", client="diffusers", model="CompVis/stable-diffusion-v1-4")
    with pytest.raises(PermanentError, match="pin it with revision"):
        make_client(hub).check_credentials()
    dep = _deployment(tiny_sd)
    result = run_queries(store, dep, _requests(dep, ["a red circle"], n=1, **{"image_generation.width": 20,
                                                                               "image_generation.height": 20,
                                                                               "image_generation.steps": 1}))
    assert result.errors == 1 and "the pipeline refused the request" in result.completions[0].error
    assert "\n" not in result.completions[0].error
