"""MedMCQA (Pal et al., 2022): four-option questions from Indian medical entrance exams, as MedHELM runs it
(``med_mcqa_scenario.py``, ``get_medhelm_med_mcqa_spec``).

HELM downloads the authors' Google Drive zip and reads ``dev.json`` (JSON Lines despite the name) as its valid
split; the test labels are hidden, so valid is what is evaluated. The input is ``question``; the references are
``opa`` to ``opd``, the one at ``cop`` (1 to 4) correct. Multiple choice joint, zero-shot. HELM also reads
``train.json``, which a zero-shot run never uses; this scenario does not read it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import parse_jsonl_row, read_jsonl_lines
from helmflow.scenarios.medhelm import WORDING, multiple_choice

ZIP_URL = "https://drive.google.com/uc?export=download&id=15VkJdq5eyWIkfb_aoD3oS8i4tScbHYky&confirm=t"
OPTIONS = ("opa", "opb", "opc", "opd")
INSTRUCTIONS = "Answer with the letter of the correct option, A, B, C or D, and nothing else."
OUTPUT_NOUN = "Answer with one letter, A, B, C or D, and nothing else"


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")
    question: str
    opa: str
    opb: str
    opc: str
    opd: str
    cop: int


@scenario("med_mcqa")
class MedMCQA(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "MedMCQA-data"
    description = "MedMCQA: four-option questions from Indian medical entrance exams, valid split (MedHELM)."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "efficiency"]
    default_adapter = multiple_choice(INSTRUCTIONS, "Question", OUTPUT_NOUN)
    helm_wording = WORDING
    helm_differences = ("med_mcqa: dev.json of the Google Drive zip HELM downloads is read through its direct-download "
                        "URL, pinned by the sha256 recorded at first fetch (its path in the zip is unverified); the "
                        "unused train.json is not read",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="dev.json", url=self.archive_url(ZIP_URL, "dev.json", kind="zip"),
                           sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["dev.json"]
        out: list[Instance] = []
        for number, line in read_jsonl_lines(self.name, url):
            where = f"scenario {self.name!r}: {url} line {number}"
            row = parse_jsonl_row(where, line.rstrip(), Row)
            if row.cop not in (1, 2, 3, 4):
                raise ScenarioError(f"{where}: cop {row.cop} is not 1 to 4")
            refs = [Reference(text=getattr(row, option), correct=index == row.cop)
                    for index, option in enumerate(OPTIONS, start=1)]
            out.append(Instance(id=f"id{len(out)}", split="valid", input=Input(text=row.question), references=refs))
        return out
