"""ArabicMMLU (Koto et al., 2024): questions from school and university exams across the Arab world, in Modern
Standard Arabic, one of 40 subsets per run, as HELM Arabic runs them (``arabic_mmlu_scenario.py``, run spec
``get_arabic_mmlu_spec``).

The source is the Hub dataset ``MBZUAI/ArabicMMLU`` at HELM's revision ``7aa530e2…``: per subset a ``dev`` split
(train) and a ``test`` split with ``Question``, an optional ``Context`` (a reading passage, put before the
question after a blank line), ``Option 1`` to ``Option 5`` (empty ones left out; numbers written as Python
writes them) and the keyed letter ``Answer Key``. A subset is named with ``_`` for spaces, as in HELM's conf
(``Accounting_(University)``). Test ids are HELM's ``id<row>``; HELM gives the dev rows the same ids, which
helmflow keeps unique as ``train-id<row>`` (HELM's conf runs zero-shot: no dev row is ever shown). Multiple choice
joint with HELM's Arabic letters (:mod:`helmflow.scenarios.arabic`), exact match.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.arabic import (
    ARABIC_WORDING,
    ONE_QUESTION,
    arabic_mcqa_spec,
    context_and_question,
    flat_name,
    hub_rows,
    numbered_options,
)

REPO = "MBZUAI/ArabicMMLU"
REVISION = "7aa530e2893ac420352b3f5c1a1310c010e9758b"
SUBSETS = (
    "Accounting_(University)", "Arabic_Language_(General)", "Arabic_Language_(Grammar)",
    "Arabic_Language_(High_School)", "Arabic_Language_(Middle_School)", "Arabic_Language_(Primary_School)",
    "Biology_(High_School)", "Civics_(High_School)", "Civics_(Middle_School)", "Computer_Science_(High_School)",
    "Computer_Science_(Middle_School)", "Computer_Science_(Primary_School)", "Computer_Science_(University)",
    "Driving_Test", "Economics_(High_School)", "Economics_(Middle_School)", "Economics_(University)",
    "General_Knowledge_(Middle_School)", "General_Knowledge_(Primary_School)", "General_Knowledge",
    "Geography_(High_School)", "Geography_(Middle_School)", "Geography_(Primary_School)", "History_(High_School)",
    "History_(Middle_School)", "History_(Primary_School)", "Islamic_Studies_(High_School)",
    "Islamic_Studies_(Middle_School)", "Islamic_Studies_(Primary_School)", "Islamic_Studies", "Law_(Professional)",
    "Management_(University)", "Math_(Primary_School)", "Natural_Science_(Middle_School)",
    "Natural_Science_(Primary_School)", "Philosophy_(High_School)", "Physics_(High_School)",
    "Political_Science_(University)", "Social_Science_(Middle_School)", "Social_Science_(Primary_School)",
)  # fmt: skip
SPLITS = {"dev": "train", "test": "test"}  # HELM's HF_SPLIT_TO_HELM_SPLIT


class ArabicMMLUParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: str = "Accounting_(University)"

    @field_validator("subset")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in SUBSETS:
            raise ValueError(f"unknown ArabicMMLU subset {v!r}; the 40 are: {', '.join(SUBSETS)}")
        return v


@scenario("arabic_mmlu")
class ArabicMMLU(Scenario[ArabicMMLUParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = ArabicMMLUParams
    description = "ArabicMMLU: school and university exam questions from across the Arab world, one of 40 subsets."
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    default_adapter: AdapterSpec = arabic_mcqa_spec(ONE_QUESTION)
    helm_wording = ARABIC_WORDING
    helm_differences = ("arabic_mmlu: the dev rows' ids are train-id<row> (HELM gives them the test rows' id<row>; "
                        "helmflow needs ids unique, and HELM's conf shows no dev row)",)
    pin_unverified = ("the files' paths in the repository (<subset with spaces>/<split>-00000-of-00001.parquet) were "
                      "not checked against the Hub at this revision")

    def path(self, split: str) -> str:
        return f"{self.params.subset.replace('_', ' ')}/{split}-00000-of-00001.parquet"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=flat_name(self.params.subset, split), url=self.hub_url(self.path(split)))
                for split in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        return lettered_instances(self, files, stringify=True)


def lettered_instances(scen: Scenario, files: dict[str, str], stringify: bool) -> list[Instance]:
    """ArabicMMLU's and MadinahQA's rows, dev then test (HELM's split order)."""
    out: list[Instance] = []
    subset = scen.param_dict["subset"]
    for split, helm_split in SPLITS.items():
        url = files[flat_name(subset, split)]
        _, rows = hub_rows(scen.name, url, ["Question", "Answer Key"])
        for number, row in enumerate(rows):
            where = f"{url} row {number}"
            options = numbered_options(scen.name, where, row, stringify)
            out.append(Instance(id=f"id{number}" if helm_split == "test" else f"train-id{number}", split=helm_split,
                                input=Input(text=context_and_question(scen.name, where, row)),
                                references=[Reference(text=t, correct=right) for t, right in options]))
    return out
