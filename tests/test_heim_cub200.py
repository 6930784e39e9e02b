"""HEIM's CUB-200 entry: HELM's reading of Caltech's photos and AttnGAN's captions (the pickled test list, each
photo's non-empty caption lines, the photo the reference) on archives we wrote in their layouts, checked by hand
and against HELM's loop over the unpacked files; one image per prompt, in the alignment table."""

from __future__ import annotations

import hashlib
import io
import pickle
import tarfile
import zipfile

import pytest

from helmflow.scenarios import SCENARIOS
from helmflow.scenarios.base import ScenarioError
from tests.support.heim_fixtures import CUB_CAPTIONS_PATH, CUB_IMAGES_PATH, cub_files


def loaded(tmp_path, files: dict[str, bytes]):
    from helmflow.media import MediaStore
    from helmflow.storage import Store

    (tmp_path / "CUB_200_2011.tgz").write_bytes(files[CUB_IMAGES_PATH])
    (tmp_path / "birds.zip").write_bytes(files[CUB_CAPTIONS_PATH])
    scen = SCENARIOS.get("cub200")()
    scen.media = MediaStore(Store(str(tmp_path / "store")))
    return scen.load({n: str(tmp_path / n) for n in ("CUB_200_2011.tgz", "birds.zip")})


def helm_instances(files: dict[str, bytes]) -> list[tuple[str, str]]:
    """HELM's CUB200Scenario.get_instances over the unpacked archives: (caption, sha256 of its photo)."""
    captions = zipfile.ZipFile(io.BytesIO(files[CUB_CAPTIONS_PATH]))
    text = zipfile.ZipFile(io.BytesIO(captions.read("birds/text.zip")))
    photos = tarfile.open(fileobj=io.BytesIO(files[CUB_IMAGES_PATH]))
    out = []
    for file_name in pickle.loads(captions.read("birds/test/filenames.pickle")):
        image = photos.extractfile(f"CUB_200_2011/images/{file_name}.jpg").read()  # type: ignore[union-attr]
        lines = io.StringIO(text.read(f"text/{file_name}.txt").decode())
        for caption in [line.rstrip() for line in lines if line.rstrip()]:
            out.append((caption, hashlib.sha256(image).hexdigest()))
    return out


def test_cub200_reads_the_test_photos_captions_as_helm_does(tmp_path):
    files = cub_files()
    instances = loaded(tmp_path, files)
    texts = [i.input.text for i in instances]
    assert len(texts) == 20 and texts[0] == "a dark bird with long wings, view 0"
    assert texts[10:12] == ["a red bird with a crest", "the bird is bright red, view 0"]  # stripped; the blank skipped
    assert [i.id for i in instances] == [f"id{k}" for k in range(20)] and {i.split for i in instances} == {"test"}
    assert len({i.references[0].image.sha256 for i in instances}) == 2  # type: ignore[union-attr]
    ours = [(i.input.text, i.references[0].image.sha256) for i in instances]  # type: ignore[union-attr]
    assert ours == helm_instances(files)
    # the captions in a birds/text/ folder, as HELM reads them when the archive already holds it
    assert [i.input.text for i in loaded(tmp_path, cub_files(text_zip=False))] == [t for t, _ in ours]
    no_list = dict(files, **{CUB_CAPTIONS_PATH: b"PK\x05\x06" + b"\0" * 18})  # an empty zip
    with pytest.raises(ScenarioError, match="has no birds/test/filenames.pickle"):
        loaded(tmp_path, no_list)


def test_the_board_plans_cub200_with_one_image_per_prompt_in_the_alignment_table():
    from helmflow.datasets import declared_pins
    from helmflow.plan.compile import prepare

    with declared_pins():  # planned as `show` plans it: no source is read
        plan = prepare("heim", models=["offline/draw"], scenarios=["cub200"])
    (run,) = plan.runs  # HELM's get_cub200_spec: one image; reference and core metrics; heim_default's 100
    assert run.scenario.adapter.generation.num_outputs == 1 and run.scenario.adapter.sample.max_eval_instances == 100
    assert {"psnr", "uiqi", "clip_score", "fractal_dimension"} <= set(run.scenario.metrics)
    groups = {g.name: [c.key for c in g.columns] for g in plan.spec.metric_groups}
    assert groups["alignment"] == ["cub200/expected_clip_score"]
