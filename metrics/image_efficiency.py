"""Text-to-image efficiency (HEIM): HELM's image ``EfficiencyMetric`` plus seconds per image.

Per instance with images: ``prompt_length`` (characters of the prompt sent, as HELM) and
``num_generated_images``; ``inference_runtime`` (seconds of the request, HELM's basic metric) and
``seconds_per_image`` (that time over the images it returned). HELM's ``denoised_runtime`` needs its
per-model runtime regressions and is not computed (``reproduce --explain`` says so).

Library: none beyond the records.
"""

from __future__ import annotations

from statistics import fmean

from helmflow.metrics import MetricInput, metric
from helmflow.records import body_text

VERSION = "1"


@metric("image_efficiency", version=VERSION)
def image_efficiency(x: MetricInput) -> dict[str, float]:
    done = [(r, c) for r, c in zip(x.requests, x.completions, strict=True) if c.ok and c.images]
    if not done:
        return {}
    images = sum(len(c.images) for _, c in done)
    seconds = sum(c.latency_s for _, c in done)
    return {
        "prompt_length": fmean(len(body_text(r.body)) for r, _ in done),
        "num_generated_images": float(images),
        "inference_runtime": fmean(c.latency_s for _, c in done),
        "seconds_per_image": seconds / images,
    }
