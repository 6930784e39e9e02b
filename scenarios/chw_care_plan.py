"""CHW care plans: the fields a community health worker's care plan needs, taken from a clinical note, as MedHELM
runs it (``chw_care_plan_scenario.py``, ``get_chw_care_plan_run_spec``). Stanford-private.

HELM reads ``CHW_Dataset.csv`` (``data_path=``: here the folder holding it) with ``pandas.read_csv``; each row
whose ``MO Note`` is not missing is a test instance: the request (extract the chief complaint and the history of
present illness by onset, provoking and palliating factors, quality, region, severity, timing and related
symptoms, writing "Not mentioned" where the note is silent) followed by the note; the reference is the note itself,
as in HELM. Generation (empty input and output nouns, 768 tokens, no stop sequence), scored by MedHELM's LLM jury
(``chw_care_plan_accuracy``). Reading needs pandas (the ``medhelm`` extra).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.medhelm import WORDING, generation, user_file
from helmflow.scenarios.mental_health import read_pandas_csv

FILENAME = "CHW_Dataset.csv"
PROJECT = "https://crfm.stanford.edu/helm/medhelm/latest/#/"  # named in lines only: the file is not published
ACCESS = "community health workers' notes, private to Stanford: give the folder holding it as data_path="
INSTRUCTIONS = "Turn the patient note below into the format its request describes."
REQUEST = """Below is a clinical note of a visit. Take from it only what it states, in its own words where you can, \
and write "Not mentioned" for anything it does not say.

Chief Complaint
[the chief complaint]

History of Present Illness

Onset: when it started, and whether suddenly or gradually. [onset]

Provoking/Palliating Factors: what makes it better or worse. [factors]

Quality: what the symptoms are like (sharp, dull, stabbing...). [quality]

Region/Radiation: where the symptoms are, and whether they move. [region]

Severity: how severe, from 1 to 10. [severity]

Timing: when the symptoms come, and at what times of day. [timing]

Related Symptoms: other symptoms that go with the main complaint. [related symptoms]

Keep it short and supported by the note alone.

Clinical Note:
"""


class CHWParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data_path: str | None = None  # a folder holding CHW_Dataset.csv


@scenario("chw_care_plan")
class CHWCarePlan(Scenario[CHWParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = CHWParams
    description = "CHW care plans: a care plan's fields from a clinical note (MedHELM; Stanford-private)."
    main_metric = "chw_care_plan_accuracy"
    metrics = ["chw_care_plan_accuracy", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "", "", 768, stop=())
    helm_wording = WORDING + "; the request each note follows (part of HELM's instance text) is helmflow's too"
    publish_text = False  # Stanford's notes never leave the machine in exports
    helm_differences = ("chw_care_plan: read from your folder (data_path= or its mirror folder), pinned by the sha256 "
                        "recorded at first use; left out of the board when absent",)

    def sources(self) -> list[DataSource]:
        return [user_file(self.params.data_path, FILENAME, PROJECT + FILENAME, ACCESS)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for row in read_pandas_csv(self.name, files[FILENAME], ("MO Note",)):
            note = row["MO Note"]
            if note == "nan":  # HELM: pd.isna(note) skips the row
                continue
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=f"\n{REQUEST}{note}\n"),
                                references=[Reference(text=note, correct=True)]))
        return out
