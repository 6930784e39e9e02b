"""MM-Star (Lin-Chen/MMStar): 1,500 vision-indispensable multiple-choice questions in six categories.

As HELM's ``MMStarScenario``: one Parquet file with the image bytes embedded; rows of the chosen
``category``; the prompt is the image, then the question (whose options are written inside it);
the reference is the answer letter, scored on a one-token generation (quasi-prefix exact match).
All rows are HELM's ``valid`` split.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import ContentPart, Input, Instance, Reference
from helmflow.scenarios import DataSource, scenario
from helmflow.scenarios.base import read_parquet_source
from helmflow.scenarios.vision_language import LETTER_ONLY, SNAPSHOT_PIN, HubVisionScenario, generation_spec

FILE = "mmstar.parquet"
# HELM's run names -> the dataset's category values
CATEGORIES = {
    "coarse_perception": "coarse perception",
    "fine-grained_perception": "fine-grained perception",
    "instance_reasoning": "instance reasoning",
    "logical_reasoning": "logical reasoning",
    "math": "math",
    "science_&_technology": "science & technology",
}


class MMStarParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: Literal[tuple(CATEGORIES)] = "coarse_perception"  # type: ignore[valid-type]  # the keys above


@scenario("mm_star")
class MMStar(HubVisionScenario[MMStarParams]):
    VERSION = "1"
    HUB_REPO = "Lin-Chen/MMStar"
    HUB_REVISION = "a9beb0910fc57358ee4a25d2f0dbad93a155fad0"  # the commit adding mmstar.parquet
    pin_unverified = SNAPSHOT_PIN
    Params = MMStarParams
    description = "MM-Star: vision-indispensable multiple-choice questions (letter answer), one category."
    default_adapter = generation_spec(LETTER_ONLY, max_tokens=1)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.hub_url(FILE))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        table = read_parquet_source(self.name, files[FILE], {
            "index": "integer", "question": "string", "image": "image", "answer": "string", "category": "string"})
        wanted = CATEGORIES[self.params.category]
        out = []
        for i, row in enumerate(table.to_pylist()):
            if row["category"] != wanted:
                continue
            parts = [self.image(row["image"], self.where(FILE, i)), ContentPart(type="text", text=row["question"])]
            out.append(Instance(id=f"id{row['index']}", split="valid", input=Input(parts=parts),
                                references=[Reference(text=row["answer"].strip(), correct=True)]))
        return out
