"""STARR patient instructions: post-procedure instructions written from a surgical case, as MedHELM runs it
(``starr_patient_instructions_scenario.py``, ``get_starr_patient_instructions_run_spec``). Stanford-private.

HELM reads ``dataset_cases_qc.csv`` (``data_path=``: here the folder holding it) with ``csv.DictReader``: a row
counts only when its ``QC`` cell is ``TRUE`` (any case, trimmed) and its ``Diagnosis``, ``ActualProcedure``,
``HistoryPhysicalNoteText``, ``OperativeNoteText`` and ``DischargeInstructionNoteText`` are all non-empty once
trimmed. The input is the four case fields under ``Diagnosis:``, ``Procedure:``, ``History & Physical:`` and
``Operative Report:`` (a line each, a blank line after), the reference the discharge instructions. Generation
(``Case Details:`` / ``Patient Instructions:``, 256 tokens, no stop sequence), scored by MedHELM's LLM jury
(``starr_patient_instructions_accuracy``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import read_csv_source
from helmflow.scenarios.medhelm import WORDING, generation, user_file

FILENAME = "dataset_cases_qc.csv"
PROJECT = "https://crfm.stanford.edu/helm/medhelm/latest/#/"  # named in lines only: the file is not published
ACCESS = "STARR surgical cases, private to Stanford: give the folder holding it as data_path="
FIELDS = ("Diagnosis", "ActualProcedure", "HistoryPhysicalNoteText", "OperativeNoteText",
          "DischargeInstructionNoteText")
INSTRUCTIONS = ("Write the instructions a patient should follow after the procedure described in the case below "
                "(diagnosis, planned procedure, history and physical, operative report): clear steps the patient "
                "can act on. The text is for evaluation only and is not used to diagnose or treat anyone.")


class STARRParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data_path: str | None = None  # a folder holding dataset_cases_qc.csv


@scenario("starr_patient_instructions")
class STARRPatientInstructions(Scenario[STARRParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = STARRParams
    description = "STARR patient instructions: post-procedure instructions from a surgical case (MedHELM; private)."
    main_metric = "starr_patient_instructions_accuracy"
    metrics = ["starr_patient_instructions_accuracy", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "Case Details", "Patient Instructions", 256, stop=())
    helm_wording = WORDING
    publish_text = False  # Stanford's cases never leave the machine in exports
    helm_differences = ("starr_patient_instructions: read from your folder (data_path= or its mirror folder), pinned "
                        "by the sha256 recorded at first use; left out of the board when absent",)

    def sources(self) -> list[DataSource]:
        return [user_file(self.params.data_path, FILENAME, PROJECT + FILENAME, ACCESS)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows = read_csv_source(self.name, files[FILENAME], ["QC", *FIELDS])
        out: list[Instance] = []
        for row in rows:
            if row["QC"].strip().upper() != "TRUE":
                continue
            diagnosis, procedure, history, operative, instructions = (row[f].strip() for f in FIELDS)
            if not (diagnosis and procedure and history and operative and instructions):
                continue
            text = (f"Diagnosis: {diagnosis}\nProcedure: {procedure}\nHistory & Physical: {history}\n"
                    f"Operative Report: {operative}\n\n")
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=text),
                                references=[Reference(text=instructions, correct=True)]))
        return out
