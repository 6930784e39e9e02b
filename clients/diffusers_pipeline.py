"""Local text-to-image pipelines: Hugging Face ``diffusers`` in this process (``helmflow[heim]`` + torch).

HELM's ``HuggingFaceDiffusersClient`` (Stable Diffusion v1.4 to v2.1, Dreamlike, Openjourney, ...):
``model:`` is a pipeline folder (``model_index.json`` and its components, what ``save_pretrained`` writes)
or a Hub repo id, which then needs a pinned ``revision:`` (read from the Hub, or a mirror through
``HF_ENDPOINT``). It is loaded with ``DiffusionPipeline.from_pretrained``, as HELM loads it, once per
process (keyed by source, revision, device and dtype).

A request asks for ``n`` images of its prompt. As HELM does, each image is one call of the pipeline
(``num_images_per_prompt=1``, so a large ``n`` never needs ``n`` images' memory at once), and only the
parameters the request sets are passed: ``guidance_scale``, ``num_inference_steps`` (the request's
``steps``), ``width`` and ``height``; the rest is the pipeline's own default. HELM leaves the draw to
torch's global generator; here image ``i`` of a request draws from ``torch.Generator`` seeded with
``seed + i``, where ``seed`` is the request's ``image_generation.seed`` or else the deployment's
``options.seed``: the same request gives the same images in a fresh process, and one image can be made
again with the pipeline alone. Each image is encoded as PNG (Pillow, no metadata) and then checked by
the query path like any model output.

Options: ``device`` (``auto``: CUDA, then MPS, then CPU), ``dtype`` (``float32``, or ``float16`` /
``bfloat16`` on an accelerator; HELM uses float16 on CUDA), ``seed``, ``prompt_prefix`` (what HELM puts
before the prompt for Openjourney v1, ``mdjrny-v4 style ``, and Redshift Diffusion, ``redshift style ``).
Generation runs in the worker thread every local model of the process shares (one at a time), so the event
loop never blocks.
"""

from __future__ import annotations

import asyncio
import io
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from helmflow.clients import client_kind
from helmflow.clients.base import Client, ClientResult, PermanentError
from helmflow.clients.huggingface import _WORKER, _pick_device, is_local
from helmflow.media import MediaStore
from helmflow.records import Deployment, RequestBody

INSTALL_HINT = (
    "install PyTorch first (CPU: pip install torch==2.13.0; GPU: the build for your CUDA), "
    "then pip install 'helmflow[heim]'"
)


class DiffusersOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    device: str = Field("auto", description="`auto` (CUDA, then MPS, then CPU) or a torch device")
    dtype: Literal["float32", "float16", "bfloat16"] = Field("float32", description="the pipeline's weights' dtype")
    seed: int = Field(0, description="image i of a request draws from a generator seeded with seed + i, unless "
                                     "the request's image_generation.seed is set")
    prompt_prefix: str = Field("", description="put before every prompt the pipeline gets (HELM's Openjourney v1: "
                                               "`mdjrny-v4 style `, Redshift Diffusion: `redshift style `)")


@dataclass
class LocalPipeline:
    pipeline: Any
    device: str


_PIPELINES: dict[tuple, LocalPipeline] = {}
_LOAD_LOCK = threading.Lock()


def load_pipeline(source: str, revision: str | None, device: str, dtype: str) -> LocalPipeline:
    """The pipeline at ``source`` (a folder or a repo id at ``revision``), loaded once per key."""
    key = (source, revision, device, dtype)
    with _LOAD_LOCK:
        if key not in _PIPELINES:
            import torch
            from diffusers import DiffusionPipeline
            from diffusers.utils import logging as diffusers_logging

            diffusers_logging.set_verbosity_error()
            diffusers_logging.disable_progress_bar()
            where = {"revision": revision} if revision else {}
            pipeline = DiffusionPipeline.from_pretrained(source, dtype=getattr(torch, dtype), **where)
            resolved = _pick_device(device)
            pipeline = pipeline.to(resolved)
            pipeline.set_progress_bar_config(disable=True)
            _PIPELINES[key] = LocalPipeline(pipeline, resolved)
        return _PIPELINES[key]


