"""n2c2 2018 track 1, clinical trial cohort selection (Stubbs et al., 2019): does a patient meet one inclusion
criterion, as MedHELM runs it (``n2c2_ct_matching_scenario.py``, ``get_n2c2_ct_matching_spec``, after Wornow et
al., 2024). Credential-gated (the n2c2 data use agreement, DBMI portal).

HELM reads every ``*.xml`` file of ``test/`` below ``data_path=`` in name order, one patient each: the ``TEXT``
element (``\\n\\n\\n`` replaced by ``\\n`` once, then split into notes at lines of 100 asterisks, each note stripped and
empty ones dropped) and the ``TAGS`` element, whose children are the 13 criteria with ``met="met"`` or
``met="not met"``. Each patient is one test instance for the run's ``subject`` (a criterion): the criterion and
its definition, the notes, each headed ``## Note #k`` with its ``Record date:`` and separated by a line of 50
asterisks, the latest record date as today, and the question; references ``yes`` and ``no``, the label's correct.
Multiple choice joint, zero-shot, exact match. Here ``sources`` lists the folder's files (``data_path=``, or the
scenario's mirror folder, ``--data-path n2c2_ct_matching=DIR`` included), each pinned by its sha256 at first use.

The prompt is helmflow's wording of the same layout, and each criterion's definition is the n2c2 guidelines'
(HELM uses Wornow et al.'s longer rewordings); see ``helm_wording``. The XML is read with the standard library's
parser, which resolves no external entity and refuses entity expansion bombs (expat 2.4 and later).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, multiple_choice

PROJECT = "https://portal.dbmi.hms.harvard.edu/projects/n2c2-nlp/"
ACCESS = ("n2c2 2018 track 1 needs the n2c2 data use agreement: register and apply at "
          f"{PROJECT}, then give the folder holding its test/ folder of XML files as data_path= in the board entry")
#: the n2c2 2018 track 1 annotation guidelines' criteria and their definitions
CRITERIA = {
    "ABDOMINAL": "History of intra-abdominal surgery, small or large intestine resection, or small bowel obstruction",
    "ADVANCED-CAD": "Advanced cardiovascular disease (CAD): two or more of taking two or more medications to treat "
                    "CAD, a history of myocardial infarction (MI), current angina, and ischemia past or present",
    "ALCOHOL-ABUSE": "Current alcohol use over weekly recommended limits",
    "ASP-FOR-MI": "Use of aspirin for preventing myocardial infarction (MI)",
    "CREATININE": "Serum creatinine level above the upper normal limit",
    "DIETSUPP-2MOS": "Taken a dietary supplement (excluding vitamin D) in the past 2 months",
    "DRUG-ABUSE": "Current or past history of drug abuse",
    "ENGLISH": "Patient must speak English",
    "HBA1C": "Any hemoglobin A1c (HbA1c) value between 6.5% and 9.5%",
    "KETO-1YR": "Diagnosis of ketoacidosis within the past year",
    "MAJOR-DIABETES": "Major diabetes-related complication (a result of, or strongly correlated with, uncontrolled "
                      "diabetes): amputation, kidney damage, skin conditions, retinopathy, nephropathy or neuropathy",
    "MAKES-DECISIONS": "Patient must make their own medical decisions",
    "MI-6MOS": "Myocardial infarction (MI) within the past 6 months",
}
NOTE_BREAK = "*" * 100
DATE = re.compile(r"Record date: (\d{4}-\d{2}-\d{2})")
PLACEHOLDER = "test.xml"  # the one source named when no folder of the patients' files is here


class N2C2Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: str  # the inclusion criterion, one of CRITERIA
    data_path: str | None = None  # a folder holding test/*.xml

    @field_validator("subject")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in CRITERIA:
            raise ValueError(f"unknown n2c2 criterion {value!r}; one of {', '.join(CRITERIA)}")
        return value


def parse_patient(xml: bytes, where: str) -> tuple[list[str], dict[str, int]]:
    """HELM's ``XMLDataLoader.parse_xml``: the notes and each criterion's label (1 met, 0 not met)."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ScenarioError(f"{where} is not readable XML: {exc}") from None
    notes: list[str] = []
    tags: dict[str, int] = {}
    for elem in root.iter():
        if elem.tag == "TEXT":
            text = (elem.text or "").replace("\n\n\n", "\n")
            notes = [part.strip() for part in text.split(NOTE_BREAK) if part.strip() != ""]
        elif elem.tag == "TAGS":
            tags = {sub.tag: 1 if sub.attrib.get("met") == "met" else 0 for tag in root.iter("TAGS") for sub in tag}
    return notes, tags


