"""MedDialog (Zeng et al., 2020; the summaries of Chintagunta et al., 2021): patient-doctor conversations with a
one-sentence summary, as MedHELM runs it (``med_dialog_scenario.py``, ``get_med_dialog_spec``), in its two
subsets, ``healthcaremagic`` and ``icliniq``.

HELM reads ``<subset>/test.json`` of CodaLab bundle ``0x82f0c47f…`` (a JSON object whose ``data`` lists
``{src, tgt}``): input ``src``, the one reference ``tgt``, all test. Generation (``Patient-Doctor:``/``Summary:``,
80 tokens, no stop sequence), scored by MedHELM's LLM jury (``med_dialog_accuracy``, ``metrics/medhelm_jury.py``).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, generation

BUNDLE = "0x82f0c47f6d3e4462ae9ef8ea39eebe64"
INSTRUCTIONS = "Write a one-sentence summary of the patient-doctor conversation below."


class MedDialogParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: Literal["healthcaremagic", "icliniq"] = "healthcaremagic"


@scenario("med_dialog")
class MedDialog(Scenario[MedDialogParams]):
    VERSION = "1"
    SOURCE_REVISION = BUNDLE
    Params = MedDialogParams
    description = "MedDialog: one-sentence summaries of patient-doctor conversations, judged by an LLM jury (MedHELM)."
    main_metric = "med_dialog_accuracy"
    metrics = ["med_dialog_accuracy", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "Patient-Doctor", "Summary", 80, stop=())
    helm_wording = WORDING
    helm_differences = ("med_dialog: each subset's test.json is read from HELM's CodaLab bundle (immutable), pinned by "
                        "the sha256 recorded at first fetch",)

    def sources(self) -> list[DataSource]:
        url = (f"https://worksheets.codalab.org/rest/bundles/{BUNDLE}/contents/blob/"
               f"{self.params.subset}/test.json")
        return [DataSource(filename=self.filename, url=self.web_url(url), sha256_unknown=True)]

    @property
    def filename(self) -> str:
        """The subsets share one folder of the store and of a mirror: the name says which subset."""
        return f"{self.params.subset}-test.json"

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[self.filename]
        try:
            examples = json.loads(read_source(self.name, url))["data"]
            pairs = [(e["src"], e["tgt"]) for e in examples]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not a JSON object whose data lists src and tgt: "
                                f"{exc!r}") from None
        return [Instance(id=f"id{k}", split="test", input=Input(text=src),
                         references=[Reference(text=tgt, correct=True)]) for k, (src, tgt) in enumerate(pairs)]
