"""Arabic EXAMS (Hardalov et al., 2020; the Arabic part, as AceGPT and the Open Arabic LLM Leaderboard publish
it): high-school exam questions by subject, as HELM Arabic runs them (``arabic_exams_scenario.py``, run spec
``get_arabic_exams_spec``).

The source is the Hub dataset ``OALL/Arabic_EXAMS`` at HELM's revision ``bc7a2934…``: a ``validation`` split
(train) and a ``test`` split with ``id`` (``<subject>-<n>``: the subject is what precedes the first ``-``),
``question``, options ``A`` to ``D`` and the keyed letter ``answer``. ``subject`` is one of :data:`SUBJECTS` with
``_`` for spaces, or ``all``; rows whose ``answer`` is not one of the four letters are skipped, as HELM does (it
warns). The id is the row's own. Multiple choice joint with HELM's Arabic letters, zero-shot
(:mod:`helmflow.scenarios.arabic`), exact match.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.arabic import ARABIC_WORDING, ONE_QUESTION, arabic_mcqa_spec, hub_rows, text_cell

REPO = "OALL/Arabic_EXAMS"
REVISION = "bc7a29346dbcaa16a8cd883b1f3e681ab2b7ff2a"
SUBJECTS = ("Biology", "Science", "Social", "Physics", "Islamic_Studies")
CHOICES = ("A", "B", "C", "D")
SPLITS = {"validation": "train", "test": "test"}  # HELM's HF_SPLIT_TO_HELM_SPLIT


class ArabicExamsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: Literal["all", "Biology", "Science", "Social", "Physics", "Islamic_Studies"] = "all"


@scenario("arabic_exams")
class ArabicExams(Scenario[ArabicExamsParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = ArabicExamsParams
    description = "Arabic EXAMS: Arabic high-school exam questions (biology, physics, science, social, Islamic)."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    default_adapter: AdapterSpec = arabic_mcqa_spec(ONE_QUESTION)
    helm_wording = ARABIC_WORDING
    pin_unverified = ("the files' paths in the repository (data/<split>-00000-of-00001.parquet) were not checked "
                      "against the Hub at this revision")

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{split}.parquet", url=self.hub_url(f"data/{split}-00000-of-00001.parquet"))
                for split in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        wanted = self.params.subject.replace("_", " ")
        out: list[Instance] = []
        for split, helm_split in SPLITS.items():
            url = files[f"{split}.parquet"]
            _, rows = hub_rows(self.name, url, ["id", "question", "answer", *CHOICES])
            for number, row in enumerate(rows):
                where = f"{url} row {number}"
                ident = text_cell(self.name, where, row, "id")
                if wanted != "all" and ident.split("-")[0] != wanted:
                    continue
                if row["answer"] not in CHOICES:
                    continue  # HELM warns and skips the row
                out.append(Instance(id=ident, split=helm_split,
                                    input=Input(text=text_cell(self.name, where, row, "question")),
                                    references=[Reference(text=text_cell(self.name, where, row, c),
                                                          correct=c == row["answer"]) for c in CHOICES]))
        return out