def note_date(note: str) -> str | None:
    found = DATE.search(note)
    return found.group(1) if found else None


def prompt(subject: str, notes: list[str]) -> str:
    dated = [f"## Note #{k + 1}\nDate: {note_date(note) or ''}\n{note}" for k, note in enumerate(notes)]
    today = None
    for note in notes:
        today = note_date(note) or today
    body = ("\n" + "*" * 50 + "\n\n").join(dated)
    return (f"Decide whether the patient below meets one inclusion criterion of a clinical trial.\n\n"
            f"Criterion: \"{subject}\", defined as: \"{CRITERIA[subject]}\".\n\n"
            f"The patient's {len(notes)} clinical notes follow, each headed by the date it was written and "
            f"separated from the next by a line of asterisks.\n\n{'-' * 100}\n\n{body}\n\n{'-' * 100}\n\n"
            f"Take today's date to be {today}.\n\nDoes the patient meet the criterion \"{subject}\"?")


@scenario("n2c2_ct_matching")
class N2C2CTMatching(Scenario[N2C2Params]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = N2C2Params
    description = "n2c2 2018 cohort selection: does a patient meet a trial's inclusion criterion (MedHELM; gated)."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "efficiency"]
    default_adapter = multiple_choice("Answer A for yes or B for no.", "",
                                      "Reply with the letter alone, A for yes or B for no")
    helm_wording = (WORDING + "; the prompt around the notes (part of HELM's instance text) is helmflow's too, and "
                    "each criterion is defined as the n2c2 guidelines define it, where HELM gives Wornow et al.'s "
                    "longer rewordings")
    publish_text = False  # the n2c2 data use agreement: the notes never leave the machine in exports
    helm_differences = ("n2c2_ct_matching: the test/ folder's XML files are read from your folder (data_path= or the "
                        "scenario's mirror folder), each pinned by the sha256 recorded at first use; left out of the "
                        "board when absent",)

    def _folder(self) -> str | None:
        from helmflow.datasets import mirror_folder

        if self.params.data_path:
            return os.path.join(self.params.data_path, "test")
        return mirror_folder(self.name, self.dataset_revision())

    def sources(self) -> list[DataSource]:
        folder = self._folder()
        names = sorted(n for n in os.listdir(folder) if n.endswith(".xml")) if folder and os.path.isdir(folder) else []
        base = folder if self.params.data_path and folder else PROJECT.rstrip("/")
        return [DataSource(filename=name, url=f"{base}/{name}", sha256_unknown=True, gated=ACCESS)
                for name in names or [PLACEHOLDER]]

    def load(self, files: dict[str, str]) -> list[Instance]:
        subject = self.params.subject
        out: list[Instance] = []
        for name in sorted(files):
            where = f"scenario {self.name!r}: {files[name]}"
            notes, labels = parse_patient(read_source(self.name, files[name]), where)
            if subject not in labels:
                raise ScenarioError(f"{where}: the TAGS element has no {subject} criterion")
            answer = "yes" if labels[subject] else "no"
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=prompt(subject, notes)),
                                references=[Reference(text=c, correct=c == answer) for c in ("yes", "no")],
                                extra=_patient(name)))
        return out


def _patient(name: str) -> dict[str, Any]:
    return {"patient_id": name.removesuffix(".xml")}
