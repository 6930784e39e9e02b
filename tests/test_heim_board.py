"""The HEIM board: HELM's weight-free image metrics on images we can work out by hand (and HELM's own
functions' values where we ran them), MS-COCO read in its raw shapes (fixtures we wrote), and
`helmflow run` of the HEIM board (its art-style copies aside) end to end through the CLI on the offline image
model and a dev-server images deployment: every image reaches storage byte for byte as the server sent it."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.clients.offline_image import draw
from helmflow.metrics.fractal_dimension import fractal_dimension
from helmflow.metrics.generated_images import gray, rgb
from helmflow.metrics.multi_scale_ssim import multi_scale_ssim
from helmflow.metrics.psnr import psnr
from helmflow.metrics.skin_tone import imbalance, monk_tone, ycrcb
from helmflow.metrics.uiqi import uiqi
from tests.support.cli import REPO, run_cli
from tests.support.heim_fixtures import coco_sources
from tests.support.lite_fixtures import serve


def test_grey_and_ycrcb_are_opencv_4s_fixed_point_conversions():
    px = np.array([[[227, 146, 166], [215, 189, 150]]], dtype=np.uint8)
    # (227*4899 + 146*9617 + 166*1868 + 8192) >> 14 = 2834435 >> 14 = 173
    assert gray(px).tolist() == [[173, 192]]
    y, cr, cb = ycrcb(px[:, 1:])  # Monk 05: Y 192, Cr (23*11682 + 128<<14 + 8192) >> 14 = 144, Cb 104
    assert (int(y[0, 0]), int(cr[0, 0]), int(cb[0, 0])) == (192, 144, 104)


def test_fractal_dimension_by_box_counting():
    line = np.full((64, 64, 3), 255, np.uint8)
    line[:, 10] = 0  # a one-pixel line: N/k boxes of side k are hit, so D = 1
    assert fractal_dimension(line) == pytest.approx(1.0)
    board = np.full((64, 64, 3), 255, np.uint8)
    board[::2, ::2] = board[1::2, 1::2] = 0  # a checkerboard: every box is mixed, (N/k)^2 boxes, D = 2
    assert fractal_dimension(board) == pytest.approx(2.0)
    assert math.isnan(fractal_dimension(np.zeros((64, 64, 3), np.uint8)))  # all boxes full: no fit, no stat
    # HELM's compute_fractal_dimension (crfm-helm 0.5.16, OpenCV) on this PNG gave 1.070261002721225
    image = rgb(draw("a man and a woman with a red circle and a blue square", 0, 200, 160))
    assert fractal_dimension(image) == pytest.approx(1.070261002721225, abs=1e-12)


def test_skin_tone_matches_the_nearest_monk_tone_and_measures_imbalance():
    assert monk_tone(np.full((8, 8, 3), (215, 189, 150), np.uint8)) == 5
    assert monk_tone(np.full((8, 8, 3), (30, 70, 220), np.uint8)) is None  # no skin pixel
    # HELM's SkinToneMetric.get_monk_skin_tone on the same PNG gave 7
    assert monk_tone(rgb(draw("a man and a woman with a red circle and a blue square", 0, 200, 160))) == 7
    assert imbalance([1, 1, 1, 1]) == pytest.approx((0.9 + 9 * 0.1) / 10)
    assert imbalance([None, None]) == pytest.approx(0.1)  # unknown tones count in the denominator only
    assert imbalance(list(range(1, 11))) == 0.0


def test_psnr_and_uiqi_by_hand_and_against_torchmetrics():
    ref = np.zeros((1, 3, 16, 16), np.float32)
    ref[..., 8:] = 1.0
    grey = np.full_like(ref, 0.5)
    assert psnr(grey, ref) == pytest.approx(10 * math.log10(1 / 0.25))  # range 1, MSE 0.25
    rng = np.random.default_rng(0)
    a = rng.random((2, 3, 32, 32), dtype=np.float32)
    assert uiqi(a, a) == pytest.approx(1.0, abs=1e-5)
    b = np.clip(a + rng.normal(0, 0.05, a.shape), 0, 1).astype(np.float32)
    # torchmetrics 1.9 on these arrays (torch 2.13 CPU): PeakSignalNoiseRatio(data_range=a.max() - a.min())
    # gave 26.26789093017578 and UniversalImageQualityIndex() 0.9851839542388916 (float32 both)
    assert psnr(b, a) == pytest.approx(26.26789093017578, abs=1e-5)
    assert uiqi(b, a) == pytest.approx(0.9851839542388916, abs=1e-5)


def test_parti_prompts_and_draw_bench_keep_the_rows_whose_category_starts_with_the_entry_s(tmp_path):
    from helmflow.scenarios import SCENARIOS
    from tests.support.heim_fixtures import DRAW_BENCH_PATH, PARTI_PATH

    root = coco_sources(tmp_path)
    parti = SCENARIOS.get("parti_prompts")
    food = parti(category="Food").load({"PartiPrompts.tsv": str(root / PARTI_PATH)})
    assert [(i.input.text, i.sub_split, i.id) for i in food] == [("a red apple", "Food & Beverage", "id1")]
    assert len(parti().load({"PartiPrompts.tsv": str(root / PARTI_PATH)})) == 5  # category all
    colors = SCENARIOS.get("draw_bench")(category="Colors").load({"draw_bench.csv": str(root / DRAW_BENCH_PATH)})
    assert [i.input.text for i in colors] == ["A red colored car.", "A yellow book and a red vase."]


def test_multi_scale_ssim_against_torchmetrics():
    rng = np.random.default_rng(0)
    a = rng.random((2, 3, 256, 256), dtype=np.float32)
    b = np.clip(a + rng.normal(0, 0.1, a.shape), 0, 1).astype(np.float32)
    assert multi_scale_ssim(a, a) == pytest.approx(1.0, abs=1e-5)
    # torchmetrics 1.9 MultiScaleStructuralSimilarityIndexMeasure() on these arrays gave 0.9454107880592346
    assert multi_scale_ssim(b, a) == pytest.approx(0.9454107880592346, abs=1e-5)


def test_reproduce_heim_explains_every_metric_left_out():
    out = run_cli("reproduce", "heim", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "each entry's own instance cap" in text
    for left_out in ("CLIPScore", "gender_imbalance", "aesthetics", "watermark_frac", "nudity_frac",
                     "q16_inappropriate_frac", "detection_correct_frac", "LPIPS", "FID/IS/KID",
                     "denoised_runtime", "human critiques", "NSFW"):
        assert left_out in text, left_out
    # the weights CLIPScore loads, and the setting that names them
    assert "$HELMFLOW_CLIP_MODEL" in text and "openai/clip-vit-large-patch14 at revision 32bd6428880" in text


def test_show_heim_describes_the_board_offline():
    # the shipped Stable Diffusion deployment is planned without its weights (they load when it is queried)
    out = run_cli("show", "heim", "--models", "offline/draw,huggingface/stable-diffusion-v1-4",
                  env={"HELMFLOW_SOURCE_HOST": "http://127.0.0.1:9"})
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "board heim: 50 scenarios + 8 perturbed copies x 2 models = 116 runs" in text
    assert "left out: mscoco~translate_spanish: google_translate_es.json is not in the storage root" in text
    from helmflow.clients import load_deployments

    sd = load_deployments()["huggingface/stable-diffusion-v1-4"]
    assert (sd.client, sd.model) == ("diffusers", "CompVis/stable-diffusion-v1-4") and len(sd.revision) == 40


@pytest.mark.slow
def test_helmflow_run_heim_stores_the_images_each_model_sent(tmp_path, prefect_server, dev_server):
    mirror, storage = tmp_path / "mirror", tmp_path / "store"
    with serve(coco_sources(tmp_path / "src")) as host:
        out = run_cli("mirror", "heim", "--to", str(mirror), env={"HELMFLOW_SOURCE_HOST": host.url})
    assert out.returncode == 0, out.stdout + out.stderr
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "dev/images", "client": "openai", "model": "dev-image", "base_url": dev_server.openai_url,
         "api_key_env": "HELMFLOW_DEV_KEY", "price_per_image": 0.02,
         # a generous timeout: a request the client gave up on is still answered (and counted) by the server
         "retry": {"attempts": 3, "base_s": 0.02, "cap_s": 0.1, "timeout_s": 120}}]}))
    # a translation table for HEIM's Chinese MS-COCO entry (HELM's come from Google Translate): its captions only
    table = tmp_path / "google_translate_zh-CN.json"
    table.write_text(json.dumps({"A blue square.": "一个蓝色的正方形。", "a red box": "一个红盒子"}, ensure_ascii=False))
    out = run_cli("fetch-assets", "perturbations", "--file", str(table), "--storage", str(storage))
    assert out.returncode == 0 and "google_translate_zh-CN.json" in out.stdout, out.stdout + out.stderr
    # HEIM's board without its six art-style copies of MS-COCO (twelve more runs here, which would double this
    # test's time; tests/test_heim_art_styles.py checks their captions and sample)
    board = yaml.safe_load((REPO / "flows" / "heim.yaml").read_text())
    coco = next(e for e in board["scenarios"] if e.get("label") == "mscoco")
    coco["perturbations"].remove("art")
    del coco["perturbation_instances"]
    board["metric_groups"] = [g for g in board["metric_groups"] if g["name"] != "art_styles"]
    board["name"] = "heim-no-art"  # another board's releases (leaderboards/heim-no-art/)
    (tmp_path / "heim.yaml").write_text(yaml.safe_dump(board, allow_unicode=True))
    out = run_cli("run", str(tmp_path / "heim.yaml"), "--models", "offline/draw,dev/images", "--models-file", str(models),
                  "--scenarios", "mscoco", "--max-instances", "1",
                  "--storage", str(storage),
                  env={"HELMFLOW_MIRROR": str(mirror), "HELMFLOW_DEV_KEY": "dev-key-not-secret"}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "left out: mscoco~translate_hindi" in out.stdout and "left out: mscoco~dialect" in out.stdout
    sent = dev_server.stats()["generated_images"]
    # mscoco: 4 images a prompt; the name also selects mscoco_efficiency: 1 image a prompt in each of 5 trials;
    # its sampled caption "A blue square." changed by the robustness perturbation and translated into Chinese
    # (4 images each), not by the gender terms (no run)
    assert len(sent) == 4 + 5 + 4 + 4
    for sha in sent:  # byte for byte what the server sent, under its sha256
        data = (storage / "media" / f"{sha}.png").read_bytes()
        assert hashlib.sha256(data).hexdigest() == sha
    latest = json.loads((storage / "leaderboards/heim-no-art/latest-subset.json").read_text())
    runs = pq.read_table(f"{latest['uri']}/runs.parquet").to_pylist()
    by_model: dict[str, set[str]] = {}
    for run in runs:
        completions = pq.read_table(storage / "runs" / run["run_id"] / "completions.parquet").to_pylist()
        assert all(len(c["images"]) in (1, 4, 8) and not c["error"] for c in completions)
        by_model.setdefault(run["deployment"], set()).update(p["sha256"] for c in completions for p in c["images"])
    assert by_model["dev/images"] == set(sent)
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    draw_row = rows["offline/draw"]
    assert draw_row["mscoco/expected_psnr_score"] > 0 and draw_row["mscoco/fractal_dimension_loss"] >= 0
    assert 0 < draw_row["mscoco/expected_multi_scale_ssim_score"] <= 1
    assert draw_row["mscoco_efficiency/seconds_per_image"] > 0
    assert draw_row["mscoco/expected_clip_score"] is None  # not available, never 0
    for variant in ("mscoco~mild_mix", "mscoco~translate_chinese"):  # the robustness and Chinese tables
        assert draw_row[f"{variant}/expected_psnr_score"] > 0 and draw_row[f"{variant}/fractal_dimension_loss"] >= 0
    prompts = {json.loads(r["body_json"])["prompt"] for run in runs if run["scenario"].startswith("mscoco~")
               for r in pq.read_table(storage / "runs" / run["run_id"] / "requests.parquet").to_pylist()}
    # mild_mix seeded with HELM's id of the caption (id5: after the fixture's three train captions)
    assert prompts == {"a  blue   square.", "一个蓝色的正方形。"}, prompts


def test_mscoco_records_helms_ids_after_the_train_captions(tmp_path):
    """HELM numbers COCO's train captions first (one instance per caption of a listed image), so the val
    captions' HELM ids, which seed the perturbations, start after them."""
    import zipfile

    from helmflow.media import MediaStore
    from helmflow.scenarios import SCENARIOS
    from helmflow.storage import Store

    root = coco_sources(tmp_path / "src")
    annotations = zipfile.ZipFile(root / "images.cocodataset.org/annotations/annotations_trainval2014.zip")
    files = {}
    for name in ("captions_val2014.json", "captions_train2014.json"):
        (tmp_path / name).write_bytes(annotations.read(f"annotations/{name}"))
        files[name] = str(tmp_path / name)
    files["val2014.zip"] = str(root / "images.cocodataset.org/zips/val2014.zip")
    coco = SCENARIOS.get("mscoco")()
    coco.media = MediaStore(Store(str(tmp_path / "store")))
    instances = coco.load(files)
    assert [(i.id, i.extra["helm_id"]) for i in instances] == [
        ("9-0", "id3"), ("9-1", "id4"), ("42-0", "id5"), ("42-1", "id6"), ("77-0", "id7")]


