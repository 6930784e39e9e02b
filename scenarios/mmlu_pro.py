"""MMLU-Pro (TIGER-Lab): 14-subject, up-to-10-option multiple choice, as HELM Capabilities v1 runs it.

Instances follow HELM's ``MMLUProScenario`` exactly, in its order: the validation file (70 rows)
becomes ``train``, then the test file (12,032 rows) becomes ``test``, each in file order; the id is
``id<question_id>``; references are the options in order, correct where the option text equals the
option at letter ``answer`` (HELM's rule). The official board evaluates HELM's seeded sample of
1,000 test questions (``max_instances: 1000``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_parquet_source
from helmflow.scenarios.helm_cot import COT_TEXTS, COT_WORDING, capabilities_cot_spec

REPO = "TIGER-Lab/MMLU-Pro"
REVISION = "3373e0b32277875b8db2aa555a333b78a08477ea"
FILES = {  # our filename -> path in the repository; HELM's split for each
    "validation.parquet": ("data/validation-00000-of-00001.parquet", "train"),
    "test.parquet": ("data/test-00000-of-00001.parquet", "test"),
}
COLUMNS = {
    "question_id": "integer",
    "question": "string",
    "options": "list<string>",
    "answer": "string",
    "category": "string",
}
LETTERS = "ABCDEFGHIJ"


class MMLUProParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: str = "all"  # "all" or one category ("computer science" or computer_science)
    variant: Literal["v1", "v2"] = "v1"  # v2: HELM's reasoning_v2 token budget and format suffix


@scenario("mmlu_pro")
class MMLUPro(Scenario[MMLUProParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = MMLUProParams
    description = "MMLU-Pro: harder 10-option multiple choice over 14 subjects (zero-shot chain of thought)."
    main_metric = "chain_of_thought_correctness"
    prompt_texts = COT_TEXTS
    helm_wording = COT_WORDING
    metrics = ["chain_of_thought_correctness", "efficiency"]

    @property
    def default_adapter(self) -> AdapterSpec:
        return capabilities_cot_spec("A. ", self.params.variant, self.text)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.hub_url(path)) for name, (path, _) in FILES.items()]

    def load(self, files: dict[str, str]) -> list[Instance]:
        subject = self.params.subject
        wanted = {subject, subject.replace("_", " ")}
        out: list[Instance] = []
        for name, (_, split) in FILES.items():
            url = files[name]
            for row in read_parquet_source(self.name, url, COLUMNS).to_pylist():
                if subject != "all" and row["category"] not in wanted:
                    continue
                out.append(self._instance(row, split, url))
        if not out and subject != "all":
            raise ScenarioError(f"scenario {self.name!r}: no question has category {subject!r}")
        return out

    def _instance(self, row: dict, split: str, url: str) -> Instance:
        qid, options, letter = row["question_id"], row["options"] or [], row["answer"]
        if not 0 < len(options) <= len(LETTERS):
            raise ScenarioError(f"scenario {self.name!r}: {url}: question_id {qid}: "
                                f"column 'options' has {len(options)} entries (1-10 expected)")
        if letter not in LETTERS[: len(options)]:
            raise ScenarioError(f"scenario {self.name!r}: {url}: question_id {qid}: "
                                f"column 'answer' is {letter!r}, not one of its {len(options)} option letters")
        correct = options[LETTERS.index(letter)]
        return Instance(
            id=f"id{qid}",
            split=split,
            input=Input(text=row["question"]),
            references=[Reference(text=o, correct=o == correct) for o in options],
            extra={"category": row["category"], "answer": letter},
        )
