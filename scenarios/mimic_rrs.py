"""MIMIC-RRS (Chen et al., ACL 2023): radiology reports' findings with their impressions, as MedHELM runs it
(``mimic_rrs_scenario.py``, ``get_mimic_rrs_spec``). Credential-gated.

HELM reads the test split's two line-aligned files from ``data_path=``: ``test.findings.tok`` and
``test.impression.tok`` (one report a line, each line stripped); a pair with an empty side is skipped, the rest
are test instances in file order, and files of different lengths stop the load. Generation (``Findings:`` and
``Impression:``, each followed by a newline, 128 tokens, no stop sequence), scored by MedHELM's LLM jury
(``mimic_rrs_accuracy``).

The reports are MIMIC-III's (PhysioNet credentialed access, with its data use agreement): the files are read only
from the user's folder, ``data_path=`` or the scenario's mirror folder. Without them a board leaves this scenario
out and says where to get access; the rest of the board runs.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, generation, user_file

FILES = ("test.findings.tok", "test.impression.tok")
PROJECT = "https://physionet.org/content/mimiciii/"
ACCESS = ("MIMIC-RRS is built from MIMIC-III, which needs PhysioNet credentialed access: complete CITI training and "
          f"sign the data use agreement at {PROJECT}, build the radiology report summarisation files (Chen et al., "
          "2023), then give the folder holding test.findings.tok and test.impression.tok as data_path= in the "
          "board entry")
INSTRUCTIONS = ("Write the impression section of this radiology report from its findings, as briefly as you can. "
                "The text is for evaluation only and is not used to diagnose or treat anyone.")


class RRSParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data_path: str | None = None  # a folder holding test.findings.tok and test.impression.tok


def report_lines(scenario: str, url: str) -> list[str]:
    try:
        text = read_source(scenario, url).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"scenario {scenario!r}: {url} is not UTF-8 text: {exc}") from None
    return [line.strip() for line in text.splitlines()]


@scenario("mimic_rrs")
class MIMICRRS(Scenario[RRSParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = RRSParams
    description = "MIMIC-RRS: a radiology report's impression from its findings (MedHELM; PhysioNet, credentialed)."
    main_metric = "mimic_rrs_accuracy"
    metrics = ["mimic_rrs_accuracy", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, "Findings", "Impression", 128, stop=(),
                                 newline_after_input=True, newline_after_output=True)
    helm_wording = WORDING
    publish_text = False  # MIMIC's data use agreement: the reports never leave the machine in exports
    helm_differences = ("mimic_rrs: read from your folder (data_path= or its mirror folder), pinned by the sha256 "
                        "recorded at first use; left out of the board when absent",)

    def sources(self) -> list[DataSource]:
        return [user_file(self.params.data_path, name, PROJECT + name, ACCESS) for name in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        findings, impressions = (report_lines(self.name, files[name]) for name in FILES)
        if len(findings) != len(impressions):
            raise ScenarioError(f"scenario {self.name!r}: {FILES[0]} has {len(findings)} lines and {FILES[1]} "
                                f"{len(impressions)}: the files must be line-aligned")
        out: list[Instance] = []
        for finding, impression in zip(findings, impressions, strict=True):
            if finding and impression:
                out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=finding),
                                    references=[Reference(text=impression, correct=True)]))
        return out
