"""PSNR against the reference image (HEIM MS-COCO, weight-free): HELM's ``PeakSignalToNoiseRatioMetric``.

HELM resizes every generated image and the reference to 256x256 (torchvision, bilinear), scales them to
[0, 1] and asks torchmetrics' ``PeakSignalNoiseRatio()`` (no ``data_range``) for one number over the
stack of (generated, reference) pairs: ``10 log10(R^2 / MSE)``, R the reference stack's max minus min
and MSE over every pixel of every pair. That is ``expected_psnr_score``; an instance without images
or a reference has none (a perfect copy, MSE 0, is infinite and left out).

Library: numpy; no weights (torchmetrics is the reference the tests compare against).
"""

from __future__ import annotations

import math

import numpy as np

from helmflow.metrics import MetricInput, metric
from helmflow.metrics.generated_images import reference_pairs

VERSION = "1"


def psnr(generated: np.ndarray, reference: np.ndarray) -> float:
    data_range = float(reference.max()) - float(reference.min())
    mse = float(np.mean((generated.astype(np.float64) - reference.astype(np.float64)) ** 2))
    return 10 * math.log10(data_range**2 / mse) if mse > 0 and data_range > 0 else math.inf


@metric("psnr", version=VERSION, requires=("numpy",))
def psnr_metric(x: MetricInput) -> dict[str, float]:
    pairs = reference_pairs(x)
    if pairs is None:
        return {}
    score = psnr(*pairs)
    return {"expected_psnr_score": score} if math.isfinite(score) else {}
