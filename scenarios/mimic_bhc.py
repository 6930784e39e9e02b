"""MIMIC-IV-BHC (Aali et al., 2024): discharge notes with their brief hospital course, as MedHELM runs it
(``mimic_bhc_scenario.py``, ``get_mimic_bhc_spec``). Credential-gated.

HELM reads one JSON Lines file (``data_path=``, its ``mimic_iv_bhc.json``) whose rows hold ``input`` (the
note) and ``target`` (the brief hospital course); rows missing either are skipped, the rest are test
instances. Generation (``Clinical Note:`` and ``Brief Hospital Course:``, each followed by a newline, 1,024
tokens, no stop sequence), scored by MedHELM's LLM jury (``mimic_bhc_accuracy``).

The notes are MIMIC-IV's (PhysioNet credentialed access, with its data use agreement): the file is read only from
the user's folder, ``data_path=`` (a folder holding ``mimic_iv_bhc.json``) or the scenario's mirror folder.
Without it a board leaves this scenario out and says where to get access; the rest of the board runs.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_jsonl_lines
from helmflow.scenarios.medhelm import WORDING, generation, user_file

FILENAME = "mimic_iv_bhc.json"
PROJECT = "https://physionet.org/content/labelled-notes-hospital-course/"
ACCESS = ("MIMIC-IV-BHC needs PhysioNet credentialed access: complete CITI training and sign the data use agreement "
          f"at {PROJECT}, then give the folder holding {FILENAME} (JSON Lines with input and target) as data_path= "
          "in the board entry")
INSTRUCTIONS = "Summarise the clinical note below as a brief hospital course."


class BHCParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data_path: str | None = None  # a folder holding mimic_iv_bhc.json


@scenario("mimic_bhc")
class MIMICBHC(Scenario[BHCParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = BHCParams
    description = "MIMIC-IV-BHC: a brief hospital course from a discharge note (MedHELM; PhysioNet, credentialed)."
    main_metric = "mimic_bhc_accuracy"
    metrics = ["mimic_bhc_accuracy", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "Clinical Note", "Brief Hospital Course", 1024, stop=(),
                                 newline_after_input=True, newline_after_output=True)
    helm_wording = WORDING
    publish_text = False  # MIMIC's data use agreement: the notes never leave the machine in exports
    helm_differences = ("mimic_bhc: read from your folder (data_path= or its mirror folder), pinned by the sha256 "
                        "recorded at first use; left out of the board when absent",)

    def sources(self) -> list[DataSource]:
        return [user_file(self.params.data_path, FILENAME, PROJECT + FILENAME, ACCESS)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILENAME]
        out: list[Instance] = []
        for number, line in read_jsonl_lines(self.name, url):
            try:
                row = json.loads(line)
                note, course = row["input"], row["target"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {number}: {exc!r}") from None
            if note and course:
                out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=note),
                                    references=[Reference(text=course, correct=True)]))
        return out
