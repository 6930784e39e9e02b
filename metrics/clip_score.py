"""CLIPScore (HEIM alignment): each generated image scored against its prompt by a CLIP model.

HELM's ``CLIPScoreMetric`` with its ``CLIPScorer`` (torchmetrics' ``CLIPScore``), computed here with
transformers directly, step for step:

- the prompt is cut by the CLIP tokenizer to 75 tokens without the two special ones (HELM's
  ``CLIPWindowService``: encode with truncation, decode, then drop characters while it is still too long),
  so with ``<|startoftext|>`` and ``<|endoftext|>`` it fits CLIP's 77 positions;
- on an instance HEIM's dialect, robustness (``mild_mix``) or translation perturbation changed, the image is
  scored against the caption before the perturbation (HELM scores its ``contrast_inputs`` there); after
  the gender-terms perturbation, against the perturbed caption, as HELM;
- a blacked-out image (a safety filter's all-black answer) is not scored;
- each image goes to the checkpoint's ``CLIPProcessor`` as HELM hands it over, ``ToTensor()`` of the RGB
  image ((3, H, W) float32 in [0, 1]), with the prompt (``padding=True``); the processor resizes, crops,
  rescales and normalises it as that processor does for HELM (its rescale divides by 255 again, so CLIP sees
  the image at 1/255 of its brightness: HELM's numbers are computed so, and so are these);
- the score is ``max(100 * cos(image embedding, text embedding), 0)`` of ``get_image_features`` and
  ``get_text_features`` (torchmetrics' ``CLIPScore`` of one image and its caption);
- per prompt, ``expected_clip_score`` is the mean over its scored images and ``max_clip_score`` the
  largest; both are 0 when every image was blacked out, as HELM records them.

The checkpoint is ``$HELMFLOW_CLIP_MODEL``: ``openai/clip-vit-large-patch14`` (HELM's, at the revision
pinned below, about 1.7 GB from the Hub), ``ID@REVISION`` for another Hub checkpoint, or a local folder
holding a saved ``CLIPModel`` and ``CLIPProcessor``. Unset, or without torch and transformers (the ``hf``
extra), the metric records only ``clip_images`` (the images there were to score) and both numbers are
absent from the summaries with :data:`NO_WEIGHTS` as the reason, never 0. HELM's multilingual variant
(``*_multilingual``, M-CLIP) is not implemented: HELM's run specs never turn it on.

Library: transformers and torch (the ``hf`` extra), loaded when the metric first scores an image.
"""

from __future__ import annotations

import math
import os
import threading
from functools import lru_cache
from pathlib import Path
from statistics import fmean
from typing import Any

from helmflow.errors import MetricError, install_command
from helmflow.metrics import MetricInput, Pooled, metric
from helmflow.metrics.generated_images import image_parts, is_blacked_out, rgb
from helmflow.records import Instance, body_text

VERSION = "3"
#: HELM's CLIP checkpoint and the Hub revision helmflow loads it at
HELM_MODEL = "openai/clip-vit-large-patch14"
HELM_REVISION = "32bd64288804d66eefd0ccbe215aa642df71cc41"
#: HELM's ``CLIPWindowService.max_sequence_length``: 77 positions less <|startoftext|> and <|endoftext|>
PROMPT_TOKENS = 77 - 2
SETTING = "HELMFLOW_CLIP_MODEL"
NO_WEIGHTS = (f"needs a CLIP model: set ${SETTING}=openai/clip-vit-large-patch14 (HELM's, about 1.7 GB from the Hub) "
              "or a local checkpoint folder, with the hf extra installed; not available, never 0")
MARK = "clip_images"
_MODULES = ("torch", "transformers")


def _not_available(columns: dict[str, Any], n: int) -> float:
    return math.nan


def checkpoint(value: str) -> tuple[str, str | None]:
    """``$HELMFLOW_CLIP_MODEL`` as (a local folder or Hub id, the Hub revision; None for a folder)."""
    if Path(value).expanduser().is_dir():
        return str(Path(value).expanduser().resolve()), None
    if value.startswith((".", "/", "~")) or os.sep in value.replace("/", "", 1):
        raise MetricError(f"${SETTING}={value!r}: no such checkpoint folder")
    model, _, revision = value.partition("@")
    if model.count("/") != 1 or not all(model.split("/")):
        raise MetricError(f"${SETTING}={value!r}: expected a Hub id (owner/name[@revision]) or a checkpoint folder")
    return model, revision or (HELM_REVISION if model == HELM_MODEL else None)


def configured() -> tuple[str, str | None] | None:
    """The checkpoint CLIPScore scores with, None when none is set (one line when the setting is unusable)."""
    from helmflow.metrics import _installed
    from helmflow.settings import settings

    value = settings().clip_model
    if not value:
        return None
    where = checkpoint(value)
    missing = [m for m in _MODULES if not _installed(m)]
    if missing:
        raise MetricError(f"${SETTING} is set but CLIPScore needs {', '.join(missing)}: {install_command('hf')}")
    return where


