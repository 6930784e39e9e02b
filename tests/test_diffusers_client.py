"""The ``diffusers`` client on a tiny Stable Diffusion pipeline built here (random UNet, VAE and CLIP text
encoder, saved to a folder; nothing downloaded), through the query path: every stored image is the PNG that
diffusers' own pipeline draws for that prompt, the request's parameters and the generator seed ``seed + i``;
and `helmflow run heim` on it, scored by CLIPScore and LAION aesthetics on a tiny CLIP and a random head, by
nudity_frac on a small ONNX classifier shaped as NudeNet's and by watermark_frac on a random-weight detector."""

from __future__ import annotations

import functools
import io
import json

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.clients import make_client
from helmflow.clients.base import PermanentError
from helmflow.query import run_queries
from helmflow.records import Deployment, Prompt
from helmflow.request_builder import build_requests
from helmflow.scenarios.text_to_image import image_adapter
from tests.support.cli import run_cli


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


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread: on two busy cores torch's second thread spin-waits (tens of times the CPU)."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _by_diffusers(folder, prompt: str, seed: int, **kwargs) -> bytes:
    """The image diffusers' pipeline draws on its own (loaded apart from the client's), encoded as PNG."""
    import torch
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
    # the request's own seed wins over the deployment's; unset parameters are the pipeline's defaults; the prefix
    # (HELM's for Openjourney v1) goes before the prompt the pipeline gets, not into the request
    dep = _deployment(tiny_sd, seed=11, prompt_prefix="mdjrny-v4 style ")
    reqs = _requests(dep, ["a red circle"], n=1, **{"image_generation.seed": 3, "image_generation.steps": 1})
    result = run_queries(store, dep, reqs)
    assert reqs[0].body.prompt == "a red circle"
    assert [store.read_bytes(p.uri) for p in result.completions[0].images] == [
        _by_diffusers(tiny_sd, "mdjrny-v4 style a red circle", 3, num_inference_steps=1)]


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


@pytest.mark.slow
def test_helmflow_run_heim_on_a_local_pipeline_publishes_its_images_and_their_weighted_scores(tiny_sd, tmp_path,
                                                                                             prefect_server):
    import torch
    pytest.importorskip("onnx")
    from tests.support.heim_fixtures import write_classifier
    from tests.support.tiny_hf import DIFFUSION_SIDE, build_tiny_clip

    clip = build_tiny_clip(tmp_path / "tiny-clip")
    torch.manual_seed(2)
    torch.save(torch.nn.Linear(16, 1).state_dict(), tmp_path / "head.pth")
    nudenet = write_classifier(tmp_path / "classifier_model.onnx")
    from helmflow.metrics.watermark import build_detector

    torch.save(build_detector().state_dict(), tmp_path / "watermark_model_v1.pt")
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "local/tiny-sd", "client": "diffusers", "model": str(tiny_sd), "revision": "tiny",
         "options": {"device": "cpu"}}]}))
    storage = tmp_path / "store"
    out = run_cli("run", "heim", "--models", "local/tiny-sd", "--models-file", str(models), "--scenarios", "logos",
                  "--max-instances", "1", "--storage", str(storage),
                  env={"HELMFLOW_CLIP_MODEL": str(clip), "HELMFLOW_AESTHETICS_HEAD": str(tmp_path / "head.pth"),
                       "HELMFLOW_NUDENET_MODEL": str(nudenet), "HELMFLOW_WATERMARK_MODEL": str(tmp_path / "watermark_model_v1.pt"),
                       "OMP_NUM_THREADS": "1"}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/heim/latest-subset.json").read_text())
    [run] = pq.read_table(f"{latest['uri']}/runs.parquet").to_pylist()
    folder = storage / "runs" / run["run_id"]
    [request] = pq.read_table(folder / "requests.parquet").to_pylist()
    [completion] = pq.read_table(folder / "completions.parquet").to_pylist()
    images = [(storage / "media" / f"{p['sha256']}.png").read_bytes() for p in completion["images"]]
    assert len(images) == 4 and len(set(images)) == 4  # HELM's four images a prompt, each its own seed
    # the pipeline's defaults (HELM sets no parameter): image i is what diffusers draws from seed 0 + i
    assert images[0] == _by_diffusers(tiny_sd, request["prompt"], 0)
    assert images[3] == _by_diffusers(tiny_sd, request["prompt"], 3)
    from PIL import Image

    with Image.open(io.BytesIO(images[0])) as img:
        assert img.size == (DIFFUSION_SIDE, DIFFUSION_SIDE)

    from helmflow.metrics.aesthetics import aesthetics_scores, load_head
    from helmflow.metrics.clip_score import checkpoint, scorer

    model, _ = scorer(checkpoint(str(clip)))
    expected = aesthetics_scores(model, load_head(str(tmp_path / "head.pth")), images)
    stats = {s["name"]: s["value"] for s in pq.read_table(folder / "stats.parquet").to_pylist()}
    assert stats["expected_aesthetics_score"] == pytest.approx(sum(expected) / 4, abs=1e-5)
    assert stats["max_aesthetics_score"] == pytest.approx(max(expected), abs=1e-5)
    assert stats["expected_clip_score"] >= 0 and stats["num_generated_images"] == 4
    from helmflow.metrics.nudity import is_nude, probabilities, session

    assert stats["nudity_frac"] == sum(map(is_nude, probabilities(session(str(nudenet)), images))) / 4
    from helmflow.metrics.watermark import has_watermark, load_detector, watermark_probs

    probs = watermark_probs(load_detector(str(tmp_path / "watermark_model_v1.pt")), images)
    assert stats["watermark_frac"] == sum(map(has_watermark, probs)) / 4
    assert stats["expected_max_watermark_prob"] == pytest.approx(max(probs), abs=1e-6)
    row = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()[0]
    assert row["logos/expected_aesthetics_score"] == pytest.approx(sum(expected) / 4, abs=1e-5)
