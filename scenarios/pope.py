"""POPE (lmms-lab/POPE): object-hallucination yes/no questions about COCO images.

As HELM's ``POPEScenario``: the default config's test shards, the image then the question, asked as
a multiple choice between ``Yes`` and ``No`` (the correct one from the ``answer`` column); every row
is ``test`` and HELM's seeded sample keeps at most 1,000.
"""

from __future__ import annotations

from helmflow.records import ContentPart, Input, Instance, Reference
from helmflow.scenarios import DataSource, scenario
from helmflow.scenarios.base import ScenarioError, read_parquet_source
from helmflow.scenarios.vision_language import SNAPSHOT_PIN, HubVisionScenario, multiple_choice_spec

FILES = [f"data/test-0000{k}-of-00003.parquet" for k in range(3)]


@scenario("pope")
class POPE(HubVisionScenario):
    VERSION = "1"
    HUB_REPO = "lmms-lab/POPE"
    HUB_REVISION = "271684cad5ffaa68ebd8fcf73c4c21bc9a4c0d12"  # the first data upload
    pin_unverified = SNAPSHOT_PIN
    description = "POPE: does the object appear in the image? (Yes/No multiple choice)"
    default_adapter = multiple_choice_spec()

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f, url=self.hub_url(f)) for f in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out = []
        for filename in FILES:
            table = read_parquet_source(self.name, files[filename], {
                "question_id": "string", "question": "string", "answer": "string", "image": "image"})
            for i, row in enumerate(table.to_pylist()):
                answer = row["answer"].strip().lower()
                if answer not in ("yes", "no"):
                    raise ScenarioError(f"scenario 'pope': {self.where(filename, i)}: "
                                        f"answer {row['answer']!r} is not yes/no")
                parts = [self.image(row["image"], self.where(filename, i)),
                         ContentPart(type="text", text=row["question"])]
                refs = [Reference(text="Yes", correct=answer == "yes"), Reference(text="No", correct=answer == "no")]
                out.append(Instance(id=f"q{row['question_id']}", split="test", input=Input(parts=parts),
                                    references=refs))
        return out
