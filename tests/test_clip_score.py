"""CLIPScore with a tiny CLIP built here (2-layer towers, a CLIP BPE and image processor written in the test,
nothing downloaded), loaded from its folder through ``$HELMFLOW_CLIP_MODEL`` as a user points at a checkpoint:
the score equals CLIP's own forward pass (``logits_per_image`` over the logit scale) and torchmetrics' CLIPScore,
HELM's scorer, and `helmflow run heim` publishes it in the alignment table."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from helmflow.clients.offline_image import draw
from helmflow.errors import MetricError
from helmflow.metrics.clip_score import PROMPT_TOKENS, checkpoint, clip_scores, scorer, truncate
from helmflow.metrics.generated_images import rgb
from tests.support.cli import run_cli

PROMPTS = ["a blue square and a green triangle", "a yellow star", "a red circle"]


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    from tests.support.tiny_hf import build_tiny_clip

    return build_tiny_clip(tmp_path_factory.mktemp("clip") / "tiny-clip")


def to_tensor(data: bytes):
    """torchvision's ToTensor() of the RGB image, as HELM hands images to torchmetrics."""
    import torch
    return torch.from_numpy(rgb(data).transpose(2, 0, 1).copy()).float() / 255


def by_forward_pass(model, processor, prompt: str, images: list[bytes]) -> list[float]:
    """max(100 cos, 0) from CLIPModel's forward pass: logits_per_image is exp(logit_scale) * cos."""
    import torch
    inputs = processor(text=[prompt], images=[to_tensor(d) for d in images], return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model(**inputs)
        cos = out.logits_per_image[:, 0] / model.logit_scale.exp()
    return [max(100 * float(c), 0.0) for c in cos]


def test_clip_score_is_100_max_cos_0_as_clip_and_torchmetrics_compute_it(tiny_clip):
    import torch
    model, processor = scorer(checkpoint(str(tiny_clip)))
    scored = {p: clip_scores(model, processor, p, [draw(p, i, 64, 48) for i in range(2)]) for p in PROMPTS}
    for prompt, scores in scored.items():
        assert scores == pytest.approx(by_forward_pass(model, processor, prompt, [draw(prompt, i, 64, 48)
                                                                                  for i in range(2)]), abs=1e-4)
    assert scored[PROMPTS[0]][0] > 20 and scored[PROMPTS[2]] == [0.0, 0.0]  # a negative cosine scores 0

    tm = pytest.importorskip("torchmetrics.multimodal")

    class Features(torch.nn.Module):  # transformers 5 returns model outputs; torchmetrics wants the embeddings
        def __init__(self):
            super().__init__()
            self.clip, self.config = model, model.config

        def get_image_features(self, pixel_values):
            return self.clip.get_image_features(pixel_values=pixel_values).pooler_output

        def get_text_features(self, input_ids, attention_mask):
            return self.clip.get_text_features(input_ids=input_ids, attention_mask=attention_mask).pooler_output

    metric = tm.CLIPScore(model_name_or_path=lambda: (Features(), processor))
    for prompt, scores in scored.items():  # HELM's CLIPScorer: one image and its caption a call
        assert [float(metric(to_tensor(draw(prompt, i, 64, 48)), prompt).detach()) for i in range(2)] == pytest.approx(
            scores, abs=1e-4)


def test_gender_classes_an_image_female_when_it_scores_higher_against_the_female_caption(tiny_clip):
    from helmflow.metrics.gender import female

    model, processor = scorer(checkpoint(str(tiny_clip)))
    images = [draw(p, i, 64, 48) for p in PROMPTS for i in range(2)]
    hand = [f > m for f, m in zip(by_forward_pass(model, processor, "a photo of a female", images),
                                  by_forward_pass(model, processor, "a photo of a male", images), strict=True)]
    assert female(model, processor, images) == hand and female(model, processor, []) == []


def test_the_prompt_is_cut_to_75_tokens_as_helm_s_clip_window_does(tiny_clip):
    _, processor = scorer(checkpoint(str(tiny_clip)))
    tok = processor.tokenizer
    long = "A Red circle beside a blue square " * 5
    cut = truncate(tok, long)
    assert len(tok.encode(long, add_special_tokens=False)) > PROMPT_TOKENS
    assert len(tok.encode(cut, add_special_tokens=False)) == PROMPT_TOKENS  # 77 with <|startoftext|>, <|endoftext|>
    assert " ".join(long.lower().split()).startswith(cut)
    assert truncate(tok, "A Red  Circle") == "a red circle"  # decoded as HELM decodes it: CLIP's normalised text


def test_a_clip_model_setting_that_names_no_checkpoint_is_one_line(tmp_path):
    with pytest.raises(MetricError, match="no such checkpoint folder"):
        checkpoint(str(tmp_path / "missing"))
    with pytest.raises(MetricError, match="expected a Hub id"):
        checkpoint("clip-vit-large-patch14")
    assert checkpoint("openai/clip-vit-large-patch14") == ("openai/clip-vit-large-patch14",
                                                           "32bd64288804d66eefd0ccbe215aa642df71cc41")
    assert checkpoint("openai/clip-vit-base-patch32@abc") == ("openai/clip-vit-base-patch32", "abc")
    out = run_cli("run", "heim", "--models", "offline/draw", "--scenarios", "logos", "--storage", str(tmp_path / "s"),
                  env={"HELMFLOW_CLIP_MODEL": str(tmp_path / "missing")})
    assert out.returncode == 2 and not (tmp_path / "s").exists(), out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [f"helmflow: error: $HELMFLOW_CLIP_MODEL='{tmp_path / 'missing'}': "
                                               "no such checkpoint folder"]


@pytest.mark.slow
def test_helmflow_run_heim_publishes_clip_score_from_the_checkpoint_folder(tmp_path, prefect_server, tiny_clip):
    storage = tmp_path / "store"
    out = run_cli("run", "heim", "--models", "offline/draw", "--scenarios", "daily_dalle,mental_disorders",
                  "--max-instances", "2",
                  "--storage", str(storage), env={"HELMFLOW_CLIP_MODEL": str(tiny_clip)}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/heim/latest-subset.json").read_text())
    runs = {r["scenario"]: r for r in pq.read_table(f"{latest['uri']}/runs.parquet").to_pylist()}
    folder = storage / "runs" / runs["daily_dalle"]["run_id"]
    prompts = {r["request_hash"]: r["prompt"] for r in pq.read_table(folder / "requests.parquet").to_pylist()}
    model, processor = scorer(checkpoint(str(tiny_clip)))
    tok = processor.tokenizer
    expected: dict[str, list[float]] = {}
    for c in pq.read_table(folder / "completions.parquet").to_pylist():
        prompt = prompts[c["request_hash"]]
        cut = tok.decode(tok.encode(prompt, add_special_tokens=False)[:PROMPT_TOKENS])  # the tiny BPE: ~1 token a char
        images = [(storage / "media" / f"{p['sha256']}.png").read_bytes() for p in c["images"]]
        assert len(images) == 4
        expected.setdefault(c["instance_id"], []).extend(by_forward_pass(model, processor, cut, images))
    assert any(len(p) > PROMPT_TOKENS for p in prompts.values())  # daily_dalle's prompts are cut
    stats = pq.read_table(folder / "stats.parquet").to_pylist()
    got = {(s["instance_id"], s["name"]): s["value"] for s in stats}
    for instance, scores in expected.items():
        assert got[(instance, "expected_clip_score")] == pytest.approx(np.mean(scores), abs=1e-4)
        assert got[(instance, "max_clip_score")] == pytest.approx(max(scores), abs=1e-4)
    row = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()[0]
    assert row["daily_dalle/expected_clip_score"] == pytest.approx(np.mean([np.mean(s) for s in expected.values()]),
                                                                  abs=1e-4)
    # gender imbalance on mental_disorders' eight images a prompt, by the same checkpoint
    from helmflow.metrics.gender import female

    folder = storage / "runs" / runs["mental_disorders"]["run_id"]
    imbalance = {}
    for c in pq.read_table(folder / "completions.parquet").to_pylist():
        images = [(storage / "media" / f"{p['sha256']}.png").read_bytes() for p in c["images"]]
        assert len(images) == 8
        imbalance[c["instance_id"]] = abs(np.mean(female(model, processor, images)) - 0.5)
    got = {s["instance_id"]: s["value"] for s in pq.read_table(folder / "stats.parquet").to_pylist()
           if s["name"] == "gender_imbalance"}
    assert got == pytest.approx(imbalance)
    assert row["mental_disorders/gender_imbalance"] == pytest.approx(np.mean(list(imbalance.values())))
