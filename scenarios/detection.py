"""Detection (HEIM reasoning; DALL-Eval's PaintSkills skills, arXiv 2202.04053): does the image hold the objects,
the count and the spatial relation the prompt names?

As HELM's ``DetectionScenario``: the prompts CSV on Google Drive (HELM's file id, unpinned upstream: pinned here
by the sha256 recorded at first fetch), read with Python's csv reader as HELM opens it (text mode); the header
row is skipped and a row is kept when its first column is the entry's ``skill`` (``object``, ``count`` or
``spatial``). The prompt is the second column; the one correct reference is HELM's JSON of what the detector
checks: ``{"object": obj1}``, ``{"count": int(count), "object": obj1}`` or ``{"objects": [obj1, obj2],
"relation": relation}`` from the third to sixth columns (obj1, obj2, count, relation), ``json.dumps``' default
spacing. ``sub_split`` is the skill; ids ``id<n>`` count the kept rows (HELM's ids).

HELM scores these entries with ViTDet (``detection_correct_frac``, detectron2 and its weights), which is not
implemented here: the entries run with the rest of HELM's metrics for them (HEIM's core metrics).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import scenario
from helmflow.scenarios.base import DataSource, ScenarioError
from helmflow.scenarios.text_to_image import TextToImageScenario, helm_csv_rows

URL = "https://drive.google.com/uc?export=download&id=1HwfBlZCbfO8Vwss4HEXcyyD5sVezpmPg"
FILE = "prompts.csv"
SKILLS = ("object", "count", "spatial")


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    skill: Literal["object", "count", "spatial"]


@scenario("detection")
class Detection(TextToImageScenario):
    VERSION = "1"
    SOURCE_REVISION = "gdrive"
    Params = Params
    description = ("HEIM: detection, prompts naming objects, a count or a spatial relation (DALL-Eval's skills; "
                   "reasoning); the expected objects are the reference, for ViTDet (not implemented).")
    pin_unverified = "HELM's Google Drive download URL names no version of the file"
    helm_differences = ("detection: HELM's Google Drive prompts file (its file id, unpinned upstream) is pinned by "
                        "the sha256 recorded at first fetch",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.web_url(URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILE]
        wanted = self.params.skill
        out: list[Instance] = []
        for number, row in enumerate(helm_csv_rows(self.name, url)):
            if number == 0 or (row and row[0] != wanted):
                continue  # the header, or another skill's row
            try:
                target: dict = {"object": row[2]}
                if wanted == "count":
                    target = {"count": int(row[4]), "object": row[2]}
                elif wanted == "spatial":
                    target = {"objects": [row[2], row[3]], "relation": row[5]}
                prompt = row[1]
            except (IndexError, ValueError) as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} row {number + 1} is not a {wanted} row "
                                    f"(skill, prompt, obj1, obj2, count, relation): {exc}") from None
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=prompt), sub_split=wanted,
                                references=[Reference(text=json.dumps(target), correct=True)]))
        return out
