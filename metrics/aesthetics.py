"""LAION aesthetics (HEIM aesthetics): a linear head on each image's CLIP embedding, as HELM's ``AestheticsMetric``.

HELM's ``AestheticsScorer`` (LAION's aesthetic predictor, ``sa_0_4_vit_l_14_linear.pth``): each image goes
through the ``clip`` package's preprocessing of ViT-L/14 (torchvision's ``Resize(224, BICUBIC)`` of the
shorter side, ``CenterCrop(224)``, ``ToTensor()``, ``Normalize`` by CLIP's mean and std), CLIP's image
encoder, the embedding divided by its L2 norm, then ``nn.Linear(768, 1)``: a score of about 1 to 10.
Here the preprocessing is written out with Pillow (torchvision's bicubic resize of a PIL image is Pillow's,
and its centre crop rounds the offsets, ``int(round((size - crop) / 2))``), and the encoder is
``CLIPModel.get_image_features`` of the checkpoint ``$HELMFLOW_CLIP_MODEL`` names
(``openai/clip-vit-large-patch14`` is the same ViT-L/14 the ``clip`` package loads; the side is the
checkpoint's ``image_size``). Blacked-out images are skipped; per prompt ``expected_aesthetics_score`` is
the mean and ``max_aesthetics_score`` the largest, both 0 when every image was blacked out, as HELM.

The head is ``$HELMFLOW_AESTHETICS_HEAD``: a file holding the ``nn.Linear`` state dict (``weight`` of shape
``(1, D)``, ``bias``), read with ``torch.load(weights_only=True)`` (tensors only, nothing unpickled).
HELM's file is :data:`HELM_HEAD` (sha256 :data:`HELM_HEAD_SHA256`); another file is scored too and its
sha256 is part of the metric's version. Unset (or no CLIP checkpoint), the metric records
``aesthetics_images`` only and both numbers are not available, never 0; a head setting that cannot be used
stops the run with one line before any request.

Library: transformers and torch (the ``hf`` or ``heim`` extra), through the CLIPScore checkpoint loader.
"""

from __future__ import annotations

import io
import math
from functools import lru_cache
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from helmflow.errors import MetricError
from helmflow.metrics import MetricInput, Pooled, metric
from helmflow.metrics import clip_score as clip
from helmflow.metrics.generated_images import image_bytes, is_blacked_out, rgb
from helmflow.metrics.weights_file import WeightsFile
from helmflow.records import Instance

VERSION = "1"
SETTING = "HELMFLOW_AESTHETICS_HEAD"
#: HELM's head: LAION-AI/aesthetic-predictor on GitHub, the file at the commit helmflow pins, and its sha256
HELM_HEAD = ("https://github.com/LAION-AI/aesthetic-predictor/raw/6d122adad522ab246644d9dc1c6d7a3810ee255f/"
             "sa_0_4_vit_l_14_linear.pth")
HELM_HEAD_SHA256 = "2cd4e60f4f24ae3bcd57b847b13c1f3ba27edc28cc1a7f9ce74ee9f421243cba"
#: the ``clip`` package's Normalize (OpenAI CLIP's image mean and std)
MEAN = np.array([0.48145466, 0.4578275, 0.40821073], np.float32)
STD = np.array([0.26862954, 0.26130258, 0.27577711], np.float32)
NO_WEIGHTS = (f"needs LAION's aesthetics head and a CLIP model: set ${SETTING} to sa_0_4_vit_l_14_linear.pth "
              f"(HELM's, 4 KB from GitHub) and ${clip.SETTING}=openai/clip-vit-large-patch14, with the hf extra; "
              "not available, never 0")
MARK = "aesthetics_images"


def _not_available(columns: dict[str, Any], n: int) -> float:
    return math.nan


@lru_cache(maxsize=4)
def load_head(path: str) -> Any:
    """The ``nn.Linear(D, 1)`` the file holds, read as tensors only."""
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a file torch cannot read as tensors
        raise MetricError(f"${SETTING}={path!r}: not a saved state dict ({type(exc).__name__})") from None
    weight = state.get("weight") if isinstance(state, dict) else None
    if weight is None or getattr(weight, "ndim", 0) != 2 or weight.shape[0] != 1 or set(state) != {"weight", "bias"}:
        raise MetricError(f"${SETTING}={path!r}: not a linear head (expected a state dict of weight (1, D) and bias)")
    head = torch.nn.Linear(int(weight.shape[1]), 1)
    head.load_state_dict(state)
    return head.eval()


