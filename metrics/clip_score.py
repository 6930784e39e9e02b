"""CLIPScore (HEIM alignment): named on every text-to-image run as not available, with the reason.

HELM's ``CLIPScoreMetric`` scores each image against its prompt with torchmetrics' ``CLIPScore``
(``100 * max(cos, 0)`` of OpenAI's ``clip-vit-large-patch14`` embeddings, the prompt cut to CLIP's 77
tokens): ``expected_clip_score`` (the mean over the images) and ``max_clip_score``. Those need the
CLIP weights (about 1.7 GB) and torch, which the base install has not: both numbers are absent from
every summary with :data:`NO_WEIGHTS` as the reason, never 0. The metric records ``clip_images`` (the
images there were to score) so the cell says why it is empty rather than looking like a failure.

Library: none (a scorer with weights is not shipped).
"""

from __future__ import annotations

import math
from typing import Any

from helmflow.metrics import MetricInput, Pooled, metric
from helmflow.metrics.generated_images import image_parts

VERSION = "1"
NO_WEIGHTS = ("needs CLIP weights (openai/clip-vit-large-patch14, about 1.7 GB) and torch, which helmflow does not "
              "download or ship: not available, never 0")
MARK = "clip_images"


def _not_available(columns: dict[str, Any], n: int) -> float:
    return math.nan


@metric("clip_score", version=VERSION, pooled=tuple(
    Pooled(name, (MARK,), _not_available, unavailable=(MARK, NO_WEIGHTS), bootstrap=False)
    for name in ("expected_clip_score", "max_clip_score")))
def clip_score(x: MetricInput) -> dict[str, float]:
    parts = image_parts(x)
    return {MARK: float(len(parts))} if parts else {}
