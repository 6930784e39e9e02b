"""MS-SSIM against the reference image (HEIM MS-COCO, weight-free): HELM's
``MultiScaleStructuralSimilarityIndexMeasureMetric``.

HELM resizes every generated image and the reference to 256x256 (bilinear), scales to [0, 1] and asks
torchmetrics' ``MultiScaleStructuralSimilarityIndexMeasure()`` for the mean over the (image, reference)
pairs: at each of five scales (2x2 average pooling between them) the SSIM terms over 11x11 Gaussian
windows (sigma 1.5, the image reflected at its edges), ``c1 = (0.01 R)^2``, ``c2 = (0.03 R)^2`` with R the
larger value range of the two stacks at that scale; the contrast-structure term ``(2 sigma_xy + c2) /
(sigma_x^2 + sigma_y^2 + c2)`` averaged over the windows wholly inside the image at the first four
scales, the whole SSIM map averaged at the last, each clipped at 0 (``normalize="relu"``) and raised
to the weights 0.0448, 0.2856, 0.3001, 0.2363, 0.1333, then multiplied. That is
``expected_multi_scale_ssim_score``. Inputs are float32, as torchmetrics'; the Gaussian sums are
accumulated in double (scipy), so flat regions, where torch's float32 convolution leaves rounding noise
of about 1e-7 in the variances against ``c2`` of 9e-4, agree with torchmetrics 1.9 to about 5e-4 (HELM
pins ~=0.11.1); textured images agree to 1e-5.

Library: numpy and scipy; no weights.
"""

from __future__ import annotations

import math

import numpy as np

from helmflow.metrics import MetricInput, metric
from helmflow.metrics.generated_images import reference_pairs
from helmflow.metrics.uiqi import local_mean

VERSION = "1"
BETAS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)
K1, K2 = 0.01, 0.03


def _ssim_and_cs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: the mean SSIM over the whole (reflect-padded) map and the mean contrast-structure term
    over the windows inside the image."""
    data_range = max(float(x.max() - x.min()), float(y.max() - y.min()))
    c1, c2 = np.float32((K1 * data_range) ** 2), np.float32((K2 * data_range) ** 2)
    mu_x, mu_y = local_mean(x, crop=False), local_mean(y, crop=False)
    mu_x2, mu_y2, mu_xy = mu_x * mu_x, mu_y * mu_y, mu_x * mu_y
    sigma_x2 = np.maximum(local_mean(x * x, crop=False) - mu_x2, 0)
    sigma_y2 = np.maximum(local_mean(y * y, crop=False) - mu_y2, 0)
    sigma_xy = local_mean(x * y, crop=False) - mu_xy
    upper = 2 * sigma_xy + c2
    lower = sigma_x2 + sigma_y2 + c2
    ssim = ((2 * mu_xy + c1) * upper) / ((mu_x2 + mu_y2 + c1) * lower)
    cs = (upper / lower)[..., 5:-5, 5:-5]
    n = x.shape[0]
    return ssim.reshape(n, -1).mean(-1, dtype=np.float64), cs.reshape(n, -1).mean(-1, dtype=np.float64)


def _pool(images: np.ndarray) -> np.ndarray:
    """torch's ``avg_pool2d(2)``: means of 2x2 blocks, an odd last row or column dropped."""
    h, w = images.shape[-2] // 2 * 2, images.shape[-1] // 2 * 2
    x = images[..., :h, :w]
    return ((x[..., 0::2, 0::2] + x[..., 1::2, 0::2] + x[..., 0::2, 1::2] + x[..., 1::2, 1::2]) / 4).astype(np.float32)


def multi_scale_ssim(generated: np.ndarray, reference: np.ndarray) -> float:
    x, y = generated.astype(np.float32), reference.astype(np.float32)
    terms = []
    for scale in range(len(BETAS)):
        ssim, cs = _ssim_and_cs(x, y)
        terms.append(np.maximum(ssim if scale == len(BETAS) - 1 else cs, 0))
        x, y = _pool(x), _pool(y)
    per_pair = np.prod([t ** b for t, b in zip(terms, BETAS, strict=True)], axis=0)
    return float(per_pair.mean())


@metric("multi_scale_ssim", version=VERSION, requires=("numpy", "scipy"))
def multi_scale_ssim_metric(x: MetricInput) -> dict[str, float]:
    pairs = reference_pairs(x)
    if pairs is None:
        return {}
    score = multi_scale_ssim(*pairs)
    return {"expected_multi_scale_ssim_score": score} if math.isfinite(score) else {}
