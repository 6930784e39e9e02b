"""HEIM's Winoground entry: HELM's reading of the gated dataset (each row's caption_0 the prompt, its image_0 photo
the reference) on files we wrote in the repository's layout; without the gated files the board leaves it out,
naming what is missing, and plans the rest; with them in a mirror, it is planned in the reasoning table."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest

from helmflow.scenarios import SCENARIOS
from helmflow.scenarios.base import ScenarioError
from tests.support.heim_fixtures import winoground_files


def loaded(tmp_path, files: dict[str, bytes]):
    from helmflow.media import MediaStore
    from helmflow.storage import Store

    for name, data in files.items():
        (tmp_path / name.rpartition("/")[2]).write_bytes(data)
    scen = SCENARIOS.get("winoground")()
    scen.media = MediaStore(Store(str(tmp_path / "store")))
    return scen.load({n: str(tmp_path / n) for n in ("examples.jsonl", "images.zip")})


def test_winoground_takes_each_pair_s_first_caption_and_photo_as_helm_does(tmp_path):
    files = winoground_files()
    instances = loaded(tmp_path, files)
    # HELM's loop: for row in the test split (the examples' order), caption_0 and the PNG of image_0
    rows = [json.loads(line) for line in files["data/examples.jsonl"].decode().splitlines()]
    photos = zipfile.ZipFile(io.BytesIO(files["data/images.zip"]))
    assert [(i.id, i.input.text) for i in instances] == [(f"id{k}", r["caption_0"]) for k, r in enumerate(rows)]
    for inst, row in zip(instances, rows, strict=True):
        (ref,) = inst.references
        assert ref.correct and ref.image is not None and inst.split == "test"
        assert ref.image.sha256 == hashlib.sha256(photos.read(f"images/{row['image_0']}.png")).hexdigest()
    broken = dict(files, **{"data/examples.jsonl": b'{"id": 0, "caption_0": "a cup", "image_0": "ex_9_img_0"}\n'})
    with pytest.raises(ScenarioError, match="has no photo 'ex_9_img_0.png'"):
        loaded(tmp_path, broken)


def test_the_board_leaves_winoground_out_without_its_gated_files_and_plans_it_from_a_mirror(tmp_path, monkeypatch):
    from helmflow.datasets import declared_pins
    from helmflow.plan.compile import prepare

    monkeypatch.setenv("HELMFLOW_MIRROR", str(tmp_path / "mirror"))
    with declared_pins():  # planned as `show` plans it: no source is read
        plan = prepare("heim", models=["offline/draw"], scenarios=["winoground", "logos"])
    assert [r.scenario.label for r in plan.runs] == ["logos"]
    assert "credential-gated" in plan.left_out["winoground"] and "facebook/winoground" in plan.left_out["winoground"]
    folder = tmp_path / "mirror" / "winoground" / "unpinned"
    folder.mkdir(parents=True)
    for name, data in winoground_files().items():
        (folder / name.rpartition("/")[2]).write_bytes(data)
    with declared_pins():
        plan = prepare("heim", models=["offline/draw"], scenarios=["winoground"])
    (run,) = plan.runs  # HELM's get_winoground_spec: four images, reference metrics and HEIM's core metrics
    assert run.scenario.adapter.generation.num_outputs == 4 and {"psnr", "clip_score"} <= set(run.scenario.metrics)
    groups = {g.name: [c.key for c in g.columns] for g in plan.spec.metric_groups}
    assert groups["reasoning"] == ["winoground/expected_clip_score"]
