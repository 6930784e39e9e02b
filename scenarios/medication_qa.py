"""MedicationQA (Ben Abacha et al., MedInfo 2019): consumers' questions about their medicines with
pharmacist-checked answers, as MedHELM runs it (``medication_qa_scenario.py``, ``get_medication_qa_spec``).

HELM reads ``MedInfo2019-QA-Medications.xlsx`` from the ``master`` branch of ``abachaa/Medication_QA_MedInfo2019``
with pandas (first sheet, first row the header) and drops the rows without an ``Answer``; every other row is a
test instance, input ``Question``, the one reference ``Answer``. Generation (``Question:``/``Answer:``, 512 tokens,
no stop sequence), scored by MedHELM's LLM jury (``medication_qa_accuracy``, ``metrics/medhelm_jury.py``).
Reading the workbook needs openpyxl (the ``medhelm`` extra).
"""

from __future__ import annotations

import io
from typing import Any

from helmflow.errors import install_command
from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, generation

URL = "https://github.com/abachaa/Medication_QA_MedInfo2019/raw/master/MedInfo2019-QA-Medications.xlsx"
FILENAME = "MedInfo2019-QA-Medications.xlsx"
INSTRUCTIONS = "Answer the consumer's health question below."


def _cell(value: Any) -> str | None:
    """A cell as pandas reads it into a string column: empty cells are missing (NaN)."""
    if value is None or (isinstance(value, str) and value == ""):
        return None
    return value if isinstance(value, str) else str(value)


def read_workbook(scenario: str, url: str, data: bytes) -> list[dict[str, str | None]]:
    """The first sheet's rows as dicts keyed by its header row."""
    try:
        import openpyxl
    except ImportError:
        raise ScenarioError(f"scenario {scenario!r} reads an Excel workbook and needs openpyxl: "
                            f"{install_command('medhelm')}") from None
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several kinds for a file that is not a workbook
        raise ScenarioError(f"scenario {scenario!r}: {url} is not a readable .xlsx workbook: {exc}") from None
    rows = list(book.worksheets[0].iter_rows(values_only=True))
    if not rows:
        raise ScenarioError(f"scenario {scenario!r}: {url}: the first sheet is empty")
    header = [str(h) if h is not None else "" for h in rows[0]]
    return [{name: _cell(row[i]) if i < len(row) else None for i, name in enumerate(header)} for row in rows[1:]]


@scenario("medication_qa")
class MedicationQA(Scenario):
    VERSION = "1"
    SOURCE_REVISION = "master-branch"
    description = "MedicationQA: consumers' questions about medicines, answered and judged by an LLM jury (MedHELM)."
    main_metric = "medication_qa_accuracy"
    metrics = ["medication_qa_accuracy", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "Question", "Answer", 512, stop=())
    helm_wording = WORDING
    pin_unverified = ("HELM reads the master branch of abachaa/Medication_QA_MedInfo2019, which can move; the sha256 "
                      "recorded at first fetch pins what this machine read, not what HELM read")
    helm_differences = ("medication_qa: the workbook is read from the master branch HELM reads (no commit), with "
                        "openpyxl instead of pandas, pinned by the sha256 recorded at first fetch",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILENAME, url=self.web_url(URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILENAME]
        rows = read_workbook(self.name, url, read_source(self.name, url))
        if rows and ("Question" not in rows[0] or "Answer" not in rows[0]):
            raise ScenarioError(f"scenario {self.name!r}: {url}: the first sheet has no Question and Answer columns; "
                                f"it has: {', '.join(rows[0])}")
        out: list[Instance] = []
        for number, row in enumerate(rows, start=2):
            if row["Answer"] is None:
                continue
            if row["Question"] is None:
                raise ScenarioError(f"scenario {self.name!r}: {url}: sheet row {number} has an answer but no question")
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=row["Question"]),
                                references=[Reference(text=row["Answer"], correct=True)]))
        return out
