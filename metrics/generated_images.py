"""What HEIM's image metrics share: the generated images of an instance, as pixels.

Images are read through the media store of the run being scored (each checked against its sha256)
and decoded with Pillow. :func:`gray` converts to grey exactly as OpenCV's ``COLOR_RGB2GRAY`` (and
``cv2.imread(path, 0)``) does for 8-bit images, fixed-point BT.601 weights with rounding, so metrics
HELM computes on OpenCV's grey image get the same pixels without OpenCV.
"""

from __future__ import annotations

import io

import numpy as np

from helmflow.media import scoring_store
from helmflow.metrics.base import MetricInput
from helmflow.records import ContentPart


def image_parts(x: MetricInput) -> list[ContentPart]:
    """The generated images of the instance's successful completions, in order."""
    return [p for c in x.completions if c.ok for p in c.images]


def image_bytes(x: MetricInput) -> list[bytes]:
    media = scoring_store()
    return [media.read(p) for p in image_parts(x)]


def rgb(data: bytes) -> np.ndarray:
    """(height, width, 3) uint8 RGB pixels (alpha dropped, palette images expanded)."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        return np.asarray(img.convert("RGB"), dtype=np.uint8)


def gray(pixels: np.ndarray) -> np.ndarray:
    """OpenCV's 8-bit RGB -> grey: ``(4899 R + 9617 G + 1868 B + 8192) >> 14``."""
    p = pixels.astype(np.int64)
    return ((p[..., 0] * 4899 + p[..., 1] * 9617 + p[..., 2] * 1868 + (1 << 13)) >> 14).astype(np.uint8)


def is_blacked_out(pixels: np.ndarray) -> bool:
    """HELM's ``is_blacked_out_image``: every pixel of the grey image is 0 (a safety filter's black image)."""
    return not gray(pixels).any()
