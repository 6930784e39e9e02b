"""LAION's watermark detector with random weights saved here (nothing downloaded): the network takes timm's
efficientnet_b3 state dict with LAION's classifier key for key (its shapes and size are timm's), each image is
read as HELM's torchvision transforms read it, and a watermark is a probability of at least 0.9."""

from __future__ import annotations

import io

import numpy as np
import pytest

from helmflow.errors import MetricError


@pytest.fixture(scope="module")
def detector_file(tmp_path_factory):
    import torch

    from helmflow.metrics.watermark import build_detector

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("watermark") / "watermark_model_v1.pt"
    torch.save(build_detector().state_dict(), path)
    return path


def test_the_detector_takes_timms_efficientnet_b3_with_laions_classifier(detector_file):
    from helmflow.metrics.watermark import load_detector

    model = load_detector(str(detector_file))
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    # timm 1.0.31's efficientnet_b3 (num_classes=2) has 10,699,306 parameters, 3,074 of them its classifier;
    # LAION's classifier has 1536*625+625 + 625*256+256 + 256*2+2 = 1,121,395
    assert sum(p.numel() for p in model.parameters()) == 10_699_306 - 3_074 + 1_121_395
    assert shapes["conv_stem.weight"] == (40, 3, 3, 3) and shapes["conv_head.weight"] == (1536, 384, 1, 1)
    assert shapes["blocks.0.0.se.conv_reduce.weight"] == (10, 40, 1, 1)  # depthwise-separable: no expansion
    assert shapes["blocks.5.5.conv_dw.weight"] == (1392, 1, 5, 5) and shapes["blocks.6.1.se.conv_reduce.weight"] == (
        96, 2304, 1, 1)
    assert shapes["classifier.0.weight"] == (625, 1536) and shapes["classifier.5.weight"] == (2, 256)
    assert "blocks.0.0.bn1.num_batches_tracked" in shapes and "blocks.6.2.conv_pw.weight" not in shapes


def test_each_image_is_read_as_helms_transforms_read_it_and_scored_by_the_softmax(detector_file):
    import torch
    from PIL import Image

    from helmflow.metrics.watermark import has_watermark, load_detector, watermark_probs

    model = load_detector(str(detector_file))
    rng = np.random.default_rng(0)
    images = []
    for shape in ((300, 200, 3), (256, 256, 3)):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8)).save(buf, format="PNG")
        images.append(buf.getvalue())
    batch = []
    for data in images:  # Resize((256, 256)) (Pillow's bilinear), ToTensor(), Normalize(ImageNet's mean and std)
        with Image.open(io.BytesIO(data)) as img:
            small = np.asarray(img.convert("RGB").resize((256, 256), Image.Resampling.BILINEAR), np.float32) / 255
        batch.append(((small - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]).astype(np.float32).transpose(2, 0, 1))
    with torch.no_grad():
        expected = torch.softmax(model(torch.from_numpy(np.stack(batch))), dim=1)[:, 0].tolist()
    assert watermark_probs(model, images) == pytest.approx(expected, abs=1e-6)
    assert has_watermark(0.9) and not has_watermark(0.8999)  # HELM's threshold, not LAION's example's 0.5


def test_a_watermark_setting_that_cannot_be_used_is_one_line(detector_file, tmp_path, monkeypatch):
    import torch

    from helmflow.metrics.watermark import _weights, configured, load_detector

    monkeypatch.setenv("HELMFLOW_WATERMARK_MODEL", str(tmp_path / "missing.pt"))
    with pytest.raises(MetricError, match=r"no such file \(LAION's detector: https://github.com/LAION-AI"):
        configured()
    torch.save({"weight": torch.zeros(1, 768), "bias": torch.zeros(1)}, tmp_path / "head.pth")
    with pytest.raises(MetricError, match="not LAION's watermark detector"):
        load_detector(str(tmp_path / "head.pth"))
    monkeypatch.setenv("HELMFLOW_WATERMARK_MODEL", str(detector_file))
    assert configured() == detector_file.resolve()
    assert _weights() == __import__("hashlib").sha256(detector_file.read_bytes()).hexdigest()[:16]
