"""UIQI against the reference image (HEIM MS-COCO, weight-free): HELM's ``UniversalImageQualityIndexMetric``.

HELM resizes every generated image and the reference to 256x256 (bilinear), scales to [0, 1] and asks
torchmetrics' ``UniversalImageQualityIndex()`` (the version HELM pins, ~=0.11.1): per channel, 11x11
Gaussian windows (sigma 1.5) give local means, variances and covariance, and the index
``4 mu_xy sigma_xy / ((mu_x^2 + mu_y^2)(sigma_x^2 + sigma_y^2 + eps))`` (eps: float32's, in the
variance term only, variances not clamped) is averaged over the windows lying wholly inside the image,
every channel and every pair. That is ``expected_uiqi_score``; HELM drops a NaN or infinite score, so
does this. Computed in float32, as torchmetrics does.

Library: numpy and scipy (the separable Gaussian filter); no weights.
"""

from __future__ import annotations

import math

import numpy as np

from helmflow.metrics import MetricInput, metric
from helmflow.metrics.generated_images import reference_pairs

VERSION = "1"
KERNEL, SIGMA = 11, 1.5


def gaussian_window(size: int = KERNEL, sigma: float = SIGMA) -> np.ndarray:
    """torchmetrics' 1-D Gaussian (float32, normalised)."""
    dist = np.arange((1 - size) / 2, (1 + size) / 2, 1, dtype=np.float32)
    gauss = np.exp(-((dist / np.float32(sigma)) ** 2) / 2).astype(np.float32)
    return gauss / gauss.sum()


def local_mean(images: np.ndarray, size: int = KERNEL, sigma: float = SIGMA, crop: bool = True) -> np.ndarray:
    """The Gaussian-weighted mean around every pixel of the last two axes, the image reflected at its edges
    (torch's ``reflect`` padding: scipy's ``mirror``); ``crop``: only the windows wholly inside the image."""
    from scipy.ndimage import correlate1d

    g = gaussian_window(size, sigma)
    pad = (size - 1) // 2
    out = correlate1d(correlate1d(images, g, axis=-1, mode="mirror"), g, axis=-2, mode="mirror")
    return out[..., pad:-pad, pad:-pad] if crop else out


def uiqi(generated: np.ndarray, reference: np.ndarray) -> float:
    x, y = generated.astype(np.float32), reference.astype(np.float32)
    mu_x, mu_y = local_mean(x), local_mean(y)
    mu_x2, mu_y2, mu_xy = mu_x * mu_x, mu_y * mu_y, mu_x * mu_y
    sigma_x2 = local_mean(x * x) - mu_x2
    sigma_y2 = local_mean(y * y) - mu_y2
    sigma_xy = local_mean(x * y) - mu_xy
    lower = sigma_x2 + sigma_y2 + np.finfo(np.float32).eps
    with np.errstate(divide="ignore", invalid="ignore"):
        index = ((2 * mu_xy) * (2 * sigma_xy)) / ((mu_x2 + mu_y2) * lower)
    return float(np.mean(index, dtype=np.float64))


@metric("uiqi", version=VERSION, requires=("numpy", "scipy"))
def uiqi_metric(x: MetricInput) -> dict[str, float]:
    pairs = reference_pairs(x)
    if pairs is None:
        return {}
    score = uiqi(*pairs)
    return {"expected_uiqi_score": score} if math.isfinite(score) else {}
