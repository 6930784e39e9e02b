"""LAION aesthetics on a tiny CLIP and a random linear head saved here (nothing downloaded): the score is the
head on CLIP's own normalised image embedding of the image as the ``clip`` package preprocesses it, and a head
setting that cannot be used stops the run with one line before any request."""

from __future__ import annotations

import io

import numpy as np
import pytest

from helmflow.clients.offline_image import draw
from helmflow.errors import MetricError
from helmflow.metrics.aesthetics import HELM_HEAD_SHA256, MEAN, STD, aesthetics_scores, crop_box, load_head, preprocess
from helmflow.metrics.clip_score import checkpoint, scorer
from tests.support.cli import run_cli


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import torch

    from tests.support.tiny_hf import build_tiny_clip

    folder = tmp_path_factory.mktemp("aesthetics")
    clip = build_tiny_clip(folder / "tiny-clip")
    torch.manual_seed(1)
    head = torch.nn.Linear(16, 1)  # the tiny CLIP's 16-dimensional embedding, as HELM's head takes ViT-L/14's 768
    torch.save(head.state_dict(), folder / "head.pth")
    return clip, folder / "head.pth"


def test_the_score_is_the_head_on_clips_normalised_image_embedding(tiny):
    import torch
    clip, head_path = tiny
    model, processor = scorer(checkpoint(str(clip)))
    head = load_head(str(head_path))
    # square images: CLIP's own processor resizes (Pillow bicubic) and crops (nothing to crop) as the clip package
    images = [draw(p, i, 48, 48) for p in ("a red circle", "a man and a blue square") for i in range(2)]
    pixels = processor(images=[_pil(d) for d in images], return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        embeds = model(pixel_values=pixels, input_ids=torch.tensor([[0]])).image_embeds  # CLIP normalises them
        by_hand = (embeds @ head.weight.T + head.bias)[:, 0].tolist()
    got = aesthetics_scores(model, head, images)
    assert got == pytest.approx(by_hand, abs=1e-5)
    assert len(set(got)) == 4  # each image its own score


def test_the_centre_crop_rounds_its_offsets_as_torchvision_does():
    # 64x40 -> shorter side 32: 51x32 (int(32 * 64 / 40)); torchvision crops from round(19 / 2) = 10, not 19 // 2 = 9
    assert crop_box(51, 32, 32) == (10, 0, 42, 32)
    assert crop_box(32, 35, 32) == (0, 2, 32, 34)  # round(1.5) = 2
    from PIL import Image

    img = Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 64, 3), dtype=np.uint8))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    small = img.resize((51, 32), Image.Resampling.BICUBIC).crop((10, 0, 42, 32))
    expected = ((np.asarray(small, np.float32) / 255 - MEAN) / STD).transpose(2, 0, 1)
    assert np.array_equal(preprocess(buf.getvalue(), 32), expected)


def test_a_head_setting_that_cannot_be_used_is_one_line(tiny, tmp_path, monkeypatch):
    import torch

    from helmflow.metrics.aesthetics import _weights, configured

    clip, head_path = tiny
    bad = tmp_path / "bad.pth"
    torch.save({"weight": torch.zeros(2, 16), "bias": torch.zeros(2)}, bad)
    with pytest.raises(MetricError, match="not a linear head"):
        load_head(str(bad))
    (tmp_path / "text.pth").write_text("not tensors")
    with pytest.raises(MetricError, match="not a saved state dict"):
        load_head(str(tmp_path / "text.pth"))
    monkeypatch.setenv("HELMFLOW_AESTHETICS_HEAD", str(head_path))
    monkeypatch.delenv("HELMFLOW_CLIP_MODEL", raising=False)
    with pytest.raises(MetricError, match="needs a CLIP model too"):
        configured()
    monkeypatch.setenv("HELMFLOW_CLIP_MODEL", str(clip))
    assert configured() == (checkpoint(str(clip)), head_path.resolve())
    version = _weights()  # the head's sha256 is part of the metric's version: another head scores the runs again
    assert version.endswith(__import__("hashlib").sha256(head_path.read_bytes()).hexdigest()[:16])
    assert HELM_HEAD_SHA256[:16] not in version
    out = run_cli("run", "heim", "--models", "offline/draw", "--scenarios", "logos", "--storage", str(tmp_path / "s"),
                  env={"HELMFLOW_AESTHETICS_HEAD": str(tmp_path / "missing.pth")})
    assert out.returncode == 2 and not (tmp_path / "s").exists(), out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [
        f"helmflow: error: $HELMFLOW_AESTHETICS_HEAD='{tmp_path / 'missing.pth'}': no such file (HELM's head: "
        "https://github.com/LAION-AI/aesthetic-predictor/raw/6d122adad522ab246644d9dc1c6d7a3810ee255f/"
        "sa_0_4_vit_l_14_linear.pth)"]


def _pil(data: bytes):
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        return img.convert("RGB")
