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


def reference_bytes(x: MetricInput) -> bytes | None:
    """The first reference image of the instance (HELM's ``get_gold_image_location``), None without one."""
    part = next((r.image for r in x.instance.references if r.image is not None), None)
    return scoring_store().read(part) if part is not None else None


#: HELM's preprocessing before its torchmetrics image comparisons: ``transforms.Resize((256, 256))``
REFERENCE_SIDE = 256


def resized(data: bytes, side: int = REFERENCE_SIDE) -> np.ndarray:
    """torchvision's ``Resize((side, side))`` then ``ToTensor()`` on a PIL image (Pillow's bilinear resize of
    the RGB image, scaled to [0, 1] in float32), as (3, side, side)."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        small = img.convert("RGB").resize((side, side), Image.Resampling.BILINEAR)
    return (np.asarray(small, dtype=np.float32) / np.float32(255.0)).transpose(2, 0, 1)


def reference_pairs(x: MetricInput) -> tuple[np.ndarray, np.ndarray] | None:
    """(generated, reference) stacks of shape (images, 3, 256, 256): each generated image against the
    instance's reference, as HELM pairs them; None without images or a reference."""
    images = image_bytes(x)
    reference = reference_bytes(x) if images else None
    if not images or reference is None:
        return None
    gold = resized(reference)
    return np.stack([resized(d) for d in images]), np.stack([gold] * len(images))