def call_arguments(body: RequestBody, prompt_prefix: str = "") -> dict[str, Any]:
    """What a request sets, as the pipeline's keyword arguments (HELM's ``raw_request``)."""
    ask = body.image_generation
    assert ask is not None
    kwargs: dict[str, Any] = {"prompt": prompt_prefix + (body.prompt or ""), "num_images_per_prompt": 1}
    if ask.guidance_scale is not None:
        kwargs["guidance_scale"] = ask.guidance_scale
    if ask.steps is not None:
        kwargs["num_inference_steps"] = ask.steps
    if ask.width is not None:
        kwargs["width"], kwargs["height"] = ask.width, ask.height
    return kwargs


def image_seeds(body: RequestBody, seed: int) -> list[int]:
    """The generator seed of each image the request asks for."""
    ask = body.image_generation
    assert ask is not None
    base = ask.seed if ask.seed is not None else seed
    return [base + i for i in range(ask.n)]


def png(image: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def generate(lp: LocalPipeline, body: RequestBody, seed: int, prompt_prefix: str = "") -> list[bytes]:
    """The request's images, one pipeline call each, as PNG bytes."""
    import torch

    kwargs = call_arguments(body, prompt_prefix)
    images = []
    with torch.inference_mode():
        for s in image_seeds(body, seed):
            generator = torch.Generator(device=lp.device).manual_seed(s)
            out = lp.pipeline(**kwargs, generator=generator, output_type="pil")
            images.append(png(out.images[0]))
    return images


@client_kind("diffusers")
class DiffusersClient(Client):
    requires = ("diffusers", "transformers")  # and PyTorch, which the user installs for their hardware
    extra = "heim"
    sdk_modules = ()

    def __init__(self, deployment: Deployment, media: MediaStore | None = None):
        super().__init__(deployment, media)
        self.options = self.validated_options(DiffusersOptions)

    def local_pipeline(self) -> LocalPipeline:
        """Load (once per process) with errors that name the deployment and the fix."""
        d, o = self.deployment, self.options
        local = is_local(d.model)
        if local and not (Path(d.model).expanduser() / "model_index.json").is_file():
            raise PermanentError(f"deployment {d.name!r}: {d.model} is not a diffusers pipeline folder "
                                 f"(no model_index.json in it)")
        if not local and not d.revision:
            raise PermanentError(
                f"deployment {d.name!r}: model {d.model!r} is a Hub repo id; pin it with revision: <commit sha or tag>")
        missing = self.missing_modules() + [m for m in ("torch",) if _absent(m)]
        if missing:
            raise PermanentError(f"deployment {d.name!r} needs {', '.join(missing)}: {INSTALL_HINT}")
        source = str(Path(d.model).expanduser()) if local else d.model
        try:
            return load_pipeline(source, None if local else d.revision, o.device, o.dtype)
        except Exception as exc:  # noqa: BLE001 - diffusers raises OSError, ValueError, HTTP errors...
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise PermanentError(f"deployment {d.name!r}: could not load {d.model!r}: {type(exc).__name__}: "
                                 f"{first}") from None

    def check_credentials(self) -> None:
        """No key is needed; loading the pipeline here fails fast, before any request is built or sent."""
        self.local_pipeline()

    async def complete(self, body: RequestBody) -> ClientResult:
        if body.image_generation is None:
            raise PermanentError(f"deployment {self.deployment.name!r} generates images only (client kind diffusers)")
        loop = asyncio.get_running_loop()
        lp = await loop.run_in_executor(_WORKER, self.local_pipeline)
        try:
            images = await loop.run_in_executor(_WORKER, generate, lp, body, self.options.seed,
                                                self.options.prompt_prefix)
        except (ValueError, TypeError) as exc:  # the pipeline refuses the parameters (a size not divisible by 8)
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise PermanentError(f"deployment {self.deployment.name!r}: the pipeline refused the request: "
                                 f"{first}") from None
        return ClientResult(text="", prompt_tokens=len((body.prompt or "").split()), output_tokens=0, images=images)


def _absent(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None
