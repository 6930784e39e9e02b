"""MS-COCO 2014 captions (HEIM's quality scenario): each caption a prompt, its photo the reference image.

As HELM's ``MSCOCOScenario``: the captions of ``annotations_trainval2014.zip`` and the photos of the
split's zip from ``images.cocodataset.org``, one instance per caption (text right-stripped), its
photo the one correct reference. HELM reads train (its train split) and val (its valid split); with
zero in-context examples only valid is ever evaluated, so only val is read here (the same instances
HELM samples from). Instance ids are ``<image id>-<caption index>``, stable across versions; each also
records HELM's own id (``id<position>``: HELM numbers the train captions first, so the val captions start
after the train captions' count, read from ``captions_train2014.json``), which seeds HEIM's perturbations of
the captions as HELM seeds them (gender terms, dialect, robustness, translations). Every
photo is decoded and stored once under ``media/`` when the scenario loads (a photo that does not
decode stops the load, naming its file).

The URLs are unpinned upstream (plain http, no revision): they run from a mirror (``helmflow mirror
mscoco``), pinned by the sha256 recorded at first fetch. The val photos are about 6 GB.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import ClassVar

from helmflow.perturbations import HELM_ID
from helmflow.records import ContentPart, Input, Instance, Reference
from helmflow.scenarios import scenario
from helmflow.scenarios.base import DataSource, ScenarioError, read_source
from helmflow.scenarios.text_to_image import CORE_METRICS, REFERENCE_METRICS, TextToImageScenario, photo_archive

ANNOTATIONS_URL = "http://images.cocodataset.org/annotations/annotations_trainval2014.zip"
CAPTIONS_MEMBER = "annotations/captions_val2014.json"
TRAIN_CAPTIONS_MEMBER = "annotations/captions_train2014.json"
IMAGES_URL = "http://images.cocodataset.org/zips/val2014.zip"
CAPTIONS, IMAGES = "captions_val2014.json", "val2014.zip"
TRAIN_CAPTIONS = "captions_train2014.json"


@scenario("mscoco")
class MSCOCO(TextToImageScenario):
    VERSION = "2"
    description = ("HEIM: MS-COCO 2014 val captions as prompts, each caption's photo the reference image "
                   "(PSNR, UIQI); mirrored (about 6 GB of photos).")
    metrics: ClassVar[list[str]] = [*REFERENCE_METRICS, *CORE_METRICS]
    helm_differences = ("only COCO's val split is read: HELM also reads train2014, which a zero-shot run never "
                        "evaluates",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=CAPTIONS, url=self.archive_url(ANNOTATIONS_URL, CAPTIONS_MEMBER),
                           sha256_unknown=True),
                DataSource(filename=TRAIN_CAPTIONS, url=self.archive_url(ANNOTATIONS_URL, TRAIN_CAPTIONS_MEMBER),
                           sha256_unknown=True),
                DataSource(filename=IMAGES, url=self.web_url(IMAGES_URL), sha256_unknown=True)]

    def train_count(self, path: str) -> int:
        """How many instances HELM makes from COCO's train split before the val ones: one per caption of
        each train image (a caption of an image the file does not list makes none)."""
        try:
            meta = json.loads(read_source(self.name, path))
            images = {m["id"] for m in meta["images"]}
            return sum(1 for a in meta["annotations"] if a["image_id"] in images)
        except (ValueError, KeyError, TypeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {path} is not COCO's captions JSON "
                                f"({type(exc).__name__}: {exc})") from None

    def load(self, files: dict[str, str]) -> list[Instance]:
        try:
            meta = json.loads(read_source(self.name, files[CAPTIONS]))
            images = {m["id"]: m["file_name"] for m in meta["images"]}
            captions: dict[int, list[str]] = defaultdict(list)
            for a in meta["annotations"]:
                captions[a["image_id"]].append(a["caption"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {files[CAPTIONS]} is not COCO's captions JSON "
                                f"({type(exc).__name__}: {exc})") from None
        first = self.train_count(files[TRAIN_CAPTIONS])
        out: list[Instance] = []
        with photo_archive(self.name, files[IMAGES]) as (archive, members):
            for image_id, file_name in images.items():  # COCO's order, as HELM reads it
                if file_name not in members:
                    raise ScenarioError(f"scenario {self.name!r}: {files[IMAGES]} has no photo {file_name!r}")
                part: ContentPart = self.image(archive.read(members[file_name]), f"{IMAGES}: {file_name}")
                for k, caption in enumerate(captions[image_id]):
                    out.append(Instance(id=f"{image_id}-{k}", split="valid", input=Input(text=caption.rstrip()),
                                        references=[Reference(text=f"<image {file_name}>", correct=True,
                                                              image=part)],
                                        extra={"image_id": image_id, HELM_ID: f"id{first + len(out)}"}))
        return out
