"""DischargeMe (BioNLP 2024 shared task): a stay's brief hospital course and discharge instructions written from
its discharge note and radiology report, as MedHELM runs it (``dischargeme_scenario.py``,
``get_dischargeme_spec``). Credential-gated.

HELM reads six gzipped CSVs of the phase I test set (``files/discharge-me/1.3/test_phase_1/`` below
``data_path=``, the ``physionet.org`` folder PhysioNet's download makes): ``diagnosis``, ``triage``,
``discharge``, ``radiology``, ``edstays`` and ``discharge_target``, each with ``keep_default_na=False``. It joins
diagnosis and triage on ``subject_id``, then the discharge notes on ``subject_id``, the radiology reports and the
ED stays on ``hadm_id`` (inner joins, pandas' suffixes), keeps each ``hadm_id``'s first row, joins the targets on
``hadm_id``, and removes the target text from the discharge note. Each stay gives two test instances, its brief
hospital course then its discharge instructions. Here the same joins run in pandas, so the rows and their order
are HELM's. Generation (no input noun, ``Answer:``, 300 tokens, no stop sequence), scored by MedHELM's LLM jury
(``dischargeme_accuracy``). Reading needs pandas (the ``medhelm`` extra).
"""

from __future__ import annotations

import io

from pydantic import BaseModel, ConfigDict

from helmflow.errors import install_command
from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, generation

FOLDER = "files/discharge-me/1.3/test_phase_1"
FILES = ("diagnosis", "discharge", "discharge_target", "radiology", "edstays", "triage")
PROJECT = "https://physionet.org/content/discharge-me/1.3/"
ACCESS = ("DischargeMe needs PhysioNet credentialed access: complete CITI training and sign the data use agreement at "
          f"{PROJECT}, download it (wget -r -N -c -np ... https://physionet.org/files/discharge-me/1.3/), then give "
          "the physionet.org folder as data_path= in the board entry")
TARGETS = (("brief_hospital_course", "Brief Hospital Course"), ("discharge_instructions", "Discharge Instructions"))
INSTRUCTIONS = ("From the discharge text and radiology report below, write the document named at the end: the "
                "brief hospital course or the discharge instructions.")


class DischargeMeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data_path: str | None = None  # the physionet.org folder of PhysioNet's download


def prompt(text: str, radiology: str, target: str) -> str:
    return (f"Write the {target} of this stay from its discharge text and radiology report.\n\n"
            f"Discharge Text:\n{text}\n\nRadiology Report:\n{radiology}\n\n{target}:\n")


def joined(frames: dict, target: str):
    """HELM's ``file_preprocessing``: the stays with their texts and targets, ``target``'s text cut from the note."""
    import pandas as pd

    merged = pd.merge(frames["diagnosis"], frames["triage"], on="subject_id", how="inner",
                      suffixes=("_df_diagnosis", "_df_triage"))
    merged = pd.merge(merged, frames["discharge"], on="subject_id", how="inner", suffixes=("", "_df_discharge"))
    merged = pd.merge(merged, frames["radiology"], on="hadm_id", how="inner", suffixes=("", "_df_radiology"))
    merged = pd.merge(merged, frames["edstays"], on="hadm_id", how="inner", suffixes=("", "_df_ed"))
    reduced = merged.drop_duplicates(subset="hadm_id")[["text", "text_df_radiology", "hadm_id"]]
    final = pd.merge(reduced, frames["discharge_target"], on="hadm_id", how="inner")
    final["text"] = final.apply(lambda row: row["text"].replace(row[target], ""), axis=1)
    return final


@scenario("dischargeme")
class DischargeMe(Scenario[DischargeMeParams]):
    VERSION = "1"
    SOURCE_REVISION = "1.3"
    Params = DischargeMeParams
    description = ("DischargeMe: a stay's brief hospital course and discharge instructions from its notes (MedHELM; "
                   "PhysioNet, credentialed).")
    main_metric = "dischargeme_accuracy"
    metrics = ["dischargeme_accuracy", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, None, "Answer", 300, stop=())
    helm_wording = WORDING + "; the sentence each input opens with (part of HELM's instance text) is helmflow's too"
    publish_text = False  # MIMIC's data use agreement: the notes never leave the machine in exports
    helm_differences = ("dischargeme: read from your folder (data_path= or its mirror folder, the six files side by "
                        "side), pinned by the sha256 recorded at first use; left out of the board when absent",)

    def sources(self) -> list[DataSource]:
        root = self.params.data_path
        return [DataSource(filename=f"{name}.csv.gz", url=f"{root.rstrip('/')}/{FOLDER}/{name}.csv.gz" if root
                           else f"{PROJECT}{FOLDER}/{name}.csv.gz", sha256_unknown=True, gated=ACCESS)
                for name in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        try:
            import pandas as pd
        except ImportError:
            raise ScenarioError(f"scenario {self.name!r} joins its tables as HELM does, with pandas: "
                                f"{install_command('medhelm')}") from None
        frames = {}
        for name in FILES:
            url = files[f"{name}.csv.gz"]
            try:
                frames[name] = pd.read_csv(io.BytesIO(read_source(self.name, url)), compression="gzip",
                                           keep_default_na=False)
            except (ValueError, OSError, EOFError) as exc:  # a file that is not gzipped CSV
                raise ScenarioError(f"scenario {self.name!r}: {url} is not a readable gzipped CSV: {exc}") from None
        try:
            tables = [joined(frames, column) for column, _ in TARGETS]
        except KeyError as exc:
            raise ScenarioError(f"scenario {self.name!r}: the DischargeMe files lack the column {exc}") from None
        out: list[Instance] = []
        for i in range(len(tables[0])):
            for table, (column, target) in zip(tables, TARGETS, strict=True):
                row = table.iloc[i]
                out.append(Instance(id=f"id{len(out)}", split="test",
                                    input=Input(text=prompt(row["text"], row["text_df_radiology"], target)),
                                    references=[Reference(text=row[column], correct=True)]))
        return out
