"""Stanford Health Care's private MedHELM classification sets, the ``shc_*_med`` scenarios (HELM's
``shc_<name>_scenario.py`` and ``get_shc_<name>_spec``): one module, a ``dataset`` parameter per set.

Each set is one CSV of Stanford's (``medhelm-<NAME>-dataset_filtered.csv``, Stanford-private: it exists only
on Stanford's own systems) with a question, a clinical note or message as its context and a letter label. HELM
builds one test instance per row: a sentence naming the review, the question and the context, then how to
answer; references are the answer letters themselves (``A``, ``B``, and ``C`` where the set has a third
answer), the label's letter correct. Multiple choice joint, zero-shot, one output token, exact match.

HELM's quirks are kept, since they decide the instance set: rows are keyed by their prompt text, so identical
prompts collapse into one (the first row's position, the last row's label); ENT and Sequoia number each kept row
in front of its prompt (so their rows never collapse), ENT skipping rows whose label is empty first; Sequoia's
question column is ``question`` where the others have ``prompt``; a label that is not one of the set's letters
stops the load (HELM asserts). PROXY offers three letters though its prompt asks for A or B, as in HELM.

The opening sentences are helmflow's wording of each set's review (``helm_wording``); a board entry may replace
a set's whole prompt with ``template:`` (``{question}``, ``{context}`` and ``{number}`` are filled in).
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, field_validator

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_csv_source
from helmflow.scenarios.medhelm import WORDING, multiple_choice, user_file

PROJECT = "https://crfm.stanford.edu/helm/medhelm/latest/#/"  # named in lines only: the files are not published
ACCESS = "a Stanford Health Care set, private to Stanford: give the folder holding it as data_path="
YES_NO = ("Answer A for yes or B for no. Reply with the single letter and nothing else.")
YES_NO_UNSAID = ("Answer A for yes, B for no or C if the note does not say. Reply with the single letter and "
                 "nothing else.")


@dataclass(frozen=True)
class SHCSet:
    name: str  # HELM's file infix
    description: str
    review: str  # helmflow's sentence on what the reviewer is doing ("" for none)
    letters: tuple[str, ...] = ("A", "B")
    answer: str = YES_NO
    question_column: str = "prompt"
    numbered: bool = False  # HELM numbers each kept row in front of its prompt
    skip_unlabelled: bool = False


SETS: dict[str, SHCSet] = {s.name.lower(): s for s in [
    SHCSet("PTBM", "ADHD-Behavior: does a clinician recommend parent training in behaviour management",
           "The note below is from the record of a child with ADHD; the question is about behavioural therapy."),
    SHCSet("SEI", "ADHD-MedEffects: does the note document an inquiry into ADHD medication side effects",
           "The note below is from the record of a child with ADHD. A side effects inquiry is the clinician "
           "asking about, or recording, side effects of an ADHD medication the child takes now; a plan to watch "
           "for side effects or an explanation of possible ones is not an inquiry."),
    SHCSet("CONF", "MedConfInfo: does a clinical message hold confidential information", ""),
    SHCSet("PROXY", "ProxySender: was a patient portal message sent by a proxy user",
           "The message below is from a patient portal; the question is whether a proxy sent it.",
           letters=("A", "B", "C")),
    SHCSet("PRIVACY", "PrivacyDetection: does a clinical message include confidential information",
           "The message below is a clinical message; the question is whether it includes confidential "
           "information."),
    SHCSet("BMT", "NeurologyBMT: does a neurology note describe a treatment for the condition", ""),
    SHCSet("GIP", "HospiceReferral: does the note support a referral to hospice", ""),
    SHCSet("sequoia", "ClinicReferral: does the note support a referral to a specialist clinic", "",
           question_column="question", numbered=True),
    SHCSet("CDI", "CDI-QA: a clinical documentation integrity question about a note", ""),
    SHCSet("ENT", "ENT-Referral: does the note support a referral to an ear, nose and throat clinic", "",
           letters=("A", "B", "C"), answer=YES_NO_UNSAID, numbered=True, skip_unlabelled=True),
]}


class SHCParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dataset: str
    data_path: str | None = None  # a folder holding the set's medhelm-<NAME>-dataset_filtered.csv
    template: str | None = None  # the whole prompt, with {question}, {context} and {number}

    @field_validator("dataset")
    @classmethod
    def _known(cls, value: str) -> str:
        if value.lower() not in SETS:
            raise ValueError(f"unknown shc dataset {value!r}; one of {', '.join(sorted(SETS))}")
        return value.lower()

    @field_validator("template")
    @classmethod
    def _fields(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                value.format(question="", context="", number="")
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(f"template: only {{question}}, {{context}} and {{number}} can be filled in ({exc})")
        return value


def file_name(shc: SHCSet) -> str:
    return f"medhelm-{shc.name}-dataset_filtered.csv"


def default_template(shc: SHCSet) -> str:
    review = f"{shc.review} " if shc.review else ""
    number = "{number} " if shc.numbered else ""
    return f"{number}{review}Question: {{question}}\nContext: {{context}}\n{shc.answer}"


def prompts(rows: list[dict[str, str]], shc: SHCSet, template: str, where: str) -> dict[str, str]:
    """HELM's ``create_benchmark``: prompt text -> label, in first-seen order (a repeated prompt keeps the last
    label); numbered sets count the rows they keep."""
    out: dict[str, str] = {}
    number = 1
    for index, row in enumerate(rows):
        if shc.skip_unlabelled and row["label"] == "":
            continue
        text = template.format(question=row[shc.question_column], context=row["context"],
                               number=number if shc.numbered else "")
        out[text] = row["label"]
        number += 1
    for text, label in out.items():
        if label not in shc.letters:
            raise ScenarioError(f"{where}: a label is {label!r}, not one of {', '.join(shc.letters)}")
    return out


@scenario("shc_med")
class SHCMed(Scenario[SHCParams]):
    VERSION = "1"
    SOURCE_REVISION = "user-supplied"
    Params = SHCParams
    description = "Stanford Health Care's private classification sets (MedHELM's shc_*_med; Stanford only)."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "efficiency"]
    helm_wording = (WORDING + "; each prompt's opening sentence and answer line are helmflow's (HELM's are part of "
                    "its instance text); `template:` replaces them")
    publish_text = False  # Stanford's notes never leave the machine in exports
    helm_differences = ("shc_*_med: read from your folder (data_path= or the scenario's mirror folder), pinned by the "
                        "sha256 recorded at first use; left out of the board when absent",)

    @property
    def shc(self) -> SHCSet:
        return SETS[self.params.dataset]

    @property
    def default_adapter(self) -> AdapterSpec:  # HELM's layout: an empty input noun still puts ": " first
        letters = self.shc.letters
        return multiple_choice(f"Answer {' or '.join(letters) if len(letters) == 2 else 'A, B or C'}.", "", "")

    def sources(self) -> list[DataSource]:
        name = file_name(self.shc)
        return [user_file(self.params.data_path, name, PROJECT + name, ACCESS)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        shc = self.shc
        url = files[file_name(shc)]
        csv.field_size_limit(sys.maxsize)  # HELM's: a note can be longer than csv's default field limit
        rows = read_csv_source(self.name, url, [shc.question_column, "context", "label"])
        answers = prompts(rows, shc, self.params.template or default_template(shc), f"scenario {self.name!r}: {url}")
        return [Instance(id=f"id{k}", split="test", input=Input(text=text),
                         references=[Reference(text=letter, correct=letter == label) for letter in shc.letters])
                for k, (text, label) in enumerate(answers.items())]
