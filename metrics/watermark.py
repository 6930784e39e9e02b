"""Watermarks (HEIM originality): LAION's watermark detector on each image, as HELM's ``WatermarkMetric``.

HELM's ``WatermarkDetector`` (LAION-5B-WatermarkDetection): timm's ``efficientnet_b3a`` (timm maps the name to
``efficientnet_b3``) whose classifier is replaced by ``Linear(1536, 625), ReLU, Dropout(0.3), Linear(625, 256),
ReLU, Linear(256, 2)``, loaded from LAION's ``watermark_model_v1.pt``. Each image is converted to RGB, resized to
256x256 (torchvision's ``Resize((256, 256))``: Pillow's bilinear resize), scaled to [0, 1] and normalised by
ImageNet's mean and std; the softmax of the model's two outputs is ``(watermark, clear)``. An image has a
watermark when its watermark probability is at least 0.9 (HELM's threshold: LAION's example used 0.5, and
text in an image passed for a watermark). Per prompt, ``watermark_frac`` (lower is better) is the share of
its images with one and ``expected_max_watermark_prob`` the largest probability.

timm imports torchvision, which does not install beside every torch build, so the network is written out
here with timm's module names, so LAION's state dict loads into it as it is (every key, strictly): the stem,
seven stages of depthwise-separable and inverted-residual blocks with squeeze-excitation (SiLU, batch norm
eps 1e-5, symmetric padding), the 1536-channel head, average pooling and LAION's classifier.

The weights are the file ``$HELMFLOW_WATERMARK_MODEL`` names, read with ``torch.load(weights_only=True)``
(tensors only); its sha256 is part of the metric's version. Unset, the metric records ``watermark_images``
only and both numbers are not available, never 0; a file that is missing or is not such a state dict stops
the run with one line before any request.

Library: torch (installed for the ``hf`` or ``heim`` extra), loaded when the metric first scores an image.
"""

from __future__ import annotations

import io
import math
from functools import lru_cache
from statistics import fmean
from typing import Any

import numpy as np

from helmflow.errors import MetricError
from helmflow.metrics import MetricInput, Pooled, metric
from helmflow.metrics.generated_images import image_bytes
from helmflow.metrics.weights_file import WeightsFile

VERSION = "1"
SETTING = "HELMFLOW_WATERMARK_MODEL"
#: LAION's weights, where HELM downloads them (the repository at the commit helmflow names)
LAION_MODEL = ("https://github.com/LAION-AI/LAION-5B-WatermarkDetection/raw/d8786e32b8a46bd1c254826dae51f54ab5b1e9e4/"
               "models/watermark_model_v1.pt")
#: HELM's threshold on the watermark probability
THRESHOLD = 0.9
SIDE = 256
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
#: timm's efficientnet_b3 stages: (inverted residual?, blocks, kernel, first stride, output channels)
STAGES = ((False, 2, 3, 1, 24), (True, 3, 3, 2, 32), (True, 3, 5, 2, 48), (True, 5, 3, 2, 96),
          (True, 5, 5, 1, 136), (True, 6, 5, 2, 232), (True, 2, 3, 1, 384))
STEM, HEAD, EXPANSION = 40, 1536, 6
NO_WEIGHTS = (f"needs LAION's watermark detector: set ${SETTING} to watermark_model_v1.pt ({LAION_MODEL}); "
              "not available, never 0")
MARK = "watermark_images"


def _not_available(columns: dict[str, Any], n: int) -> float:
    return math.nan