def _setting() -> str | None:
    from helmflow.settings import settings

    return settings().aesthetics_head or None


FILE = WeightsFile(SETTING, _setting, f"HELM's head: {HELM_HEAD}", load_head)


def configured() -> tuple[tuple[str, str | None], Path] | None:
    """(the CLIP checkpoint, the head file), None when the head is not set (one line when unusable)."""
    path = FILE.configured()
    if path is None:
        return None
    where = clip.configured()
    if where is None:
        raise MetricError(f"${SETTING} is set but the aesthetics head needs a CLIP model too: set ${clip.SETTING} "
                          f"(HELM's: openai/clip-vit-large-patch14)")
    return where, path


def _check(instance: Instance) -> None:
    from helmflow.settings import settings

    _checked(_setting(), settings().clip_model)


@lru_cache(maxsize=8)
def _checked(head: str | None, model: str | None) -> None:
    configured()


def _weights() -> str:
    """The CLIP checkpoint and the head (HELM's, or a file's sha256) in the metric's version."""
    digest = FILE.sha256()
    if digest is None:
        return "none"
    return f"{clip._weights()}+{'helm' if digest == HELM_HEAD_SHA256 else digest[:16]}"


def crop_box(width: int, height: int, side: int) -> tuple[int, int, int, int]:
    """torchvision's ``CenterCrop(side)`` box: offsets ``int(round((size - side) / 2))``."""
    left, top = int(round((width - side) / 2.0)), int(round((height - side) / 2.0))
    return left, top, left + side, top + side


def preprocess(data: bytes, side: int) -> np.ndarray:
    """The ``clip`` package's transform of an image for a ``side``-pixel CLIP, as (3, side, side) float32."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as opened:
        img = opened.convert("RGB")
        w, h = img.size
        short, long = (w, h) if w <= h else (h, w)
        new_long = int(side * long / short)
        size = (side, new_long) if w <= h else (new_long, side)
        if size != (w, h):
            img = img.resize(size, Image.Resampling.BICUBIC)
        pixels = np.asarray(img.crop(crop_box(*size, side)), dtype=np.float32) / np.float32(255.0)
    return ((pixels - MEAN) / STD).transpose(2, 0, 1)


def aesthetics_scores(model: Any, head: Any, images: list[bytes]) -> list[float]:
    """The head's score of each image's L2-normalised CLIP image embedding."""
    import torch

    if not images:
        return []
    side = int(model.config.vision_config.image_size)
    dim = int(model.config.projection_dim)
    if head.in_features != dim:
        raise MetricError(f"${SETTING}: the head takes {head.in_features}-dimensional embeddings but the CLIP model "
                          f"gives {dim} (HELM's head is for openai/clip-vit-large-patch14)")
    pixels = torch.from_numpy(np.stack([preprocess(d, side) for d in images]))
    with torch.no_grad():
        features = clip._embedding(model.get_image_features(pixel_values=pixels))
        features = features / features.norm(dim=-1, keepdim=True)
        return [float(s) for s in head(features.float())[:, 0]]


@metric("aesthetics", version=VERSION, check=_check, varies=_weights, pooled=tuple(
    Pooled(name, (MARK,), _not_available, unavailable=(MARK, NO_WEIGHTS), bootstrap=False)
    for name in ("expected_aesthetics_score", "max_aesthetics_score")))
def aesthetics(x: MetricInput) -> dict[str, float]:
    images = image_bytes(x)
    if not images:
        return {}
    where = configured()
    if where is None:
        return {MARK: float(len(images))}
    model, _ = clip.scorer(where[0])
    scores = aesthetics_scores(model, load_head(str(where[1])), [d for d in images if not is_blacked_out(rgb(d))])
    return {
        MARK: float(len(images)),
        "expected_aesthetics_score": fmean(scores) if scores else 0.0,
        "max_aesthetics_score": max(scores) if scores else 0.0,
    }
