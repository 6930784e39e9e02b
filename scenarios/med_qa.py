"""MedQA (Jin et al., 2020), US 4-option subset: medical licensing exam questions, as HELM Lite runs them.

The source is the authors' Google Drive zip (HELM's URL); HELM reads
``data_clean/questions/US/4_options/phrases_no_exclude_{train,dev,test}.jsonl`` as train, valid
(dev) and test, in that order, ids ``id<i>``. References are the options in key order with trailing
``"`` and spaces stripped (HELM's fix for rows like ``Pulmonary embolism\\n"``), the one at
``answer_idx`` correct. HELM samples 1,000 evaluation instances from valid+test together. Multiple
choice joint, five in-context examples, quasi-exact match. No checksum is published: the pins are
recorded at first fetch (``sha256_unknown``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import parse_jsonl_row, read_jsonl_lines
from helmflow.scenarios.helm_lite import MULTIPLE_CHOICE_WORDING, multiple_choice_spec

ZIP_URL = "https://drive.google.com/uc?export=download&id=1ImYUSLk9JbgHXOemfvyiDiirluZHPeQw&confirm=t"
FOLDER = "data_clean/questions/US/4_options"
SPLITS = {"train": "train", "dev": "valid", "test": "test"}  # file split -> HELM's split, in HELM's order


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")
    question: str
    options: dict[str, str]
    answer_idx: str


def filename(split: str) -> str:
    return f"phrases_no_exclude_{split}.jsonl"


@scenario("med_qa")
class MedQA(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "MedQA-data_clean"
    description = "MedQA (USMLE, 4 options): medical board exam questions (HELM Lite, multiple choice joint)."
    main_metric = "quasi_exact_match"
    metrics = ["quasi_exact_match", "exact_match", "efficiency"]
    default_adapter = multiple_choice_spec("medicine")
    helm_wording = MULTIPLE_CHOICE_WORDING
    helm_differences = (
        "med_qa: the Google Drive zip HELM downloads is read through its direct-download URL and pinned by the sha256 "
        "of the three files read (recorded at first fetch); the member paths follow HELM's code (the zip's layout "
        "could not be inspected offline; a missing member is named by `helmflow mirror`)",
    )

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=filename(s), url=self.archive_url(ZIP_URL, f"{FOLDER}/{filename(s)}", kind="zip"),
                           sha256_unknown=True) for s in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for file_split, split in SPLITS.items():
            url = files[filename(file_split)]
            for number, line in read_jsonl_lines(self.name, url):
                where = f"scenario {self.name!r}: {url} line {number}"
                row = parse_jsonl_row(where, line, Row)
                if len(row.options) != 4 or row.answer_idx not in row.options:
                    raise ScenarioError(f"{where}: expected 4 options and an answer_idx among their keys, "
                                        f"got {sorted(row.options)} and {row.answer_idx!r}")
                refs = [Reference(text=text.rstrip('"').rstrip(), correct=key == row.answer_idx)
                        for key, text in row.options.items()]
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=row.question), references=refs))
        return out
