"""EXAMS-V (Rocktim/EXAMS-V): school exam questions in many languages, the question *in the image*.

As HELM's ``ExamsVScenario``: test rows of one ``language`` and ``subject_grouped`` whose ``type`` is
``image_text``; the prompt is the image alone (the question and its four options are written in
it) after an instruction to answer with the option letter; the reference is ``answer_key``
(quasi-prefix exact match). HELM also downloads the 5 GB train split and uses none of it; only the
test shards are mirrored here. Parameter values use ``_`` for spaces (``Natural_Science``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, scenario
from helmflow.scenarios.base import read_parquet_source
from helmflow.scenarios.vision_language import SNAPSHOT_PIN, HubVisionScenario, generation_spec

FILES = [f"data/test-0000{k}-of-00003.parquet" for k in range(3)]
INSTRUCTIONS = ("The image shows a multiple-choice question with four options. "
                "Answer with only the letter (A, B, C or D) of the correct option.")


class ExamsVParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: str = "English"
    subject_grouped: str = "Natural_Science"


@scenario("exams_v")
class ExamsV(HubVisionScenario[ExamsVParams]):
    VERSION = "1"
    HUB_REPO = "Rocktim/EXAMS-V"
    HUB_REVISION = "e9488045cbad16c973f031c7a8f7466b5dcc3794"
    pin_unverified = SNAPSHOT_PIN
    Params = ExamsVParams
    description = "EXAMS-V: multilingual school exam questions rendered in the image (answer A-D)."
    default_adapter = generation_spec(INSTRUCTIONS, max_tokens=20)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f, url=self.hub_url(f)) for f in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        language = self.params.language.replace("_", " ")
        group = self.params.subject_grouped.replace("_", " ")
        out = []
        for filename in FILES:
            table = read_parquet_source(self.name, files[filename], {
                "sample_id": "string", "answer_key": "string", "type": "string", "language": "string",
                "subject_grouped": "string", "image": "image"})
            for i, row in enumerate(table.to_pylist()):
                if (row["language"], row["subject_grouped"], row["type"]) != (language, group, "image_text"):
                    continue
                part = self.image(row["image"], self.where(filename, i))
                out.append(Instance(id=row["sample_id"], split="test", input=Input(parts=[part]),
                                    references=[Reference(text=row["answer_key"].strip(), correct=True)]))
        return out
