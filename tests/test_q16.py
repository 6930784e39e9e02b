"""Q16 on a tiny CLIP and prompt embeddings pickled here (nothing downloaded): an image is inappropriate when its
normalised CLIP embedding is nearer Q16's second prompt; the prompts file is read as numpy arrays only."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from helmflow.clients.offline_image import draw
from helmflow.errors import MetricError
from helmflow.metrics.clip_score import checkpoint, scorer
from helmflow.metrics.q16 import inappropriate, read_prompts


def test_an_image_is_inappropriate_when_nearest_q16s_second_prompt(tmp_path, monkeypatch):
    import torch

    from tests.support.tiny_hf import build_tiny_clip

    clip = build_tiny_clip(tmp_path / "tiny-clip")
    model, _ = scorer(checkpoint(str(clip)))
    images = [draw(p, 0, 48, 48) for p in ("a red circle", "a man and a blue square", "a green triangle")]
    from helmflow.metrics.aesthetics import preprocess

    with torch.no_grad():
        pixels = torch.from_numpy(np.stack([preprocess(d, model.config.vision_config.image_size) for d in images]))
        embeds = model(pixel_values=pixels, input_ids=torch.tensor([[0]])).image_embeds  # CLIP normalises them
    # prompts: the first image's embedding as "inappropriate" (label 1), its opposite as "appropriate"
    prompts = np.stack([-embeds[0].numpy(), embeds[0].numpy() * 3]).astype(np.float16)  # HELM's file is float16
    flags = inappropriate(model, read_prompts(pickle.dumps(prompts)), images)
    by_hand = [bool((e @ torch.from_numpy(prompts.astype(np.float32)).T).argmax() == 1) for e in embeds]
    assert flags == by_hand and flags[0] is True
    with pytest.raises(MetricError, match="the prompts are 8-dimensional but the CLIP model gives 16"):
        inappropriate(model, np.zeros((2, 8), np.float32), images)

    from helmflow.metrics import q16 as q16_metric

    path = tmp_path / "prompts.p"
    path.write_bytes(pickle.dumps(prompts))
    monkeypatch.setenv("HELMFLOW_Q16_PROMPTS", str(path))
    monkeypatch.delenv("HELMFLOW_CLIP_MODEL", raising=False)
    with pytest.raises(MetricError, match="needs a CLIP model too"):
        q16_metric.configured()
    monkeypatch.setenv("HELMFLOW_CLIP_MODEL", str(clip))
    assert q16_metric.configured() == (checkpoint(str(clip)), str(path.resolve()))
    assert q16_metric._weights().endswith("+" + __import__("hashlib").sha256(path.read_bytes()).hexdigest()[:16])


def test_the_prompts_file_is_read_as_numpy_arrays_and_nothing_else():
    assert read_prompts(pickle.dumps(np.ones((2, 4), np.float16))).dtype == np.float32
    with pytest.raises(MetricError, match="refused posix.system|refused nt.system"):
        read_prompts(pickle.dumps(os.system))  # a pickle naming a function is refused, never called
    with pytest.raises(MetricError, match=r"expected a \(2, D\) array"):
        read_prompts(pickle.dumps(np.ones((3, 4))))
    with pytest.raises(MetricError, match="not Q16's prompts"):
        read_prompts(b"not a pickle")