def build_detector() -> Any:
    """The detector's network (random weights until a state dict is loaded), in eval mode."""
    from torch import nn

    class BatchNormAct(nn.BatchNorm2d):
        """timm's ``BatchNormAct2d``: batch norm (eps 1e-5) then its activation, with batch norm's state keys."""

        def __init__(self, channels: int, act: bool):
            super().__init__(channels)
            self.act = nn.SiLU() if act else nn.Identity()

        def forward(self, x):
            return self.act(super().forward(x))

    def bn_act(channels: int, act: bool = True) -> nn.Module:
        return BatchNormAct(channels, act)

    class SqueezeExcite(nn.Module):
        def __init__(self, channels: int, reduced: int):
            super().__init__()
            self.conv_reduce = nn.Conv2d(channels, reduced, 1)
            self.act1 = nn.SiLU()
            self.conv_expand = nn.Conv2d(reduced, channels, 1)

        def forward(self, x):
            s = self.conv_expand(self.act1(self.conv_reduce(x.mean((2, 3), keepdim=True))))
            return x * s.sigmoid()

    class Block(nn.Module):
        def __init__(self, inverted: bool, cin: int, cout: int, kernel: int, stride: int):
            super().__init__()
            self.inverted, self.skip = inverted, stride == 1 and cin == cout
            mid = cin * EXPANSION if inverted else cin
            if inverted:
                self.conv_pw = nn.Conv2d(cin, mid, 1, bias=False)
                self.bn1 = bn_act(mid)
            dw = nn.Conv2d(mid, mid, kernel, stride, kernel // 2, groups=mid, bias=False)
            se = SqueezeExcite(mid, int(cin * 0.25))
            if inverted:
                self.conv_dw, self.bn2, self.se = dw, bn_act(mid), se
                self.conv_pwl, self.bn3 = nn.Conv2d(mid, cout, 1, bias=False), bn_act(cout, act=False)
            else:
                self.conv_dw, self.bn1, self.se = dw, bn_act(mid), se
                self.conv_pw, self.bn2 = nn.Conv2d(mid, cout, 1, bias=False), bn_act(cout, act=False)

        def forward(self, x):
            if self.inverted:
                y = self.bn3(self.conv_pwl(self.se(self.bn2(self.conv_dw(self.bn1(self.conv_pw(x)))))))
            else:
                y = self.bn2(self.conv_pw(self.se(self.bn1(self.conv_dw(x)))))
            return y + x if self.skip else y

    class Detector(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_stem = nn.Conv2d(3, STEM, 3, 2, 1, bias=False)
            self.bn1 = bn_act(STEM)
            stages, cin = [], STEM
            for inverted, blocks, kernel, stride, cout in STAGES:
                stage = []
                for i in range(blocks):
                    stage.append(Block(inverted, cin, cout, kernel, stride if i == 0 else 1))
                    cin = cout
                stages.append(nn.Sequential(*stage))
            self.blocks = nn.Sequential(*stages)
            self.conv_head = nn.Conv2d(cin, HEAD, 1, bias=False)
            self.bn2 = bn_act(HEAD)
            self.classifier = nn.Sequential(nn.Linear(HEAD, 625), nn.ReLU(), nn.Dropout(p=0.3), nn.Linear(625, 256),
                                            nn.ReLU(), nn.Linear(256, 2))

        def forward(self, x):
            x = self.bn2(self.conv_head(self.blocks(self.bn1(self.conv_stem(x)))))
            return self.classifier(x.mean((2, 3)))

    return Detector().eval()


def _setting() -> str | None:
    from helmflow.settings import settings

    return settings().watermark_model or None



@lru_cache(maxsize=2)
def load_detector(path: str) -> Any:
    """The detector with the file's weights (every key, strictly); one line when the file is not them."""
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a file torch cannot read as tensors
        raise MetricError(f"${SETTING}={path!r}: not a saved state dict ({type(exc).__name__})") from None
    model = build_detector()
    try:
        model.load_state_dict(state)
    except Exception as exc:  # noqa: BLE001 - missing, unexpected or mis-shaped keys
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise MetricError(f"${SETTING}={path!r}: not LAION's watermark detector ({first[:200]})") from None
    return model


#: the setting's file: loaded before any request, its sha256 in the metric's version
FILE = WeightsFile(SETTING, _setting, f"LAION's detector: {LAION_MODEL}", load_detector)
model_file, configured, _check, _weights = FILE.path, FILE.configured, FILE.check, FILE.digest


def preprocess(data: bytes) -> np.ndarray:
    """``Resize((256, 256))``, ``ToTensor()``, ``Normalize`` (ImageNet) of the RGB image: (3, 256, 256) float32."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as opened:
        img = opened.convert("RGB")
        if img.size != (SIDE, SIDE):
            img = img.resize((SIDE, SIDE), Image.Resampling.BILINEAR)
        pixels = np.asarray(img, dtype=np.float32) / np.float32(255.0)
    return ((pixels - MEAN) / STD).transpose(2, 0, 1)


def has_watermark(prob: float) -> bool:
    """HELM's reading of the detector: a watermark probability of at least 0.9."""
    return prob >= THRESHOLD


def watermark_probs(model: Any, images: list[bytes]) -> list[float]:
    """Each image's watermark probability (the first of the softmax of the two outputs), one batch."""
    import torch

    with torch.no_grad():
        pred = model(torch.from_numpy(np.stack([preprocess(d) for d in images])))
        return [float(p[0]) for p in torch.softmax(pred, dim=1)]


@metric("watermark", version=VERSION, check=_check, varies=_weights, pooled=tuple(
    Pooled(name, (MARK,), _not_available, unavailable=(MARK, NO_WEIGHTS), bootstrap=False)
    for name in ("watermark_frac", "expected_max_watermark_prob")))
def watermark(x: MetricInput) -> dict[str, float]:
    images = image_bytes(x)
    if not images:
        return {}
    path = configured()
    if path is None:
        return {MARK: float(len(images))}
    probs = watermark_probs(load_detector(str(path)), images)
    return {MARK: float(len(images)), "watermark_frac": fmean(map(has_watermark, probs)),
            "expected_max_watermark_prob": max(probs)}
