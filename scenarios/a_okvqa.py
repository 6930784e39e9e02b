"""A-OKVQA (HuggingFaceM4/A-OKVQA): visual questions needing outside knowledge, four choices.

As HELM's ``AOKVQAScenario``: the validation split (HELM's ``valid``; the test split has no
answers), the image then the question, the ``choices`` as options and ``correct_choice_idx`` as the
correct one, scored with HELM's multiple-choice-joint spec (quasi-prefix exact match on the mapped
option). The AAE-dialect fairness variant is not here yet (see docs/boards/vhelm.md: HELM's SAE->AAE mapping is
fetched from a bucket this machine cannot reach).
"""

from __future__ import annotations

from helmflow.records import ContentPart, Input, Instance, Reference
from helmflow.scenarios import DataSource, scenario
from helmflow.scenarios.base import ScenarioError, read_parquet_source
from helmflow.scenarios.vision_language import UNPINNED, HubVisionScenario, multiple_choice_spec

FILE = "data/validation-00000-of-00001.parquet"


@scenario("a_okvqa")
class AOKVQA(HubVisionScenario):
    VERSION = "1"
    HUB_REPO = "HuggingFaceM4/A-OKVQA"
    HUB_REVISION = UNPINNED  # no revision could be verified offline: runs from a mirror only
    description = "A-OKVQA: knowledge-requiring visual questions, four choices (validation split)."
    default_adapter = multiple_choice_spec()

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.hub_url(FILE))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        table = read_parquet_source(self.name, files[FILE], {
            "question_id": "string", "question": "string", "choices": "list<string>", "correct_choice_idx": "integer",
            "image": "image"})
        out = []
        for i, row in enumerate(table.to_pylist()):
            where = self.where(FILE, i)
            if not 0 <= row["correct_choice_idx"] < len(row["choices"]):
                raise ScenarioError(f"scenario 'a_okvqa': {where}: correct_choice_idx {row['correct_choice_idx']} "
                                    "names no choice")
            parts = [self.image(row["image"], where), ContentPart(type="text", text=row["question"])]
            refs = [Reference(text=c, correct=k == row["correct_choice_idx"]) for k, c in enumerate(row["choices"])]
            out.append(Instance(id=row["question_id"], split="valid", input=Input(parts=parts), references=refs))
        return out
