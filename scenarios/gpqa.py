"""GPQA (Idavidrein/gpqa, gated): graduate-level 4-option science questions, as HELM Capabilities v1 runs them.

Instances follow HELM's ``GPQAScenario`` exactly: Python ``random.seed(42)`` once, then for each row
in file order the references [correct, incorrect 1, 2, 3] (stripped) are shuffled once; the rows
HELM holds out (main: 339 and 105) are ``train`` with their Explanation as chain of thought, every
other row is ``test``. Ids are ``id<row index>``, as HELM's ``with_instance_ids`` numbers them.

The authors ask that GPQA questions never appear in plain text online: nothing here logs or raises
with question text, and runs are published as ids and scores.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import read_csv_source
from helmflow.scenarios.helm_cot import COT_TEXTS, COT_WORDING, capabilities_cot_spec

REPO = "Idavidrein/gpqa"
REVISION = "90b8e5be2b1d3d2dbfe016cdab47981150600c4a"
SEED = 42
# HELM's TRAIN_EXAMPLE_INDICES: the examples of the paper's few-shot prompt.
TRAIN_INDICES = {"main": [339, 105], "diamond": [124, 39], "extended": [146, 330, 436]}
ANSWER_COLUMNS = ["Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"]
COLUMNS = ["Question", *ANSWER_COLUMNS, "Explanation"]


class GPQAParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: Literal["main", "diamond", "extended"] = "main"
    variant: Literal["v1", "v2"] = "v1"  # v2: HELM's reasoning_v2 token budget and format suffix

    @field_validator("subset", mode="before")
    @classmethod
    def _strip_prefix(cls, v: str) -> str:
        return v.removeprefix("gpqa_") if isinstance(v, str) else v  # HELM accepts gpqa_main and main


@scenario("gpqa")
class GPQA(Scenario[GPQAParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = GPQAParams
    publish_text = False  # GPQA asks that its questions are never published in plain text
    description = "GPQA: graduate-level, Google-proof 4-option science questions (zero-shot chain of thought)."
    main_metric = "chain_of_thought_correctness"
    prompt_texts = COT_TEXTS
    helm_wording = COT_WORDING
    metrics = ["chain_of_thought_correctness", "efficiency"]

    @property
    def default_adapter(self) -> AdapterSpec:
        return capabilities_cot_spec("(A) ", self.params.variant, self.text)

    @property
    def filename(self) -> str:
        return f"gpqa_{self.params.subset}.csv"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename, url=self.hub_url(self.filename))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows = read_csv_source(self.name, files[self.filename], COLUMNS)
        held_out = TRAIN_INDICES[self.params.subset]
        rng = random.Random(SEED)  # the same stream as HELM's global random.seed(42)
        out: list[Instance] = []
        for index, row in enumerate(rows):
            references = [Reference(text=row[c].strip(), correct=c == "Correct Answer") for c in ANSWER_COLUMNS]
            rng.shuffle(references)
            train = index in held_out
            out.append(
                Instance(
                    id=f"id{index}",
                    split="train" if train else "test",
                    input=Input(text=row["Question"].strip()),
                    references=references,
                    extra={"chain_of_thought": row["Explanation"]} if train else {},
                )
            )
        return out
