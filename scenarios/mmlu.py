"""MMLU (Hendrycks et al., 2021): 57 subjects of 4-option questions, one subject per run, as HELM Lite runs it.

The source is the authors' ``data.tar`` (HELM's URL, unpinned upstream); HELM reads
``data/dev/<subject>_dev.csv`` (5 rows: the in-context pool, train), ``data/val/<subject>_val.csv``
(valid) and ``data/test/<subject>_test.csv`` (test), headerless CSV rows ``question, options...,
letter``, in that order, ids ``id<i>``. Options whose text equals the keyed one are correct (HELM's
rule). HELM Lite runs five subjects (:data:`LITE_SUBJECTS`; its priority-2 entries) and shows their
unweighted mean; a board may list any of the 57 (:data:`SUBJECTS`). Multiple choice joint, five
examples, exact match. The pins are recorded at first fetch (``sha256_unknown``).
"""

from __future__ import annotations

import csv
import io

from pydantic import BaseModel, ConfigDict, field_validator

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import MULTIPLE_CHOICE_WORDING, multiple_choice_spec

TAR_URL = "https://people.eecs.berkeley.edu/~hendrycks/data.tar"
SPLITS = {"dev": "train", "val": "valid", "test": "test"}  # folder in the tar -> HELM's split, in HELM's order
LITE_SUBJECTS = ["abstract_algebra", "college_chemistry", "computer_security", "econometrics", "us_foreign_policy"]
SUBJECTS = [
    "abstract_algebra", "anatomy", "astronomy", "business_ethics", "clinical_knowledge", "college_biology",
    "college_chemistry", "college_computer_science", "college_mathematics", "college_medicine", "college_physics",
    "computer_security", "conceptual_physics", "econometrics", "electrical_engineering", "elementary_mathematics",
    "formal_logic", "global_facts", "high_school_biology", "high_school_chemistry", "high_school_computer_science",
    "high_school_european_history", "high_school_geography", "high_school_government_and_politics",
    "high_school_macroeconomics", "high_school_mathematics", "high_school_microeconomics", "high_school_physics",
    "high_school_psychology", "high_school_statistics", "high_school_us_history", "high_school_world_history",
    "human_aging", "human_sexuality", "international_law", "jurisprudence", "logical_fallacies", "machine_learning",
    "management", "marketing", "medical_genetics", "miscellaneous", "moral_disputes", "moral_scenarios", "nutrition",
    "philosophy", "prehistory", "professional_accounting", "professional_law", "professional_medicine",
    "professional_psychology", "public_relations", "security_studies", "sociology", "us_foreign_policy", "virology",
    "world_religions",
]  # fmt: skip


class MMLUParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: str = "abstract_algebra"

    @field_validator("subject")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in SUBJECTS:
            raise ValueError(f"unknown MMLU subject {v!r}; the 57 are: {', '.join(SUBJECTS)}")
        return v


@scenario("mmlu")
class MMLU(Scenario[MMLUParams]):
    VERSION = "1"
    SOURCE_REVISION = "hendrycks-test-data"
    Params = MMLUParams
    description = "MMLU: 4-option questions on one of 57 subjects (HELM Lite runs 5; multiple choice joint)."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    helm_wording = MULTIPLE_CHOICE_WORDING
    helm_differences = ("mmlu: data.tar is read from the authors' URL as HELM does, pinned by the sha256 of each "
                        "CSV read (recorded at first fetch: upstream publishes none)",)

    @property
    def subject(self) -> str:
        return self.params.subject

    @property
    def default_adapter(self) -> AdapterSpec:
        return multiple_choice_spec(self.subject.replace("_", " "))

    def filename(self, folder: str) -> str:
        return f"{self.subject}_{folder}.csv"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=self.filename(folder),
                           url=self.archive_url(TAR_URL, f"data/{folder}/{self.filename(folder)}"),
                           sha256_unknown=True) for folder in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for folder, split in SPLITS.items():
            url = files[self.filename(folder)]
            try:
                text = read_source(self.name, url).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not UTF-8 text: {exc}") from None
            for number, row in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
                if len(row) < 4:
                    raise ScenarioError(f"scenario {self.name!r}: {url} row {number}: "
                                        "expected question, options and an "
                                        f"answer letter, got {len(row)} field(s)")
                question, options, letter = row[0], row[1:-1], row[-1]
                keyed = dict(zip("ABCDE", options, strict=False)).get(letter)
                if keyed is None:
                    raise ScenarioError(f"scenario {self.name!r}: {url} row {number}: "
                                        f"answer {letter!r} names none of its {len(options)} options")
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=question),
                                    references=[Reference(text=o, correct=o == keyed) for o in options]))
        return out