def test_mscoco_variants_run_where_their_data_is_and_are_left_out_named_where_not(tmp_path):
    """HEIM's fairness, robustness and translated MS-COCO entries are perturbed copies of the MS-COCO entry with
    their own tables (no worst-case table of the main metric); dialect needs the fetched mapping and each
    translation a supplied table: without them, those copies are left out with the reason."""
    from helmflow.datasets import declared_pins
    from helmflow.perturbations import assets_from
    from helmflow.perturbations.assets import AssetError, import_file
    from helmflow.plan.compile import prepare
    from helmflow.storage import Store

    store = Store(str(tmp_path / "store"))
    with assets_from(store.root), declared_pins():  # planned as `show` plans it: no source is read
        plan = prepare("heim", models=["offline/draw"], scenarios=["mscoco"])
    styles = [f"mscoco~style_{s}" for s in ("oil_painting", "watercolor", "pencil_sketch", "animation",
                                            "vector_graphics", "pixel_art")]
    assert [p.label for p in plan.perturbed] == ["mscoco~gender_terms", "mscoco~mild_mix", *styles]
    assert sorted(plan.left_out) == ["mscoco~dialect", "mscoco~translate_chinese", "mscoco~translate_hindi",
                                     "mscoco~translate_spanish"]
    assert "fetch-assets perturbations --file" in plan.left_out["mscoco~translate_hindi"]
    groups = {g.name: [c.key for c in g.columns] for g in plan.spec.metric_groups}
    assert "mscoco~gender_terms/expected_clip_score" in groups["fairness_gender"]
    assert "mscoco~mild_mix/expected_psnr_score" in groups["robustness"]
    assert "fairness_dialect" not in groups and "multilinguality_hindi" not in groups
    assert not any(k.endswith(("/fairness", "/robustness")) for cols in groups.values() for k in cols)
    # HEIM's heim_default cap and four images, as the original entry; the art styles HELM's heim_art_styles' 17
    assert all(p.adapter.generation.num_outputs == 4 and p.adapter.sample.max_eval_instances ==
               (17 if p.label in styles else 100) for p in plan.perturbed)
    assert "art_styles" in groups and "mscoco~style_watercolor/expected_aesthetics_score" in groups["art_styles"]

    table = tmp_path / "google_translate_zh-CN.json"
    table.write_text(json.dumps({"A blue square.": "一个蓝色的正方形。"}, ensure_ascii=False))
    fetched = import_file(store, str(table))
    assert fetched.asset.used_by == "translate_zh-CN" and len(fetched.sha256) == 64
    with assets_from(store.root), declared_pins():  # planned as `show` plans it: no source is read
        plan = prepare("heim", models=["offline/draw"], scenarios=["mscoco"])
    assert "mscoco~translate_chinese" in [p.label for p in plan.perturbed]
    assert "multilinguality_chinese" in {g.name for g in plan.spec.metric_groups}
    bad = tmp_path / "google_translate_hi.json"
    bad.write_text('["not", "a", "table"]')
    with pytest.raises(AssetError, match="expected a JSON object"):
        import_file(store, str(bad))
    with pytest.raises(AssetError, match="not a perturbation data file"):
        import_file(store, str(tmp_path / "google_translate_fr.json"))


def test_clipscore_scores_the_original_caption_after_dialect_robustness_and_translation():
    """HELM's CLIPScoreMetric: for translate, dialect and mild_mix it scores against the contrast input."""
    from helmflow.metrics.base import MetricInput
    from helmflow.metrics.clip_score import scored_prompt
    from helmflow.records import Input, Instance, Request, RequestBody
    from helmflow.scenarios.text_to_image import image_adapter

    request = Request(request_hash="0" * 64, instance_id="9-0", split="valid", sample_index=0,
                      body=RequestBody(model="dev-image", prompt="一个蓝色的正方形。", max_tokens=1, temperature=0.0))
    for name, expected in (("translate_chinese", "A blue square."), ("mild_mix", "A blue square."),
                           ("gender_terms", "一个蓝色的正方形。"), (None, "一个蓝色的正方形。")):
        extra = {"perturbation": name, "unperturbed_text": "A blue square."} if name else {}
        x = MetricInput(instance=Instance(id="9-0", input=Input(text="一个蓝色的正方形。"), extra=extra),
                        requests=[request], completions=[], adapter=image_adapter())
        assert scored_prompt(x, request) == expected, name
