"""Fractal dimension (HEIM aesthetics, weight-free): HELM's ``FractalDimensionMetric``.

Each generated image's box-counting (Minkowski-Bouligand) dimension, as HELM's
``compute_fractal_dimension`` computes it: the grey image (OpenCV's conversion) scaled to [0, 1],
pixels below 0.2 set, boxes of sides 2^n down to 4 (2^n the largest power of two not over the shorter
side) counted when neither empty nor full, and the dimension the negated slope of log(count) against
log(side) fitted by least squares. The stat ``fractal_dimension_loss`` is the mean over the images of
``|dimension - 1.4|`` (1.4: what people prefer, Spehar et al. 2003); an image whose fit is undefined
(a box count of 0) is left out, and an instance with none has no stat.

Library: numpy (and Pillow to decode); no weights.
"""

from __future__ import annotations

import math
from statistics import fmean

import numpy as np

from helmflow.metrics import MetricInput, metric
from helmflow.metrics.generated_images import gray, image_bytes, rgb

IDEAL_FRACTAL_DIMENSION = 1.4
THRESHOLD = 0.2
VERSION = "1"


def fractal_dimension(pixels: np.ndarray) -> float:
    """The box-counting dimension of an RGB image (NaN when a box count is 0)."""
    z = (gray(pixels) / 255.0) < THRESHOLD
    p = min(z.shape)
    n = int(np.log(2 ** np.floor(np.log(p) / np.log(2))) / np.log(2))
    sizes = 2 ** np.arange(n, 1, -1)
    counts = []
    for k in sizes:
        s = np.add.reduceat(np.add.reduceat(z.astype(np.int64), np.arange(0, z.shape[0], k), axis=0),
                            np.arange(0, z.shape[1], k), axis=1)
        counts.append(len(np.where((s > 0) & (s < k * k))[0]))
    if len(sizes) < 2 or min(counts) == 0:
        return math.nan
    return float(-np.polyfit(np.log(sizes), np.log(counts), 1)[0])


@metric("fractal_dimension", version=VERSION, requires=("numpy",))
def fractal_dimension_metric(x: MetricInput) -> dict[str, float]:
    dims = [fractal_dimension(rgb(data)) for data in image_bytes(x)]
    losses = [abs(d - IDEAL_FRACTAL_DIMENSION) for d in dims if not math.isnan(d)]
    return {"fractal_dimension_loss": fmean(losses)} if losses else {}
