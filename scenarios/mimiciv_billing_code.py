"""MIMIC-IV billing codes: the ICD-10 codes of a hospital stay from its discharge summary, as MedHELM runs it
(``mimiciv_billing_code_scenario.py``, ``get_mimiciv_billing_code_spec``). Credential-gated.

HELM reads a Feather file (``data_path=``, its ``mimiciv_icd10.feather``) with a ``text`` column (the note)
and a ``target`` column (the codes: a list, or one value); each row is a test instance whose one reference is
the codes joined by commas. Generation (``Note:`` and ``Predicted ICD-10 Codes:``, each followed by a newline,
256 tokens, no stop sequence), scored by HELM's ``mimiciv_billing_code_f1`` (``metrics/medhelm.py``).

The notes are MIMIC-IV's (PhysioNet credentialed access, with its data use agreement); HELM does not publish
how its file was derived, so the file is read only from the user's folder: ``data_path=`` (a folder holding
``mimiciv_icd10.feather``) or the scenario's mirror folder. Without it a board leaves this scenario out and
says where to get access; the rest of the board runs.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.feather as feather
from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import check_columns, read_source
from helmflow.scenarios.medhelm import WORDING, generation, user_file

FILENAME = "mimiciv_icd10.feather"
ACCESS = ("MIMIC-IV discharge notes and ICD-10 codes need PhysioNet credentialed access: complete CITI training and "
          "sign the data use agreement at https://physionet.org/content/mimiciv/ and https://physionet.org/content/"
          "mimic-iv-note/, build HELM's mimiciv_icd10.feather (columns text, target), then give its folder as "
          "data_path= in the board entry")
PROJECT = "https://physionet.org/content/mimic-iv-note/"
INSTRUCTIONS = "Read the clinical note below and list every ICD-10 code that applies to it."


class BillingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data_path: str | None = None  # a folder holding mimiciv_icd10.feather


def codes_text(target: object) -> str:
    """HELM's reference: the codes of a list joined by commas, or the one value as text."""
    if isinstance(target, list):
        return ",".join(str(code) for code in target)
    return str(target)


@scenario("mimiciv_billing_code")
class MIMICIVBillingCode(Scenario[BillingParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = BillingParams
    description = "MIMIC-IV billing codes: ICD-10 codes from a discharge summary (MedHELM; PhysioNet, credentialed)."
    main_metric = "mimiciv_billing_code_f1"
    metrics = ["mimiciv_billing_code_f1", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "Note", "Predicted ICD-10 Codes", 256, stop=(),
                                 newline_after_input=True, newline_after_output=True)
    helm_wording = WORDING
    publish_text = False  # MIMIC's data use agreement: the notes never leave the machine in exports
    helm_differences = ("mimiciv_billing_code: read from your folder (data_path= or its mirror folder), pinned by the "
                        "sha256 recorded at first use; left out of the board when absent",)

    def sources(self) -> list[DataSource]:
        return [user_file(self.params.data_path, FILENAME, PROJECT + FILENAME, ACCESS)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILENAME]
        try:
            table = feather.read_table(io.BytesIO(read_source(self.name, url)))
        except (pa.ArrowInvalid, OSError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a readable Feather file: {exc}") from None
        check_columns(self.name, url, table.schema, {"text": "string"})
        if "target" not in table.schema.names:
            raise ScenarioError(f"scenario {self.name!r}: {url} has no column 'target' (the ICD-10 codes)")
        return [Instance(id=f"id{k}", split="test", input=Input(text=row["text"] or ""),
                         references=[Reference(text=codes_text(row["target"]), correct=True)])
                for k, row in enumerate(table.to_pylist())]