def _check(instance: Instance) -> None:
    # a bad setting stops the run when the board is loaded, before any request (once per value: every instance asks)
    _checked(os.environ.get(SETTING) or None)


@lru_cache(maxsize=8)
def _checked(value: str | None) -> None:
    configured()


_LOCK = threading.Lock()


@lru_cache(maxsize=2)
def _load(model: str, revision: str | None) -> tuple[Any, Any]:
    from transformers import CLIPModel, CLIPProcessor

    kwargs = {"revision": revision} if revision else {}
    clip = CLIPModel.from_pretrained(model, **kwargs).eval()
    return clip, CLIPProcessor.from_pretrained(model, **kwargs)


def scorer(where: tuple[str, str | None]) -> tuple[Any, Any]:
    """The (CLIPModel, CLIPProcessor) of a checkpoint, loaded once per process."""
    with _LOCK:
        return _load(*where)


def truncate(tokenizer: Any, prompt: str) -> str:
    """HELM's ``CLIPWindowService.truncate_from_right`` with the checkpoint's tokenizer."""
    ids = tokenizer.encode(prompt, add_special_tokens=False, truncation=True, max_length=PROMPT_TOKENS)
    text: str = tokenizer.decode(ids, clean_up_tokenization_spaces=False)
    while len(tokenizer.encode(text, add_special_tokens=False)) > PROMPT_TOKENS:
        text = text[:-1]
    return text


def clip_scores(model: Any, processor: Any, prompt: str, images: list[bytes]) -> list[float]:
    """``max(100 * cos, 0)`` of each image (encoded bytes) against the prompt, as given (not truncated)."""
    import numpy as np
    import torch

    tensors = [torch.from_numpy((rgb(d).astype(np.float32) / np.float32(255.0)).transpose(2, 0, 1).copy())
               for d in images]
    with torch.no_grad():
        pixels = processor(images=tensors, return_tensors="pt")["pixel_values"]
        image = model.get_image_features(pixel_values=pixels)
        text_in = processor(text=[prompt], return_tensors="pt", padding=True)
        text = model.get_text_features(input_ids=text_in["input_ids"], attention_mask=text_in["attention_mask"])
    image = _embedding(image)
    text = _embedding(text)
    image = image / image.norm(p=2, dim=-1, keepdim=True)
    text = text / text.norm(p=2, dim=-1, keepdim=True)
    cos = (image * text).sum(dim=-1)
    return [max(float(100 * c), 0.0) for c in cos]


def _embedding(out: Any) -> Any:
    """The projected embedding (transformers 5 may return a model output holding it)."""
    return out if hasattr(out, "norm") else out.pooler_output


def _weights() -> str:
    """The checkpoint in the metric's version: another one scores the runs again."""
    value = os.environ.get(SETTING) or None
    if value is None:
        return "none"
    model, revision = checkpoint(value)
    return f"{model}@{revision}" if revision else model


def scored_prompt(x: MetricInput, request: Any) -> str:
    """The text an image is scored against: the prompt, or the caption before HEIM's dialect, robustness or
    translation perturbation (HELM's ``contrast_inputs``)."""
    from helmflow.perturbations import PERTURBED_BY, SCORED_AGAINST_ORIGINAL, UNPERTURBED_TEXT

    extra = x.instance.extra
    if extra.get(PERTURBED_BY) in SCORED_AGAINST_ORIGINAL and isinstance(extra.get(UNPERTURBED_TEXT), str):
        return str(extra[UNPERTURBED_TEXT])
    return body_text(request.body)


@metric("clip_score", version=VERSION, check=_check, varies=_weights, pooled=tuple(
    Pooled(name, (MARK,), _not_available, unavailable=(MARK, NO_WEIGHTS), bootstrap=False)
    for name in ("expected_clip_score", "max_clip_score")))
def clip_score(x: MetricInput) -> dict[str, float]:
    parts = image_parts(x)
    if not parts:
        return {}
    where = configured()
    if where is None:
        return {MARK: float(len(parts))}
    from helmflow.media import scoring_store

    model, processor = scorer(where)
    media = scoring_store()
    scores: list[float] = []
    for request, completion in zip(x.requests, x.completions, strict=True):
        if not completion.ok or not completion.images:
            continue
        kept = [d for d in (media.read(p) for p in completion.images) if not is_blacked_out(rgb(d))]
        if kept:
            scores += clip_scores(model, processor, truncate(processor.tokenizer, scored_prompt(x, request)), kept)
    return {
        MARK: float(len(parts)),
        "expected_clip_score": fmean(scores) if scores else 0.0,
        "max_clip_score": max(scores) if scores else 0.0,
    }
