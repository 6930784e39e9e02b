"""CLEAR (Lopez et al., npj Digital Medicine 2025): does a patient's note show a history of a condition, as
MedHELM runs it (``clear_scenario.py``, ``get_clear_spec``). Stanford-private.

One workbook per condition, ``<condition>.xlsx`` in ``data_path=`` (HELM's ``human_labeled/`` folder), first
sheet, columns ``text`` and ``result_human`` (1 has a history, 0 has none, 2 uncertain). HELM reads it with
``pandas.read_excel`` and takes ``str(value).strip()`` of both cells, skipping a row where either is empty; so a
missing cell is the text ``nan`` (kept), and a label column with a missing cell is read as floats (``1.0``),
which matches no answer: such a row has no correct reference. Both are kept here as HELM reads them. Each row is
one test instance: the note and the three answers (``Has a history of <condition>``, ``Does not have a history
of <condition>``, ``Uncertain``) in its text, the same three as references. Multiple choice joint, zero-shot,
one output token, exact match. Reading workbooks needs openpyxl (the ``enterprise`` extra).

The sentences around the note are helmflow's wording (``helm_wording``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import read_xlsx_rows
from helmflow.scenarios.medhelm import WORDING, multiple_choice, user_file

#: condition -> how the prompt names it (HELM's CONDITION_PROMPTS)
CONDITIONS = {
    "alcohol_dependence": "alcohol dependence",
    "attention_deficit_hyperactivity_disorder": "attention deficit hyperactivity disorder (ADHD)",
    "bipolar_disorder": "bipolar disorder",
    "chronic_pain": "chronic pain",
    "homelessness": "homelessness",
    "liver_disease": "liver disease",
    "major_depression": "major depression",
    "personality_disorder": "personality disorder",
    "post_traumatic_stress_disorder": "post-traumatic stress disorder (PTSD)",
    "substance_use_disorder": "substance use disorder",
    "suicidal_behavior": "suicidal behavior",
    "tobacco_dependence": "tobacco dependence",
    "unemployment": "unemployment",
}
PROJECT = "https://www.nature.com/articles/s41746-024-01377-1"
ACCESS = "CLEAR's labelled notes, private to Stanford: give the folder holding it (HELM's human_labeled/) as data_path="


class CLEARParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    condition: str  # one of CONDITIONS
    data_path: str | None = None  # a folder holding <condition>.xlsx

    @field_validator("condition")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in CONDITIONS:
            raise ValueError(f"unknown CLEAR condition {value!r}; one of {', '.join(CONDITIONS)}")
        return value


def answers(condition: str) -> list[str]:
    name = CONDITIONS[condition]
    return [f"Has a history of {name}", f"Does not have a history of {name}", "Uncertain"]


def pandas_strings(values: list[Any]) -> list[str]:
    """``str`` of each cell of one column as pandas reads it: a column of numbers with a missing cell is floats
    (``1.0``), a missing cell is ``nan``."""
    numbers = [v for v in values if v is not None]
    numeric = bool(numbers) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers)
    if numeric and (len(numbers) < len(values) or any(isinstance(v, float) for v in numbers)):
        return ["nan" if v is None else str(float(v)) for v in values]
    return ["nan" if v is None else str(v) for v in values]


def prompt(condition: str, note: str) -> str:
    name = CONDITIONS[condition]
    a, b, c = answers(condition)
    return (f"Read the patient's note below and decide whether the patient has a history of {name}.\n\n"
            f"Clinical note:\n{note}\n\nA. {a}\nB. {b}\nC. {c}\n\nAnswer:")


@scenario("clear")
class CLEAR(Scenario[CLEARParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = CLEARParams
    description = "CLEAR: does a patient's note show a history of a condition (MedHELM; Stanford-private)."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "efficiency"]
    helm_wording = (WORDING + "; the sentences around each note (part of HELM's instance text) are helmflow's too")
    publish_text = False  # Stanford's notes never leave the machine in exports
    helm_differences = ("clear: read from your folder (data_path= or the scenario's mirror folder), pinned by the "
                        "sha256 recorded at first use; left out of the board when absent",)

    @property
    def default_adapter(self) -> AdapterSpec:
        name = self.params.condition.replace("_", " ")  # HELM's instructions spell the condition this way
        return multiple_choice(f"Answer A if the patient has a history of {name}, B if the patient has none, or "
                               "C if it is uncertain.", None, "Reply with the letter A, B or C alone")

    def sources(self) -> list[DataSource]:
        name = f"{self.params.condition}.xlsx"
        return [user_file(self.params.data_path, name, f"{PROJECT}#{name}", ACCESS)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        condition = self.params.condition
        url = files[f"{condition}.xlsx"]
        header, rows = read_xlsx_rows(self.name, url)

        def column(name: str) -> list[str]:  # HELM's row.get(name, ""): a missing column is empty cells
            return pandas_strings([row.get(name) for row in rows]) if name in header else [""] * len(rows)

        texts, labels = column("text"), column("result_human")
        choices = answers(condition)
        mapping = {"1": choices[0], "0": choices[1], "2": choices[2]}
        out: list[Instance] = []
        for text, label in zip(texts, labels, strict=True):
            text, label = text.strip(), label.strip()
            if not text or not label:
                continue
            answer = mapping.get(label, label)
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=prompt(condition, text)),
                                references=[Reference(text=c, correct=c == answer) for c in choices]))
        return out
