"""MMMU (MMMU/MMMU): college-level multi-discipline questions with interleaved images, per subject.

As HELM's ``MMMUScenario`` (``question_type=multiple-choice``, the validation split, HELM's ``valid``):
the question's ``<image k>`` tags are replaced by the images ``image_k`` in place, so text and
images keep their order; ``options`` is a Python-literal list (read with ``ast.literal_eval``, never
``eval``); an option that is exactly ``<image k>`` becomes an image-valued choice. HELM reads
``image_1`` .. ``image_6`` only (its loop bound); so does this loader, so a question naming
``<image 7>`` keeps the tag as text, as in HELM. Scored with HELM's multiple-choice-joint spec.
"""

from __future__ import annotations

import ast
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, ContentPart, Input, Instance, Reference
from helmflow.scenarios import DataSource, scenario
from helmflow.scenarios.base import ScenarioError, read_parquet_source
from helmflow.scenarios.vision_language import UNPINNED, HubVisionScenario, multiple_choice_spec

SUBJECTS = (
    "Accounting", "Agriculture", "Architecture_and_Engineering", "Art", "Art_Theory", "Basic_Medical_Science",
    "Biology", "Chemistry", "Clinical_Medicine", "Computer_Science", "Design", "Diagnostics_and_Laboratory_Medicine",
    "Economics", "Electronics", "Energy_and_Power", "Finance", "Geography", "History", "Literature", "Manage",
    "Marketing", "Materials", "Math", "Mechanical_Engineering", "Music", "Pharmacy", "Physics", "Psychology",
    "Public_Health", "Sociology",
)
HELM_IMAGES = 6  # HELM's range(1, 7)
_TAG = re.compile(r"<image (\d+)>")


class MMMUParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: Literal[SUBJECTS] = "Accounting"  # type: ignore[valid-type]  # the subjects tuple above
    question_type: Literal["multiple-choice"] = "multiple-choice"


@scenario("mmmu")
class MMMU(HubVisionScenario[MMMUParams]):
    VERSION = "1"
    HUB_REPO = "MMMU/MMMU"
    HUB_REVISION = UNPINNED  # no revision could be verified offline: runs from a mirror only
    Params = MMMUParams
    description = "MMMU: college-level multiple-choice questions with interleaved images, one subject."
    default_adapter: AdapterSpec = multiple_choice_spec()

    @property
    def filename(self) -> str:
        return f"{self.params.subject}/validation-00000-of-00001.parquet"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename, url=self.hub_url(self.filename))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        columns = {"id": "string", "question": "string", "options": "string", "answer": "string",
                   "question_type": "string", **{f"image_{k}": "image" for k in range(1, HELM_IMAGES + 1)}}
        table = read_parquet_source(self.name, files[self.filename], columns)
        out = []
        for i, row in enumerate(table.to_pylist()):
            if row["question_type"] != self.params.question_type:
                continue
            where = self.where(self.filename, i)
            images: dict[int, ContentPart] = {}

            def image(k: int, row=row, where=where, images=images) -> ContentPart | None:
                if k not in images and 1 <= k <= HELM_IMAGES and row.get(f"image_{k}"):
                    images[k] = self.image(row[f"image_{k}"], f"{where}, image_{k}")
                return images.get(k)

            parts: list[ContentPart] = []
            pos = 0
            for m in _TAG.finditer(row["question"]):
                found = image(int(m.group(1)))
                if found is None:
                    continue  # kept as text, as HELM does for tags it has no image for
                if m.start() > pos:
                    parts.append(ContentPart(type="text", text=row["question"][pos : m.start()]))
                parts.append(found)
                pos = m.end()
            if pos < len(row["question"]):
                parts.append(ContentPart(type="text", text=row["question"][pos:]))
            try:
                options = ast.literal_eval(row["options"])
            except (ValueError, SyntaxError):
                raise ScenarioError(f"scenario 'mmmu': {where}: options {row['options'][:60]!r} "
                                    "is not a list literal") from None
            answer = ord(row["answer"].strip()) - ord("A")
            if not (isinstance(options, list) and 0 <= answer < len(options)):
                raise ScenarioError(f"scenario 'mmmu': {where}: answer {row['answer']!r} names no option")
            refs = []
            for k, option in enumerate(options):
                tag = _TAG.fullmatch(str(option).strip())
                shown = image(int(tag.group(1))) if tag else None
                refs.append(Reference(text=str(option), correct=k == answer, image=shown))
            out.append(Instance(id=row["id"], split="valid", input=Input(parts=parts), references=refs))
        return out
